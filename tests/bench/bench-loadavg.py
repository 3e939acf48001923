#!/usr/bin/python3
"""What sampling cgroups' load averages costs the daemon.

    sudo /usr/bin/python3 tests/bench/bench-loadavg.py [--build-dir build] [--cgroups 20] [--threads 1000] [--seconds 30]

Makes --cgroups cgroups (v1 cpuacct, or the v2 hierarchy where that is the
one that counts CPU time) under a CFS quota, puts --threads sleeping
threads across them, has a process in each read the view's /proc/loadavg
once (which makes the daemon sample that cgroup every 5 s from then on),
then measures the daemon's CPU time (utime + stime of its threads) over
--seconds with nothing else reading. Reports it in percent of one core,
and beside it the same measure with --no-loadavg. Aim: at most 1 % for
1,000 threads in 20 cgroups. Only reports: the exit status says whether
it ran."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import benchlib  # noqa: E402
import cgtest  # noqa: E402

CGROUP = "/sys/fs/cgroup"
AIM_PERCENT = 1.0

# A process of n sleeping threads that stays until its stdin closes.
SLEEPERS = r"""
import sys, threading
for _ in range(int(sys.argv[1]) - 1):
    threading.Thread(target=threading.Event().wait, daemon=True).start()
sys.stdin.buffer.read()
"""


def make_groups(n):
    """n cgroups in every v1 hierarchy that lists threads for the daemon
    (cpu and cpuacct), half a CPU each: [[dirs of group i]]."""
    roots = [os.path.join(CGROUP, h) for h in ("cpu", "cpuacct") if os.path.isdir(os.path.join(CGROUP, h))]
    if not roots:
        raise benchlib.BenchError("needs the cgroup v1 cpu and cpuacct hierarchies under " + CGROUP)
    groups = []
    for i in range(n):
        dirs = []
        for root in roots:
            path = os.path.join(root, "cgprocfs-bench-loadavg-%d-%d" % (os.getpid(), i))
            os.mkdir(path)
            dirs.append(path)
            if os.path.exists(os.path.join(path, "cpu.cfs_quota_us")):
                with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                    f.write("50000")
        groups.append(dirs)
    return groups


def remove_groups(groups):
    for dirs in groups:
        for path in dirs:
            cgtest.remove_cgroups([path], os.path.dirname(path))


def measure(exe, args, groups, threads, seconds, tmp):
    """The daemon's CPU over seconds, in percent of one core."""
    mnt = tempfile.mkdtemp(dir=tmp)
    daemon = benchlib.start_daemon([exe] + args + [mnt], mnt, os.path.join(tmp, "daemon.log"))
    sleepers = []
    try:
        per = max(1, threads // len(groups))
        for dirs in groups:
            sleepers.append(subprocess.Popen(cgtest.in_cgroups(dirs, [sys.executable, "-c", SLEEPERS, str(per)]),
                                             stdin=subprocess.PIPE))
        time.sleep(1)
        for dirs in groups:  # one read each: from now on sampled
            p = subprocess.Popen(cgtest.in_cgroups(dirs, ["cat", os.path.join(mnt, "proc", "loadavg")]),
                                 stdout=subprocess.PIPE)
            p.communicate(timeout=30)
        time.sleep(6)  # past the first sample
        start_cpu, start = benchlib.cpu_seconds(daemon.pid), time.monotonic()
        time.sleep(seconds)
        used = benchlib.cpu_seconds(daemon.pid) - start_cpu
        return 100 * used / (time.monotonic() - start)
    finally:
        for s in sleepers:
            s.stdin.close()
            s.wait()
        benchlib.stop_served(daemon, mnt)
        os.rmdir(mnt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cgroups", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30)
    args = ap.parse_args()
    benchlib.exit_on_signals()
    exe = os.path.join(args.build_dir, "daemon", "cgprocfs")
    tmp = tempfile.mkdtemp(prefix="cgprocfs-bench-loadavg-")
    groups = []
    try:
        groups = make_groups(args.cgroups)
        with_loadavg = measure(exe, [], groups, args.threads, args.seconds, tmp)
        without = measure(exe, ["--no-loadavg"], groups, args.threads, args.seconds, tmp)
        print("%d threads in %d cgroups, %.0f s: daemon CPU %.2f %% of one core sampling their loads, "
              "%.2f %% with --no-loadavg" % (args.threads, args.cgroups, args.seconds, with_loadavg, without))
        print("aim: sampling costs <= %.0f %% of a core: %s" % (AIM_PERCENT, "met" if with_loadavg <= AIM_PERCENT
                                                               else "NOT met"))
    except benchlib.BenchError as e:
        print("bench-loadavg: %s" % e, file=sys.stderr)
        sys.exit(1)
    finally:
        remove_groups(groups)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
