#!/usr/bin/python3
"""Parallel readers: reads per second of files through the view with 1, 2,
4 and 8 reader processes at once, for one or more builds of the daemon
side by side (e.g. before and after a change), and of the real files.

    sudo /usr/bin/python3 tests/bench/bench-parallel.py --build-dir build [--build-dir OLD] \\
        [--readers 1,2,4,8] [--seconds 3] [--rounds 3] [--lxcfs] [--files cpuinfo,stat,meminfo]

For each build a daemon serves a temporary mountpoint; each reader process
opens, reads to the end and closes one file in a loop for --seconds, and
counts. Files: proc/cpuinfo (served by the daemon) and proc/<pid>/status
of an idle process (a walk through cached symlinks into the real procfs),
or --files (names in proc/; "status" for that process's).
Builds and reader counts are interleaved in each of --rounds rounds, and
the best round is reported, so drift and other load touch every arm
alike. With --lxcfs, LXCFS (Debian's lxcfs, on its own mountpoint with its
own pidfile) is an arm too, for the files it serves. It only reports
figures; the exit status says whether it ran."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

READER = r"""
import os, sys, time
path, seconds, start = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
n, end = 0, start + seconds
while time.time() < end:
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, 65536):
        pass
    os.close(fd)
    n += 1
print(n)
"""


def rate(path, readers, seconds):
    """Reads per second of path by this many processes at once."""
    start = time.time() + 0.3
    procs = [subprocess.Popen([sys.executable, "-c", READER, path, str(seconds), str(start)],
                              stdout=subprocess.PIPE, text=True) for _ in range(readers)]
    total = sum(int(p.communicate()[0]) for p in procs)
    return total / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", action="append", required=True)
    ap.add_argument("--readers", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lxcfs", action="store_true", help="LXCFS's files as one more arm")
    ap.add_argument("--files", default="cpuinfo,status", help="names in proc/ (status: an idle process's)")
    args = ap.parse_args()
    benchlib.exit_on_signals()
    counts = [int(n) for n in args.readers.split(",")]
    idle = subprocess.Popen(["sleep", "3600"])
    tmp = tempfile.mkdtemp(prefix="cgprocfs-bench-parallel-")
    daemons = {}
    lxcfs = None
    try:
        arms = {"real": "/proc"}
        for i, build in enumerate(args.build_dir):
            mnt = os.path.join(tmp, "mnt%d" % i)
            os.mkdir(mnt)
            exe = os.path.join(build, "daemon", "cgprocfs")
            daemons[mnt] = benchlib.start_daemon([exe, mnt], mnt, os.path.join(tmp, "daemon%d.log" % i))
            arms[build] = os.path.join(mnt, "proc")
        files = {name: "%d/status" % idle.pid if name == "status" else name for name in args.files.split(",")}
        if args.lxcfs:
            lxmnt = os.path.join(tmp, "lxcfs")
            os.mkdir(lxmnt)
            lxcfs = benchlib.start_lxcfs(lxmnt, os.path.join(tmp, "lxcfs.pid"), os.path.join(tmp, "lxcfs.log"))
            arms["lxcfs"] = os.path.join(lxmnt, "proc")
        best = {}
        for _ in range(args.rounds):
            for n in counts:
                for arm, proc in arms.items():
                    for name, rel in files.items():
                        if arm == "lxcfs" and not os.path.isfile(os.path.join(proc, rel)):
                            continue
                        r = rate(os.path.join(proc, rel), n, args.seconds)
                        key = (name, n, arm)
                        best[key] = max(best.get(key, 0), r)
        print("reads per second (best of %d rounds of %.0f s), %d CPUs" % (args.rounds, args.seconds, os.cpu_count()))
        print("%-8s %-8s %s" % ("file", "readers", "  ".join("%14s" % a[-14:] for a in arms)))
        for name in files:
            for n in counts:
                print("%-8s %-8d %s" % (name, n, "  ".join("%14.0f" % best[(name, n, a)] if (name, n, a) in best
                                                           else "%14s" % "-" for a in arms)))
    finally:
        for mnt, daemon in daemons.items():
            benchlib.stop_served(daemon, mnt)
        benchlib.stop_served(lxcfs, os.path.join(tmp, "lxcfs"))
        idle.kill()
        idle.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
