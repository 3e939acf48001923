"""The daemon's life cycle: start-up errors (exit status and a one-line
message), restarts over a dead mount, clean stops on SIGTERM and SIGINT,
mountpoint creation, taking over from a running daemon (--replace),
--version and --help."""

import contextlib
import ctypes
import errno
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import Daemon, check, check_equal, describe  # noqa: E402

ERROR_TIMEOUT = 15  # a start that should fail must not take this long
DROP = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


@contextlib.contextmanager
def scratch_dir():
    """A temporary directory; anything left mounted in it is detached."""
    path = tempfile.mkdtemp(prefix="cgprocfs-test-")
    try:
        yield path
    finally:
        cgtest.force_unmount(path)
        shutil.rmtree(path, ignore_errors=True)


def mountpoint_in(tmp, name):
    """A new directory name in tmp, by the canonical path the daemon gives it."""
    path = os.path.join(os.path.realpath(tmp), name)
    os.mkdir(path)
    return path


def start_fails(argv, status, words, what, **kw):
    """Run argv, expect exit status and a one-line stderr holding words."""
    result = cgtest.run(argv, timeout=ERROR_TIMEOUT, **kw)
    rc, out, err = result
    check(rc is not None, "%s: still running after %d s" % (what, ERROR_TIMEOUT), describe(result))
    check_equal(rc, status, "%s: exit status" % what)
    lines = err.strip("\n").splitlines()
    check(len(lines) == 1, "%s: expected one line on stderr, got %d" % (what, len(lines)), describe(result))
    for word in words:
        check(word.lower() in err.lower(), "%s: the message does not say %r" % (what, word), describe(result))
    return result


def has_cap_sys_resource():
    """Whether this process has CAP_SYS_RESOURCE (24) in its effective set."""
    with open("/proc/self/status") as f:
        caps = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    return bool(caps >> 24 & 1)


# Opens argv[1] again and again, holding every fd, until an open fails;
# prints how many it held and why it stopped.
HOARDER = r"""
import os, resource, sys
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds = []
try:
    while True:
        fds.append(os.open(sys.argv[1], os.O_RDONLY))
except OSError as e:
    print(len(fds), e.strerror, flush=True)
"""


@contextlib.contextmanager
def reader_in_view(mnt, seconds):
    """cgtest.VIEW_READER for seconds with the view at mnt bound over /proc; killed if
    still running when the block ends."""
    reader = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount --rbind "$1/proc" /proc && shift && exec "$@"', "sh", mnt, cgtest.PYTHON, "-c", cgtest.VIEW_READER,
         str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield reader
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()


def check_reader(reader, across):
    """The reader read, without an error, and its files opened before
    read on; its counts."""
    out, err = reader.communicate(timeout=30)
    check(reader.returncode == 0, "the reader failed", out, err)
    res = json.loads(out)
    check(res["reads"] > 0, "the reader read nothing", res)
    check_equal(res["errors"], [], "errors the reader saw across " + across)
    check_equal(res["held"], "cpu ", "the start of /proc/stat, opened before, read after")
    check(isinstance(res["held_dir"], int) and res["held_dir"] > 1,
          "a listing of /proc opened before gave %s" % res["held_dir"])
    return res


def process_state(pid):
    """The state letter of process pid (Z: exited, not reaped), or "gone"."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][:1]
    except OSError:
        return "gone"


def reload(pid, args=()):
    """cgprocfs --reload pid [args]: its exit status and its output (the new
    daemon's too: it keeps the output it was given, as under systemd the
    journal; so a file, not a pipe that would stay open)."""
    with tempfile.TemporaryFile(mode="w+") as out:
        rc = subprocess.run([cgtest.daemon_exe(), "--reload", str(pid)] + list(args), stdout=out, stderr=out,
                            timeout=120).returncode
        time.sleep(0.5)  # the new daemon's last lines
        out.seek(0)
        return rc, out.read()


def serves(d):
    """Fail unless daemon d answers: its view shows this process as the
    real procfs does."""
    check(d.process.poll() is None, "the daemon exited (status %s)" % d.process.returncode, d.log())
    with open(os.path.join(d.proc, str(os.getpid()), "status")) as f:
        view = [line.split(":")[0] for line in f]
    with open("/proc/%d/status" % os.getpid()) as f:
        real = [line.split(":")[0] for line in f]
    check_equal(view, real, "field names of proc/<own pid>/status")
    check(os.path.exists(os.path.join(d.proc, ".real", "self")), "proc/.real/self is missing")
    # Answered by the daemon itself, not from dentries the kernel cached.
    check(cgtest.serving_mounts(d.mnt), "the mount at %s does not answer" % d.mnt, open("/proc/self/mountinfo").read())
    with open(os.path.join(d.proc, "cpuinfo")) as f:
        check(f.read(), "proc/cpuinfo reads empty")


# Opens argv[1], prints what it reads from offset 0 (or the error), waits
# for a line on stdin, and does it again with the same open file (JSON).
HELD_READ = r"""
import json, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
def read():
    try:
        return os.pread(fd, 1 << 20, 0).decode()
    except OSError as e:
        return "error: " + e.strerror
print(json.dumps(read()), flush=True)
sys.stdin.readline()
print(json.dumps(read()), flush=True)
"""


def dead_listing_errno(mnt):
    """The errno of listing mnt once its keeper has gone. The keeper's fuse
    fd is released after its process is gone (a deferred close): a listing
    sent meanwhile is aborted (ECONNABORTED); once released, every request
    is ENOTCONN. Up to 5 s for that."""
    cgtest.wait_until(lambda: cgtest.errno_of(os.listdir, mnt) == errno.ENOTCONN, timeout=5)
    return cgtest.errno_of(os.listdir, mnt)


def cpu_lines(text):
    """The cpuN lines of a /proc/stat text."""
    return sum(1 for line in text.splitlines() if line[:3] == "cpu" and line[3:4].isdigit())


class ContainerCgroup:
    """A cgroup of every hierarchy, named name, that a daemon runs in as in
    a container's; kill() ends its processes as runc ends a container
    that shares the host's pid namespace (every process of its cgroup)."""

    def __init__(self, name):
        tops = sorted({m[2] for m in cgtest.mount_table() if m[3] in ("cgroup", "cgroup2")})
        self.dirs = [os.path.join(top, name) for top in tops]
        for path in self.dirs:
            os.makedirs(path, exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):  # a v1 cpuset starts empty
                if os.path.exists(os.path.join(path, name)):
                    with open(os.path.join(os.path.dirname(path), name)) as f, \
                            open(os.path.join(path, name), "w") as out:
                        out.write(f.read())

    def cpu_quota(self, cpus):
        """Limit it to cpus CPUs by CFS quota (v1 or v2), or lift the limit (None)."""
        files = {"cpu.cfs_quota_us": "-1" if cpus is None else str(cpus * 100000),
                 "cpu.max": "max" if cpus is None else "%d 100000" % (cpus * 100000)}
        for path in self.dirs:
            for name, value in files.items():
                if os.path.exists(os.path.join(path, name)):
                    with open(os.path.join(path, name), "w") as f:
                        f.write(value)

    def prefix(self):
        """A command that execs its arguments in the cgroup (Daemon's prefix)."""
        script = "".join("echo $$ > %s/cgroup.procs || exit 96\n" % d for d in self.dirs) + 'exec "$@"\n'
        return ["sh", "-c", script, "sh"]

    def pids(self):
        found = set()
        for path in self.dirs:
            with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.procs")) as f:
                found.update(int(p) for p in f.read().split())
        return found

    def kill(self):
        """SIGKILL every process in it until none is left."""
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        raise cgtest.Failure("processes left in the container's cgroup after 5 s", self.pids())

    def remove(self):
        self.kill()
        for path in self.dirs:
            cgtest.remove_cgroups([path], os.path.dirname(path))


def cgroups_of(pid):
    """The cgroup paths of pid, one per hierarchy."""
    with open("/proc/%d/cgroup" % pid) as f:
        return sorted({line.rstrip("\n").split(":", 2)[2] for line in f})


class Tracer:
    """Threads of another process stopped with ptrace (PTRACE_SEIZE, then
    PTRACE_INTERRUPT), the rest of it running on. A traced thread that
    exits waits for its tracer: reap() collects those that died."""

    SEIZE, INTERRUPT = 0x4206, 0x4207
    WALL = 0x40000000

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.tids = []

    def stop(self, tid):
        for request in (self.SEIZE, self.INTERRUPT):
            if self.libc.ptrace(request, tid, None, None) != 0:
                raise OSError(ctypes.get_errno(), "ptrace of thread %d" % tid)
        self.tids.append(tid)

    def reap(self, timeout=10):
        deadline = time.monotonic() + timeout
        while self.tids and time.monotonic() < deadline:
            for tid in list(self.tids):
                try:
                    if os.waitpid(tid, os.WNOHANG | self.WALL)[0] == 0:
                        continue
                    with contextlib.suppress(OSError):  # a stop, not its end: wait on
                        os.kill(tid, 0)
                        continue
                except ChildProcessError:
                    pass
                self.tids.remove(tid)
            time.sleep(0.01)


def children_named(pid, comm):
    found = []
    for child in cgtest.run(["pgrep", "-P", str(pid), "-x", comm])[1].split():
        found.append(int(child))
    return found


class Pid500:
    """A daemon and a pid namespace with its view (given by the OCI hook),
    where sleeper() puts a sleep at pid 500. pid_ns enters the pid
    namespace only (the host's mount namespace: nothing there asks the
    daemon), in_view its mount namespace too. Sleepers left are ended."""

    def __init__(self, d, init):
        self.d = d
        self.pid_ns = ["nsenter", "--target", str(init), "--pid"]
        self.in_view = self.pid_ns + ["--mount"]
        self.sleepers = []

    def sleeper(self):
        """A sleep at pid 500, its parent a shell that reaps it."""
        p = subprocess.Popen(self.pid_ns + ["sh", "-c", "echo 499 > /proc/sys/kernel/ns_last_pid; "
                                            "sleep 600 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
        self.sleepers.append(p)
        check_equal(p.stdout.readline().strip(), "500", "the sleep's pid in the namespace")
        return p

    def end(self, p):
        """End the sleeper p (at pid 500, if it still runs)."""
        if p.poll() is None:
            cgtest.run(self.pid_ns + ["kill", "500"])
            p.wait(10)

    @classmethod
    @contextlib.contextmanager
    def started(cls, name):
        if not os.environ.get("CGPROCFS_OCI_HOOK"):
            raise cgtest.Skip("CGPROCFS_OCI_HOOK is not set (run through meson test)")
        with scratch_dir() as bundle, Daemon() as d:
            with open(os.path.join(bundle, "config.json"), "w") as f:
                json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
            with cgtest.namespace_with_view(d.mnt, bundle, name) as (init, res):
                check(res[0] == 0, "the hook", describe(res))
                ns = cls(d, init)
                try:
                    yield ns
                finally:
                    for p in ns.sleepers:
                        ns.end(p)
            # Its view ends once the kernel lets go of the namespace's mount.
            # Stopped before, the daemon would leave it served to the end
            # (and not free what it uses: a leak for LeakSanitizer).
            cgtest.wait_until(lambda: cgtest.read_stats(d.mnt).get("cgprocfs_container_views") == 0, timeout=10)


def make_tests():
    exe = cgtest.daemon_exe()
    t, test = cgtest.test_registry()

    @test("--version exits 0 and prints the version on one line")
    def _():
        result = cgtest.run([exe, "--version"], timeout=ERROR_TIMEOUT)
        check_equal(result[0], 0, "exit status")
        check(result[1].startswith("cgprocfs ") and len(result[1].splitlines()) == 1,
              "unexpected output", describe(result))

    @test("--help exits 0 and describes MOUNTPOINT")
    def _():
        result = cgtest.run([exe, "--help"], timeout=ERROR_TIMEOUT)
        check_equal(result[0], 0, "exit status")
        check("MOUNTPOINT" in result[1], "no MOUNTPOINT in the help", describe(result))

    @test("a bad option exits 2 with one line on stderr")
    def _():
        with scratch_dir() as tmp:
            start_fails([exe, "--no-such-option", tmp], 2, ["--no-such-option"], "--no-such-option")
            start_fails([exe, "-o"], 2, [], "-o without a value")
            start_fails([exe, tmp, tmp], 2, [], "two mountpoints")
            check_equal(cgtest.mounts_under(tmp), [], "mounts left")

    @test("not root: exit 1, 'must run as root'")
    def _():
        if cgtest.run(DROP + ["test", "-x", exe])[0] != 0:
            raise cgtest.Skip("nobody cannot execute %s" % exe)
        with scratch_dir() as tmp:
            os.chmod(tmp, 0o755)
            start_fails(DROP + [exe, tmp], 1, ["must run as root"], "as nobody", cwd="/")

    @test("no /dev/fuse (empty tmpfs over /dev): exit 1 with a message naming /dev/fuse")
    def _():
        with scratch_dir() as tmp:
            script = 'mount -t tmpfs cgtest-dev /dev || exit 97\nexec "$0" "$1"\n'
            start_fails(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, exe, tmp],
                        1, ["/dev/fuse"], "without /dev/fuse")
            check_equal(cgtest.mounts_under(tmp), [], "mounts left")

    @test("a mountpoint with a tmpfs mounted on it: exit 1, 'busy'")
    def _():
        with scratch_dir() as tmp:
            script = 'mount -t tmpfs cgtest-busy "$1" || exit 97\nexec "$0" "$1"\n'
            start_fails(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, exe, tmp],
                        1, ["busy"], "on a tmpfs")

    @test("a mountpoint that is a directory bound on itself (as a container's volume): served; the stop "
          "unmounts the view only, the bind stays")
    def _():
        with scratch_dir() as tmp:
            mnt = mountpoint_in(tmp, "volume")
            res = cgtest.run(["mount", "--bind", mnt, mnt])
            check(res[0] == 0, "mount --bind", describe(res))
            d = Daemon(mountpoint=mnt)
            try:
                d.start()
                serves(d)
                check_equal(cgtest.mounts_under(mnt), [mnt, mnt, mnt + "/proc/.real"], "mounts under it")
                d.process.send_signal(signal.SIGTERM)
                check_equal(d.process.wait(cgtest.STOP_TIMEOUT), 0, "exit status after SIGTERM")
                check_equal(cgtest.mounts_under(mnt), [mnt], "mounts left: the bind alone")
            finally:
                d._stopped = True  # scratch_dir detaches what is left
                d.process and d.process.poll() is None and d.process.kill()

    @test("a regular file as mountpoint: exit 1 'not a directory', the file is untouched")
    def _():
        with scratch_dir() as tmp:
            path = os.path.join(tmp, "file")
            with open(path, "w") as f:
                f.write("content\n")
            start_fails([exe, path], 1, ["not a directory"], "on a regular file")
            with open(path) as f:
                check_equal(f.read(), "content\n", "the file's content")
            check_equal(cgtest.mounts_under(tmp), [], "mounts left")

    @test("a second daemon on a served mountpoint: exit 1 'already served', the first keeps serving")
    def _():
        with Daemon() as first:
            serves(first)
            start_fails([exe, first.mnt], 1, ["already served", "--replace"], "the second daemon")
            serves(first)
            check_equal(sorted(cgtest.mounts_under(first.mnt)), sorted([first.mnt, first.proc + "/.real"]),
                        "mounts under the mountpoint")

    def stop_with(sig):
        d = Daemon()
        try:
            d.start()
            serves(d)
            with open(os.path.join(d.mnt, ".cgprocfs", "control")) as f:
                sock = f.read().strip()
            # A container attached (its cgroups recorded beside the
            # socket), whose view ends as the daemon stops.
            with tempfile.TemporaryDirectory() as bundle:
                with open(os.path.join(bundle, "config.json"), "w") as f:
                    json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
                with cgtest.namespace_with_view(d.mnt, bundle) as (_, res):
                    check(res[0] == 0, "the hook gave no view", describe(res))
                    check(os.path.exists(sock + ".scopes"), "no record beside the control socket")
                    problems = d.stop(sig)
            check(not problems, "after %s" % sig.name, *problems, "daemon log:", d.log())
            check_equal(d.returncode, 0, "exit status after %s" % sig.name)
            # The socket and what was kept beside it for a next daemon.
            left = [n for n in os.listdir(os.path.dirname(sock)) if n.startswith(os.path.basename(sock))]
            check_equal(left, [], "files left beside the control socket %s" % sock)
        finally:
            d.stop()

    @test("SIGTERM, a container attached: exit 0, nothing left mounted (proc/.real included), nothing beside the "
          "control socket")
    def _():
        stop_with(signal.SIGTERM)

    @test("SIGINT, a container attached: exit 0, nothing left mounted (proc/.real included), nothing beside the "
          "control socket")
    def _():
        stop_with(signal.SIGINT)

    @test("after SIGKILL of a daemon whose keeper gives up at once (--keeper-wait=0), a restart cleans "
          "the dead mount and serves")
    def _():
        with scratch_dir() as tmp:
            mnt = mountpoint_in(tmp, "mnt")
            dead = Daemon(mountpoint=mnt, args=["--keeper-wait=0"])
            try:
                dead.start()
                serves(dead)
                check(cgtest.keepers_of(mnt, wait=True), "no keeper while the daemon serves")
                dead.process.send_signal(signal.SIGKILL)
                dead.process.wait()
                check(cgtest.wait_until(lambda: not cgtest.keepers_of(mnt), timeout=10),
                      "the keeper still runs 10 s after its daemon died, with --keeper-wait=0")
                # stat() of the root may still answer from cached attributes.
                check_equal(dead_listing_errno(mnt), errno.ENOTCONN, "listing the dead mount: errno")
                check(cgtest.mounts_under(mnt), "the dead mount is not in the mount table")
                # Known daemon bug when this fails: the dead mount is told by
                # stat() failing with ENOTCONN, but stat() of its root answers
                # from cached attributes ("already served by a running
                # cgprocfs"), and where it fails, g_mkdir_with_parents()
                # reports ENOTDIR, not ENOTCONN ("cannot create mountpoint
                # ...: Not a directory").
                with Daemon(mountpoint=mnt) as second:
                    serves(second)
                    left = sorted(cgtest.mounts_under(mnt))
                    check_equal(left, sorted([mnt, mnt + "/proc/.real"]), "mounts under the mountpoint")
            finally:
                dead._stopped = True  # killed on purpose; scratch_dir cleans up
                dead.process and dead.process.poll() is None and dead.process.kill()

    @test("SIGKILL of a daemon whose keeper holds the views but was not yet published (no new daemon can find "
          "it): a new daemon's look at the mount waits until that keeper sees its daemon gone and exits, and is "
          "aborted then (ECONNABORTED, not ENOTCONN); it removes the dead mount and serves")
    def _():
        with scratch_dir() as tmp:
            mnt = mountpoint_in(tmp, "mnt")
            dead = Daemon(mountpoint=mnt, prefix=["env", "CGPROCFS_FAULT=daemon:keep-unpublished=stop"])
            second = Daemon(mountpoint=mnt)
            keeper = None
            try:
                dead.start(wait=False)
                check(cgtest.wait_until(lambda: process_state(dead.process.pid) == "T", timeout=30),
                      "the daemon did not stop itself between keep and publish", dead.log())
                keepers = cgtest.keepers_of(mnt, wait=True)
                check_equal(len(keepers), 1, "keepers of the stopped daemon")
                keeper = keepers[0]
                # It holds the views (read, or waiting on its socket) until it runs again.
                os.kill(keeper, signal.SIGSTOP)
                dead.process.kill()
                dead.process.wait()
                second.start(wait=False)
                # Its statfs of the mount, waiting for an answer.
                check(cgtest.wait_until(lambda: any(w in ("request_wait_answer", "__fuse_simple_request")
                                                    for _, _, w in cgtest.threads_of(second.process.pid).values()),
                                        timeout=30),
                      "the new daemon does not wait on the mount the stopped keeper holds", second.log())
                os.kill(keeper, signal.SIGCONT)
                check(cgtest.wait_until(lambda: second.process.poll() is not None or cgtest.serving_mounts(mnt),
                                        timeout=30),
                      "the new daemon does not serve 30 s after the keeper went on", second.log())
                serves(second)
                check("removed the dead cgprocfs mount" in second.log(),
                      "the new daemon did not say it removed the dead mount", second.log())
                check_equal(sorted(cgtest.mounts_under(mnt)), sorted([mnt, mnt + "/proc/.real"]),
                            "mounts under the mountpoint")
            finally:
                with contextlib.suppress(ProcessLookupError):
                    keeper and os.kill(keeper, signal.SIGCONT)
                dead._stopped = True  # killed on purpose; scratch_dir cleans up
                dead.process and dead.process.poll() is None and dead.process.kill()
                second.stop()

    @test("--replace takes over a serving daemon: readers in the view see no error, files opened before "
          "read on, the old daemon exits 0, the new one serves, then stops cleanly")
    def _():
        with Daemon() as old, reader_in_view(old.mnt, 3) as reader:
            serves(old)
            time.sleep(1)
            new = Daemon(mountpoint=old.mnt, args=["--replace"])
            try:
                new.start()
                try:
                    old.process.wait(10)
                except subprocess.TimeoutExpired:
                    raise cgtest.Failure("the old daemon still runs 10 s after the handover", old.log(), new.log())
                check_equal(old.process.returncode, 0, "the old daemon's exit status")
                check("handed over" in old.log(), "the old daemon did not say it handed over", old.log())
                check_reader(reader, "the handover")
                serves(new)
                check_equal(sorted(cgtest.mounts_under(old.mnt)), sorted([old.mnt, old.proc + "/.real"]),
                            "mounts under the mountpoint")
                problems = new.stop()
                check(not problems, "the new daemon did not stop cleanly", *problems, new.log())
            finally:
                new.stop()

    @test("--reload PID (the unit's ExecReload): this binary, with the running daemon's options, takes over "
          "from it; readers see no error, the old daemon exits 0, --reload exits 0 once it has; --reload PID "
          "OPTIONS MOUNTPOINT starts it with those instead; --reload of a pid that is no daemon fails with one "
          "line, and the daemon serves on")
    def _():
        with Daemon(args=["--keeper-wait=7"]) as old, reader_in_view(old.mnt, 3) as reader:
            serves(old)
            time.sleep(1)
            rc, err = reload(old.process.pid)
            check_equal(rc, 0, "--reload's exit status (%s)" % err.strip())
            check(old.process.poll() is not None, "the old daemon runs on after --reload returned", old.log())
            check_equal(old.process.returncode, 0, "the old daemon's exit status")
            check_reader(reader, "the reload")
            # The oldest of the new daemon's processes (its notifier, forked, has its command line)
            new = [int(p) for p in cgtest.run(["pgrep", "-o", "-f", "--", "--replace --keeper-wait=7 " + old.mnt])[1].split()]
            check_equal(len(new), 1, "daemons started by --reload with the old one's options (%s)" % err.strip())
            try:
                check(os.path.exists(os.path.join(old.proc, ".real", "self")), "the new daemon does not serve")
                rc, err = reload(new[0], ["--keeper-wait=9", old.mnt])
                check_equal(rc, 0, "the exit status of --reload with options (%s)" % err.strip())
                given = [int(p) for p in cgtest.run(["pgrep", "-o", "-f", "--", "--replace --keeper-wait=9 " + old.mnt])[1].split()]
                check_equal(len(given), 1, "daemons started by --reload with the options given (%s)" % err.strip())
                check(cgtest.wait_until(lambda: process_state(new[0]) in ("gone", "Z"), timeout=5),
                      "the daemon reloaded from runs on (%s)" % process_state(new[0]))
                new = given
                rc, err = reload(os.getpid())
                check(rc == 1 and len(err.strip().splitlines()) == 2 and "serves on" in err,
                      "--reload of the test's own pid: exit %d, %r" % (rc, err))
                check(os.path.exists(os.path.join(old.proc, ".real", "self")), "the daemon stopped serving")
            finally:
                os.kill(new[0], signal.SIGTERM)
                cgtest.wait_until(lambda: not os.path.exists("/proc/%d" % new[0]), timeout=15)

    @test("SIGKILL of the daemon, then a new one on the same mountpoint (plain, then with --replace): it "
          "takes the views over from the keeper, and readers in the view see no error")
    def _():
        with Daemon() as d, reader_in_view(d.mnt, 4) as reader:
            serves(d)
            time.sleep(1)
            d.crash_and_restart()
            check(cgtest.wait_until(lambda: "keeper of a daemon that died" in d.log(), timeout=10),
                  "the new daemon did not say it took over from the keeper", d.log())
            check_reader(reader, "the crash and restart")
            serves(d)
            # --replace, as an upgrade script would run it, takes over from a keeper too.
            d.crash_and_restart(replace=True)
            check(cgtest.wait_until(lambda: d.log().count("keeper of a daemon that died") == 2, timeout=10),
                  "the daemon started with --replace did not take over from the keeper", d.log())
            serves(d)

    @test("a daemon in a cgroup of its own, as in a container (--keeper-cgroup=/ --keep-views-on-stop): "
          "its keeper moves to the top cgroups; every process of its cgroup killed (as runc ends a container), "
          "then a new daemon there; that one stopped with SIGTERM and its cgroup killed, then a third: "
          "each takes the views over, and readers in the view see no error")
    def _():
        box = ContainerCgroup("cgprocfs-test-daemon-%d" % os.getpid())
        daemons = []

        def start(mnt, keep):
            args = ["--keeper-cgroup=/"] + (["--keep-views-on-stop"] if keep else [])
            daemons.append(Daemon(mountpoint=mnt, args=args, prefix=box.prefix()))
            return daemons[-1].start()

        def took_over(d):
            check(cgtest.wait_until(lambda: "keeper of a daemon that died" in d.log(), timeout=10),
                  "the new daemon did not say it took over from the keeper", d.log())

        try:
            with scratch_dir() as tmp:
                first = start(mountpoint_in(tmp, "mnt"), keep=True)
                with reader_in_view(first.mnt, 6) as reader:
                    serves(first)
                    check("outlives this daemon's cgroup" in first.log(), "the keeper was not moved", first.log())
                    keepers = cgtest.keepers_of(first.mnt, wait=True)
                    check_equal([cgroups_of(k) for k in keepers], [["/"]], "the keeper's cgroups")
                    time.sleep(1)
                    box.kill()
                    first._stopped = True
                    check_equal(cgtest.keepers_of(first.mnt), keepers, "keepers after the container's cgroup was killed")
                    second = start(first.mnt, keep=True)
                    took_over(second)
                    serves(second)
                    time.sleep(1)
                    second.process.send_signal(signal.SIGTERM)
                    check_equal(second.process.wait(cgtest.STOP_TIMEOUT), 0, "exit status after SIGTERM")
                    second._stopped = True
                    check("leaving the views to the keeper" in second.log(), "what SIGTERM did", second.log())
                    check(cgtest.mounts_under(first.mnt), "nothing mounted after SIGTERM")
                    box.kill()  # what is left of it, as runc would
                    third = start(first.mnt, keep=False)
                    took_over(third)
                    check_reader(reader, "two ends of the daemon's cgroup")
                    serves(third)
                problems = third.stop()
                check(not problems, "the last daemon did not stop cleanly", *problems, third.log())
        finally:
            for d in daemons:
                d._stopped = True
            box.remove()

    @test("the daemon and its keeper in a memory cgroup (as the unit's MemoryMax) whose limit a caller's "
          "opens reach: the OOM killer takes the daemon, never the keeper (oom_score_adj -1000 where root may set it); a new daemon "
          "takes the views over, and readers in the view see no error (a pause, not an outage)")
    def _():
        box = ContainerCgroup("cgprocfs-test-oom-%d" % os.getpid())
        mem = next((p for p in box.dirs if os.path.exists(os.path.join(p, "memory.limit_in_bytes"))), None)
        daemons = []
        hoarder = None
        try:
            if not mem:
                raise cgtest.Skip("no cgroup v1 memory controller here")
            with scratch_dir() as tmp:
                daemons.append(Daemon(mountpoint=mountpoint_in(tmp, "mnt"), args=["--keep-views-on-stop"],
                                      prefix=box.prefix()).start())
                first = daemons[0]
                first.wait_published()
                keepers = cgtest.keepers_of(first.mnt, wait=True)
                if has_cap_sys_resource():
                    check_equal([int(open("/proc/%d/oom_score_adj" % k).read()) for k in keepers], [-1000],
                                "the keeper's oom_score_adj")
                else:
                    cgtest.diag("root lacks CAP_SYS_RESOURCE here: the keeper cannot lower its oom_score_adj "
                                "(it says so); only that the OOM killer takes the daemon is checked")
                    check("the keeper may be taken by an OOM killer" in first.log(),
                          "the keeper did not say it could not lower its oom_score_adj", first.log())
                with reader_in_view(first.mnt, 8) as reader:
                    serves(first)
                    time.sleep(1)
                    with open(os.path.join(mem, "memory.usage_in_bytes")) as f:
                        limit = int(f.read()) + (1 << 20)
                    with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
                        f.write(str(limit))
                    # Its handles (16,384 of one tenant's take about 2 MiB here), held until the daemon goes.
                    hoarder = subprocess.Popen([cgtest.PYTHON, "-c", HOARDER, os.path.join(first.proc, "stat")],
                                               stdout=subprocess.PIPE, text=True)
                    check(cgtest.wait_until(lambda: first.process.poll() is not None, timeout=60),
                          "the daemon still runs with a caller holding opens past its cgroup's limit",
                          hoarder.poll() is not None and hoarder.stdout.read())
                    first._stopped = True
                    # The bound back, as the systemd lane's action does before the restart: the
                    # dead daemon's kernel memory (its connections' pages) may still be charged there.
                    with open(os.path.join(mem, "memory.limit_in_bytes"), "w") as f:
                        f.write("-1")
                    check_equal(first.process.returncode, -signal.SIGKILL, "how the daemon ended")
                    with open(os.path.join(mem, "memory.oom_control")) as f:
                        kills = dict(line.split() for line in f).get("oom_kill")
                    cgtest.diag("OOM kills in the daemon's cgroup: %s; the caller: %s" % (kills, hoarder.poll()))
                    check(kills is None or int(kills) >= 1, "no OOM kill in the daemon's cgroup", kills)
                    time.sleep(2)
                    alive = [k for k in keepers if os.path.exists("/proc/%d" % k) and
                             open("/proc/%d/stat" % k).read().split(")")[1].split()[0] != "Z"]
                    check_equal(alive, keepers, "keepers 2 s after the OOM kill")
                    # Not waited for: an open the dead daemon had in hand holds it
                    # until the next daemon answers that open.
                    hoarder.kill()
                    daemons.append(Daemon(mountpoint=first.mnt).start())
                    check(cgtest.wait_until(lambda: "keeper of a daemon that died" in daemons[1].log(), timeout=10),
                          "the new daemon did not say it took over from the keeper", daemons[1].log(),
                          "the first daemon and its keeper:", first.log())
                    check_reader(reader, "an OOM kill of the daemon")
                    serves(daemons[1])
                    hoarder.wait(timeout=30)
                problems = daemons[1].stop()
                check(not problems, "the new daemon did not stop cleanly", *problems, daemons[1].log())
        finally:
            if hoarder and hoarder.poll() is None:
                hoarder.kill()
                hoarder.wait()
            for d in daemons:
                d._stopped = True
            box.remove()

    @test("SIGKILL of the daemon while it invalidates a dead process's entry that a lookup in flight holds "
          "up (every worker stopped by ptrace): the daemon exits, a new one answers the lookup, and the "
          "notifier that waited goes")
    def _():
        with Daemon() as d:
            serves(d)
            # A process whose directory the view caches (and watches).
            victim = subprocess.Popen(["sleep", "600"])
            os.stat(os.path.join(d.proc, str(victim.pid)))
            notifiers = children_named(d.process.pid, "cgprocfs-notify")
            check(len(notifiers) == 1, "the daemon has %d notifier processes" % len(notifiers))
            tracer = Tracer()
            lookup = None
            try:
                for tid, (comm, _, _) in cgtest.threads_of(d.process.pid).items():
                    if comm == "fuse":
                        tracer.stop(tid)
                stopped = lambda: all(cgtest.threads_of(d.process.pid)[t][1] == "t" for t in tracer.tids)  # noqa: E731
                check(cgtest.wait_until(stopped),
                      "the workers did not stop", cgtest.threads_of(d.process.pid))
                # A lookup in proc/ that nobody answers holds the directory.
                lookup = subprocess.Popen(["stat", os.path.join(d.proc, "2147480001")], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
                time.sleep(0.3)
                check(lookup.poll() is None, "the lookup was answered with every worker stopped")
                victim.kill()
                victim.wait()

                def waiting():
                    where = [w for p in [d.process.pid] + notifiers for (_, _, w) in cgtest.threads_of(p).values()]
                    return "fuse_reverse_inval_entry" in where
                check(cgtest.wait_until(waiting), "the entry's invalidation did not wait for the lookup "
                      "(what this test is about did not happen)",
                      cgtest.threads_of(d.process.pid), [cgtest.threads_of(p) for p in notifiers])
                d.crash_and_restart(after_kill=tracer.reap)
            finally:
                tracer.reap()
                if lookup and lookup.poll() is None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        lookup.wait(10)
                    if lookup.poll() is None:
                        lookup.kill()
            out, err = lookup.communicate()
            check(lookup.returncode == 1 and "No such file" in err,
                  "the lookup held up by the dead daemon: exit %s" % lookup.returncode, err)
            check(cgtest.wait_until(lambda: not any(os.path.exists("/proc/%d" % p) for p in notifiers), timeout=10),
                  "the dead daemon's notifier is still there 10 s later",
                  [cgtest.threads_of(p) for p in notifiers if os.path.exists("/proc/%d" % p)])
            serves(d)

    @test("a container's pid taken by another process before the daemon could tell the kernel that the first "
          "one ended (the daemon stopped meanwhile, a read of the pid's directory waiting): the read gets the new "
          "process, 5 times out of 5")
    def _():
        with Pid500.started("stale-test") as ns:
            for attempt in range(5):
                first = ns.sleeper()
                res = cgtest.run(ns.in_view + ["stat", "/proc/500/status"])  # the kernel keeps proc/500
                check(res[0] == 0, "the first process's directory through the view", describe(res))
                os.kill(ns.d.process.pid, signal.SIGSTOP)
                try:
                    ns.end(first)  # through the host's /proc: no daemon asked
                    second = ns.sleeper()
                    reader = subprocess.Popen(ns.in_view + ["cat", "/proc/500/stat"], stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True)
                    time.sleep(0.3)  # its lookup of stat in the old proc/500 waits for the daemon
                finally:
                    os.kill(ns.d.process.pid, signal.SIGCONT)
                out, err = reader.communicate(timeout=10)
                real = cgtest.run(ns.in_view + ["cat", "/proc/.real/500/stat"])
                check(reader.returncode == 0 and out == real[1],
                      "read %d: the view's /proc/500/stat is not the new process's" % (attempt + 1),
                      err.strip(), out.strip(), real[1].strip())
                ns.end(second)

    @test("SIGKILL of the daemon, and a container's pid taken by another process while no daemon runs: once "
          "a new daemon has taken over, the container's view shows the new process")
    def _():
        with Pid500.started("recover-test") as ns:
            first = ns.sleeper()
            res = cgtest.run(ns.in_view + ["stat", "/proc/500/status"])
            check(res[0] == 0, "the first process's directory through the view", describe(res))

            def swap():  # no daemon serves meanwhile
                ns.end(first)
                ns.sleeper()

            ns.d.crash_and_restart(after_kill=swap)

            def same():
                res = cgtest.run(ns.in_view + ["sh", "-c", "cat /proc/500/stat; cat /proc/.real/500/stat"])
                lines = res[1].splitlines()
                return res[0] == 0 and len(lines) == 2 and lines[0] == lines[1]
            check(cgtest.wait_until(same, timeout=10), "the view does not show the new process at pid 500",
                  describe(cgtest.run(ns.in_view + ["ls", "-l", "/proc/500/"])))

    def held_across_crash(d, box, path, after_kill, meanwhile=lambda: None):
        """path opened and read from its start by a process in box; d
        SIGKILLed (after_kill() then) and a new daemon started;
        meanwhile(); the open file read from its start again. The two
        texts."""
        opener = subprocess.Popen(box.prefix() + [cgtest.PYTHON, "-c", HELD_READ, path],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            first = json.loads(opener.stdout.readline())
            d.crash_and_restart(after_kill=after_kill)
            meanwhile()
            return first, json.loads(opener.communicate("\n", timeout=30)[0])
        finally:
            if opener.poll() is None:
                opener.kill()
                opener.wait()

    @test("/proc/stat opened at a 1-CPU quota, the daemon SIGKILLed, the quota lifted, a new daemon: a read of "
          "the open file from its start gives the caller's text now (every CPU), not ESTALE")
    def _():
        host_cpus = cpu_lines(cgtest.read_all("/proc/stat").decode())
        if host_cpus < 2:
            raise cgtest.Skip("this machine has 1 CPU: a 1-CPU quota shows no change")
        box = ContainerCgroup("cgprocfs-test-adopt-%d" % os.getpid())
        try:
            box.cpu_quota(1)
            with Daemon() as d:
                first, again = held_across_crash(d, box, os.path.join(d.proc, "stat"), lambda: box.cpu_quota(None))
                check_equal(cpu_lines(first), 1, "stat's CPU lines at its open")
                check(again.startswith("cpu "), "stat read again from the start", again)
                check_equal(cpu_lines(again), host_cpus, "stat's CPU lines read again from the start")
        finally:
            box.remove()

    @test("cpu/online (one text per class, kept by the page cache) opened with every CPU, the daemon SIGKILLed, "
          "the opener put under a 1-CPU quota, a new daemon, the pages dropped: the opener's read from the start "
          "gives the text of the class it opened, and the next reader of that class reads it whole, not the "
          "opener's 1-CPU text in its pages")
    def _():
        host = cgtest.read_all("/sys/devices/system/cpu/online").decode()
        if host == "0\n":
            raise cgtest.Skip("this machine has 1 CPU: a 1-CPU quota shows no change")
        box = ContainerCgroup("cgprocfs-test-adopt-%d" % os.getpid())
        try:
            with Daemon() as d:
                online = os.path.join(d.cpu, "online")

                def read_then_drop_pages():
                    # This process, of the class opened, reads it from the
                    # new daemon; its pages then go, so that the opener's
                    # read asks the daemon.
                    check_equal(cgtest.read_all(online).decode(), host, "cpu/online read from the new daemon")
                    fd = os.open(online, os.O_RDONLY)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    os.close(fd)

                first, again = held_across_crash(d, box, online, lambda: box.cpu_quota(1), read_then_drop_pages)
                check_equal(first, host, "cpu/online at its open")
                check_equal(again, host, "cpu/online read again from the start by the opener")
                check_equal(cgtest.read_all(online).decode(), host, "cpu/online read by this process after that")
        finally:
            box.remove()

    @test("two cgroups under a 1-CPU quota are shown different CPUs, each keeps its own across a --replace and "
          "a SIGKILL of the daemon (the placements are kept beside the control socket)")
    def _():
        host = cgtest.read_all("/sys/devices/system/cpu/online").decode()
        if host == "0\n":
            raise cgtest.Skip("this machine has 1 CPU: a 1-CPU quota shows no change")
        groups = {x: ContainerCgroup("cgprocfs-test-place-%s-%d" % (x, os.getpid())) for x in "ab"}
        try:
            for g in groups.values():
                g.cpu_quota(1)
            with Daemon() as d:
                def online(x):
                    res = cgtest.run(groups[x].prefix() + ["cat", os.path.join(d.cpu, "online")])
                    return cgtest.check_ran(res, "cat online in cgroup %s" % x)
                placed = {x: online(x) for x in "ab"}
                cgtest.diag("placed: %r; the host's online %r" % (placed, host))
                check(placed["a"] != placed["b"], "both cgroups were shown %r" % placed["a"])
                # b asks first: a daemon that forgot would give it the
                # least used CPU, a's.
                d.take_over()
                check_equal(online("b"), placed["b"], "b's CPU after a --replace")
                d.crash_and_restart()
                check_equal(online("b"), placed["b"], "b's CPU after a SIGKILL and a new daemon")
                check_equal(online("a"), placed["a"], "a's CPU after both")
        finally:
            for g in groups.values():
                g.remove()

    @test("cpu/online opened by two processes under a 1-CPU quota, the daemon SIGKILLed, one of them moved out "
          "of the quota, a new daemon that has met no caller of the quota's class, the pages dropped: the moved "
          "one's read from the start is ESTALE (the new daemon cannot render the class it opened, and its own "
          "text, put in that class's pages, would be cut to their size), and the other's, of its open file, 1 "
          "CPU, not the moved one's text left in the class's pages")
    def _():
        host = cgtest.read_all("/sys/devices/system/cpu/online").decode()
        if host == "0\n":
            raise cgtest.Skip("this machine has 1 CPU: a 1-CPU quota shows no change")
        quota = ContainerCgroup("cgprocfs-test-foreign-%d" % os.getpid())
        free = ContainerCgroup("cgprocfs-test-foreign-free-%d" % os.getpid())
        readers = []
        try:
            quota.cpu_quota(1)
            with Daemon() as d:
                online = os.path.join(d.cpu, "online")
                opened = []
                for _ in range(2):
                    readers.append(subprocess.Popen(quota.prefix() + [cgtest.PYTHON, "-c", HELD_READ, online],
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
                    opened.append(json.loads(readers[-1].stdout.readline()))
                check(len(opened[0].split(",")) == 1 and "-" not in opened[0] and opened[1] == opened[0]
                      and opened[0] != host, "cpu/online at their opens: %r (one CPU each, the same)" % opened)
                moved, other = readers

                def move():
                    for path in free.dirs:
                        with open(os.path.join(path, "cgroup.procs"), "w") as f:
                            f.write(str(moved.pid))
                d.crash_and_restart(after_kill=move)
                # Nothing reaches the new daemon before the moved one's read.
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("1")
                check_equal(json.loads(moved.communicate("\n", timeout=30)[0]), "error: Stale file handle",
                            "cpu/online read again from the start by the moved one")
                check_equal(json.loads(other.communicate("\n", timeout=30)[0]), opened[1],
                            "cpu/online read again from the start by the one left under the quota")
        finally:
            for r in readers:
                if r.poll() is None:
                    r.kill()
                    r.wait()
            quota.remove()
            free.remove()

    @test("SIGKILL of the daemon and no new one within --keeper-wait: the keeper (started even where its "
          "socket's directory did not exist) lets go, the mount is dead")
    def _():
        with scratch_dir() as tmp:
            # A control socket in a directory that does not exist yet, as on
            # a fresh boot: the keeper's socket goes beside it.
            sock = os.path.join(tmp, "run", "cgprocfs", "ctl.sock")
            d = Daemon(mountpoint=os.path.join(os.path.realpath(tmp), "mnt"),
                       args=["--keeper-wait=1", "--control-socket", sock])
            try:
                d.start()
                serves(d)
                keepers = cgtest.keepers_of(d.mnt, wait=True)
                check_equal(len(keepers), 1, "keepers of the mount while the daemon serves")
                # Its end is seen through a pidfd, at once, however slow
                # this machine (a look after the kill may come after the
                # 1 s has passed).
                keeper = os.pidfd_open(keepers[0])
                try:
                    killed = time.monotonic()
                    d.process.send_signal(signal.SIGKILL)
                    d.process.wait()
                    ended = select.select([keeper], [], [], 10)[0]
                    waited = time.monotonic() - killed
                finally:
                    os.close(keeper)
                check(ended, "the keeper still runs 10 s after a 1 s wait")
                check(waited >= 0.9, "the keeper went %.2f s after the daemon died, before its 1 s wait" % waited)
                check_equal(dead_listing_errno(d.mnt), errno.ENOTCONN, "listing the mount: errno")
            finally:
                d._stopped = True  # killed on purpose; scratch_dir cleans up

    @test("--replace with no daemon serving the mountpoint: exit 1, 'nothing to take over'")
    def _():
        with scratch_dir() as tmp:
            start_fails([exe, "--replace", tmp], 1, ["nothing to take over"], "--replace on an idle directory")
            check_equal(cgtest.mounts_under(tmp), [], "mounts left")

    @test("a nonexistent nested mountpoint is created and served")
    def _():
        with scratch_dir() as tmp:
            mnt = os.path.join(tmp, "a", "b", "mnt")
            with Daemon(mountpoint=mnt) as d:
                check(os.path.isdir(os.path.join(tmp, "a", "b")), "the parents were not created")
                serves(d)
            check_equal(cgtest.mounts_under(tmp), [], "mounts left")

    return t


if __name__ == "__main__":
    cgtest.run_tests(make_tests() if "CGPROCFS" in os.environ else [])
