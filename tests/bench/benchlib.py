"""Helpers shared by the Python benchmarks (imported from the script's
own directory)."""

import os
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
