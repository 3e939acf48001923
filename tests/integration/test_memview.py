"""The memory view seen by callers in real cgroup v1 memory cgroups.

Each caller joins a memory cgroup of the test, binds the view over /proc
in a private mount namespace, and runs what users run: free -b, top -bn1,
vmstat, psutil's virtual_memory() and swap_memory(), and reads meminfo,
swaps and vmstat itself; then it touches 100 MiB and looks again. What it
must see comes from the limits the test wrote and the host's files.
test_uml.py runs the same probe on a real cgroup v2 kernel."""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_served  # noqa: E402
from cgtest import check, check_equal  # noqa: E402

MEMORY = "/sys/fs/cgroup/memory"
TOP = "cgprocfs-memtest-%d" % os.getpid()
MIB = 1 << 20
LIMIT = 256 * MIB
# Two cgroup names (and their MiB) whose unkeyed memory classes were one.
COLLIDE_TOP = "cgprocfs-collide"
COLLIDING = (("chazh9ru85666", 128), ("c9f2stqsk4fiv", 384))
SWAP = 64 * MIB

# What a caller sees, as JSON: before and after touching 100 MiB.
PROBE = r'''
import json, re, subprocess, sys, time
import psutil

def run(*argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True).stdout

def meminfo():
    out = {}
    for line in open("/proc/meminfo"):
        name, value = line.split(":", 1)
        f = value.split()
        out[name] = int(f[0]) * (1024 if f[1:] == ["kB"] else 1)
    return out

def vmstat_cmd():
    p = subprocess.run(["vmstat"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.stdout.splitlines()[-1].split() if p.returncode == 0 else p.stderr.strip()

def look():
    free = run("free", "-b").splitlines()
    mem, swap = free[1].split(), free[2].split()
    top = re.search(r"MiB Mem :\s*([0-9.]+) total", run("top", "-bn1"))
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    vmstat = dict(l.split() for l in open("/proc/vmstat"))
    return {
        "meminfo": meminfo(),
        "free": {"total": int(mem[1]), "used": int(mem[2]), "available": int(mem[6]), "swap_total": int(swap[1])},
        "top_total_mib": float(top.group(1)) if top else None,
        "psutil": {"total": vm.total, "available": vm.available, "used": vm.used, "swap_total": sw.total,
                   "swap_free": sw.free},
        "vmstat_cmd": vmstat_cmd(),
        "vmstat": {k: int(v) for k, v in vmstat.items()},
        "swaps": open("/proc/swaps").read(),
    }

before = look()
ballast = bytearray(100 << 20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
# The view may show a text up to a second old: how long until it moved.
touched = time.monotonic()
while (before["meminfo"]["MemAvailable"] - meminfo()["MemAvailable"] < (90 << 20)
       and time.monotonic() - touched < 3):
    time.sleep(0.02)
waited = time.monotonic() - touched
after = look()
print(json.dumps({"before": before, "after": after, "waited": waited}))
'''


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read_text(path):
    with open(path) as f:
        return f.read()


def host_meminfo():
    out = {}
    for line in read_text("/proc/meminfo").splitlines():
        name, value = line.split(":", 1)
        f = value.split()
        out[name] = int(f[0]) * (1024 if f[1:] == ["kB"] else 1)
    return out


NUMBER = re.compile(r" *\d+")


def host_outside(view, host_texts):
    """What in view is not the host's, given the host's texts read around
    it: the text with its numbers taken out must be the host's byte for
    byte, and each number within what the host's showed there, give or
    take 1 % (the host's counters move between any two reads)."""
    shapes = {NUMBER.sub("#", t) for t in host_texts}
    if len(shapes) != 1 or NUMBER.sub("#", view) not in shapes:
        return ["the layout is not the host's: %r" % view[:300]]
    wrong = []
    columns = list(zip(*([int(n) for n in NUMBER.findall(t)] for t in host_texts)))
    for i, (v, seen) in enumerate(zip((int(n) for n in NUMBER.findall(view)), columns)):
        slack = max(1024, max(seen) // 100)
        if not min(seen) - slack <= v <= max(seen) + slack:
            wrong.append("number %d of %r: %d (the host's: %d to %d)" % (i, view[:40], v, min(seen), max(seen)))
    return wrong


def check_probe(where, got, limit, swap_limit, host, top_vmstat_run=True):
    """What a caller limited to limit bytes (swap to swap_limit, or None
    when the kernel does not count swap) must see: got is PROBE's.
    top_vmstat_run FALSE: procps's top and vmstat cannot read the real
    /proc there either (their output is then not checked)."""
    b, a = got["before"], got["after"]
    total = min(limit, host["MemTotal"])
    for when, s in (("before", b), ("after", a)):
        m = s["meminfo"]
        check_equal(m["MemTotal"], total, "%s, %s: MemTotal" % (where, when))
        check(0 <= m["MemFree"] <= m["MemAvailable"] <= m["MemTotal"],
              "%s, %s: not 0 <= MemFree <= MemAvailable <= MemTotal" % (where, when),
              {k: m[k] for k in ("MemTotal", "MemFree", "MemAvailable")})
        check_equal(s["free"]["total"], total, "%s, %s: free -b's total" % (where, when))
        check_equal(s["psutil"]["total"], total, "%s, %s: psutil.virtual_memory().total" % (where, when))
        if top_vmstat_run:
            check_equal(s["top_total_mib"], round(total / MIB, 1), "%s, %s: top's MiB Mem total" % (where, when))
        swap_total = min(swap_limit, host["SwapTotal"]) if swap_limit is not None else host["SwapTotal"]
        check_equal(m["SwapTotal"], swap_total, "%s, %s: SwapTotal" % (where, when))
        check_equal(s["psutil"]["swap_total"], swap_total, "%s, %s: psutil.swap_memory().total" % (where, when))
        check(0 <= m["SwapFree"] <= m["SwapTotal"], "%s, %s: SwapFree outside [0, SwapTotal]" % (where, when),
              m["SwapFree"], m["SwapTotal"])
        swaps = s["swaps"].splitlines()
        check(swaps and swaps[0].startswith("Filename"), "%s: /proc/swaps has no header" % where, s["swaps"])
        if swap_total and swap_limit is not None:
            check_equal(len(swaps), 2, "%s: /proc/swaps lines with a swap limit" % where)
            f = swaps[1].split()
            check_equal(int(f[2]) * 1024, swap_total, "%s: the swap line's size" % where)
            check_equal(int(f[3]) * 1024, swap_total - m["SwapFree"], "%s: the swap line's used" % where)
        check(s["vmstat"]["pgfault"] > 0, "%s: vmstat pgfault is 0" % where, s["vmstat"]["pgfault"])
        # vmstat (the command): free memory, in KiB, at most the limit
        if top_vmstat_run:
            check(isinstance(s["vmstat_cmd"], list), "%s: vmstat failed" % where, s["vmstat_cmd"])
            check(int(s["vmstat_cmd"][3]) * 1024 <= total, "%s: vmstat's free above MemTotal" % where,
                  s["vmstat_cmd"])
    # 100 MiB touched: used up and available down by as much, within 10 %,
    # and within a second.
    check(got["waited"] <= 1.2, "%s: meminfo took %.2f s to show 100 MiB touched" % (where, got["waited"]))
    for what, delta in (("free -b used", a["free"]["used"] - b["free"]["used"]),
                        ("psutil used", a["psutil"]["used"] - b["psutil"]["used"]),
                        ("MemAvailable", b["meminfo"]["MemAvailable"] - a["meminfo"]["MemAvailable"]),
                        ("free -b available", b["free"]["available"] - a["free"]["available"])):
        check(abs(delta - 100 * MIB) <= 10 * MIB, "%s: %s moved by %.1f MiB for 100 MiB touched"
              % (where, what, delta / MIB))
    check(a["vmstat"]["pgfault"] - b["vmstat"]["pgfault"] >= 100 * MIB // 4096 * 0.9,
          "%s: vmstat pgfault did not count the 100 MiB of faults" % where,
          b["vmstat"]["pgfault"], a["vmstat"]["pgfault"])


class Groups:
    """TOP/<name> memory cgroups of this test, removed on close."""

    def __init__(self):
        if not os.path.isdir(MEMORY):
            raise cgtest.Skip("no cgroup v1 memory hierarchy at " + MEMORY)
        self.made = []
        self.memsw = os.path.exists(os.path.join(MEMORY, "memory.memsw.limit_in_bytes"))
        self.make(TOP)

    def make(self, name, limit=None, swap=None):
        path = os.path.join(MEMORY, name)
        os.mkdir(path)
        self.made.append(path)
        if limit is not None:
            write(os.path.join(path, "memory.limit_in_bytes"), str(limit))
        if swap is not None and self.memsw:
            write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(limit + swap))
        return path

    def remove(self):
        cgtest.remove_cgroups(reversed(self.made), MEMORY)


def probe(mnt, group, setup=cgtest.BIND_PROC):
    """PROBE in memory cgroup group, the view at mnt bound by setup."""
    res = cgtest.run(cgtest.in_cgroups([group], [cgtest.PYTHON, "-c", PROBE], setup),
                     env=dict(os.environ, CG_MNT=mnt), timeout=120)
    return json.loads(cgtest.check_ran(res, "the probe"))


def make_tests(d):
    t, test = cgtest.test_registry()
    state = {}

    @test("a caller limited to 256 MiB (and 64 MiB of swap) sees it in meminfo, free, top, vmstat and psutil; "
          "touching 100 MiB moves used and available by as much")
    def _():
        g = state["groups"] = Groups()
        group = g.make(os.path.join(TOP, "limited"), LIMIT, SWAP)
        check_probe("limited", probe(d.mnt, group), LIMIT, SWAP if g.memsw else None, host_meminfo())

    @test("a cgroup without a limit of its own under a 256 MiB parent sees the parent's limit")
    def _():
        g = state["groups"]
        parent = g.make(os.path.join(TOP, "parent"), LIMIT, SWAP)
        child = g.make(os.path.join(TOP, "parent", "child"))
        check_probe("child of " + os.path.basename(parent), probe(d.mnt, child), LIMIT,
                    SWAP if g.memsw else None, host_meminfo())

    @test("file-level binds of meminfo, swaps and vmstat (LXCFS style) show the same limit")
    def _():
        g = state["groups"]
        group = g.make(os.path.join(TOP, "files"), LIMIT, SWAP)
        setup = ''.join('mount --bind "$CG_MNT/proc/%s" /proc/%s || exit 97\n' % (f, f)
                        for f in ("meminfo", "swaps", "vmstat"))
        check_probe("file binds", probe(d.mnt, group, setup), LIMIT, SWAP if g.memsw else None, host_meminfo())

    @test("a caller with no memory limit reads the host's meminfo, swaps and vmstat: the host's lines byte for byte, "
          "each figure the host's of that moment")
    def _():
        # meminfo and swaps may be served up to a second old, vmstat is
        # rendered at each open: each is checked against the host's texts
        # of the 1.2 s before it and one just after (under load, MemFree
        # moves every few milliseconds, so the view's own text is seldom
        # among them).
        for name in ("meminfo", "swaps", "vmstat"):
            seen, started = [], time.monotonic()
            while time.monotonic() - started < 1.2:
                seen.append(read_text("/proc/" + name))
            view = read_text(os.path.join(d.mnt, "proc", name))
            seen.append(read_text("/proc/" + name))
            wrong = host_outside(view, seen)
            check(not wrong, "%s through the view is not the host's" % name, *wrong[:10])

    @test("two callers limited to 256 and 512 MiB reading meminfo at once, by read() and sendfile, each see "
          "their own MemTotal")
    def _():
        g = state["groups"]
        procs = []
        for size in (256, 512):
            group = g.make(os.path.join(TOP, "mixed%d" % size), size * MIB)
            want = str(min(size * MIB, host_meminfo()["MemTotal"]) // 1024)
            for _ in range(4):
                argv = [cgtest.PYTHON, "-c", test_served.MIXED_READER, os.path.join(d.mnt, "proc/meminfo"), want, "4"]
                procs.append((size, subprocess.Popen(cgtest.in_cgroups([group], argv), stdout=subprocess.PIPE,
                                                     text=True)))
        wrong = []
        for size, p in procs:
            out, _ = p.communicate(timeout=60)
            check_equal(p.returncode, 0, "a reader in the %d MiB cgroup" % size)
            reads, bad, empty = map(int, out.split(maxsplit=3)[:3])
            if bad or empty or not reads:
                wrong.append("%d MiB: %d of %d reads wrong, %d empty (first: %s)"
                             % (size, bad, reads, empty, out.split(maxsplit=3)[3:]))
        check(not wrong, "readers got another cgroup's meminfo", *wrong)

    @test("two cgroups whose names a tenant chose so that their unkeyed classes are one (a 52-bit FNV-1a "
          "collision) each see their own MemTotal, whichever reads first")
    def _():
        # Security review, issue 39 finding 3: a class was FNV-1a of the
        # cgroup's path, so a tenant with a delegated subtree could name a
        # cgroup into another's class and read (or set) its figures. The
        # pair is tests/unit/test_classhash.c's; its paths are fixed, as
        # the hash was of them.
        g = state["groups"] = state.get("groups") or Groups()
        top = g.make(COLLIDE_TOP) if not os.path.isdir(os.path.join(MEMORY, COLLIDE_TOP)) else None
        if top is None:
            g.made.append(os.path.join(MEMORY, COLLIDE_TOP))
        seen, inodes = {}, {}
        groups = [(name, g.make(os.path.join(COLLIDE_TOP, name), size * MIB)) for name, size in COLLIDING]
        code = ("import os; p = '%s/proc/meminfo'; t = open(p).read(); "
                "print(os.stat(p).st_ino, t.split()[1])" % d.mnt)
        for name, group in groups + groups:
            res = cgtest.run(cgtest.in_cgroups([group], [cgtest.PYTHON, "-c", code]))
            ino, total = cgtest.check_ran(res, "meminfo read in " + name).split()
            seen.setdefault(name, []).append(int(total) // 1024)
            inodes[name] = ino
        cgtest.diag("inodes: %s" % inodes)
        wrong = ["%s (%d MiB): MemTotal %s MiB" % (name, size, seen[name])
                 for name, size in COLLIDING if seen[name] != [size, size]]
        check(not wrong, "a cgroup read the other's meminfo", *wrong)

    @test("no cgroup of the test is left")
    def _():
        g = state.pop("groups", None)
        if g:
            g.remove()
        check(not os.path.exists(os.path.join(MEMORY, TOP)), "left " + os.path.join(MEMORY, TOP))

    return t


def main():
    cgtest.skip_all_unless_runnable()
    if not os.path.isdir(MEMORY):
        print("1..0 # SKIP needs the cgroup v1 memory hierarchy at " + MEMORY)
        return
    try:
        cgtest.run_with_daemon(make_tests)
    finally:  # after a failure: whatever is left, children first
        for top in (os.path.join(MEMORY, TOP), os.path.join(MEMORY, COLLIDE_TOP)):
            cgtest.remove_cgroups([p for p, _, _ in os.walk(top, topdown=False)] if os.path.isdir(top) else [],
                                  MEMORY)


if __name__ == "__main__":
    main()
