#!/usr/bin/python3
"""Does one cgroup's text reach another's readers? The view against LXCFS.

    sudo /usr/bin/python3 tests/bench/bench-leak.py [--build-dir build] [--seconds 10] [--readers 4]

Readers in a one-CPU cpuset and in a cpuset of every CPU read the same file
at once (for meminfo, readers in memory cgroups of 256 and 512 MiB),
alternating read() and sendfile (what busybox cat does), for --seconds:
through the daemon's view, then through LXCFS (Debian's lxcfs, on its own
mountpoint with its own pidfile). Each read is checked against its
reader's own cgroup: a wrong CPU count or MemTotal is another cgroup's
text, an empty read is a reader that got nothing. Reports the counts per
file and cgroup; it only reports figures, its exit status says whether it
ran."""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import benchlib  # noqa: E402
import cgtest  # noqa: E402
import test_served  # noqa: E402

FILES = ("proc/cpuinfo", "proc/stat", "sys/devices/system/cpu/online")
MEMORY = "/sys/fs/cgroup/memory"
MIB = 1 << 20


def run_readers(root, cases, readers, seconds):
    """{(file, group): (reads, wrong, empty)} of readers at once. cases:
    (file, group name, cgroup dir, what MIXED_READER must see)."""
    procs = []
    for f, name, group, want in cases:
        path = os.path.join(root, f)
        if not os.path.exists(path):
            continue
        for _ in range(readers):
            argv = test_served.in_cgroup(group, [sys.executable, "-c", test_served.MIXED_READER, path, want,
                                                 str(seconds)])
            procs.append((f, name, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                    text=True)))
    out = {}
    for f, name, p in procs:
        stdout, stderr = p.communicate(timeout=seconds + 60)
        if p.returncode != 0:
            raise benchlib.BenchError("a reader of %s failed: %s" % (f, stderr.strip()[-300:]))
        got = [int(x) for x in stdout.split(maxsplit=3)[:3]]
        prev = out.get((f, name), (0, 0, 0))
        out[(f, name)] = tuple(a + b for a, b in zip(prev, got))
    return out


def memory_groups(made):
    """Memory cgroups of 256 and 512 MiB (v1): {name: (dir, MemTotal kB)}."""
    if not os.path.isdir(MEMORY):
        return {}
    total = int(open("/proc/meminfo").readline().split()[1])
    groups = {}
    for size in (256, 512):
        path = os.path.join(MEMORY, "cgprocfs-bench-leak-%d-%d" % (os.getpid(), size))
        os.mkdir(path)
        made.append(path)
        with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(size * MIB))
        groups["%dM" % size] = (path, str(min(total, size * 1024)))
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--readers", type=int, default=4, help="readers per cpuset and file")
    args = ap.parse_args()
    benchlib.exit_on_signals()
    tmp = tempfile.mkdtemp(prefix="cgprocfs-bench-leak-")
    mnt, lxmnt = os.path.join(tmp, "mnt"), os.path.join(tmp, "lxcfs")
    os.mkdir(mnt)
    os.mkdir(lxmnt)
    daemon = lxcfs = cpusets = None
    made = []
    try:
        daemon = benchlib.start_daemon([os.path.join(args.build_dir, "daemon", "cgprocfs"), mnt], mnt,
                                       os.path.join(tmp, "daemon.log"))
        lxcfs = benchlib.start_lxcfs(lxmnt, os.path.join(tmp, "lxcfs.pid"), os.path.join(tmp, "lxcfs.log"))
        cpusets = test_served.Cpusets()
        cases = [(f, name, group, test_served.expected(f, n)) for f in FILES
                 for name, (group, n) in cpusets.groups.items()]
        cases += [("proc/meminfo", name, group, want) for name, (group, want) in memory_groups(made).items()]
        print("%d readers per cgroup and file, %.0f s each, read() and sendfile alternating" %
              (args.readers, args.seconds))
        print("%-10s %-32s %-8s %10s %10s %10s" % ("served by", "file", "cgroup", "reads", "wrong", "empty"))
        for label, root in (("cgprocfs", mnt), ("lxcfs", lxmnt)):
            res = run_readers(root, cases, args.readers, args.seconds)
            for (f, name), (reads, wrong, empty) in sorted(res.items()):
                print("%-10s %-32s %-8s %10d %10d %10d" % (label, f, name, reads, wrong, empty))
    except (benchlib.BenchError, cgtest.Skip) as e:
        print("bench-leak: %s" % e, file=sys.stderr)
        sys.exit(1)
    finally:
        if cpusets:
            cpusets.remove()
        cgtest.remove_cgroups(made, MEMORY)
        benchlib.stop_served(daemon, mnt)
        benchlib.stop_served(lxcfs, lxmnt)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
