"""Helpers shared by the Python benchmarks (imported from the script's
own directory)."""

import os
import shutil
import signal
import subprocess
import time

READY_TIMEOUT = 10.0


class BenchError(Exception):
    """A benchmark cannot go on; the message says why."""


def start_daemon(cmd, mnt, log_path, **popen_args):
    """Start the daemon (cmd, ending with its mountpoint mnt) with its output
    in log_path, in a session of its own, and wait until it serves."""
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True, **popen_args)
    deadline = time.monotonic() + READY_TIMEOUT
    while not os.path.exists(os.path.join(mnt, "proc", ".real", "self")):
        if daemon.poll() is not None:
            raise BenchError("daemon exited at start-up (status %s)" % daemon.returncode)
        if time.monotonic() > deadline:
            raise BenchError("daemon not ready after %.0f s" % READY_TIMEOUT)
        time.sleep(0.05)
    return daemon


def start_lxcfs(mnt, pidfile, log_path):
    """Start LXCFS (Debian's lxcfs) on mnt with its own pidfile, in the
    foreground of a session of its own, and wait until it serves."""
    lxcfs = shutil.which("lxcfs")
    if not lxcfs:
        raise BenchError("lxcfs is not installed (apt-get install lxcfs)")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([lxcfs, "-p", pidfile, mnt], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(os.path.join(mnt, "proc", "cpuinfo")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise BenchError("lxcfs did not start (see %s)" % log_path)
        time.sleep(0.05)
    return proc


def stop_served(proc, mnt):
    """Stop the daemon or LXCFS proc (if it was started) serving mnt, and
    make sure nothing stays mounted there."""
    if proc:
        proc.terminate()
        proc.wait(timeout=10)
    subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)


def read_stats(mnt, prefix="cgprocfs_smaps_"):
    """The samples of MNT/.cgprocfs/stats, {name: value}, with prefix
    taken off the names that have it."""
    out = {}
    with open(os.path.join(mnt, ".cgprocfs", "stats")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, value = line.split()
                out[name[len(prefix):] if name.startswith(prefix) else name] = float(value)
    return out


def exit_on_signals():
    """SIGTERM and SIGHUP exit (so that finally blocks clean up), and SIGINT
    raises KeyboardInterrupt even where it came in ignored (a background
    job of a script)."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)
