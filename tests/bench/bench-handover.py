#!/usr/bin/python3
"""What a handover (cgprocfs --replace) costs the readers of the view, or
with --crash, a SIGKILL of the daemon and a new one taking the views over
from its keeper.

    sudo /usr/bin/python3 tests/bench/bench-handover.py [--build-dir build] [--rounds 5] [--crash]

Starts the daemon from the build directory on a temporary mountpoint and a
reader in a private mount namespace with the view bound over /proc, which
times open + read + close of /proc/cpuinfo (served by the daemon) and
/proc/self/status (delegated) back to back. Each round starts a new daemon
with --replace, which takes over from the running one. Reports per round
the time from the new daemon's start to the old one's exit, and the
reader's latencies: median outside the handovers, and the longest read
while one was going on, with the count of failed reads (which should be
0). Daemons, reader and mount go on every exit path; it only reports
figures, its exit status says whether it ran."""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# Reads until stdin closes; prints one JSON line: [[start, seconds, ok,
# what went wrong or null]...]
READER = r"""
import json, os, select, sys, time
samples = []
while not select.select([sys.stdin], [], [], 0)[0]:
    for path in ("/proc/cpuinfo", "/proc/self/status"):
        t = time.monotonic()
        try:
            with open(path, "rb") as f:
                why = None if f.read() else "%s read empty" % path
        except OSError as e:
            why = "%s: %s" % (path, e.strerror)
        samples.append((t, time.monotonic() - t, why is None, why))
print(json.dumps(samples))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--crash", action="store_true", help="SIGKILL the daemon and start a new one instead")
    args = ap.parse_args()
    benchlib.exit_on_signals()
    exe = os.path.abspath(os.path.join(args.build_dir, "daemon", "cgprocfs"))
    work = tempfile.mkdtemp(prefix="cgprocfs-bench-handover-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    daemons, reader = [], None
    try:
        daemons.append(benchlib.start_daemon([exe, mnt], mnt, os.path.join(work, "daemon-0.log")))
        reader = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --rbind "$1/proc" /proc && shift && exec "$@"', "sh", mnt, sys.executable, "-c", READER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        windows = []
        for i in range(1, args.rounds + 1):
            old = daemons[-1]
            start = time.monotonic()
            if args.crash:
                old.send_signal(signal.SIGKILL)
                old.wait(30)
                log = os.path.join(work, "daemon-%d.log" % i)
                # Its readiness shows in its log: paths through the view's
                # cached entries answer without any daemon.
                daemons.append(benchlib.start_daemon([exe, mnt], mnt, log))
                deadline = time.monotonic() + 30
                while "took over" not in open(log).read():
                    if time.monotonic() > deadline:
                        raise benchlib.BenchError("the new daemon did not take over within 30 s")
                    time.sleep(0.001)
            else:
                daemons.append(benchlib.start_daemon([exe, "--replace", mnt], mnt,
                                                     os.path.join(work, "daemon-%d.log" % i)))
                old.wait(30)
                if old.returncode != 0:
                    raise benchlib.BenchError("the old daemon exited with %s" % old.returncode)
            end = time.monotonic()
            windows.append((start, end))
            time.sleep(1)
        out, _ = reader.communicate("", timeout=60)
        samples = json.loads(out)
        inside = lambda t, w: w[0] <= t <= w[1]  # noqa: E731
        calm = [d for t, d, ok, _ in samples if not any(inside(t, w) for w in windows)]
        print("%s, %d rounds; reader: open+read+close of /proc/cpuinfo and /proc/self/status in the "
              "view, back to back" % ("SIGKILL and restart" if args.crash else "handover (--replace)", args.rounds))
        print("  reads outside handovers: %d, median %.1f µs, p99 %.1f µs" %
              (len(calm), statistics.median(calm) * 1e6, sorted(calm)[int(len(calm) * 0.99)] * 1e6))
        print("  %5s %14s %14s %10s %10s" % ("round", "handover ms", "longest read", "reads", "failed"))
        for i, w in enumerate(windows, 1):
            during = [(d, ok) for t, d, ok, _ in samples if inside(t, w)]
            print("  %5d %14.1f %11.1f ms %10d %10d" % (i, (w[1] - w[0]) * 1e3,
                                                       max((d for d, _ in during), default=0) * 1e3,
                                                       len(during), sum(1 for _, ok in during if not ok)))
        failed = [(t, why) for t, _, ok, why in samples if not ok]
        print("  failed reads in all: %d of %d" % (len(failed), len(samples)))
        for t, why in failed[:3]:
            print("    %.3f s after the first round started: %s" % (t - windows[0][0], why))
        print("  (handover ms: %s)" % ("from the SIGKILL to the new daemon serving, its exec and set-up included"
                                       if args.crash else
                                       "from starting the new daemon, with its exec and set-up, to the old one's exit"))
    except benchlib.BenchError as e:
        print("bench-handover: %s" % e, file=sys.stderr)
        return 1
    finally:
        if reader and reader.poll() is None:
            reader.kill()
            reader.wait()
        for d in daemons:
            if d.poll() is None:
                d.send_signal(signal.SIGTERM)
                try:
                    d.wait(10)
                except subprocess.TimeoutExpired:
                    d.kill()
                    d.wait()
        subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
