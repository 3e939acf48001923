"""PSI triggers through the view: a poller of the view's /proc/pressure/memory
in a cgroup under memory pressure is woken by its cgroup's pressure, as a
poller of the cgroup's own memory.pressure is, and one in a calm sibling is
not; pollers can be frozen and thawed; the triggers go on across a SIGKILL
of the daemon and a --replace; a tenant that hoards triggers fails alone.

On this host's kernel, in its unified (v2) hierarchy, where PSI counts per
cgroup: the user-mode Linux guest's kernel (Debian's 6.1) is built without
PSI (no /proc/pressure, no *.pressure files). The pressure comes from the
v1 memory cgroup's 16 MiB limit under a process that touches a 24 MiB file
map (its pages charged to that cgroup, refaulted), in a child cgroup of the
pollers' own. The daemon here lacks
CAP_SYS_RESOURCE: its triggers, as every unprivileged one since Linux 6.5,
have 2 s windows."""

import contextlib
import errno
import json
import os
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal  # noqa: E402

MEMORY = "/sys/fs/cgroup/memory"
UNIFIED = "/sys/fs/cgroup/unified"
TOP = "cgprocfs-triggers-%d" % os.getpid()
TRIGGER = "some 50000 2000000"
# Touches every page of the map argv[1] (its pages dropped first, so that
# they are charged to this cgroup), over and over.
HOG = r"""
import mmap, os, sys
f = open(sys.argv[1], "rb")
os.fsync(f.fileno())  # written just before: clean pages only are dropped
os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
while True:
    sum(m[i] for i in range(0, len(m), 4096))
"""

# A poller: argv path, trigger, timeout (ms; -1: none). One JSON line per
# event ({"t", "ev"}), per timeout ({"hb"}), and {"armed"} or {"error"}.
POLLER = r"""
import errno, json, os, select, sys, time
path, trigger, timeout = sys.argv[1], sys.argv[2].encode() + b"\0", int(sys.argv[3])
def say(**kw):
    print(json.dumps(kw), flush=True)
fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
try:
    os.write(fd, trigger)
except OSError as e:
    say(error=errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(1)
say(armed=time.time())
p = select.poll()
p.register(fd, select.POLLPRI)
while True:
    got = p.poll(timeout)
    now = time.time()
    for _, ev in got:
        say(t=now, ev=ev)
        if ev & select.POLLERR:
            sys.exit(2)
    if not got:
        say(hb=now)
"""

# Opens argv[2] fds of argv[1] and writes the trigger argv[3] to each: prints how
# many were taken and the errors of the others, then holds them until
# stdin closes.
HOARDER = r"""
import collections, errno, json, os, sys
fds, errors = [], collections.Counter()
for _ in range(int(sys.argv[2])):
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, (sys.argv[3] + "\0").encode())
        fds.append(fd)
    except OSError as e:
        errors[errno.errorcode.get(e.errno, str(e.errno))] += 1
        os.close(fd)
print(json.dumps({"taken": len(fds), "errors": errors}), flush=True)
sys.stdin.read()
"""


class Run:
    """The test's cgroups, files and processes."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cgprocfs-triggers-", dir="/var/tmp")
        self.procs = {}
        self.groups = {}
        # The pollers outside the 16 MiB limit (stalls of their own would
        # make them late), its pressure theirs too (a cgroup's counts its
        # descendants').
        for name, limit in (("press", 1 << 30), ("press/hog", 16 << 20), ("calm", 1 << 30), ("gone", 1 << 30)):
            dirs = [os.path.join(UNIFIED, TOP, name), os.path.join(MEMORY, TOP, name)]
            for d in dirs:
                os.makedirs(d)
            with open(os.path.join(dirs[1], "memory.limit_in_bytes"), "w") as f:
                f.write(str(limit))
            self.groups[name] = dirs
        self.hogfile = os.path.join(self.dir, "hogfile")
        with open(self.hogfile, "wb") as f:
            for _ in range(24):
                f.write(os.urandom(1 << 20))
        for name, text in (("poller", POLLER), ("hoarder", HOARDER), ("hog", HOG)):
            with open(os.path.join(self.dir, name + ".py"), "w") as f:
                f.write(text)

    def script(self, name):
        return os.path.join(self.dir, name + ".py")

    def start(self, group, name, argv, **kw):
        def join():
            for d in self.groups[group]:
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
        out = open(os.path.join(self.dir, name + ".out"), "w")
        kw.setdefault("stdout", out)
        p = subprocess.Popen(argv, stderr=subprocess.STDOUT if kw["stdout"] is out else None,
                             preexec_fn=join, **kw)
        self.procs[name] = p
        return p

    def poller(self, group, name, path, timeout):
        return self.start(group, name, [sys.executable, self.script("poller"), path, TRIGGER, str(timeout)])

    def lines(self, name):
        with open(os.path.join(self.dir, name + ".out")) as f:
            return [json.loads(line) for line in f if line.startswith("{")]

    def events(self, name, after=0):
        return [e["t"] for e in self.lines(name) if "t" in e and e["t"] > after and e["ev"] & select.POLLPRI]

    def cleanup(self):
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()
        for root in (UNIFIED, MEMORY):
            top = os.path.join(root, TOP)
            if os.path.isdir(top):
                cgtest.remove_cgroups([p for p, _, _ in os.walk(top, topdown=False)], root)
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, name))
            os.rmdir(self.dir)


def after_kernel(v, kernel_ev):
    """How long after the kernel file's poller saw the same firing (the
    nearest) the view's poller saw it, at v (negative: before)."""
    return v - min(kernel_ev, key=lambda k: abs(k - v))


def freeze(group):
    """Freeze a v2 cgroup, then thaw it: how long until it said frozen."""
    def frozen():
        with open(os.path.join(group, "cgroup.events")) as f:
            return dict(line.split() for line in f)["frozen"] == "1"
    start = time.time()
    with open(os.path.join(group, "cgroup.freeze"), "w") as f:
        f.write("1")
    ok = cgtest.wait_until(frozen, 3)
    took = time.time() - start
    time.sleep(0.3)
    with open(os.path.join(group, "cgroup.freeze"), "w") as f:
        f.write("0")
    cgtest.wait_until(lambda: not frozen(), 3)
    return ok, took, time.time()


def make_tests(d, r):
    t, test = cgtest.test_registry()
    def view():
        return os.path.join(d.mnt, "proc/pressure/memory")
    st = {}

    @test("pollers of the view's pressure/memory in a cgroup (a container: a 1 GiB limit) and in a calm sibling, "
          "and one of the first cgroup's own memory.pressure, set the trigger " + TRIGGER)
    def _():
        r.poller("press", "view-press", view(), -1)
        r.poller("press", "kernel-press", os.path.join(r.groups["press"][0], "memory.pressure"), -1)
        r.poller("calm", "view-calm", view(), 200)
        r.poller("calm", "host-calm", "/proc/pressure/memory", -1)  # what the view must not be
        for name in ("view-press", "kernel-press", "view-calm", "host-calm"):
            first = cgtest.wait_until(lambda: r.lines(name), 10)
            check(first and "armed" in first[0], "the %s poller's trigger: %s" % (name, first), d.log())

    @test("a process touching a 24 MiB file map under a 16 MiB limit, in a child of the first cgroup, wakes the "
          "view's poller in its cgroup within two windows, as it wakes the poller of the cgroup's own file; the "
          "calm sibling's poller is not woken (one there of the kernel's /proc/pressure/memory is)")
    def _():
        st["hog"] = time.time()
        r.start("press/hog", "hog", [sys.executable, r.script("hog"), r.hogfile])
        cgtest.wait_until(lambda: len(r.events("view-press")) >= 3 and len(r.events("kernel-press")) >= 3, 12)
        view_ev, kernel_ev = r.events("view-press"), r.events("kernel-press")
        check(kernel_ev, "the kernel's own file never fired: no pressure was made")
        check(view_ev and view_ev[0] - st["hog"] < 4.5, "the view's poller woken %s s after the process started"
              % [round(v - st["hog"], 3) for v in view_ev], d.log())
        lat = [after_kernel(v, kernel_ev) for v in view_ev] if kernel_ev else []
        cgtest.diag("the view's poller woken after the kernel file's, per firing (ms): %s"
                    % [round(x * 1000, 2) for x in lat])
        check(lat and max(abs(x) for x in lat) < 0.5, "the view's poller woken %s s after the kernel file's" % lat)
        check_equal(r.events("view-calm"), [], "firings seen by the calm sibling's poller")
        check(r.events("host-calm"), "a poller of the kernel's /proc/pressure/memory in the calm sibling was not "
              "woken: the test cannot tell the sibling's pressure from the host's")

    @test("pollers blocked in poll() on the view (the calm one, and the one being woken) are frozen with "
          "cgroup.freeze within a second, and go on after the thaw")
    def _():
        for name in ("calm", "press"):
            ok, took, thawed = freeze(r.groups[name][0])
            check(ok and took < 1.0, "%s: frozen %s after %.3f s" % (name, ok, took))
            what = "view-calm" if name == "calm" else "view-press"
            went_on = cgtest.wait_until(lambda: [e for e in r.lines(what) if e.get("t", e.get("hb", 0)) > thawed], 6)
            check(went_on, "the %s poller did nothing in the 6 s after its thaw" % name, r.lines(what)[-3:])

    @test("after a SIGKILL of the daemon (its keeper holding the view) and after a --replace, the next daemon "
          "sets the trigger again: the poller (poll() with no timeout all along) is woken by its cgroup's "
          "pressure again, never told POLLERR")
    def _():
        for what, change in (("a SIGKILL", d.crash_and_restart), ("a --replace", d.take_over)):
            change()
            at = time.time()
            woken = cgtest.wait_until(lambda: r.events("view-press", at), 8)
            check(woken, "no firing in the 8 s after %s" % what, r.lines("view-press")[-3:], d.log())
        check_equal(r.procs["view-press"].poll(), None, "the poller's exit (2: POLLERR)")

    @test("a tenant (a pid namespace) writing 1000 triggers holds 64 and gets ENOSPC for the rest; meanwhile "
          "another caller sets one")
    def _():
        hoard = r.start("calm", "hoarder", ["unshare", "--pid", "--fork", sys.executable, r.script("hoarder"),
                                              view(), "1000", TRIGGER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        got = json.loads(hoard.stdout.readline() or "null")
        r.poller("calm", "other", view(), 100)
        other = cgtest.wait_until(lambda: r.lines("other"), 10)
        hoard.stdin.close()
        hoard.wait()
        check_equal(got, {"taken": 64, "errors": {"ENOSPC": 936}}, "the hoarder's triggers")
        check(other and "armed" in other[0], "another caller's trigger: %s" % other)

    @test("when the cgroup of a poller's trigger is removed (the poller moved out first), the poller, in poll() "
          "with no timeout, is told POLLERR, as by the kernel's own file")
    def _():
        p = r.poller("gone", "gone", view(), -1)
        armed = cgtest.wait_until(lambda: r.lines("gone"), 10)
        check(armed and "armed" in armed[0], "the poller's trigger: %s" % armed)
        for src, dst in zip(r.groups["gone"], r.groups["calm"]):
            with open(os.path.join(dst, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
            # v1 may say EBUSY for a moment after its last task left (seen
            # in CI under load)
            check(cgtest.wait_until(lambda: rmdir_done(src), 5), "%s cannot be removed" % src)
        told = cgtest.wait_until(lambda: [e for e in r.lines("gone") if e.get("ev", 0) & select.POLLERR], 5)
        check(told, "no POLLERR in the 5 s after the cgroup went", r.lines("gone"))
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(5)
        check_equal(p.returncode, 2, "the poller's exit (2: it saw POLLERR)")

    return t


def rmdir_done(path):
    try:
        os.rmdir(path)
    except OSError as e:
        if e.errno != errno.EBUSY:
            raise
        return False
    return True


def main():
    cgtest.skip_all_unless_runnable()
    if not os.path.exists(os.path.join(UNIFIED, "memory.pressure")) or not os.path.isdir(MEMORY):
        print("1..0 # SKIP needs PSI in a unified hierarchy at %s and the v1 memory hierarchy at %s"
              % (UNIFIED, MEMORY))
        return
    r = Run()
    try:
        cgtest.run_with_daemon(lambda d: make_tests(d, r))
    finally:
        r.cleanup()


if __name__ == "__main__":
    main()
