#!/usr/bin/python3
"""Two builds of the daemon side by side: each on its own mountpoint, the
same files read through each in one interleaved run (each round reads
every file once through each), for a change whose cost is per request.

    sudo /usr/bin/python3 tests/bench/bench-builds.py --old OLD_BUILD --new build [--rounds 5000]

Times Python's open + read to EOF + close through the host's view of
each, from a cgroup with half a CPU and 256 MiB (as bench-files.py's host
caller): the floor (.cgprocfs/control, answered from memory) and files
rendered at each open (proc/stat, proc/uptime, proc/loadavg,
proc/diskstats). Prints p50 and p99 in µs per build and the ratio new /
old. It only reports; the exit status says whether it ran."""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

FILES = [".cgprocfs/control", "proc/stat", "proc/uptime", "proc/loadavg", "proc/diskstats"]
QUOTA, PERIOD, MEMORY = 50000, 100000, 256 << 20

# Run in the cgroup: argv[1] rounds, argv[2] JSON {build: mountpoint},
# argv[3] JSON [file]; prints {build: {file: [µs, ...]}}.
MEASURE = benchlib.READER_FUNCTIONS + r"""
import json, sys
rounds, mnts, files = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
times = {b: {f: [] for f in files} for b in mnts}
for n in range(200 + rounds):  # the first 200 warm up
    for b, mnt in mnts.items():
        for f in files:
            t = once(os.path.join(mnt, f)) / 1000
            if n >= 200:
                times[b][f].append(t)
print(json.dumps(times))
"""


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-builds-")
        self.daemons = {}
        self.group = None

    def daemon_log(self):
        return "".join(open(os.path.join(self.work, n + ".log")).read() for n in self.daemons)

    def run(self):
        for name, build in (("old", self.args.old), ("new", self.args.new)):
            exe, = benchlib.built(build, "daemon/cgprocfs")
            mnt = os.path.join(self.work, name)
            os.mkdir(mnt)
            self.daemons[name] = (benchlib.start_daemon([exe, mnt], mnt, os.path.join(self.work, name + ".log")), mnt)
        self.group = benchlib.Cgroup("cgprocfs-bench-builds-%d" % os.getpid(), QUOTA, PERIOD, MEMORY)
        mnts = {name: mnt for name, (_, mnt) in self.daemons.items()}
        times = self.group.run([sys.executable, "-c", MEASURE, str(self.args.rounds), json.dumps(mnts),
                                json.dumps(FILES)])
        print("| file | old p50 / p99 µs | new p50 / p99 µs | new / old (p50) |")
        print("|---|---|---|---|")
        for f in FILES:
            o, n = ([benchlib.percentile(times[b][f], q) for q in (0.5, 0.99)] for b in ("old", "new"))
            print("| %s | %.0f / %.0f | %.0f / %.0f | %.2f |" % (f, o[0], o[1], n[0], n[1], n[0] / o[0]))

    def cleanup(self):
        if self.group:
            self.group.remove()
        for proc, mnt in self.daemons.values():
            benchlib.stop_served(proc, mnt)
        left = [mnt for _, mnt in self.daemons.values() if os.path.ismount(mnt)]
        if not left:
            shutil.rmtree(self.work, ignore_errors=True)
        return not left


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="the build directory of the build to compare against")
    p.add_argument("--new", default="build", help="the build directory of the build measured")
    p.add_argument("--rounds", type=int, default=5000)
    return benchlib.run_bench("bench-builds", lambda: Bench(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
