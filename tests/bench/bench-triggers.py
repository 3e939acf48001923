#!/usr/bin/python3
"""What a PSI trigger through the view costs against the kernel's own file.

    sudo /usr/bin/python3 tests/bench/bench-triggers.py [--build-dir build] [--seconds 30] [--polls 5000]

In one run, side by side, in a cgroup of this host's unified hierarchy (a
container: a 1 GiB v1 memory limit) whose child thrashes a 24 MiB file
map under a 16 MiB limit:

- wake-up: a poller of the view's /proc/pressure/memory and one of the
  cgroup's own memory.pressure, the same trigger (some 50000 2000000),
  each blocked in poll() with no timeout; for every firing, how long after
  the kernel file's poller the view's woke (the kernel wakes both from the
  same aggregation);
- a poll() that does not wait (timeout 0) on an armed fd, --polls times:
  the view's (a FUSE POLL round trip) against the kernel file's.

LXCFS is not measured: Debian 12's lxcfs (5.0) has no PSI triggers (its
pressure files came with 7.0, --enable-psi-poll). Only reports: the exit
status says whether it ran."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import benchlib  # noqa: E402
import test_triggers  # noqa: E402

# argv: path, trigger, polls: the mean cost of a poll() that does not wait,
# in microseconds, on an fd with the trigger set.
POLL_COST = r"""
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
os.write(fd, sys.argv[2].encode() + b"\0")
p = select.poll()
p.register(fd, select.POLLPRI)
n = int(sys.argv[3])
for _ in range(n // 10):
    p.poll(0)
start = time.perf_counter()
for _ in range(n):
    p.poll(0)
print((time.perf_counter() - start) / n * 1e6)
"""


class Bench:
    def __init__(self, args):
        self.args = args
        self.exe = benchlib.built(args.build_dir, "daemon/cgprocfs")[0]
        self.mnt = tempfile.mkdtemp(prefix="cgprocfs-bench-triggers-")
        self.r = test_triggers.Run()
        self.daemon = None

    def daemon_log(self):
        with open(os.path.join(self.r.dir, "daemon.log")) as f:
            return f.read()

    def cleanup(self):
        benchlib.stop_served(self.daemon, self.mnt)
        self.r.cleanup()
        os.rmdir(self.mnt)
        return True

    def run(self):
        args, r, mnt, exe = self.args, self.r, self.mnt, self.exe
        self.daemon = benchlib.start_daemon([exe, mnt], mnt, os.path.join(r.dir, "daemon.log"))
        view = os.path.join(mnt, "proc/pressure/memory")
        kernel = os.path.join(r.groups["press"][0], "memory.pressure")
        r.poller("press", "view", view, -1)
        r.poller("press", "kernel", kernel, -1)
        time.sleep(1)
        r.start("press/hog", "hog", [sys.executable, r.script("hog"), r.hogfile])
        time.sleep(args.seconds)
        view_ev, kernel_ev = r.events("view"), r.events("kernel")
        lat = [test_triggers.after_kernel(v, kernel_ev) * 1e3 for v in view_ev] if kernel_ev else []
        cost = {}
        with open(os.path.join(r.dir, "cost.py"), "w") as f:
            f.write(POLL_COST)
        for name, path in (("view", view), ("kernel", kernel)):
            out = r.start("calm", "cost-" + name, [sys.executable, os.path.join(r.dir, "cost.py"), path,
                                                  test_triggers.TRIGGER, str(args.polls)], stdout=subprocess.PIPE)
            cost[name] = float(out.communicate()[0])
        print(json.dumps({"firings": {"view": len(view_ev), "kernel": len(kernel_ev)}}))
        if lat:
            print("wake-up after the kernel file's poller, per firing (ms; negative: before): p50 %.2f  p90 %.2f  max %.2f  (%d firings)"
                  % (statistics.median(lat), benchlib.percentile(lat, 0.9), max(lat), len(lat)))
        print("poll(timeout 0) on an armed fd: view %.1f us, kernel file %.1f us, ratio %.1fx"
              % (cost["view"], cost["kernel"], cost["view"] / cost["kernel"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--polls", type=int, default=5000)
    args = p.parse_args()
    sys.exit(benchlib.run_bench("bench-triggers", lambda: Bench(args)))


if __name__ == "__main__":
    main()
