"""hidepid: where the daemon's /proc hides other users' processes
(hidepid=invisible), the view hides them too, from listings, lookups and
stat, for each caller exactly as the kernel does, the daemon's own process
included; with gid=G the members of G see everything, as in the kernel's.

Each daemon runs in a private mount namespace whose /proc is a new procfs
with the options under test; probes enter that namespace (nsenter) and run
as nobody (or root), comparing the view with that /proc."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, check_ran  # noqa: E402

GROUP = 4242  # the gid= group: any gid will do, no entry in /etc/group needed
# Host uids of the roots of two unprivileged containers' user namespaces.
CONTAINED_UID, OTHER_CONTAINER_UID = 1000000, 2000000
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
NOBODY_IN_GROUP = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=%d" % GROUP, "--"]

# argv: the view's proc, then {name: pid} of processes to look at. Prints
# both listings (taken again until they agree: processes come and go) and,
# per process, what stat and an open of its status give in each.
PROBE = r"""
import json, os, sys
view, targets = sys.argv[1], json.loads(sys.argv[2])
targets["me"] = os.getpid()

def pids(root):
    return sorted(int(n) for n in os.listdir(root) if n.isdigit())

def stat(path):
    try:
        return "uid %d" % os.stat(path).st_uid
    except OSError as e:
        return os.strerror(e.errno)

def status(path):
    try:
        with open(path) as f:
            return f.readline().split()[0]
    except OSError as e:
        return os.strerror(e.errno)

for attempt in range(10):
    v, r = pids(view), pids("/proc")
    if v == r:
        break
out = {"view": v, "real": r, "stat": {}, "status": {}}
for name, pid in targets.items():
    out["stat"][name] = [stat("%s/%d" % (root, pid)) for root in (view, "/proc")]
    out["status"][name] = [status("%s/%d/status" % (root, pid)) for root in (view, "/proc")]
print(json.dumps(out))
"""


# In a container: the pids listed in /proc (the view) and /proc/.real
# (its own procfs), what stat of /proc/1 gives in each, and for argv[1] (a
# pid, in the container), what stat, an open of smaps_rollup and a readlink
# of exe give.
CONTAINER_PROBE = r"""
import json, os, sys

def attempt(fn, *args):
    try:
        fn(*args)
        return "ok"
    except OSError as e:
        return e.strerror

out = {}
other = sys.argv[1]
for key, root in (("view", "/proc"), ("real", "/proc/.real")):
    listed = sorted(n for n in os.listdir(root) if n.isdigit() and n != str(os.getpid()))
    out[key] = {"listed": listed}
    try:
        out[key]["1"] = "uid %d" % os.stat(root + "/1").st_uid
    except OSError as e:
        out[key]["1"] = e.strerror
    base = "%s/%s/" % (root, other)
    out[key]["other"] = [attempt(os.stat, base), attempt(lambda p: open(p).close(), base + "smaps_rollup"),
                         attempt(os.readlink, base + "exe")]
print(json.dumps({"view": out["view"], "real": out["real"]}))
"""


@contextlib.contextmanager
def hidden_namespace(options):
    """A process in new pid and mount namespaces whose /proc is mounted
    with options, sleeping as their init: yields (the unshare process, the
    init's host pid)."""
    ns = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--propagation", "private", "sh", "-c",
                           'mount -t proc -o "$0" proc /proc && exec sleep infinity', options],
                          stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        init = cgtest.wait_until(lambda: next((p for p in cgtest._children(ns.pid)
                                               if open("/proc/%d/comm" % p).read().strip() == "sleep"), None),
                                 timeout=10)
        check(init, "no sleeping init in the namespace")
        yield ns, init
    finally:
        cgtest.end_namespace(ns)


class HidepidDaemon:
    """The daemon just built, in a private mount namespace whose /proc is a
    new procfs mounted with options."""

    def __init__(self, options):
        self.options = options
        self.mnt = tempfile.mkdtemp(prefix="cgprocfs-hidepid-")
        self.log = tempfile.NamedTemporaryFile(prefix="cgprocfs-log-", mode="w+")
        script = 'mount -t proc -o "$1" proc /proc || exit 97\nexec "$2" "$3"\n'
        self.process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", options,
             cgtest.daemon_exe(), self.mnt],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        ready = os.path.join(self.mnt, "proc", ".real", "self")
        if not cgtest.wait_until(lambda: self.process.poll() is not None or
                                 self.enter(["test", "-e", ready])[0] == 0, timeout=10):
            self.stop()
            raise cgtest.Failure("daemon (proc %s) not ready" % options, self.daemon_log())
        check(self.process.poll() is None, "daemon (proc %s) exited with %s" % (options, self.process.poll()),
              self.daemon_log())

    def enter(self, argv, timeout=cgtest.CMD_TIMEOUT):
        """Run argv in the daemon's mount namespace."""
        return cgtest.run(["nsenter", "--target", str(self.process.pid), "--mount"] + argv, timeout=timeout)

    def probe(self, user, targets):
        out = check_ran(self.enter(user + [cgtest.PYTHON, "-c", PROBE, os.path.join(self.mnt, "proc"),
                                           json.dumps(targets)]), "the probe")
        return json.loads(out)

    def daemon_log(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self):
        problems = []
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                problems.append("still running 10 s after SIGTERM")
        if self.process.returncode != 0:
            problems.append("exit status %s" % self.process.returncode)
        # The mounts went with the namespace.
        shutil.rmtree(self.mnt, ignore_errors=True)
        return problems

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        problems = self.stop()
        if problems and exc_type is None:
            raise cgtest.Failure("daemon did not stop cleanly", *problems, self.daemon_log())
        return False


def nspid(pid):
    """pid's number in its own pid namespace (the last of NSpid)."""
    with open("/proc/%d/status" % pid) as f:
        return next(line.split()[-1] for line in f if line.startswith("NSpid:"))


def compare(res, who):
    """The view answers as the procfs does: listing, stat, status."""
    extra, missing = sorted(set(res["view"]) - set(res["real"])), sorted(set(res["real"]) - set(res["view"]))
    check(not extra and not missing, "%s: the view lists %d pids, the procfs %d" % (who, len(res["view"]),
                                                                                    len(res["real"])),
          "only in the view: %s" % extra, "only in the procfs: %s" % missing)
    for what in ("stat", "status"):
        for name, (view, real) in res[what].items():
            check_equal(view, real, "%s: %s of %s's /proc/<pid> (view vs procfs)" % (who, what, name))


def make_tests(sleepers):
    tests, test = cgtest.test_registry()

    def targets(daemon):
        return dict(sleepers, daemon=daemon.process.pid)

    @test("hidepid=invisible: nobody sees in the view only what the procfs shows it (listing, stat, status)")
    def _():
        with HidepidDaemon("hidepid=invisible") as d:
            res = d.probe(NOBODY, targets(d))
            # The procfs does hide them: else this test would prove nothing.
            for name in ("root", "daemon", "contained"):
                check_equal(res["stat"][name][1], os.strerror(2), "stat of %s's process in the procfs" % name)
            check_equal(res["stat"]["nobody"][1], "uid 65534", "stat of nobody's process in the procfs")
            compare(res, "nobody")

    @test("a container whose own /proc has hidepid=invisible,gid=%d, given the view by the OCI hook, holding "
          "a process of a user namespace root made: nobody and root of another such namespace list, stat, open "
          "and readlink through it only what that procfs gives them, nobody in group %d everything"
          % (GROUP, GROUP))
    def _():
        # Security review, issue 39 finding 6: the view of a container was
        # a procfs the daemon made with no hidepid, whatever the
        # container's own /proc said.
        hook = os.environ.get("CGPROCFS_OCI_HOOK")
        if not hook:
            raise cgtest.Skip("CGPROCFS_OCI_HOOK is not set (run through meson test)")
        bundle = tempfile.mkdtemp(prefix="cgprocfs-hidepid-bundle-")
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
        try:
            with cgtest.Daemon() as d, \
                    hidden_namespace("hidepid=invisible,gid=%d" % GROUP) as (ns, init):
                res = cgtest.give_view(d.mnt, bundle, init, "hidepid")
                check(res[0] == 0, "the hook", cgtest.describe(res))
                enter = ["nsenter", "-t", str(init), "-m", "-p", "--"]
                with cgtest.rootmade_userns_sleeper(CONTAINED_UID, prefix=enter) as contained:
                    inner = nspid(contained)
                    other = cgtest.in_rootmade_userns(OTHER_CONTAINER_UID, [])
                    for who, user, sees_init in (("nobody", NOBODY, False),
                                                 ("root of another user namespace", other, False),
                                                 ("nobody in the group", NOBODY_IN_GROUP, True)):
                        out = check_ran(cgtest.run(enter + user + [cgtest.PYTHON, "-c", CONTAINER_PROBE, inner]), who)
                        got = json.loads(out)
                        check_equal(got["real"]["1"], "uid 0" if sees_init else os.strerror(2),
                                    "%s: stat of the container's init in its procfs" % who)
                        if not sees_init:
                            check_equal(got["real"]["other"][0], os.strerror(2),
                                        "%s: stat of the user namespace's process in the procfs" % who)
                        check_equal(got["view"], got["real"], "%s: the view's listing, stat, smaps_rollup and exe "
                                    "(the procfs's)" % who)
        finally:
            shutil.rmtree(bundle, ignore_errors=True)

    @test("hidepid=noaccess: nobody and root of another unprivileged container get in the view what the "
          "procfs gives them (listing, stat, status), an unprivileged container's process included")
    def _():
        with HidepidDaemon("hidepid=noaccess") as d:
            for who, user in (("nobody", NOBODY),
                              ("root of another user namespace", cgtest.in_rootmade_userns(OTHER_CONTAINER_UID, []))):
                res = d.probe(user, targets(d))
                check_equal(res["status"]["contained"][1], os.strerror(1),
                            "%s: the contained process's status in the procfs" % who)
                compare(res, who)

    @test("hidepid=invisible: root of another unprivileged container sees in the view what the procfs shows it")
    def _():
        with HidepidDaemon("hidepid=invisible") as d:
            res = d.probe(cgtest.in_rootmade_userns(OTHER_CONTAINER_UID, []), targets(d))
            check_equal(res["stat"]["contained"][1], os.strerror(2), "stat of the contained process in the procfs")
            compare(res, "root of another user namespace")

    @test("hidepid=invisible: root still sees every process in the view")
    def _():
        with HidepidDaemon("hidepid=invisible") as d:
            res = d.probe([], targets(d))
            for name in ("root", "daemon", "nobody"):
                check(res["stat"][name][0].startswith("uid "), "root cannot stat %s's process in the view" % name,
                      res["stat"][name])
            compare(res, "root")

    @test("hidepid=invisible,gid=%d: nobody in group %d sees every process, as in the procfs" % (GROUP, GROUP))
    def _():
        with HidepidDaemon("hidepid=invisible,gid=%d" % GROUP) as d:
            res = d.probe(NOBODY_IN_GROUP, targets(d))
            check(res["stat"]["root"][1].startswith("uid "), "the procfs hides root's process from group %d"
                  % GROUP, res["stat"]["root"])
            compare(res, "nobody in group %d" % GROUP)
            res = d.probe(NOBODY, targets(d))
            compare(res, "nobody outside group %d" % GROUP)

    @test("hidepid=invisible: ps -e as nobody, with the view bound over /proc, lists what it lists on the procfs")
    def _():
        with HidepidDaemon("hidepid=invisible") as d:
            ps = NOBODY + ["ps", "-e", "-o", "pid=,comm="]
            bound = 'mount --rbind "$1" /proc || exit 97\nshift\nexec "$@"\n'

            def others(text):
                return sorted(line.split()[0] for line in text.splitlines() if line.split()[1:] != ["ps"])
            # Both taken again until they agree (at most 5 times): nobody's
            # processes of the tests beside this one come and go meanwhile.
            for _attempt in range(5):
                real = check_ran(d.enter(ps), "ps on the procfs")
                view = check_ran(d.enter(["unshare", "--mount", "--propagation", "private", "sh", "-c", bound, "sh",
                                          os.path.join(d.mnt, "proc")] + ps), "ps in the view")
                if others(view) == others(real):
                    break
            check_equal(others(view), others(real), "pids ps lists (but its own)")
            check(str(sleepers["root"]) not in others(view), "ps shows root's sleep in the view", view)

    return tests


def main():
    cgtest.skip_all_unless_runnable()
    for tool in ("setpriv", "nsenter", "unshare", "ps"):
        if shutil.which(tool) is None:
            print("1..0 # SKIP %s is missing" % tool)
            return
    root = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, cwd="/")
    nobody = subprocess.Popen(NOBODY + ["sleep", "3600"], stdin=subprocess.DEVNULL, cwd="/")
    try:
        with cgtest.rootmade_userns_sleeper(CONTAINED_UID) as contained:
            cgtest.run_tests(make_tests({"root": root.pid, "nobody": nobody.pid, "contained": contained}))
    finally:
        for p in (root, nobody):
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
