"""A non-root user's unprivileged LXC container, for real: a user made for
the test (useradd gives it a range in /etc/subuid and /etc/subgid), its
cgroups delegated to it as pam_cgfs or systemd's user manager does (a
directory of its own in every hierarchy, chowned to it), LXC's tools run as
that user (runuser) from a shell moved into those cgroups, a busybox root
owned by the user's mapped root, 256 MiB and half a CPU, and the shipped
common.conf.d snippet (contrib/lxc/cgprocfs.conf.in) included. The mount
hook runs as the container's root in the user's namespace: it only binds
the view's files, which needs no daemon socket, so the container sees its
memory, CPUs and uptime in the files. What stays the kernel's: sysinfo(2)
(busybox free) and sched_getaffinity(2) (nproc), since the LXC monitor
runs as the user and the daemon's .lxc socket is root's alone."""

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from lxclab import (MIB, UNPRIV_PROBE, USERNS_SIZE, Container, attach_past_lxc_race, fields_of,  # noqa: E402
                    hierarchies, host_meminfo_kb, host_uid, idmap, limits_config, snippet_config)
from cgtest import check, check_equal, describe  # noqa: E402

USER = "cgprocfs-lxu"
NAME = "cgprocfs-lxu-%d" % os.getpid()
LIMIT = 256 * MIB
VIEW_BINDS = sorted(["/proc/" + n for n in ("cpuinfo", "diskstats", "loadavg", "meminfo", "pressure", "stat", "swaps",
                                            "uptime", "vmstat")] + ["/sys/devices/system/cpu"])
APPLETS = ("sh", "cat", "grep", "head", "ls", "sed", "sleep", "nproc", "free", "echo")


def user_range(path, user):
    """The start of user's first range of USERNS_SIZE or more in path."""
    with open(path) as f:
        for line in f:
            name, start, count = (line.strip().split(":") + ["", "", ""])[:3]
            if name == user and start.isdigit() and count.isdigit() and int(count) >= USERNS_SIZE:
                return int(start)
    return None


class UserContainer(Container):
    """A Container whose LXC tools run as the user, from the user's
    delegated cgroups: each through a script in lxcpath that moves into
    them and runs the tool as the user, with the tool's own arguments (so
    that attach_past_lxc_race adds its log options to lxc-attach's)."""

    def __init__(self, lxcpath, name, cgroups):
        super().__init__(lxcpath, name)
        moves = "".join('echo $$ > "%s/cgroup.procs"\n' % d for d in cgroups)
        for tool in ("lxc-start", "lxc-wait", "lxc-info", "lxc-attach", "lxc-stop"):
            with open(self.as_user(tool), "w") as f:
                f.write("#!/bin/sh\n%sexec runuser -u %s -- %s \"$@\"\n" % (moves, USER, tool))
            os.chmod(self.as_user(tool), 0o755)

    def as_user(self, tool):
        return os.path.join(self.lxcpath, "as-user-" + tool)

    def tool(self, tool, *args, timeout=60):
        return super().tool(self.as_user(tool), *args, timeout=timeout)

    def attach_argv(self, argv):
        return [self.as_user("lxc-attach")] + super().attach_argv(argv)[1:]


def delegate(uid, gid):
    """A cgroup of the user's in every hierarchy (v1: a v1 cpuset child
    gets its parent's cpus and mems first), chowned to it with its files."""
    dirs = []
    for names, mp in hierarchies().items():
        d = os.path.join(mp, NAME + "-user")
        os.makedirs(d, exist_ok=True)
        if "cpuset" in names:
            for f in ("cpuset.cpus", "cpuset.mems"):
                with open(os.path.join(mp, f)) as src, open(os.path.join(d, f), "w") as dst:
                    dst.write(src.read())
        for entry in [d] + [os.path.join(d, f) for f in os.listdir(d)]:
            os.chown(entry, uid, gid)
        dirs.append(d)
    return dirs


def busybox_root(rootfs, base):
    for sub in ("bin", "proc", "sys", "dev", "tmp", "etc"):
        os.makedirs(os.path.join(rootfs, sub), exist_ok=True)
    shutil.copy2(shutil.which("busybox"), os.path.join(rootfs, "bin", "busybox"))
    for applet in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    for dirpath, dirnames, filenames in os.walk(rootfs):
        for entry in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
            os.lchown(entry, base, base)


def make_tests(d, state):
    t, test = cgtest.test_registry()

    def container():
        if "c" not in state:
            raise cgtest.Skip("the user's container did not start: see the first test")
        return state["c"]

    @test("a non-root user's unprivileged container (useradd's /etc/subuid range, cgroups delegated by chown, "
          "LXC run as the user, the snippet, 256 MiB and half a CPU) starts; its init runs as the user's mapped "
          "root; the hook, as the container's root, binds the nine /proc files and the CPU directory")
    def _():
        for tool in ("lxc-start", "lxc-attach", "runuser", "useradd", "newuidmap", "busybox"):
            if not shutil.which(tool):
                raise cgtest.Skip("%s is missing (apt-get install lxc uidmap busybox-static)" % tool)
        if not os.environ.get("CGPROCFS_LXC_HOOK"):
            raise cgtest.Skip("CGPROCFS_LXC_HOOK is not set (run through meson test)")
        with contextlib.suppress(KeyError):  # a run killed before its cleanup
            pwd.getpwnam(USER)
            cgtest.run(["userdel", "-r", USER])
        res = cgtest.run(["useradd", "-m", "-s", "/bin/sh", USER])
        check(res[0] == 0, "useradd", describe(res))
        state["user"] = True
        pw = pwd.getpwnam(USER)
        base = user_range("/etc/subuid", USER)
        check(base is not None and base == user_range("/etc/subgid", USER),
              "useradd gave the user no range of %d in /etc/subuid and /etc/subgid" % USERNS_SIZE)
        cgtest.diag("the user's uid %d, its containers' root host uid %d" % (pw.pw_uid, base))
        state["cgroups"] = delegate(pw.pw_uid, pw.pw_gid)
        path = state["lxcpath"] = tempfile.mkdtemp(prefix="cgprocfs-lxu-")
        os.chmod(path, 0o711)
        c = UserContainer(path, NAME, state["cgroups"])
        busybox_root(c.rootfs, base)
        with open(os.path.join(c.dir, "config"), "w") as f:
            f.write("\n".join(["lxc.rootfs.path = dir:" + c.rootfs, "lxc.uts.name = lxu", "lxc.net.0.type = empty",
                               "lxc.init.cmd = /bin/sleep 600", "lxc.mount.auto = proc:mixed sys:ro cgroup:mixed"] +
                              idmap(base) + limits_config(LIMIT, 50000) +
                              ["lxc.include = " + snippet_config(path, d.mnt)]) + "\n")
        for entry in (path, c.dir, os.path.join(c.dir, "config")):
            os.chown(entry, pw.pw_uid, pw.pw_gid)
        c.start()
        state["c"] = c
        check_equal(host_uid(c.init_pid()), base, "the host uid of the container's init")
        res = attach_past_lxc_race(c, ["cat", "/proc/mounts"])
        check(res[0] == 0, "lxc-attach cat /proc/mounts", describe(res))
        bound = sorted(line.split()[1] for line in res[1].splitlines() if line.split()[2:3] == ["fuse.cgprocfs"])
        check_equal(bound, VIEW_BINDS, "the fuse.cgprocfs mounts (the hook said: %s)" % c.hook_output())

    def probe(what):
        c = container()
        res = attach_past_lxc_race(c, ["sh", "-c", UNPRIV_PROBE])
        check(res[0] == 0, "lxc-attach " + what, describe(res))
        f = fields_of(res[1])
        check_equal(f.get("MemTotal"), "%d kB" % (LIMIT >> 10), "MemTotal " + what)
        check_equal(f.get("processors"), "1", "processors in /proc/cpuinfo " + what)
        up = float(f["uptime"].split()[0])
        check(0 <= up <= c.age() + 2, "/proc/uptime says %.1f s %s, the container is %.1f s old" % (up, what, c.age()))
        return res[1], f

    @test("the user's container: MemTotal 256 MiB, one processor, /proc/uptime the container's; busybox free "
          "(sysinfo) the host's total and nproc the kernel's mask (no listener: the user's LXC monitor cannot "
          "reach the daemon's root-only .lxc socket)")
    def _():
        out, f = probe("in the user's container")
        cgtest.diag(out.rstrip())
        check_equal((f.get("freemem", "").split() or ["?"])[0], str(host_meminfo_kb("MemTotal")),
                    "busybox free's total (the kernel's sysinfo)")
        check_equal(f.get("nproc"), str(len(os.sched_getaffinity(0))), "nproc (the kernel's mask)")

    @test("the user's container through a daemon --replace and a SIGKILL with a fresh daemon: the same files")
    def _():
        d.take_over()
        probe("after --replace")
        d.crash_and_restart()
        probe("after a SIGKILL and a new daemon")

    @test("nothing is left: the container stopped, the user's cgroups and LXC's below them removed, the user "
          "and its /etc/subuid and /etc/subgid lines gone")
    def _():
        container()
        cleanup(state)
        left = [p for p in state["cgroups"] if os.path.exists(p)]
        with open("/etc/subuid") as u, open("/etc/subgid") as g:
            left += [line.strip() for line in u.readlines() + g.readlines() if line.startswith(USER + ":")]
        with contextlib.suppress(KeyError):
            left.append("the user %s" % pwd.getpwnam(USER).pw_name)
        check_equal(left, [], "left behind")

    return t


def cleanup(state):
    """The container stopped, its lxcpath, the user's cgroups, the user
    (userdel -r: its home and its /etc/subuid and /etc/subgid lines)."""
    c = state.pop("c", None)
    if c:
        c.stop()
    if state.get("lxcpath"):
        shutil.rmtree(state.pop("lxcpath"), ignore_errors=True)
    for d in state.get("cgroups", []):
        below = [dirpath for dirpath, _, _ in os.walk(d, topdown=False)]  # LXC's cgroups first
        cgtest.remove_cgroups(below, os.path.dirname(d))
    if state.pop("user", False):
        subprocess.run(["userdel", "-r", USER], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    cgtest.run_with_state(make_tests, cleanup)
