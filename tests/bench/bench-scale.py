#!/usr/bin/python3
"""cgprocfs with many containers attached: what the daemon costs per
container, and whether a container's reads slow down as others attach.

    sudo /usr/bin/python3 tests/bench/bench-scale.py [--build-dir build]
        [--counts 10,100,500] [--iterations 3000]

It starts the daemon from the build directory on a temporary mountpoint
and attaches containers until each count is reached. A container is the
cheapest real one: `unshare --pid --fork --mount --mount-proc sleep`, given
the view by the real OCI hook as a runtime's createContainer hook would
(its own pid namespace, FUSE session and procfs in the daemon). At each
count, with every container idle, it reports the daemon's threads, RSS and
open fds, the attach time of the containers added (the daemon's own "set
up in" figure and the hook's whole run), and the p50/p99 latency of
open + read + close of /proc/cpuinfo in the first container (the view)
and of /proc/.real/cpuinfo beside it (the kernel), measured with
cgprocfs-bench-latency inside that container.

Everything it started goes on every exit path. It only reports figures;
its exit status says whether it ran.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BenchError = benchlib.BenchError
SETUP_RE = re.compile(r"serving the view of pid namespace \d+ \(container init (\d+)\), set up in ([\d.]+) ms")


class Bench:
    def __init__(self, args):
        self.args = args
        self.daemon_bin, self.hook_bin, self.latency_bin = benchlib.built(
            args.build_dir, "daemon/cgprocfs", "contrib/oci/cgprocfs-oci-hook", "tests/bench/cgprocfs-bench-latency")
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-scale.")
        self.mnt = os.path.join(self.work, "mnt")
        os.mkdir(self.mnt)
        self.daemon = None
        self.ns = benchlib.Namespaces(self.hook_bin, self.mnt, self.work)
        self.hook_ms = []

    def start_daemon(self):
        self.log_path = os.path.join(self.work, "daemon.log")
        self.daemon = benchlib.start_daemon([self.daemon_bin, self.mnt], self.mnt, self.log_path)

    def setup_ms(self):
        """The daemon's set-up time of each attach, by container init."""
        with open(self.log_path) as f:
            return {int(m.group(1)): float(m.group(2)) for m in SETUP_RE.finditer(f.read())}

    def reads(self):
        """p50/p99 µs of the view's and the kernel's cpuinfo in the first container."""
        r = subprocess.run(self.ns.command(self.ns.inits[0], [
            self.latency_bin, "--iterations", str(self.args.iterations), "--warmup", "500",
            "view:cpuinfo=/proc/cpuinfo", "real:cpuinfo=/proc/.real/cpuinfo"]),
            capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise BenchError("the latency probe failed: " + r.stderr.strip())
        rows = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if f and f[0] in ("view:cpuinfo", "real:cpuinfo"):
                rows[f[0]] = (float(f[1]), float(f[2]))
        if len(rows) != 2:
            raise BenchError("the latency probe printed no rows:\n" + r.stdout)
        return rows

    def sample(self):
        pid = self.daemon.pid
        return (benchlib.status_field(pid, "Threads"), benchlib.status_field(pid, "VmRSS"),
                len(os.listdir("/proc/%d/fd" % pid)))

    def run(self):
        a = self.args
        self.start_daemon()
        print("cgprocfs with many containers attached: %d CPUs, kernel %s" % (os.cpu_count(), os.uname().release))
        print("command: %s" % " ".join(["/usr/bin/python3"] + sys.argv), flush=True)
        time.sleep(0.5)
        threads0, rss0, fds0 = self.sample()
        print("\nno container: %d threads, RSS %.1f MiB, %d fds" % (threads0, rss0 / 1024, fds0))
        print("\n%10s %8s %9s %10s %6s %10s %10s %10s %10s %10s %10s" % (
            "containers", "threads", "RSS MiB", "KiB/cont.", "fds", "setup p50", "setup max", "hook p50",
            "view p50", "view p99", "real p50"))
        print("%10s %8s %9s %10s %6s %10s %10s %10s %10s %10s %10s" % (
            "", "", "", "", "", "ms", "ms", "ms", "µs", "µs", "µs"))
        for n in a.counts:
            first = len(self.ns.inits)
            while len(self.ns.inits) < n:
                self.hook_ms.append(self.ns.add()[1])
            time.sleep(1)  # the sessions' first requests settle
            threads, rss, fds = self.sample()
            setup = self.setup_ms()
            added = [setup[p] for p in self.ns.inits[first:] if p in setup]
            if len(added) != n - first:
                raise BenchError("the daemon logged %d set-ups for %d attaches" % (len(added), n - first))
            rows = self.reads()
            print("%10d %8d %9.1f %10.1f %6d %10.2f %10.2f %10.2f %10.1f %10.1f %10.1f" % (
                n, threads, rss / 1024, (rss - rss0) / n, fds, statistics.median(added), max(added),
                statistics.median(self.hook_ms[first:]), rows["view:cpuinfo"][0], rows["view:cpuinfo"][1],
                rows["real:cpuinfo"][0]), flush=True)
        print("\n(threads: the whole daemon; KiB/cont.: RSS growth over no container, per container;"
              " setup: the daemon's own attach time; hook: the hook's whole run, process start included;"
              " reads: %d open+read+close in the first container, the others idle)" % a.iterations)

    def cleanup(self):
        self.ns.close()
        problems = benchlib.stop_daemon_and_work(self.daemon, self.mnt, self.work)
        for p in problems:
            print("bench-scale: %s" % p, file=sys.stderr)
        return not problems


def main():
    p = argparse.ArgumentParser(description="cgprocfs with many containers attached (needs root).")
    p.add_argument("--build-dir", default="build", help="meson build directory (default: build)")
    p.add_argument("--counts", default="10,100,500", help="container counts, rising (default 10,100,500)")
    p.add_argument("--iterations", type=int, default=3000, help="timed reads at each count (default 3000)")
    args = p.parse_args()
    try:
        args.counts = [int(c) for c in args.counts.split(",")]
    except ValueError:
        p.error("--counts: whole numbers separated by commas")
    if not args.counts or args.counts != sorted(args.counts) or args.counts[0] <= 0 or args.iterations <= 0:
        p.error("--counts must rise from 1 or more, and --iterations be positive")
    if os.geteuid() != 0:
        p.error("needs root (mounts, namespaces)")

    return benchlib.run_bench("bench-scale", lambda: Bench(args))


if __name__ == "__main__":
    sys.exit(main())
