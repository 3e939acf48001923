#!/usr/bin/python3
"""Where the daemon's time goes for each file rendered at each open: a
profile per row, for the per-row breakdown in README.md.

    sudo /usr/bin/python3 tests/bench/bench-profile.py [--build-dir build] [--rounds 10000]

It starts the daemon from the build directory on a temporary mountpoint
and, for each row, has a reader in a cgroup with half a CPU and 256 MiB
(bench-files.py's host caller) open, read to EOF and close it through the
host's view, --rounds times, twice: once alone (the rows taking turns),
for the wall time and the daemon's CPU time per open (its utime +
stime), and half as many times under
`perf record --call-graph dwarf` (Debian's linux-perf) on the daemon, for
the share of its CPU time under each part of a request's way (inclusive,
so a part's share holds the system calls it makes). It also counts the
FUSE requests one open + read + close makes (.cgprocfs/stats). The floor
is .cgprocfs/control, answered from memory. It only reports; the exit
status says whether it ran."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError  # noqa: E402

ROWS = [".cgprocfs/control", "proc/stat", "proc/uptime", "proc/loadavg", "proc/vmstat", "proc/diskstats",
        "proc/pressure/io"]
QUOTA, PERIOD, MEMORY = 50000, 100000, 256 << 20
# The parts of a request's way, by the function that holds them (daemon/,
# fs/ops.c, fs/), in the order of the table's columns.
PARTS = [
    ("wait", "epoll_wait", "a worker waits for a request and is woken"),
    ("take", "io_read", "it reads the request from /dev/fuse"),
    ("re-arm", "arm", "it lets the next worker wait on the session"),
    ("answer", "answer_write", "the answer to the kernel, which wakes the caller"),
    ("LOOKUP", "op_lookup", "the LOOKUP a per-class row has in the host's view"),
    ("OPEN", "op_open", "the OPEN: deciding the caller's class, the text"),
    ("text", "served_get", "of which the text: rendered, or the tick's again"),
    ("files", "procfile_read_text_at", "of which the files read for it"),
    ("READ", "op_read", "the READs: slices of the open's snapshot"),
]

# Run in the cgroup: argv[1] JSON [path], argv[2] rounds, argv[3] the
# daemon's pid, argv[4] MNT. The rows take turns, PASSES blocks each, so
# that drift affects all alike; prints {path: {"wall_p50": µs, "cpu": µs
# of the daemon per open, "requests": per open}}.
READER = benchlib.READER_FUNCTIONS + r"""
import json, sys
paths, rounds, pid, mnt = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
PASSES = 10
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
for path in paths:
    for _ in range(200):
        once(path)
own = -requests(mnt) + requests(mnt)
got = {p: {"times": [], "cpu": 0.0, "requests": 0} for p in paths}
for _ in range(PASSES):
    for path in paths:
        g = got[path]
        before, c0 = requests(mnt), cpu()
        for _ in range(rounds // PASSES):
            g["times"].append(once(path) / 1000)
        g["cpu"] += cpu() - c0
        g["requests"] += requests(mnt) - before - own
out = {}
for path, g in got.items():
    n = len(g["times"])
    out[path] = {"wall_p50": sorted(g["times"])[n // 2], "cpu": g["cpu"] / n * 1e6, "requests": g["requests"] / n}
print(json.dumps(out))
"""


def inclusive_shares(report):
    """{function: inclusive %} from `perf report --children --sort sym`."""
    shares = {}
    for line in report.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+[\d.]+%\s+\[.\]\s+(\S+)", line)
        if m and m.group(2) not in shares:
            shares[m.group(2)] = float(m.group(1))
    return shares


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-profile-")
        self.mnt = os.path.join(self.work, "mnt")
        self.daemon = self.group = None

    def reader(self, rows, rounds):
        return self.group.run([sys.executable, "-c", READER, json.dumps([os.path.join(self.mnt, r) for r in rows]),
                               str(rounds), str(self.daemon.pid), self.mnt])

    def profiled(self, row):
        data = os.path.join(self.work, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "2000", "--call-graph", "dwarf,8192", "-p",
                                 str(self.daemon.pid), "-o", data], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # perf takes a moment to attach: a short run would go unseen
        try:
            self.reader([row], self.args.rounds // 2)
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        report = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "sym", "-q", "--stdio",
                                 "-g", "none"], capture_output=True, text=True, timeout=600)
        if report.returncode != 0:
            raise BenchError("perf report failed: " + report.stderr)
        return inclusive_shares(report.stdout)

    def run(self):
        if not shutil.which("perf"):
            raise BenchError("perf is not installed (apt-get install linux-perf)")
        exe, = benchlib.built(self.args.build_dir, "daemon/cgprocfs")
        os.mkdir(self.mnt)
        self.daemon = benchlib.start_daemon([exe, self.mnt], self.mnt, os.path.join(self.work, "daemon.log"))
        self.group = benchlib.Cgroup("cgprocfs-bench-profile-%d" % os.getpid(), QUOTA, PERIOD, MEMORY)
        rows = [r for r in ROWS if os.path.exists(os.path.join(self.mnt, r))]
        print("%d opens + reads to EOF + closes per row through the host's view, from a cgroup with half a CPU "
              "and 256 MiB; the parts are shares of the daemon's CPU time under perf (inclusive):" % self.args.rounds)
        for name, fn, what in PARTS:
            print("  %-7s %s (%s)" % (name, what, fn))
        alone = self.reader(rows, self.args.rounds)
        print("\n| file | p50 µs | daemon CPU µs / open | requests | %s |" % " | ".join(p[0] for p in PARTS))
        print("|---|---|---|---|" + "---|" * len(PARTS))
        for row in rows:
            got, shares = alone[os.path.join(self.mnt, row)], self.profiled(row)
            print("| %s | %.0f | %.0f | %.1f | %s |" % (row, got["wall_p50"], got["cpu"], got["requests"],
                                                     " | ".join("%.0f %%" % shares.get(fn, 0) for _, fn, _ in PARTS)))

    def cleanup(self):
        if self.group:
            self.group.remove()
        benchlib.stop_served(self.daemon, self.mnt)
        if os.path.ismount(self.mnt):
            return False
        shutil.rmtree(self.work, ignore_errors=True)
        return True

    def daemon_log(self):
        with open(os.path.join(self.work, "daemon.log")) as f:
            return f.read()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--rounds", type=int, default=10000)
    return benchlib.run_bench("bench-profile", lambda: Bench(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
