"""The I/O view seen by callers in real cgroup v1 blkio cgroups, and the
pressure files of this host's unified (v2) hierarchy.

Two new loop devices: one with a generous write_bps_device rule in the
test's blkio cgroup (on v1 the kernel counts a device's I/O per cgroup only
once a throttle rule was set on it), one without. A caller in that cgroup
writes 8 MiB with dd oflag=direct to each, in a private mount namespace with
the view over /proc, and reads /proc/diskstats and psutil's
disk_io_counters(perdisk=True) before and after; a caller of another cgroup
looks too. Both are in a memory cgroup with a limit as well: a caller of
the host's namespaces gets its own cgroups' figures only under a limit
(the container rule, README "Whose figures"). test_uml.py does the same on
a real cgroup v2 kernel."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal  # noqa: E402

BLKIO = "/sys/fs/cgroup/blkio"
MEMORY = "/sys/fs/cgroup/memory"
UNIFIED = "/sys/fs/cgroup/unified"
TOP = "cgprocfs-iotest-%d" % os.getpid()
MIB = 1 << 20
SECTORS_8MIB = 8 * MIB // 512

# What a caller sees, as JSON: diskstats and psutil for the devices named
# in argv[1:] before and after dd writes 8 MiB to each (CG_WRITE=1), its
# pressure files, and the errno of opening one for writing.
PROBE = r'''
import errno, json, os, subprocess, sys
import psutil

names = sys.argv[1:]

def look():
    lines = {}
    for line in open("/proc/diskstats"):
        f = line.split()
        lines[f[2]] = [int(x) for x in f[3:]]
    io = psutil.disk_io_counters(perdisk=True)
    return {"lines": lines, "psutil": {n: io[n]._asdict() for n in names if n in io}}

before = look()
if os.environ.get("CG_WRITE") == "1":
    for n in names:
        subprocess.run(["dd", "if=/dev/zero", "of=/dev/" + n, "bs=1M", "count=8", "oflag=direct"],
                       check=True, stderr=subprocess.DEVNULL)
after = look()
pressure = {}
if os.path.isdir("/proc/pressure"):
    pressure = {n: open("/proc/pressure/" + n).read() for n in sorted(os.listdir("/proc/pressure"))}
def trigger(text):
    try:
        with open("/proc/pressure/memory", "wb", buffering=0) as f:  # O_TRUNC, as a shell's >
            f.write(text)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"before": before, "after": after, "pressure": pressure,
                  "triggers": {"good": trigger(b"some 150000 2000000\0"), "bad": trigger(b"some 0 0\0")}}))
'''

# Prints "same" if the view's file argv[1] is the host's, read just before
# or just after it, in one of 50 tries (the host's counters move).
SAME_AS_HOST = r'''
import sys
view_path = sys.argv[1]
real_path = "/proc/" + view_path.rsplit("/proc/", 1)[1]
def read(p):
    with open(p, "rb") as f:
        return f.read()
for _ in range(50):
    before, view, after = read(real_path), read(view_path), read(real_path)
    if view in (before, after):
        print("same")
        break
else:
    print("differs:\n%r\n%r" % (view[:400], before[:400]))
'''

# Fields of a diskstats line after the name, from 0.
READS, SECTORS_READ, WRITES, SECTORS_WRITTEN = 0, 2, 4, 6

# Reads /dev/argv[1]'s diskstats line, writes 4 KiB to it (O_DIRECT, in
# this process) and reads the line again at once, 20 times; prints the
# [before, after] pairs of its fields after the name.
WRITE_THEN_READ = r'''
import json, mmap, os, sys
name = sys.argv[1]
def fields():
    for line in open("/proc/diskstats"):
        f = line.split()
        if f[2] == name:
            return [int(x) for x in f[3:]]
page = mmap.mmap(-1, 4096)  # aligned, as O_DIRECT wants
fd = os.open("/dev/" + name, os.O_WRONLY | os.O_DIRECT)
pairs = []
for _ in range(20):
    before = fields()
    os.pwrite(fd, page, 0)
    pairs.append([before, fields()])
print(json.dumps(pairs))
'''


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def host_lines():
    with open("/proc/diskstats") as f:
        return {l.split()[2]: [int(x) for x in l.split()[3:]] for l in f}


def root_counts(dev):
    """Does the top blkio cgroup list dev (the kernel counts its I/O per
    cgroup: a throttle rule was set on its queue at some time)?"""
    with open(os.path.join(BLKIO, "blkio.throttle.io_serviced_recursive")) as f:
        return any(line.split()[0] == "%d:%d" % (dev.major, dev.minor) for line in f)


def own_bytes_written(group, dev):
    with open(os.path.join(group, "blkio.throttle.io_service_bytes_recursive")) as f:
        for line in f:
            f = line.split()
            if f[0] == "%d:%d" % (dev.major, dev.minor) and f[1] == "Write":
                return int(f[2])
    return 0


def probe(mnt, groups, names, write_them):
    env = dict(os.environ, CG_MNT=mnt, CG_WRITE="1" if write_them else "0")
    res = cgtest.run(cgtest.in_cgroups(groups, [cgtest.PYTHON, "-c", PROBE] + names, cgtest.BIND_PROC),
                     env=env, timeout=120)
    return json.loads(cgtest.check_ran(res, "the probe"))


def pressure_total(text, kind="some"):
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == kind:
            return int(dict(p.split("=") for p in f[1:])["total"])
    raise AssertionError("no %s line in %r" % (kind, text))


# What the tests made: cgroups (path, hierarchy) and loop devices.
STATE = {"made": []}


def make_tests(d):
    t, test = cgtest.test_registry()
    state = STATE

    def group(root, name):
        path = os.path.join(root, TOP, name) if name else os.path.join(root, TOP)
        os.mkdir(path)
        state["made"].append((path, root))
        return path

    @test("a caller writing 8 MiB to a device with a throttle rule sees its own writes in diskstats and psutil; "
          "a device without one keeps the host's line")
    def _():
        ruled, plain = state["ruled"], state["plain"] = cgtest.LoopDevice(), cgtest.LoopDevice()
        check(not root_counts(plain), "the new %s is counted already: not a new queue" % plain.name)
        group(BLKIO, None)
        g = state["writer"] = group(BLKIO, "writer")
        state["other"] = group(BLKIO, "other")
        limited = state["limited"] = group(MEMORY, None)
        write(os.path.join(limited, "memory.limit_in_bytes"), str(4 << 30))
        write(os.path.join(g, "blkio.throttle.write_bps_device"), "%d:%d %d" % (ruled.major, ruled.minor, 1 << 30))
        # 4 MiB from outside the cgroup first: not the cgroup's
        cgtest.check_ran(cgtest.run(["dd", "if=/dev/zero", "of=" + ruled.path, "bs=1M", "count=4", "oflag=direct"]),
                         "dd from the root cgroup")
        got = probe(d.mnt, [g, limited], [ruled.name, plain.name], True)
        host = host_lines()
        b, a = got["before"]["lines"], got["after"]["lines"]
        check_equal(b[ruled.name][SECTORS_WRITTEN], 0, "sectors written by a new cgroup before it wrote")
        check(a[ruled.name][SECTORS_WRITTEN] >= SECTORS_8MIB, "the cgroup's 8 MiB not in its diskstats line",
              a[ruled.name])
        check_equal(a[ruled.name][SECTORS_WRITTEN], own_bytes_written(g, ruled) // 512,
                    "sectors written: the cgroup's own count")
        check(a[ruled.name][WRITES] > 0, "no writes counted", a[ruled.name])
        check_equal(a[ruled.name][SECTORS_READ], 0, "sectors read (dd read nothing from it)")
        ps = got["after"]["psutil"][ruled.name]
        check_equal(ps["write_bytes"], a[ruled.name][SECTORS_WRITTEN] * 512, "psutil's write_bytes")
        check_equal(ps["write_count"], a[ruled.name][WRITES], "psutil's write_count")
        check(ps["write_bytes"] - got["before"]["psutil"][ruled.name]["write_bytes"] >= 8 * MIB,
              "psutil did not see 8 MiB written", got["before"]["psutil"][ruled.name], ps)
        check_equal(a[plain.name], host[plain.name], "the line of the device with no rule (the host's)")
        check(host[plain.name][SECTORS_WRITTEN] >= SECTORS_8MIB, "the host did not count the writes to " + plain.name,
              host[plain.name])

    @test("a caller that reads diskstats, writes 4 KiB and reads it again at once sees its write, 20 times in a "
          "row (its counters are exact, as the kernel's are)")
    def _():
        res = cgtest.run(cgtest.in_cgroups([state["writer"], state["limited"]],
                                           [cgtest.PYTHON, "-c", WRITE_THEN_READ, state["ruled"].name],
                                           cgtest.BIND_PROC), env=dict(os.environ, CG_MNT=d.mnt), timeout=60)
        pairs = json.loads(cgtest.check_ran(res, "the writer"))
        check_equal(len(pairs), 20, "writes read back")
        check_equal([(b[SECTORS_WRITTEN], a[SECTORS_WRITTEN]) for b, a in pairs
                     if a[SECTORS_WRITTEN] != b[SECTORS_WRITTEN] + 8], [],
                    "[before, after] sectors written where after was not before + 8")

    @test("a caller of another cgroup sees none of those writes, and the host's line of the other device")
    def _():
        ruled, plain = state["ruled"], state["plain"]
        got = probe(d.mnt, [state["other"], state["limited"]], [ruled.name, plain.name], False)
        a = got["after"]["lines"]
        check(host_lines()[ruled.name][SECTORS_WRITTEN] >= SECTORS_8MIB, "the host did not count the writes")
        check_equal([a[ruled.name][i] for i in (READS, SECTORS_READ, WRITES, SECTORS_WRITTEN)], [0, 0, 0, 0],
                    "another cgroup's counts for " + ruled.name)
        check_equal(got["after"]["psutil"][ruled.name]["write_bytes"], 0, "psutil write_bytes in another cgroup")
        check_equal(a[plain.name], host_lines()[plain.name], "the line of the device with no rule")

    @test("a caller in the root cgroup reads the host's diskstats byte for byte")
    def _():
        res = cgtest.run(cgtest.in_cgroups([BLKIO], [cgtest.PYTHON, "-c", SAME_AS_HOST,
                                                     os.path.join(d.mnt, "proc/diskstats")]))
        check_equal(cgtest.check_ran(res, "the reader in the root cgroup").strip(), "same",
                    "diskstats through the view (in 50 tries, the host's read before and after)")

    @test("pressure files come from the caller's cgroup in the unified hierarchy; a PSI trigger written to one "
          "is taken, a malformed one gets the kernel's EINVAL")
    def _():
        if not os.path.exists(os.path.join(UNIFIED, "cpu.pressure")):
            raise cgtest.Skip("no pressure files in a unified hierarchy at " + UNIFIED)
        u = group(UNIFIED, None)
        names = sorted(os.listdir("/proc/pressure"))
        before = {n: pressure_total(cgtest.read_all(os.path.join(u, n + ".pressure")).decode()) for n in names}
        got = probe(d.mnt, [u, state["limited"]], [], False)
        after = {n: pressure_total(cgtest.read_all(os.path.join(u, n + ".pressure")).decode()) for n in names}
        check_equal(sorted(got["pressure"]), names, "the files of /proc/pressure")
        for n in names:
            seen = pressure_total(got["pressure"][n])
            check(before[n] <= seen <= after[n], "pressure/%s: total %d not the cgroup's (%d..%d; the host's %d)"
                  % (n, seen, before[n], after[n], pressure_total(cgtest.read_all("/proc/pressure/" + n).decode())))
            check(got["pressure"][n].startswith("some avg10="), "pressure/" + n, got["pressure"][n])
        check_equal(got["triggers"], {"good": "ok", "bad": "EINVAL"}, "triggers written to pressure/memory")

    @test("with --no-io-view diskstats and pressure are the host's, delegated")
    def _():
        with cgtest.Daemon(args=["--no-io-view"]) as off:
            for name in ("diskstats", "pressure"):
                link = os.path.join(off.mnt, "proc", name)
                check(os.path.islink(link), "%s is not the host's (a link into .real)" % name)
                check_equal(os.readlink(link), ".real/" + name, name + "'s link")

    @test("no cgroup or loop device of the test is left")
    def _():
        cleanup(state)
        for root in (BLKIO, UNIFIED, MEMORY):
            check(not os.path.exists(os.path.join(root, TOP)), "left " + os.path.join(root, TOP))

    return t


def cleanup(state):
    for path, root in reversed(state.get("made", [])):
        cgtest.remove_cgroups([path], root)
    state["made"] = []
    for key in ("ruled", "plain"):
        dev = state.pop(key, None)
        if dev:
            dev.close()


def main():
    cgtest.skip_all_unless_runnable()
    if not os.path.exists(os.path.join(BLKIO, "blkio.throttle.io_serviced_recursive")):
        print("1..0 # SKIP needs the cgroup v1 blkio hierarchy with throttle files at " + BLKIO)
        return
    if not os.path.exists("/dev/loop-control"):
        print("1..0 # SKIP needs loop devices (/dev/loop-control)")
        return
    try:
        cgtest.run_with_daemon(make_tests)
    finally:  # after a failure: whatever is left
        cleanup(STATE)
        for root in (BLKIO, UNIFIED, MEMORY):
            top = os.path.join(root, TOP)
            if os.path.isdir(top):
                cgtest.remove_cgroups([p for p, _, _ in os.walk(top, topdown=False)], root)


if __name__ == "__main__":
    main()
