"""Never dark: each process of a handover, a takeover from the keeper and
the keeper itself is killed at each step (CGPROCFS_FAULT, see
daemon/faults.h), and the views must survive it with no failed read:
readers in the host's view and in a container's see at most a pause, a
daemon serves them afterwards (the one left, or one started again as
systemd would), and a keeper holds them all (the daemon serving at the
end is SIGKILLed, and one more takes every view over from its keeper)."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import Daemon, check, check_equal  # noqa: E402

SETTLE_TIMEOUT = 75  # a giver waits up to 60 s for "serving"
READER_TIMEOUT = 30
# What is awaited (a log line, a keeper gone) comes in a second; the rest
# is for a sanitized daemon on a loaded machine.
WAIT_TIMEOUT = 30


def start_reader(argv_prefix):
    """cgtest.VIEW_READER, until finish_reader."""
    return subprocess.Popen(argv_prefix + [cgtest.PYTHON, "-c", cgtest.VIEW_READER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def host_reader(mnt):
    """cgtest.VIEW_READER with the view at mnt bound over /proc."""
    return start_reader(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                         'mount --rbind "$1/proc" /proc && shift && exec "$@"', "sh", mnt])


def churn(mnt):
    """Short-lived processes, each looked up through the view at mnt
    before it exits: the daemon is always telling the kernel of an exit,
    which waits for the lookups in flight in /proc."""
    return subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                             'mount --rbind "$1/proc" /proc || exit 1\n'
                             'while :; do sleep 0.01 & cat /proc/$!/stat >/dev/null 2>&1; wait; done', "sh", mnt],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def container_reader(init):
    """cgtest.VIEW_READER in the pid and mount namespaces of init, whose /proc is its view."""
    return start_reader(["nsenter", "--target", str(init), "--pid", "--mount"])


def finish_reader(reader, where):
    """Stop reader; fail unless it read, with no error, and its file opened
    at the start read on."""
    try:
        out, err = reader.communicate("stop\n", timeout=READER_TIMEOUT)
    except subprocess.TimeoutExpired:
        reader.kill()
        out, err = reader.communicate()
        raise cgtest.Failure("the reader in %s still waits %d s after the views were served again "
                             "(a request nobody answers)" % (where, READER_TIMEOUT), err)
    check(reader.returncode == 0, "the reader in %s failed" % where, out, err)
    res = json.loads(out)
    check_equal(res["errors"], [], "errors the reader in %s saw" % where)
    check(res["reads"] > 0, "the reader in %s read nothing" % where, res)
    check_equal(res["held"], "cpu ", "the start of /proc/stat, opened in %s before the fault" % where)
    check(isinstance(res["held_dir"], int) and res["held_dir"] > 1,
          "a listing of /proc opened in %s before the fault gave %s" % (where, res["held_dir"]))


def alive(d):
    return d is not None and d.process is not None and d.process.poll() is None


def wait_settled(d, words):
    """Wait until daemon d has exited or its log says it serves (words)."""
    check(cgtest.wait_until(lambda: not alive(d) or words in d.log(), timeout=SETTLE_TIMEOUT, step=0.05),
          "the daemon neither exited nor said %r in %d s" % (words, SETTLE_TIMEOUT), d.log())


def took_over_from_keeper(d):
    check(cgtest.wait_until(lambda: "keeper of a daemon that died" in d.log(), timeout=WAIT_TIMEOUT),
          "the new daemon did not say it took the views over from the keeper", d.log())


def serving(d):
    """Fail unless d runs and its view answers (the daemon itself, not the
    kernel's cache)."""
    check(alive(d), "the daemon exited (status %s)" % (d.process and d.process.returncode), d.log())
    check(cgtest.serving_mounts(d.mnt), "the view at %s does not answer" % d.mnt, d.log())
    with open(os.path.join(d.proc, "cpuinfo")) as f:
        check("processor" in f.read(), "proc/cpuinfo has no processor line")


@contextlib.contextmanager
def slow_to_exit(pids):
    """pids in a cgroup allowed 1 % of a CPU, which a spinning process
    there uses up: a process of it SIGKILLed takes up to 0.1 s to exit
    and close its fds (the kernel runs it only when the cgroup may run)."""
    v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    root = "/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/cpu"
    group = os.path.join(root, "cgprocfs-handover-%d" % os.getpid())
    os.mkdir(group)
    spinner = None
    try:
        with open(os.path.join(group, "cpu.max" if v2 else "cpu.cfs_quota_us"), "w") as f:
            f.write("1000 100000" if v2 else "1000")
        spinner = subprocess.Popen(["sh", "-c", "echo $$ > %s/cgroup.procs && while :; do :; done" % group])
        check(cgtest.wait_until(lambda: str(spinner.pid) in open(os.path.join(group, "cgroup.procs")).read()),
              "the spinner never entered %s" % group)
        for pid in pids:
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        yield
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
        cgtest.remove_cgroups([group], root)


class Scene:
    """A daemon, a container's view (the OCI hook's), a reader in each
    view and process churn in the host's; every daemon started for it is
    stopped at the end."""

    def __init__(self, stack, fault_of_first=None, first_args=()):
        if not os.environ.get("CGPROCFS_OCI_HOOK"):
            raise cgtest.Skip("CGPROCFS_OCI_HOOK is not set (run through meson test)")
        self.daemons = []
        self.first = self.daemon(fault_of_first, list(first_args))
        stack.callback(self.stop_all)
        bundle = stack.enter_context(scratch_bundle())
        init, res = stack.enter_context(cgtest.namespace_with_view(self.first.mnt, bundle, "handover-test"))
        check(res[0] == 0 and not res[2].strip(), "the hook gave no view", cgtest.describe(res))
        check("fuse.cgprocfs" in self.proc_mounts(init), "no view over the container's /proc", self.proc_mounts(init))
        self.init = init
        self.control = self.control_socket()
        self.readers = [("the host's view", host_reader(self.first.mnt)), ("the container's view", container_reader(init))]
        self.churn = churn(self.first.mnt)
        stack.callback(self.kill_readers)
        time.sleep(0.3)

    def daemon(self, fault=None, args=(), wait=None):
        """A daemon on the scene's mountpoint; one given a fault to die of
        (CGPROCFS_FAULT) is not waited for (nor, with wait False, any)."""
        first = not self.daemons
        mnt = None if first else self.daemons[0].mnt
        prefix = ["env", "CGPROCFS_FAULT=" + fault] if fault else []
        d = Daemon(mountpoint=mnt, args=list(args), prefix=prefix)
        self.daemons.append(d)
        return d.start(wait=first or (not fault if wait is None else wait))

    def log(self):
        return "\n".join(d.log() for d in self.daemons)

    @staticmethod
    def proc_mounts(pid):
        """The lines of pid's mountinfo for /proc and below."""
        with open("/proc/%d/mountinfo" % pid) as f:
            return "".join(line for line in f if line.split()[4].startswith("/proc"))

    def control_socket(self):
        """The control socket's path and inode: a takeover passes the
        socket on, so the inode stays."""
        with open(os.path.join(self.first.mnt, ".cgprocfs", "control")) as f:
            path = f.read().strip()
        return path, os.stat(path).st_ino

    def fired(self, fault):
        """Wait until the process of fault's role reached its point."""
        role, point = fault.split(":")
        said = re.compile(r"fault injected: the %s (SIGKILLs|stops) itself.* at %s$" % (role, point.split("=")[0]),
                          re.M)
        check(cgtest.wait_until(lambda: said.search(self.log()), timeout=WAIT_TIMEOUT),
              "the fault %s was never reached" % fault, self.log())

    def living(self):
        return [d for d in self.daemons if alive(d)]

    def end(self):
        """After the fault: a daemon serves (started again, as systemd
        would, if none is left), the readers saw no error, and a keeper
        holds every view: the serving daemon is SIGKILLed and a new one
        takes them all over from it, with the readers still reading."""
        left = self.living()
        check(len(left) <= 1, "%d daemons still run on one mountpoint" % len(left), self.log())
        if not left:
            left = [self.daemon()]
            took_over_from_keeper(left[0])
        serving(left[0])
        left[0].wait_published()
        os.kill(left[0].process.pid, signal.SIGKILL)
        left[0].process.wait(cgtest.STOP_TIMEOUT)
        last = self.daemon()
        took_over_from_keeper(last)
        serving(last)
        check_equal(self.control_socket(), self.control, "the control socket (path, inode), handed on each time")
        time.sleep(0.3)
        for where, reader in self.readers:
            finish_reader(reader, where)
        in_container = cgtest.run(["nsenter", "--target", str(self.init), "--pid", "--mount", "cat", "/proc/1/comm"])
        check(in_container[1].strip() == "sleep", "the container's pid 1, through its view, is %r, not 'sleep'"
              % in_container[1].strip(), cgtest.describe(in_container), "the container's mounts of /proc:",
              self.proc_mounts(self.init), self.log())
        problems = last.stop()
        check(not problems, "the last daemon did not stop cleanly", *problems, self.log())
        check(cgtest.wait_until(lambda: not cgtest.keepers_of(last.mnt), timeout=WAIT_TIMEOUT),
              "keepers left after the clean stop", cgtest.keepers_of(last.mnt))

    def kill_readers(self):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.churn.pid, signal.SIGKILL)
        self.churn.wait()
        for _, r in self.readers:
            if r.poll() is None:
                r.kill()
                r.wait()

    def stop_all(self):
        for d in reversed(self.daemons):
            if alive(d):
                d.stop(signal.SIGKILL)
            d._stopped = True
        for d in self.daemons[:1]:
            for k in cgtest.keepers_of(d.mnt):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(k, signal.SIGKILL)
            cgtest.force_unmount(d.mnt)
            if not cgtest.mounts_under(d.mnt):  # the first daemon's own, outlived by its mounts
                shutil.rmtree(d.mnt, ignore_errors=True)


@contextlib.contextmanager
def scratch_bundle():
    """A bundle directory whose config.json is cgtest.HOOK_BUNDLE_CONFIG."""
    path = tempfile.mkdtemp(prefix="cgprocfs-bundle-")
    try:
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def replace_with_fault(fault):
    """--replace, with the old daemon (daemon:give-*) or the new one
    (daemon:take-*) killed at a step."""
    def body():
        with contextlib.ExitStack() as stack:
            giver = fault.split(":")[1].startswith("give")
            s = Scene(stack, fault if giver else None)
            new = s.daemon(None if giver else fault, ["--replace"])
            s.fired(fault)
            if giver:  # the new one serves (from the keeper) or gives up
                s.first.process.wait(cgtest.STOP_TIMEOUT)
                wait_settled(new, "took over")
            else:  # the old one serves on, or exits once the new one serves
                new.process.wait(cgtest.STOP_TIMEOUT)
                wait_settled(s.first, "serves on")
            s.end()
    return body


def recover_with_fault(fault):
    """The daemon SIGKILLed; a new one takes the views over from its keeper,
    with the new one (daemon:take-*) or the keeper (keeper:give-*) killed at
    a step."""
    def body():
        with contextlib.ExitStack() as stack:
            keeper = fault.startswith("keeper:")
            s = Scene(stack, fault if keeper else None)
            s.first.wait_published()  # killed before, it leaves no keeper to take from
            os.kill(s.first.process.pid, signal.SIGKILL)
            s.first.process.wait(cgtest.STOP_TIMEOUT)
            new = s.daemon(None if keeper else fault)
            s.fired(fault)
            if not keeper:
                new.process.wait(cgtest.STOP_TIMEOUT)
            else:
                wait_settled(new, "took over")
            s.end()
    return body


def make_tests():
    tests, test = cgtest.test_registry()
    for step in ("give-paused", "give-sent", "give-end", "give-served"):
        test("--replace, the old daemon SIGKILLed at %s: no failed read, the views served and kept" % step)(
            replace_with_fault("daemon:" + step))
    for step in ("take-asked", "take-received", "take-host", "take-resumed", "take-serving"):
        test("--replace, the new daemon SIGKILLed at %s: no failed read, the views served and kept" % step)(
            replace_with_fault("daemon:" + step))
    for step in ("take-asked", "take-received", "take-host", "take-resumed", "take-serving"):
        test("a takeover from the keeper, the new daemon SIGKILLed at %s: no failed read, the views served "
             "and kept" % step)(recover_with_fault("daemon:" + step))
    test("a takeover from the keeper, the keeper SIGKILLed once it sent everything (give-end): the new daemon "
         "serves, no failed read, the views kept")(recover_with_fault("keeper:give-end"))

    @test("a daemon SIGKILLed while the kernel copies its answer to a read (answer-copy-fails: the answer's "
          "bytes unreadable, as a killed daemon's pages are to a kernel without the fast get_user_pages): the "
          "reader gets no EIO, the next daemon answers it")
    def _():
        with Daemon(prefix=["env", "CGPROCFS_FAULT=daemon:answer-copy-fails"]) as d:
            cgtest.keepers_of(d.mnt, wait=True)
            # stat, whose every open has its own text: no page cache to
            # read it again from
            reader = subprocess.Popen(["cat", os.path.join(d.proc, "stat")], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            check(cgtest.wait_until(lambda: d.process.poll() is not None, timeout=WAIT_TIMEOUT),
                  "the daemon did not die at its first read's answer", d.log())
            check("SIGKILLs itself at answer-copy-fails" in d.log(), "the fault was not reached", d.log())
            d.crash_and_restart()
            try:
                out, err = reader.communicate(timeout=READER_TIMEOUT)
            except subprocess.TimeoutExpired:
                reader.kill()
                raise cgtest.Failure("the read still waits %d s after a new daemon took over" % READER_TIMEOUT,
                                     d.log())
            check(reader.returncode == 0 and out.startswith("cpu "), "cat of the view's stat: exit %d, "
                  "%r, %s" % (reader.returncode, out[:40], err.strip()), d.log())

    @test("the keeper SIGKILLed while the daemon serves: the daemon starts another, which holds every view "
          "(the daemon SIGKILLed next: no failed read)")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack)
            keepers = cgtest.keepers_of(s.first.mnt, wait=True)
            check_equal(len(keepers), 1, "keepers of the mountpoint")
            os.kill(keepers[0], signal.SIGKILL)
            check(cgtest.wait_until(lambda: "the keeper holds every view again" in s.log(), timeout=WAIT_TIMEOUT),
                  "no new keeper holds the views %d s after the first was killed" % WAIT_TIMEOUT, s.log())
            s.end()

    @test("--replace, the new daemon SIGKILLed once it said serving, while the old one, stopped there, still "
          "watches a process that exits and readers wait in /proc: the old one exits all the same, and a new "
          "daemon takes every view from the keeper")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack, "daemon:give-served=stop")
            sleeper = subprocess.Popen(["sleep", "600"])
            stack.callback(lambda: sleeper.poll() is None and (sleeper.kill(), sleeper.wait()))
            os.stat(os.path.join(s.first.proc, str(sleeper.pid)))  # its entry cached, its exit watched
            new = s.daemon("daemon:take-serving", ["--replace"])
            s.fired("daemon:take-serving")
            new.process.wait(cgtest.STOP_TIMEOUT)
            check(cgtest.wait_until(lambda: cgtest.read_all("/proc/%d/stat" % s.first.process.pid).split()[2] == b"T"),
                  "the old daemon did not stop at give-served", s.log())
            sleeper.kill()
            sleeper.wait()
            time.sleep(0.3)  # the readers' lookups wait in /proc: nobody serves
            os.kill(s.first.process.pid, signal.SIGCONT)
            try:
                s.first.process.wait(cgtest.STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise cgtest.Failure("the old daemon still runs %d s after it handed over (its notification of "
                                     "the exit waits in the kernel)" % cgtest.STOP_TIMEOUT, s.log())
            s.end()

    for step in ("attach-sent", "attach-got"):
        @test("the OCI hook of another container SIGKILLed at %s: the daemon serves on, no failed read, the view "
              "it made ends, and the next attach works" % step)
        def _(step=step):
            with contextlib.ExitStack() as stack:
                s = Scene(stack)
                sessions = lambda: cgtest.read_stats(s.first.mnt).get("cgprocfs_container_sessions")
                check_equal(sessions(), 1, "container sessions before")
                bundle = stack.enter_context(scratch_bundle())
                ns, pid = cgtest.start_namespace()
                stack.callback(cgtest.end_namespace, ns)
                res = cgtest.give_view(s.first.mnt, bundle, pid, "killed-hook", env={"CGPROCFS_FAULT": "hook:" + step})
                check_equal(res[0], -signal.SIGKILL, "the hook's exit status")
                check("SIGKILLs itself at " + step in res[2], "the fault was not reached", cgtest.describe(res))
                check(cgtest.wait_until(lambda: sessions() == 1, timeout=WAIT_TIMEOUT),
                      "the killed hook's view is still served %s" % sessions(), s.log())
                res = cgtest.give_view(s.first.mnt, bundle, pid, "next-hook")
                check(res[0] == 0, "the next attach", cgtest.describe(res))
                check_equal(sessions(), 2, "container sessions after the next attach")
                s.end()

    @test("--replace while the old daemon is stopped (SIGSTOP), its request queued, then the old daemon "
          "SIGKILLed: the new one takes every view from its keeper at once (not after the keeper's wait)")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack)
            s.first.wait_published()  # killed before, it leaves no keeper to take from
            os.kill(s.first.process.pid, signal.SIGSTOP)
            new = s.daemon(args=["--replace"], wait=False)
            time.sleep(1)  # its request waits in the stopped daemon's queue
            os.kill(s.first.process.pid, signal.SIGKILL)
            s.first.process.wait(cgtest.STOP_TIMEOUT)
            took_over_from_keeper(new)
            s.end()

    @test("SIGTERM to the old daemon during a handover (the new one stopped before it serves): the old one waits "
          "for the handover, exits 0 with the views handed over, no failed read")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack)
            new = s.daemon("daemon:take-resumed=stop", ["--replace"])
            s.fired("daemon:take-resumed=stop")
            s.first.process.send_signal(signal.SIGTERM)
            time.sleep(1)
            check(alive(s.first), "the old daemon exited during the handover", s.log())
            os.kill(new.process.pid, signal.SIGCONT)
            check_equal(s.first.process.wait(cgtest.STOP_TIMEOUT), 0, "the old daemon's exit status")
            check("handed over: exiting" in s.first.log(), "the old daemon did not hand over", s.log())
            wait_settled(new, "took over")
            s.end()

    @test("the old daemon's keeper SIGKILLed during a handover (the new one stopped before it serves): no keeper "
          "is started meanwhile, and the new daemon's keeper holds every view at the end, no failed read")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack)
            old_keepers = cgtest.keepers_of(s.first.mnt, wait=True)
            new = s.daemon("daemon:take-resumed=stop", ["--replace"])
            s.fired("daemon:take-resumed=stop")
            for k in old_keepers:
                os.kill(k, signal.SIGKILL)
            time.sleep(2.5)  # the old daemon's main thread looks at its keeper every 2 s
            check("is gone: starting another" not in s.first.log(), "a keeper was started during the handover",
                  s.log())
            os.kill(new.process.pid, signal.SIGCONT)
            check_equal(s.first.process.wait(cgtest.STOP_TIMEOUT), 0, "the old daemon's exit status")
            wait_settled(new, "took over")
            s.end()

    @test("--keep-views-on-stop: the keeper SIGKILLed (and slow to exit), then SIGTERM at once: the daemon starts "
          "another keeper, leaves it the views, and a new daemon takes them over, no failed read")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack, first_args=["--keep-views-on-stop"])
            keepers = cgtest.keepers_of(s.first.mnt, wait=True)
            with slow_to_exit(keepers):
                for k in keepers:
                    os.kill(k, signal.SIGKILL)
                s.first.process.send_signal(signal.SIGTERM)
            check_equal(s.first.process.wait(cgtest.STOP_TIMEOUT), 0, "exit status after SIGTERM")
            check("leaving the views to the keeper" in s.first.log(), "what SIGTERM did", s.log())
            s.end()

    @test("--keep-views-on-stop: SIGTERM, then a new daemon SIGKILLed at take-resumed: no failed read, the views "
          "served and kept")
    def _():
        with contextlib.ExitStack() as stack:
            s = Scene(stack, first_args=["--keep-views-on-stop"])
            s.first.process.send_signal(signal.SIGTERM)
            check_equal(s.first.process.wait(cgtest.STOP_TIMEOUT), 0, "exit status after SIGTERM")
            new = s.daemon("daemon:take-resumed")
            s.fired("daemon:take-resumed")
            new.process.wait(cgtest.STOP_TIMEOUT)
            s.end()

    @test("SIGTERM while processes come and go, each looked up in the view: the daemon finishes telling the kernel "
          "of their exits before it stops serving, and exits 0 within 10 s, 20 times")
    def _():
        # An exit's notification waits for the lookups in /proc; once a
        # session is no longer served, nothing answers them. With the
        # process watch stopped after the sessions, 11 of 50 stops hung.
        for _ in range(20):
            with Daemon() as d, contextlib.ExitStack() as stack:
                for _ in range(8):
                    c = churn(d.mnt)
                    stack.callback(c.wait)
                    stack.callback(os.killpg, c.pid, signal.SIGKILL)
                time.sleep(1)
                problems = d.stop()
                check(not problems, "the daemon did not stop cleanly", *problems, "its log:", d.log())
    return tests


if __name__ == "__main__":
    cgtest.run_tests(make_tests() if "CGPROCFS" in os.environ else [])
