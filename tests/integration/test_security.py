"""The view never widens access: an unprivileged user (nobody:nogroup, no
supplementary groups) gets through the view exactly what the real procfs
gives it, errno for errno, including for the files the daemon serves with
its own root privileges, and its writes run with its own rights."""

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, check_ran  # noqa: E402

DROP = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
# Root (euid 0, the host's user namespace) without capabilities, as a
# container's root without CAP_SYS_PTRACE.
CAPLESS = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]
CONTAINED_UID, OTHER_CONTAINER_UID = 1000000, 2000000
root_sleeper = nobody_sleeper = contained_sleeper = None

# Runs as nobody in the view. CG_ROOT_PID: a root process, CG_NOBODY_PID: a
# process of nobody's, CG_CONTAINED_PID: a process of an unprivileged
# container (root of a user namespace root made), CG_OOM: the oom_score_adj
# root set before dropping.
PROBE = r"""
import json, os
R, N, OOM = int(os.environ["CG_ROOT_PID"]), int(os.environ["CG_NOBODY_PID"]), int(os.environ["CG_OOM"])
C = int(os.environ["CG_CONTAINED_PID"])
ME = os.getpid()

def attempt(fn, *args):
    try:
        value = fn(*args)
        return {"errno": 0, "value": value}
    except OSError as e:
        return {"errno": e.errno}

def read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")

def write(path, text):
    with open(path, "w") as f:
        f.write(text)

res = {"ids": [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()], "pid": ME}
for base in ("view", "real"):
    root = "/proc" if base == "view" else "/proc/.real"
    r = res[base] = {}
    for entry in ("smaps_rollup", "environ", "status", "maps", "mem"):
        r["root_" + entry] = attempt(read, "%s/%d/%s" % (root, R, entry))
    for link in ("exe", "cwd", "root"):
        r["root_readlink_" + link] = attempt(os.readlink, "%s/%d/%s" % (root, R, link))
        r["own_readlink_" + link] = attempt(os.readlink, "%s/%d/%s" % (root, ME, link))
    r["self_smaps"] = attempt(read, root + "/self/smaps_rollup")
    r["own_smaps"] = attempt(read, "%s/%d/smaps_rollup" % (root, ME))
    r["nobody_smaps"] = attempt(read, "%s/%d/smaps_rollup" % (root, N))
    r["nobody_environ"] = attempt(read, "%s/%d/environ" % (root, N))
    for entry in ("smaps_rollup", "environ"):
        r["contained_" + entry] = attempt(read, "%s/%d/%s" % (root, C, entry))
    for link in ("exe", "cwd", "root"):
        r["contained_readlink_" + link] = attempt(os.readlink, "%s/%d/%s" % (root, C, link))
    r["own_smaps_write"] = attempt(write, "%s/%d/smaps_rollup" % (root, ME), "x")

# oom_score_adj: root set OOM before dropping its rights. Raising needs no
# privilege; lowering below what a privileged writer set (and so below the
# current value once raised) needs CAP_SYS_RESOURCE.
steps = [
    ("raise_view_self", "/proc/self/oom_score_adj", OOM + 300),
    ("raise_view_pid", "/proc/%d/oom_score_adj" % ME, OOM + 400),
    ("lower_view_self", "/proc/self/oom_score_adj", OOM - 100),
    ("lower_view_pid", "/proc/%d/oom_score_adj" % ME, OOM - 100),
    ("lower_real", "/proc/.real/%d/oom_score_adj" % ME, OOM - 100),
]
res["oom_start"] = read("/proc/.real/self/oom_score_adj").strip()
for name, path, value in steps:
    step = attempt(write, path, str(value))
    step["after"] = read("/proc/.real/self/oom_score_adj").strip()
    step["value"] = value
    res[name] = step
print(json.dumps(res))
"""


def make_tests(d):
    t = []
    cache = {}

    def test(name):
        def register(fn):
            t.append((name, fn))
            return fn
        return register

    def probe(kind="nobody"):
        """Run PROBE as nobody in the view (kind "userns": as root of a
        user namespace owned by nobody; "otherns": as root of another
        unprivileged container, a user namespace root made; "capless":
        as root without capabilities); the result is shared by tests."""
        if kind in cache:
            return cache[kind]
        # Let any cache of the daemon hold root's file first.
        with open(os.path.join(d.proc, str(root_sleeper.pid), "smaps_rollup")) as f:
            f.read()
        oom = 0
        inner = DROP + [cgtest.PYTHON, "-c", "$CG_CODE"]
        if kind == "userns":
            inner = DROP + ["unshare", "--user", "--map-root-user"] + inner[len(DROP):]
        elif kind == "otherns":
            inner = cgtest.in_rootmade_userns(OTHER_CONTAINER_UID, inner[len(DROP):])
            inner[2] = "$CG_USERNS_RUN"
        elif kind == "capless":
            inner = CAPLESS + inner[len(DROP):]
        script = ('echo "$CG_OOM" > /proc/self/oom_score_adj || exit 5\n'
                  'exec %s\n' % " ".join('"%s"' % a if a.startswith("$CG_") else a for a in inner))
        env = dict(os.environ, CG_CODE=PROBE, CG_OOM=str(oom), CG_ROOT_PID=str(root_sleeper.pid),
                   CG_NOBODY_PID=str(nobody_sleeper.pid), CG_CONTAINED_PID=str(contained_sleeper),
                   CG_USERNS_RUN=cgtest.USERNS_RUN)
        out = check_ran(cgtest.in_view(d.mnt, ["bash", "-c", script], env=env, cwd="/"),
                        "the probe (%s)" % kind)
        cache[kind] = res = json.loads(out)
        res["oom"] = oom
        return res

    def same_errno(res, keys, expected):
        bad = []
        for key in keys:
            view, real = res["view"][key]["errno"], res["real"][key]["errno"]
            if view != real or real != expected:
                bad.append("%s: view %s, real %s, expected %s" % (key, cgtest.errname(view),
                                                                  cgtest.errname(real), cgtest.errname(expected)))
        check(not bad, "errors differ", *bad)

    @test("the probe runs as nobody:nogroup with no supplementary groups")
    def _():
        res = probe()
        check_equal(res["ids"][:3], [65534, 65534, 65534], "uid, euid, gid")
        check_equal(res["ids"][3], [], "supplementary groups")

    @test("as nobody, root's smaps_rollup, environ, maps, mem through the view: EACCES as on the real files")
    def _():
        same_errno(probe(), ["root_smaps_rollup", "root_environ", "root_maps", "root_mem"], errno.EACCES)

    @test("as nobody, readlink of root's exe, cwd, root through the view fails as on the real files")
    def _():
        same_errno(probe(), ["root_readlink_exe", "root_readlink_cwd", "root_readlink_root"], errno.EACCES)

    @test("as nobody, root's world-readable status reads the same through the view")
    def _():
        res = probe()
        same_errno(res, ["root_status"], 0)
        view, real = res["view"]["root_status"]["value"], res["real"]["root_status"]["value"]
        check_equal([line.split(":")[0] for line in view.splitlines()],
                    [line.split(":")[0] for line in real.splitlines()], "status field names")

    @test("as nobody, its own smaps_rollup (/proc/self and /proc/<pid>) reads through the view")
    def _():
        res = probe()
        same_errno(res, ["self_smaps", "own_smaps"], 0)
        real_head, real_fields = cgtest.smaps_fields(res["real"]["own_smaps"]["value"])
        for key in ("self_smaps", "own_smaps"):
            head, fields = cgtest.smaps_fields(res["view"][key]["value"])
            check_equal(head, real_head, "%s header line" % key)
            check_equal(list(fields), list(real_fields), "%s field names" % key)

    @test("as nobody, a nobody-owned sleep's smaps_rollup and environ read through the view")
    def _():
        res = probe()
        same_errno(res, ["nobody_smaps", "nobody_environ"], 0)
        check_equal(cgtest.smaps_fields(res["view"]["nobody_smaps"]["value"])[0],
                    cgtest.smaps_fields(res["real"]["nobody_smaps"]["value"])[0], "smaps_rollup header")
        check_equal(res["view"]["nobody_environ"]["value"], res["real"]["nobody_environ"]["value"], "environ")

    @test("as nobody, readlink of its own exe, cwd, root through the view gives the real text")
    def _():
        res = probe()
        same_errno(res, ["own_readlink_exe", "own_readlink_cwd", "own_readlink_root"], 0)
        for link in ("exe", "cwd", "root"):
            check_equal(res["view"]["own_readlink_" + link]["value"], res["real"]["own_readlink_" + link]["value"],
                        "readlink %s" % link)

    @test("as nobody, opening its own smaps_rollup for writing fails (EACCES through the view)")
    def _():
        res = probe()
        e = res["view"]["own_smaps_write"]["errno"]
        check(e in (errno.EACCES, errno.EROFS), "view: %s" % cgtest.errname(e))
        check(res["real"]["own_smaps_write"]["errno"] != 0, "the real file took the write?", res["real"])

    @test("as nobody, raising its own oom_score_adj through the view works and lands on the real file")
    def _():
        res = probe()
        check_equal(res["oom_start"], str(res["oom"]), "oom_score_adj after root's write (real file)")
        for key in ("raise_view_self", "raise_view_pid"):
            step = res[key]
            check_equal(step["errno"], 0, "errno of %s" % key)
            check_equal(step["after"], str(step["value"]), "real oom_score_adj after %s" % key)

    @test("as nobody, lowering its oom_score_adj fails with EACCES through the view as on the real file")
    def _():
        res = probe()
        bad = []
        for key in ("lower_view_self", "lower_view_pid", "lower_real"):
            step = res[key]
            if step["errno"] != errno.EACCES:
                bad.append("%s: %s (wrote %d)" % (key, cgtest.errname(step["errno"]), step["value"]))
            if step["after"] != str(res["raise_view_pid"]["value"]):
                bad.append("%s: the real value is now %s" % (key, step["after"]))
        check(not bad, "lowering was not refused", *bad)

    @test("as root of a user namespace owned by nobody, root's files stay closed as on the real procfs")
    def _():
        res = probe("userns")
        check_equal(res["ids"][:3], [0, 0, 0], "ids in the user namespace")
        same_errno(res, ["root_smaps_rollup", "root_environ", "root_readlink_exe", "root_readlink_cwd"],
                   errno.EACCES)

    @test("in a user namespace, access to smaps_rollup, exe, environ through the view is the real procfs's")
    def _():
        # Known daemon bug when this fails: the daemon checks access with
        # the caller's ids and capabilities as seen from its own (initial)
        # user namespace. So a process in a child user namespace is refused
        # smaps_rollup of processes of its own namespace (its own, even),
        # which the kernel grants, and is granted that of a same-uid process
        # outside its namespace, which the kernel refuses.
        res = probe("userns")
        bad = []
        for key, what in (("own_smaps", "its own process"), ("own_readlink_exe", "its own process"),
                          ("nobody_smaps", "nobody's sleep outside the namespace"),
                          ("nobody_environ", "nobody's sleep outside the namespace")):
            view, real = res["view"][key]["errno"], res["real"][key]["errno"]
            if view != real:
                bad.append("%s (%s): view %s, real %s" % (key, what, cgtest.errname(view), cgtest.errname(real)))
        check(not bad, "the view's access decision differs from the kernel's", *bad,
              "(daemon bug: caller credentials are emulated in the daemon's user namespace)")

    contained = ["contained_smaps_rollup", "contained_environ", "contained_readlink_exe",
                 "contained_readlink_cwd", "contained_readlink_root"]

    @test("as nobody, a process of an unprivileged container (root of a user namespace root made, host uid "
          "%d): smaps_rollup, environ, readlink of exe, cwd, root refused through the view as by the kernel"
          % CONTAINED_UID)
    def _():
        # Security review, issue 54 part 1: the thread acting as the
        # caller kept euid 0, and the kernel gives a user namespace's
        # owner every capability in it.
        same_errno(probe(), contained, errno.EACCES)

    @test("as root of another unprivileged container (host uid %d), that container's process is refused "
          "through the view as by the kernel" % OTHER_CONTAINER_UID)
    def _():
        res = probe("otherns")
        check_equal(res["ids"][:3], [0, 0, 0], "ids in its user namespace")
        same_errno(res, contained, errno.EACCES)

    @test("as root without capabilities (euid 0: the owner of the container's user namespace), that "
          "container's process opens through the view as on the real files (smaps_rollup, readlinks; not "
          "its 0400 environ)")
    def _():
        res = probe("capless")
        check_equal(res["ids"][:2], [0, 0], "uid, euid")
        # environ is its owner's 0400 file: without CAP_DAC_OVERRIDE, EACCES.
        same_errno(res, ["contained_environ"], errno.EACCES)
        same_errno(res, [k for k in contained if k != "contained_environ"], 0)

    @test("root opening root's smaps_rollup and environ through io_uring as nobody (a personality: "
          "override_creds) is refused through the view as the kernel refuses it")
    def _():
        # Security review, issue 39 finding 4: the view took the caller's
        # fsuid from the request (its subjective credentials) and its
        # capabilities from /proc/<tid>/status (its objective ones).
        uring = os.environ.get("CGPROCFS_URING_OPEN")
        if not uring:
            raise cgtest.Skip("CGPROCFS_URING_OPEN is not set (run through meson test)")
        bad = []
        for entry in ("smaps_rollup", "environ"):
            got = {}
            for base in ("/proc", d.proc):
                res = cgtest.run([uring, os.path.join(base, str(root_sleeper.pid), entry), "65534"])
                got[base] = cgtest.check_ran(res, "uring-open").strip()
            if got[d.proc] != got["/proc"]:
                bad.append("%s: view %r, kernel %r" % (entry, got[d.proc][:60], got["/proc"][:60]))
        check(not bad, "the view's answer differs from the kernel's", *bad)

    @test("root of a user namespace (0 as 100000) is refused, through the view as by the kernel, the "
          "smaps_rollup of a host root process that is not dumpable and joined its namespace (as runc init does)")
    def _():
        # Security review, issue 39 finding 4: its capabilities count in
        # its own namespace only; the kernel asks them of the namespace of
        # the process's mm (the host's) as well, since it is not dumpable.
        got = joined_not_dumpable(d.proc)
        cgtest.diag("kernel: %s, view: %s" % (got["/proc"][:40], got["view"][:40]))
        check(got["/proc"] == "EACCES", "no test: the kernel gave %r" % got["/proc"][:60])
        check(got["view"] == got["/proc"], "the view gave %r" % got["view"][:60])

    @test("smaps_rollup of a process that exec'd a setuid program is another inode than before, and an fd "
          "opened before never shows that program's figures, by sendfile or a private map")
    def _():
        # Security review, issue 39 finding 1: one inode per pid and start
        # time held the texts of the process before and after a setuid
        # exec; a text a root reader's open stored in its page cache (one
        # longer than the inode's size) was what an old fd of the owner
        # read through the cache (a private map; sendfile on Linux 6.5 to
        # 6.17). The kernel answers such an fd ESRCH (its mm is gone).
        out = exec_leak(d.proc)
        check("error" not in out, "the nobody reader failed", out)
        old, setuid, later = (rss_of(out[k]) for k in ("before", "root", "sendfile"))
        cgtest.diag("Rss before the exec %s kB, the setuid program's %s kB; the old fd then read %s kB "
                    "by sendfile, %s by a private map" % (old, setuid, later, rss_of(out["mmap"])))
        check(setuid != old, "no test: the setuid program's Rss is the shell's", out)
        check(later != setuid and rss_of(out["mmap"]) != setuid,
              "the old fd read the setuid program's smaps_rollup", out)
        check(out["ino"] != out["root_ino"], "one inode (%d) before and after the setuid exec: its page cache "
              "may hold the setuid program's text for the fd opened before" % out["ino"])

    return t


# The nobody reader of exec_leak: opens proc/<pid>/smaps_rollup, reads it
# and maps it, then (told on stdin) reads the map and the fd by sendfile.
EXEC_READER = r"""
import json, mmap, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
out = {"before": os.pread(fd, 65536, 0).decode(), "ino": os.fstat(fd).st_ino}
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ) if size else None
print("read", flush=True)
sys.stdin.readline()
try:
    out["mmap"] = m[:].split(bytes(1))[0].decode() if m else ""
    r, w = os.pipe()
    n = os.sendfile(w, fd, 0, 65536)
    out["sendfile"] = os.read(r, 65536).decode()
except OSError as e:
    out["error"] = str(e)
print(json.dumps(out), flush=True)
"""


def rss_of(text):
    for line in text.splitlines():
        if line.startswith("Rss:"):
            return int(line.split()[1])
    return None


def exec_leak(proc):
    """A nobody shell that execs a setuid copy of python once a nobody
    reader holds its smaps_rollup through the view at proc, and root read
    it after the exec: what the reader's fd then gives."""
    tmp = tempfile.mkdtemp(prefix="cgprocfs-setuid-")
    os.chmod(tmp, 0o755)
    suid = os.path.join(tmp, "python3")
    shutil.copy(os.path.realpath(cgtest.PYTHON), suid)
    os.chmod(suid, 0o4755)
    # The program grows to 200 MiB: its text is longer than the shell's.
    grow = "import time; b = bytes(200 << 20).replace(bytes(1), bytes([1])); time.sleep(60)"
    sh = subprocess.Popen(DROP + ["sh", "-c", 'read x; exec "$0" -c "$1"', suid, grow],
                          stdin=subprocess.PIPE, text=True, cwd="/")
    reader = None
    try:
        path = os.path.join(proc, str(sh.pid), "smaps_rollup")
        cgtest.wait_until(lambda: os.readlink("/proc/%d/exe" % sh.pid).endswith("/dash")
                          or os.readlink("/proc/%d/exe" % sh.pid).endswith("/sh"))
        reader = subprocess.Popen(DROP + [cgtest.PYTHON, "-c", EXEC_READER, path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd="/")
        check_equal(reader.stdout.readline().strip(), "read", "the reader's first read")
        sh.stdin.write("go\n")
        sh.stdin.flush()
        check(cgtest.wait_until(lambda: os.readlink("/proc/%d/exe" % sh.pid) == suid and
                                rss_of(open("/proc/%d/smaps_rollup" % sh.pid).read()) > 100000),
              "the shell did not exec the setuid program")
        with open(path) as f:
            root_text, root_ino = f.read(), os.fstat(f.fileno()).st_ino
        out, _ = reader.communicate("go\n", timeout=30)
        res = json.loads(out)
        res["root"], res["root_ino"] = root_text, root_ino
        return res
    finally:
        for p in (sh, reader):
            if p:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


# Root, then not dumpable, then in the user namespace of argv[1]'s pid;
# prints "in" and sleeps.
JOINER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
    sys.exit("prctl")
fd = os.open("/proc/%s/ns/user" % sys.argv[1], os.O_RDONLY)
if libc.setns(fd, 0x10000000) != 0:  # CLONE_NEWUSER
    sys.exit("setns: %d" % ctypes.get_errno())
print("in", flush=True)
time.sleep(60)
"""

# Reads argv[1] and prints its first line, or the errno's name.
FIRST_LINE = r"""
import errno, sys
try:
    print(open(sys.argv[1]).readline().strip())
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def joined_not_dumpable(proc):
    """What root of a user namespace mapping 0 to 100000 reads of the
    smaps_rollup of a host root process that made itself not dumpable and
    then joined that namespace: through the kernel's /proc and the view's
    proc."""
    holder = subprocess.Popen(["unshare", "--user", "--", "sleep", "60"], stdin=subprocess.DEVNULL)
    joiner = None
    try:
        cgtest.wait_until(lambda: os.readlink("/proc/%d/ns/user" % holder.pid) != os.readlink("/proc/self/ns/user"))
        for name in ("uid_map", "gid_map"):
            with open("/proc/%d/%s" % (holder.pid, name), "w") as f:
                f.write("0 100000 65536\n")
        joiner = subprocess.Popen([cgtest.PYTHON, "-c", JOINER, str(holder.pid)], stdout=subprocess.PIPE, text=True)
        check_equal(joiner.stdout.readline().strip(), "in", "the joiner")
        got = {}
        for base, key in (("/proc", "/proc"), (proc, "view")):
            res = cgtest.run(["nsenter", "-t", str(holder.pid), "-U", "--", cgtest.PYTHON, "-c", FIRST_LINE,
                              os.path.join(base, str(joiner.pid), "smaps_rollup")])
            got[key] = cgtest.check_ran(res, "the reader in the namespace").strip()
        return got
    finally:
        for p in (holder, joiner):
            if p:
                p.kill()
                p.wait()


def main():
    global root_sleeper, nobody_sleeper, contained_sleeper
    cgtest.skip_all_unless_runnable()
    if shutil.which("setpriv") is None:
        print("1..0 # SKIP setpriv (util-linux) is missing")
        return
    root_sleeper = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, cwd="/")
    nobody_sleeper = subprocess.Popen(DROP + ["sleep", "3600"], stdin=subprocess.DEVNULL, cwd="/")
    try:
        with cgtest.rootmade_userns_sleeper(CONTAINED_UID) as contained_sleeper:
            cgtest.run_with_daemon(make_tests)
    finally:
        for p in (root_sleeper, nobody_sleeper):
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
