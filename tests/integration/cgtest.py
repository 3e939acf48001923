"""Shared helpers for the cgprocfs mount tests.

- TAP output that keeps going after a failure (run_tests);
- Daemon: starts $CGPROCFS on a fresh temporary mountpoint, waits for it to
  be ready, and on exit stops it and checks that nothing stays mounted;
- in_view: runs a command in a private mount namespace with the view bound
  over /proc and /sys/devices/system/cpu.

Standard library only; run with /usr/bin/python3.
"""

import contextlib
import errno
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

READY_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
CMD_TIMEOUT = 60.0
PYTHON = "/usr/bin/python3"


class Skip(Exception):
    """Raised by a test to report itself as skipped, with a reason."""


class Failure(AssertionError):
    """A failed check; its message and details become the TAP diagnostic."""

    def __init__(self, message, *details):
        lines = [str(message)]
        for d in details:
            lines.extend(str(d).splitlines())
        super().__init__("\n".join(lines))


def check(cond, message, *details):
    """Fail the current test with message (and details) unless cond."""
    if not cond:
        raise Failure(message, *details)


def check_equal(got, expected, what):
    check(got == expected, "%s differs" % what, "  got:      %r" % (got,), "  expected: %r" % (expected,))


def diag(text):
    for line in str(text).splitlines() or [""]:
        print("# " + line)
    sys.stdout.flush()


# --------------------------------------------------------------------- TAP --

UML_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "uml", "uml-run")


def uml_unusable():
    """Why this machine cannot run a user-mode Linux guest at all (no
    linux.uml, or uml-run's line saying so), or None: a guest that fails
    otherwise is the tests' failure, not a reason to skip them."""
    if shutil.which("linux.uml") is None:
        return "user-mode-linux is not installed (apt-get install user-mode-linux)"
    res = run([UML_RUN, "--", "true"], timeout=300)
    if res[0] == 0:
        return None
    lines = [line for line in res[2].splitlines() if line.startswith("uml-run: this machine cannot run the guest")]
    return lines[0] if lines else None


def skip_all_unless_runnable():
    """Skip the whole script (TAP '1..0 # SKIP') where mount tests cannot run."""
    reason = None
    if os.geteuid() != 0:
        reason = "mount tests need root"
    elif not os.path.exists("/dev/fuse"):
        reason = "/dev/fuse is missing"
    elif not os.environ.get("CGPROCFS"):
        reason = "CGPROCFS (the daemon to test) is not set"
    elif not os.access(os.environ["CGPROCFS"], os.X_OK):
        reason = "CGPROCFS=%s is not executable" % os.environ["CGPROCFS"]
    elif shutil.which("unshare") is None:
        reason = "unshare (util-linux) is missing"
    if reason:
        print("1..0 # SKIP " + reason)
        sys.stdout.flush()
        sys.exit(0)


def run_tests(tests):
    """Run [(name, fn)] as TAP tests; exit non-zero if any failed.

    fn() passes by returning, fails by raising (Failure's message, or the
    traceback of any other exception, goes out as diagnostics), and skips by
    raising Skip(reason). CGTEST_ONLY=TEXT[|TEXT...] (for a developer's
    loop) runs only the tests whose names hold one of the TEXTs."""
    skip_all_unless_runnable()
    _terminate_on_sigterm()
    only = os.environ.get("CGTEST_ONLY")
    if only:
        tests = [(name, fn) for name, fn in tests if any(o in name for o in only.split("|"))]
    print("1..%d" % len(tests))
    sys.stdout.flush()
    failed = 0
    for number, (name, fn) in enumerate(tests, 1):
        started = time.monotonic()
        todo = getattr(fn, "todo", None)
        try:
            fn()
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (number, name, e))
        except Failure as e:
            if todo:  # a known gap: TAP's expected failure
                print("not ok %d - %s # TODO %s" % (number, name, todo))
            else:
                failed += 1
                print("not ok %d - %s" % (number, name))
            diag(e)
        except Exception:  # a crash in a test fails that test only
            failed += 1
            print("not ok %d - %s" % (number, name))
            diag(traceback.format_exc())
        else:
            # A known gap that passes: meson counts it as a failure, until
            # the mark goes.
            print("ok %d - %s%s" % (number, name, " # TODO " + todo if todo else ""))
        elapsed = time.monotonic() - started
        if elapsed > 5:
            diag("%s took %.1f s" % (name, elapsed))
        sys.stdout.flush()
    sys.exit(1 if failed else 0)


# -------------------------------------------------------------- processes --

def run(argv, timeout=CMD_TIMEOUT, input=None, env=None, cwd=None):
    """Run argv; return (rc, stdout, stderr) as text. On timeout the whole
    process group is killed and rc is None."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                            start_new_session=True, text=True, errors="replace")
    try:
        out, err = proc.communicate(input, timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err + "\n[killed after %.0f s]" % timeout
    except BaseException:  # interrupted: leave nothing running in a view
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def unescape_mountinfo(field):
    """Undo the octal escapes (\\040 for a space ...) of mountinfo fields."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(path, mountinfo="/proc/self/mountinfo"):
    """Mount points at or below path in this mount namespace, innermost last."""
    path = os.path.realpath(path) if os.path.lexists(path) else path
    found = []
    with open(mountinfo) as f:
        for line in f:
            mp = unescape_mountinfo(line.split()[4])
            if mp == path or mp.startswith(path.rstrip("/") + "/"):
                found.append(mp)
    return found


def mount_table(mountinfo="/proc/self/mountinfo"):
    """[(id, parent id, mount point, fstype)] of this mount namespace."""
    table = []
    with open(mountinfo) as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-", 6)
            table.append((int(fields[0]), int(fields[1]), unescape_mountinfo(fields[4]), fields[sep + 1]))
    return table


def serving_mounts(mnt):
    """True if the top mount at mnt is a cgprocfs FUSE mount that answers,
    with a procfs mounted at its proc/.real. A dead mount does not count,
    though its cached dentries can still lead to its proc/.real."""
    table = mount_table()
    tops = [m for m in table if m[2] == mnt]
    if not tops or tops[-1][3] != "fuse.cgprocfs":
        return False
    real = os.path.join(mnt, "proc", ".real")
    if not any(m[2] == real and m[1] == tops[-1][0] and m[3] == "proc" for m in table):
        return False
    try:
        os.stat(mnt)
        os.listdir(os.path.join(mnt, "proc"))
    except OSError:
        return False
    return True


def force_unmount(path):
    """Last resort: lazily detach everything mounted at or below path."""
    for mp in sorted(set(mounts_under(path)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # A dead FUSE mount can hide the ones below it from a path walk.
    if mounts_under(path):
        subprocess.run(["umount", "-l", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def keeper_commands(mnt):
    """{pid: command line} of the keepers of the daemons of mountpoint mnt
    (cgprocfs-keeper --be-keeper PATH WAIT MNT)."""
    found = {}
    for pid in run(["pgrep", "-x", "cgprocfs-keeper"])[1].split():
        with contextlib.suppress(OSError), open("/proc/%s/cmdline" % pid) as f:
            argv = f.read().split("\0")[:-1]
            if argv[-1:] == [mnt]:
                found[int(pid)] = argv
    return found


def keepers_of(mnt, wait=False):
    """The keeper processes of the daemons of mountpoint mnt. With wait,
    up to 10 s for one: a daemon serves before its keeper, started beside
    it, runs as itself."""
    if wait:
        return wait_until(lambda: keepers_of(mnt), timeout=10) or []
    return list(keeper_commands(mnt))


def keeper_published(mnt):
    """Whether a keeper of the daemon at mnt is at its path, where a new
    daemon looks (a daemon serves before its keeper holds the views and is
    published there: daemon/takeover.c, keep_all). A connection, closed
    unsaid, is all the keeper sees; nothing is read from the view, whose
    daemon may be stopped."""
    for argv in keeper_commands(mnt).values():
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.connect(argv[2])
            return True
    return False


def daemon_exe():
    return os.environ["CGPROCFS"]


class Daemon:
    """A cgprocfs daemon on a temporary mountpoint.

        with Daemon() as d:
            d.mnt, d.proc (MNT/proc), d.cpu (MNT/sys/devices/system/cpu)
            d.stop() -> list of problems (also called on exit)

    On leaving the block the daemon gets SIGTERM; if it does not stop, or
    leaves anything mounted under the mountpoint, it is killed, the mounts
    are detached, and the block raises Failure."""

    def __init__(self, mountpoint=None, args=(), ready_timeout=READY_TIMEOUT, prefix=()):
        self._own_dir = mountpoint is None
        self.prefix = list(prefix)  # a command that execs the daemon (prlimit ...)
        self.mnt = mountpoint
        self.args = list(args)
        self.ready_timeout = ready_timeout
        self.proc = self.cpu = None
        self.process = None
        self.returncode = None
        self._log = None
        self._earlier_log = ""  # of the daemons this one took over from
        self._stopped = False

    # The daemon's stderr, for diagnostics.
    def log(self):
        if self._log is None:
            return self._earlier_log
        self._log.flush()
        with open(self._log.name, errors="replace") as f:
            return self._earlier_log + f.read()

    def wait_published(self):
        """Wait until this daemon's keeper holds the views and is published
        (keeper_published): killed before that, it leaves none to take."""
        if not wait_until(lambda: keeper_published(self.mnt), timeout=10, step=0.05):
            raise Failure("no keeper of the daemon at %s is published 10 s after it served" % self.mnt, self.log())

    def crash_and_restart(self, replace=False, after_kill=None):
        """SIGKILL this daemon (not its keeper), start a new one on the same
        mountpoint (with --replace if replace), which takes the views over
        from the keeper, and stand for it from then on (as take_over).
        after_kill(): called once the signal is sent."""
        self.wait_published()
        self.process.send_signal(signal.SIGKILL)
        if after_kill:
            after_kill()
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            # A thread stuck in the kernel (say, on a lock a request holds
            # that only a daemon can answer) keeps the process from dying.
            stuck = []
            for tid in os.listdir("/proc/%d/task" % self.process.pid):
                with contextlib.suppress(OSError), open("/proc/%d/task/%s/wchan" % (self.process.pid, tid)) as f:
                    stuck.append(f.read())
            raise Failure("the killed daemon is not gone %.0f s later; its threads wait in: %s"
                          % (STOP_TIMEOUT, ", ".join(sorted(set(stuck)))))
        new = Daemon(mountpoint=self.mnt, args=self.args + (["--replace"] if replace else []),
                     ready_timeout=self.ready_timeout)
        new.start()
        self._earlier_log = self.log()
        self.process, self._log = new.process, new._log
        new._stopped = True  # this object stops it

    def take_over(self):
        """Start a daemon with --replace on this mountpoint, wait for the
        running one to exit, and stand for the new one from then on (its
        log follows the old one's). Returns the old one's exit status."""
        new = Daemon(mountpoint=self.mnt, args=self.args + ["--replace"], ready_timeout=self.ready_timeout)
        new.start()
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Failure("the old daemon still runs %.0f s after the handover" % STOP_TIMEOUT,
                          "its log:", self.log(), "the new one's:", new.log())
        rc = self.process.returncode
        self._earlier_log = self.log()
        self.process, self._log = new.process, new._log
        new._stopped = True  # this object stops it
        return rc

    @property
    def ready(self):
        return (self.process is not None and self.process.poll() is None and not self._stopped
                and os.path.exists(os.path.join(self.proc, ".real", "self")) and serving_mounts(self.mnt))

    def start(self, wait=True):
        """Start the daemon and, if wait, wait until it serves (a failure
        raises); without wait, return at once (a daemon meant to die)."""
        if self.mnt is None:
            self.mnt = tempfile.mkdtemp(prefix="cgprocfs-test-")
        # As the daemon resolves it (a dead mount cannot be resolved).
        self.mnt = os.path.join(os.path.realpath(os.path.dirname(self.mnt)), os.path.basename(self.mnt))
        self.proc = os.path.join(self.mnt, "proc")
        self.cpu = os.path.join(self.mnt, "sys/devices/system/cpu")
        self._log = tempfile.NamedTemporaryFile(prefix="cgprocfs-log-", mode="w+")
        self.process = subprocess.Popen(self.prefix + [daemon_exe()] + self.args + [self.mnt], stdin=subprocess.DEVNULL,
                                        stdout=self._log, stderr=self._log, start_new_session=True)
        if not wait:
            return self
        ready = os.path.join(self.proc, ".real", "self")
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if os.path.exists(ready) and serving_mounts(self.mnt):
                return self
            time.sleep(0.02)
        rc = self.process.poll()
        problems = self.stop()
        if rc is None:
            message = "daemon not ready after %.0f s" % self.ready_timeout
        else:
            message = "daemon exited with status %s before it was ready" % rc
        raise Failure(message, *problems, "daemon log:", self.log())

    def stop(self, sig=signal.SIGTERM):
        """Stop the daemon with sig; return a list of problems (empty if it
        exited 0 and left nothing mounted). Always cleans up."""
        if self._stopped:
            return []
        self._stopped = True
        problems = []
        how = ""
        if self.process and self.process.poll() is None:
            how = " after " + sig.name
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append("daemon still running %.0f s after %s: killed" % (STOP_TIMEOUT, sig.name))
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.process:
            self.returncode = self.process.returncode
            if self.returncode != 0:
                problems.append("daemon exit status %s%s" % (self.returncode, how))
        left = mounts_under(self.mnt) if self.mnt else []
        if left:
            problems.append("left mounted after the daemon stopped: %s" % ", ".join(left))
            force_unmount(self.mnt)
        if self._own_dir and self.mnt and not mounts_under(self.mnt):
            shutil.rmtree(self.mnt, ignore_errors=True)
        return problems

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        problems = self.stop()
        if problems and exc_type is None:
            raise Failure("daemon did not stop cleanly", *problems, "daemon log:", self.log())
        return False


def _terminate_on_sigterm():
    """Let SIGTERM (a meson timeout) unwind, so that finally blocks unmount."""
    def handler(signum, frame):
        raise SystemExit("terminated by signal %d" % signum)
    signal.signal(signal.SIGTERM, handler)


def run_with_daemon(make_tests, daemon_args=()):
    """Run make_tests(daemon) between a test that starts one daemon and a
    test that stops it and checks that nothing stays mounted. A test run
    while the daemon is not serving fails."""
    skip_all_unless_runnable()
    _terminate_on_sigterm()
    d = Daemon(args=daemon_args)

    def guarded(fn):
        def body():
            check(d.ready, "the daemon is not serving", "daemon log:", d.log())
            fn()
        return body

    tests = [("daemon starts and serves", d.start)]
    tests += [(name, guarded(fn)) for name, fn in make_tests(d)]
    tests += [("daemon stops on SIGTERM with exit 0 and leaves nothing mounted", lambda: stop_check(d))]
    try:
        run_tests(tests)
    finally:
        d.stop()


def run_with_state(make_tests, cleanup):
    """Run make_tests(daemon, state) with a daemon of their own, then
    cleanup(state) whatever happened (state: a dict the tests fill)."""
    skip_all_unless_runnable()
    state = {}
    try:
        with Daemon() as d:
            run_tests(make_tests(d, state))
    finally:
        cleanup(state)


def stop_check(daemon):
    """A test body: stop daemon, fail with the problems if any."""
    problems = daemon.stop()
    check(not problems, "daemon did not stop cleanly", *problems, "daemon log:", daemon.log())


# What in_cgroups runs first to bind the view at $CG_MNT over /proc.
BIND_PROC = 'mount --rbind "$CG_MNT/proc" /proc || exit 97\n'


def in_cgroups(dirs, argv, setup=""):
    """argv (same pid) in every cgroup of dirs (one per hierarchy), in a
    private mount namespace after setup (a shell snippet run there first,
    in the cgroups): an argv for run or Popen. Exit 96: a cgroup refused
    the process."""
    script = "".join("echo $$ > %s/cgroup.procs || exit 96\n" % shlex.quote(d) for d in dirs)
    inner = setup + 'exec "$@"\n'
    script += "exec unshare --mount --propagation private sh -c %s sh \"$@\"\n" % shlex.quote(inner)
    return ["sh", "-c", script, "sh"] + list(argv)


def threads_of(pid):
    """{tid: (comm, state, wchan)} of process pid's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with contextlib.suppress(OSError):
            base = "/proc/%d/task/%s/" % (pid, tid)
            with open(base + "comm") as f, open(base + "stat") as g, open(base + "wchan") as h:
                out[int(tid)] = (f.read().strip(), g.read().rsplit(")", 1)[1].split()[0], h.read())
    return out


def remove_cgroups(paths, root):
    """rmdir each cgroup v1 directory of paths (children first), its
    processes first moved to root, the hierarchy's top; a process that has
    just exited can hold its cgroup a moment: tried again for 2.5 s."""
    for path in paths:
        for _ in range(50):
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    pids = f.read().split()
                for pid in pids:
                    with open(os.path.join(root, "cgroup.procs"), "w") as f:
                        f.write(pid)
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


# ------------------------------------------------------------ in the view --

def view_setup_script(variant):
    """Shell lines that bind the view at $CG_MNT over /proc and
    /sys/devices/system/cpu (see in_view); exit 97 if they cannot."""
    if variant == "rbind":
        return ('mount --rbind "$CG_MNT/proc" /proc || exit 97\n'
                'mount --bind "$CG_MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n')
    if variant == "bind+proc":
        return ('mount --bind "$CG_MNT/proc" /proc || exit 97\n'
                'mount -t proc proc /proc/.real || exit 97\n'
                'mount --bind "$CG_MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n')
    raise ValueError(variant)


def in_view(mnt, argv, variant="rbind", user=None, timeout=CMD_TIMEOUT, env=None, cwd=None, input=None):
    """Run argv in a private mount namespace where the view at mnt is bound
    over /proc and /sys/devices/system/cpu. variant "rbind" binds MNT/proc
    with its proc/.real; "bind+proc" binds MNT/proc alone and mounts a new
    procfs on /proc/.real. user "nobody" drops to nobody:nogroup (no
    supplementary groups) after the mounts. Returns (rc, stdout, stderr);
    rc 97 means the binds failed, None a timeout."""
    script = view_setup_script(variant)
    if user is not None:
        script += 'exec setpriv --reuid="$CG_USER" --regid="$CG_GROUP" --clear-groups -- "$@"\n'
    else:
        script += 'exec "$@"\n'
    full_env = dict(os.environ if env is None else env)
    full_env["CG_MNT"] = mnt
    if user is not None:
        full_env["CG_USER"] = user
        full_env["CG_GROUP"] = "nogroup" if user == "nobody" else user
    return run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "cgview"] + list(argv),
               timeout=timeout, env=full_env, cwd=cwd, input=input)


def bash_in_view(mnt, snippet, **kw):
    return in_view(mnt, ["bash", "-c", snippet], **kw)


def python_in_view(mnt, code, **kw):
    return in_view(mnt, [PYTHON, "-c", code], **kw)


def describe(result):
    rc, out, err = result
    return "exit status %s\nstdout:\n%s\nstderr:\n%s" % (rc, out.rstrip(), err.rstrip())


def check_ran(result, what):
    """Fail unless result (rc, out, err) exited 0; return its stdout."""
    check(result[0] == 0, "%s failed" % what, describe(result))
    return result[1]


# ------------------------------------------------------------------ misc --

def errno_of(fn, *args, **kw):
    """0 if fn(*args) succeeds, else the errno of the OSError it raised."""
    try:
        fn(*args, **kw)
    except OSError as e:
        return e.errno
    return 0


def errname(code):
    return "success" if code == 0 else errno.errorcode.get(code, str(code))


@contextlib.contextmanager
def spawned(argv, **kw):
    """A child process, killed and reaped when the block ends."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, **kw)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def wait_until(pred, timeout=5.0, step=0.01):
    """pred()'s first true value within timeout, or False."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


def check_cpu_share(what, got, hog_ticks, seconds, clk, view_cpus, host_cpus):
    """got (a busy percentage) is the hog's share of the view's CPUs over the
    same window (the container's other processes may add a little), and
    nearer to that than to its share of the host's CPUs."""
    expected = 100.0 * hog_ticks / (clk * seconds * view_cpus)
    of_host = 100.0 * hog_ticks / (clk * seconds * host_cpus)
    message = ("%s: %.1f %% busy, where the hog used %.1f %% of the container's %d CPU(s) (%.1f %% of the host's %d)"
               % (what, got, expected, view_cpus, of_host, host_cpus))
    check(expected - 12 <= got <= expected + 15, message)
    if expected - of_host >= 10:  # else the host starved the hog: the two cannot be told apart
        check(abs(got - expected) < abs(got - of_host), message)


def smaps_fields(text):
    """{name: kB} of an smaps_rollup text, and its header line."""
    lines = text.splitlines()
    fields = {}
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        fields[name.strip()] = int(rest.split()[0]) if rest.split() else None
    return (lines[0] if lines else ""), fields


def read_stats(mnt, prefix="cgprocfs_smaps_"):
    """The samples of MNT/.cgprocfs/stats, {name: value}, with prefix
    taken off the names that have it."""
    out = {}
    with open(os.path.join(mnt, ".cgprocfs", "stats")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, value = line.split()
                out[name[len(prefix):] if name.startswith(prefix) else name] = float(value)
    return out


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def test_registry():
    """A list of (name, fn) and the decorator that adds a test to it.
    test(name, todo=REASON) marks a known gap: its failure is reported as
    TAP's expected failure (# TODO REASON), and a pass fails the run."""
    tests = []

    def test(name, todo=None):
        def register(fn):
            fn.todo = todo
            tests.append((name, fn))
            return fn
        return register
    return tests, test


class LoopDevice:
    """A new loop device on a sparse file of size bytes in a temporary
    directory: .path (/dev/loopN), .name, .major, .minor. Closed: detached
    and removed (LOOP_CTL_REMOVE), so that the next test's device is a new
    queue: on cgroup v1 a queue that ever had a throttle rule counts I/O
    for every cgroup from then on."""

    LOOP_CTL_REMOVE = 0x4C81

    def __init__(self, size=64 << 20):
        self._dir = tempfile.mkdtemp(prefix="cgprocfs-loop-")
        image = os.path.join(self._dir, "image")
        with open(image, "wb") as f:
            f.truncate(size)
        self.path = check_ran(run(["losetup", "--find", "--show", image]), "losetup").strip()
        self.name = os.path.basename(self.path)
        st = os.stat(self.path)
        self.major, self.minor = os.major(st.st_rdev), os.minor(st.st_rdev)

    def close(self):
        run(["losetup", "--detach", self.path])
        try:
            fd = os.open("/dev/loop-control", os.O_RDWR)
            try:
                fcntl.ioctl(fd, self.LOOP_CTL_REMOVE, self.minor)
            finally:
                os.close(fd)
        except OSError:
            pass  # still busy: left to the next losetup
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# In a view bound over /proc: read served and delegated files and list
# pids, for argv[1] seconds, or without it until a line comes on stdin;
# then read a file and a directory opened at the start again, and print the
# counts as JSON. At most 20 errors are kept (a dead view gives one a read).
VIEW_READER = r"""
import json, os, select, sys, time
out = {"reads": 0, "errors": []}
held = open("/proc/stat", "rb")
held.read(10)
held_dir = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
if len(sys.argv) > 1:
    end = time.monotonic() + float(sys.argv[1])
    done = lambda: time.monotonic() >= end
else:
    done = lambda: select.select([sys.stdin], [], [], 0)[0]
while not done() and len(out["errors"]) < 20:
    try:
        with open("/proc/cpuinfo") as f:
            assert "processor" in f.read(), "cpuinfo without processor lines"
        with open("/proc/self/status") as f:
            assert f.read().startswith("Name:"), "status does not start with Name:"
        assert len([p for p in os.listdir("/proc") if p.isdigit()]) > 1, "no pids listed"
        out["reads"] += 1
    except Exception as e:
        out["errors"].append(repr(e))
try:
    held.seek(0)
    out["held"] = held.read(4).decode()
    out["held_dir"] = len([p for p in os.listdir(held_dir) if p.isdigit()])
except Exception as e:
    out["held"] = out["held_dir"] = repr(e)
print(json.dumps(out), flush=True)
"""


# The root.path a bundle gives the OCI hook for a namespace of
# namespace_with_view: the host's /, whose /proc in that namespace's mount
# namespace is its own procfs.
HOOK_BUNDLE_CONFIG = {"ociVersion": "1.0.2", "root": {"path": "/"}}
# The hook ends in the namespace's mount namespace, whose /proc does not
# show it: a hook built with AddressSanitizer cannot look for leaks there.
HOOK_ENV = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") + " detect_leaks=0").strip())


# argv[2:] run as root of a new user namespace that root made, mapping 0 to
# host uid and gid argv[1] (65536 of each), as an Incus or unprivileged LXC
# container's processes run (DESIGN.md's test facts: the ids are taken
# before the exec, so it keeps the namespace's capabilities). Its parent
# stays root outside to write the maps, then exits as the child did.
USERNS_RUN = r"""
import ctypes, os, sys
base, argv = sys.argv[1], sys.argv[2:]
made_r, made_w = os.pipe()
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(go_w)
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
        os._exit(95)
    os.write(made_w, b"u")
    if os.read(go_r, 1) != b"g":
        os._exit(95)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.execvp(argv[0], argv)
os.close(go_r)
try:
    os.read(made_r, 1)
    for name, text in (("setgroups", "deny"), ("uid_map", "0 %s 65536" % base), ("gid_map", "0 %s 65536" % base)):
        with open("/proc/%d/%s" % (pid, name), "w") as f:
            f.write(text)
    os.write(go_w, b"g")
except OSError:
    os.kill(pid, 9)
    raise
code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
sys.exit(code if code >= 0 else 128 - code)
"""


def in_rootmade_userns(base, argv):
    """argv for running argv as root of a new user namespace root made,
    mapping 0 to host uid base (USERNS_RUN)."""
    return [PYTHON, "-c", USERNS_RUN, str(base)] + list(argv)


@contextlib.contextmanager
def rootmade_userns_sleeper(base=1000000, prefix=()):
    """A sleep run by in_rootmade_userns(base) (after prefix: nsenter into a
    container, say): yields its host pid, once it runs sleep as host uid
    base."""
    wrapper = subprocess.Popen(list(prefix) + in_rootmade_userns(base, ["sleep", "3600"]),
                               stdin=subprocess.DEVNULL)

    def sleeping():
        todo = [wrapper.pid]
        while todo:  # the wrapper may be below nsenter's own child
            p = todo.pop()
            with contextlib.suppress(OSError), open("/proc/%d/status" % p) as f:
                status = f.read()
                if status.startswith("Name:\tsleep") and "\nUid:\t%d\t" % base in status:
                    return p
            todo += _children(p)
        return None

    pid = None
    try:
        pid = wait_until(sleeping, timeout=10)
        if not pid:
            raise Failure("no sleep ran as uid %d in a user namespace root made" % base)
        yield pid
    finally:
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wrapper.kill()
        wrapper.wait()


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def start_namespace():
    """The cheapest container: a process in new pid and mount namespaces
    (with their own /proc), sleeping. (The unshare process, the namespace's
    init's host pid); end_namespace ends it."""
    ns = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--propagation", "private", "--mount-proc",
                           "sleep", "infinity"], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sleeping():
        """Its child once it runs sleep: it mounted its /proc before (until
        then a hook would find the host's procfs there)."""
        for p in _children(ns.pid):
            with contextlib.suppress(OSError), open("/proc/%d/comm" % p) as f:
                if f.read().strip() == "sleep":
                    return p
        return None

    init = wait_until(sleeping, timeout=10)
    if not init:
        end_namespace(ns)
        raise Failure("unshare made no sleeping process")
    return ns, init


def end_namespace(ns):
    for p in _children(ns.pid):  # the namespace's init: unshare does not end it
        with contextlib.suppress(ProcessLookupError):  # it may have died meanwhile
            os.kill(p, signal.SIGKILL)
    ns.wait()


def give_view(mnt, bundle, pid, name, hook=None, env=None):
    """Run the OCI hook (default $CGPROCFS_OCI_HOOK) for the namespace of
    pid, as a runtime's createContainer hook would, to give it the view at
    mnt; bundle is a directory with HOOK_BUNDLE_CONFIG as config.json; env:
    more of its environment. The hook's (rc, out, err)."""
    state = json.dumps({"ociVersion": "1.0.2", "id": name, "status": "creating", "pid": pid, "bundle": bundle})
    return run([hook or os.environ["CGPROCFS_OCI_HOOK"], "--mountpoint", mnt], input=state,
               env=dict(HOOK_ENV, **(env or {})))


@contextlib.contextmanager
def namespace_with_view(mnt, bundle, name="cgprocfs-test", cgroups=()):
    """start_namespace, its init moved into each cgroup directory of
    cgroups (as a runtime puts a container's init in its cgroup before its
    hooks run), then give_view. Yields (the init's host pid, the hook's
    (rc, out, err)); the namespace ends with the block."""
    ns, pid = start_namespace()
    try:
        for d in cgroups:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        yield pid, give_view(mnt, bundle, pid, name)
    finally:
        end_namespace(ns)
