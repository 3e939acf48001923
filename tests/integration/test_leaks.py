"""What the daemon holds does not grow with what it serves: 10,000 cycles of
open, read to EOF and close over every file it serves, in turn (to a caller limited
in cpu, cpuacct, memory and blkio cgroups, in a pid namespace of its own,
with the view bound over /proc), and 200 container views attached by the
OCI hook and ended. Its RSS and fd count after that are those of after a
warm-up (growth under 5 MiB and 16 fds), and it stops with exit 0: built
with AddressSanitizer (contrib/scripts/asan.sh), LeakSanitizer makes that
exit status non-zero on any leak."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check  # noqa: E402

CGROUP = "/sys/fs/cgroup"
TOP = "cgprocfs-leaktest-%d" % os.getpid()
# The warm-up is the measured run's shape: what grows once (malloc's
# per-thread arenas, glibc's cache of thread stacks) grows there. Under a
# sanitizer, whose LeakSanitizer checks every path taken at least once,
# a fifth of each: the growth over the whole counts is the plain build's
# check (RSS is not bounded there, below).
CYCLES, WARMUP_CYCLES = 10000, 10000
ATTACHES, WARMUP_ATTACHES = 200, 200
if os.environ.get("CGPROCFS_SANITIZED"):
    CYCLES, WARMUP_CYCLES = 2000, 2000
    ATTACHES, WARMUP_ATTACHES = 40, 40
MIB = 1 << 20

# Reads the files of argv[2:] in turn (SELF: the reader's pid as the view
# numbers it) for argv[1] cycles of open + read to EOF + close; prints the
# counts of reads and of empty ones.
READER = r'''
import os, sys
cycles = int(sys.argv[1])
me = os.readlink("/proc/.real/self")
paths = [p.replace("SELF", me) for p in sys.argv[2:]]
reads = empty = 0
while reads < cycles:
    for p in paths[:cycles - reads]:
        fd = os.open(p, os.O_RDONLY)
        n = 0
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            n += len(b)
        os.close(fd)
        reads += 1
        empty += n == 0
print(reads, empty)
'''

# Every file the daemon renders, as a caller sees them with the view
# bound over /proc and the CPU directory (pressure/ where the host has it).
SERVED = ["/proc/cpuinfo", "/proc/stat", "/proc/meminfo", "/proc/swaps", "/proc/vmstat", "/proc/uptime",
          "/proc/loadavg", "/proc/diskstats", "/proc/SELF/smaps_rollup",
          "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/cpu0/online"]


def served_paths():
    paths = [p for p in SERVED if p != "/sys/devices/system/cpu/cpu0/online"
             or os.path.exists("/sys/devices/system/cpu/cpu0/online")]
    if os.path.isdir("/proc/pressure"):
        paths += ["/proc/pressure/" + n for n in sorted(os.listdir("/proc/pressure"))]
    return paths


# Forks LOOKED_UP children in turn; each waits while the view's directory of
# it is looked up, then exits and is reaped. Prints how many were seen.
LOOKED_UP = 2000
LOOKER = r'''
import os
seen = 0
for i in range(%d):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    seen += os.path.isdir("/proc/%%d" %% pid) and os.path.exists("/proc/%%d/status" %% pid)
    os.close(w)
    os.waitpid(pid, 0)
print(seen)
''' % LOOKED_UP


def pidfds(pid):
    """The pidfds process pid holds (its fd numbers)."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if "pidfd" in os.readlink("/proc/%d/fd/%s" % (pid, fd)):
                out.append(fd)
        except OSError:
            pass  # closed meanwhile
    return out


def make_groups():
    """The caller's cgroups: half a CPU, 256 MiB, a blkio cgroup."""
    dirs = []
    for h, files in (("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}), ("cpuacct", {}),
                     ("memory", {"memory.limit_in_bytes": str(256 * MIB)}), ("blkio", {})):
        if not os.path.isdir(os.path.join(CGROUP, h)):
            continue
        path = os.path.join(CGROUP, h, TOP)
        os.mkdir(path)
        dirs.append(path)
        for name, value in files.items():
            with open(os.path.join(path, name), "w") as f:
                f.write(value)
    return dirs


def remove_groups():
    for h in ("cpu", "cpuacct", "memory", "blkio"):
        cgtest.remove_cgroups([os.path.join(CGROUP, h, TOP)], os.path.join(CGROUP, h))


def holds(pid):
    """(RSS in bytes, open fds) of the process pid."""
    with open("/proc/%d/status" % pid) as f:
        rss = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:")][0]
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def read_cycles(d, groups, cycles):
    setup = cgtest.BIND_PROC + 'mount --bind "$CG_MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n'
    argv = ["unshare", "--pid", "--fork", cgtest.PYTHON, "-c", READER, str(cycles)] + served_paths()
    res = cgtest.run(cgtest.in_cgroups(groups, argv, setup), env=dict(os.environ, CG_MNT=d.mnt), timeout=900)
    reads, empty = map(int, cgtest.check_ran(res, "the reader").split())
    check(reads == cycles and empty == 0, "%d reads, %d empty" % (reads, empty))


def attach_cycles(d, bundle, count):
    """count pid namespaces, each given the view by the OCI hook, then ended."""
    for i in range(count):
        with cgtest.namespace_with_view(d.mnt, bundle, "leak-%d" % i) as (pid, res):
            check(res[0] == 0 and not res[2].strip(), "the hook, attach %d" % i, cgtest.describe(res))
            with open("/proc/%d/mountinfo" % pid) as f:
                check("fuse.cgprocfs" in f.read(), "attach %d: no view over the namespace's /proc" % i)
    # The sessions end as their namespaces go.
    check(cgtest.wait_until(lambda: cgtest.read_stats(d.mnt, "cgprocfs_").get("container_sessions") == 0,
                            timeout=10), "container sessions still served",
          cgtest.read_stats(d.mnt, "cgprocfs_"))


def make_tests(d):
    t, test = cgtest.test_registry()
    state = {}

    @test("warm-up: %d reads over every served file, %d container views attached and ended"
          % (WARMUP_CYCLES, WARMUP_ATTACHES))
    def _():
        if not os.environ.get("CGPROCFS_OCI_HOOK"):
            raise cgtest.Skip("CGPROCFS_OCI_HOOK is not set (run through meson test)")
        state["groups"] = make_groups()
        state["bundle"] = tempfile.mkdtemp(prefix="cgprocfs-leak-bundle-")
        with open(os.path.join(state["bundle"], "config.json"), "w") as f:
            json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
        read_cycles(d, state["groups"], WARMUP_CYCLES)
        attach_cycles(d, state["bundle"], WARMUP_ATTACHES)
        state["before"] = holds(d.process.pid)

    @test("%d reads over every served file and %d container views later, the daemon holds what it held "
          "after the warm-up (RSS + < 5 MiB, fds + < 16); the memo served smaps_rollup"
          % (CYCLES, ATTACHES))
    def _():
        check("before" in state, "the warm-up did not run")
        read_cycles(d, state["groups"], CYCLES)
        attach_cycles(d, state["bundle"], ATTACHES)
        (rss0, fds0), (rss1, fds1) = state["before"], holds(d.process.pid)
        cgtest.diag("daemon RSS %.1f -> %.1f MiB, fds %d -> %d" % (rss0 / MIB, rss1 / MIB, fds0, fds1))
        if os.environ.get("CGPROCFS_SANITIZED"):
            # ASan keeps freed memory in quarantine (up to 256 MiB): its
            # LeakSanitizer, at the daemon's exit, is the check there.
            cgtest.diag("built with sanitizers: RSS not bounded here")
        else:
            check(rss1 - rss0 < 5 * MIB, "RSS grew by %.1f MiB" % ((rss1 - rss0) / MIB))
        check(fds1 - fds0 < 16, "fds grew by %d" % (fds1 - fds0))
        stats = cgtest.read_stats(d.mnt)
        check(stats["hits_total"] + stats["misses_total"] >= CYCLES // len(served_paths()),
              "smaps_rollup was not served by the memo", stats)

    @test("the directories of %d short-lived processes, each looked up while it lived, hold no pidfd "
          "once the processes are gone" % LOOKED_UP)
    def _():
        res = cgtest.python_in_view(d.mnt, LOOKER, timeout=300)
        check(cgtest.check_ran(res, "the looker").strip() == str(LOOKED_UP), "not every process was looked up",
              cgtest.describe(res))
        check(cgtest.wait_until(lambda: not pidfds(d.process.pid)),
              "the daemon still holds %d pidfds" % len(pidfds(d.process.pid)))

    @test("no cgroup of the test is left")
    def _():
        remove_groups()
        if "bundle" in state:
            os.unlink(os.path.join(state["bundle"], "config.json"))
            os.rmdir(state.pop("bundle"))
        for h in ("cpu", "cpuacct", "memory", "blkio"):
            check(not os.path.exists(os.path.join(CGROUP, h, TOP)), "left " + os.path.join(CGROUP, h, TOP))

    return t


def main():
    cgtest.skip_all_unless_runnable()
    if not os.path.isdir(os.path.join(CGROUP, "cpu")):
        print("1..0 # SKIP needs the cgroup v1 cpu hierarchy at " + CGROUP)
        return
    try:
        cgtest.run_with_daemon(make_tests)
    finally:
        remove_groups()


if __name__ == "__main__":
    main()
