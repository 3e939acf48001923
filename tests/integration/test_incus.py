"""Incus with cgprocfs in LXCFS's place, for real: Debian's incus (from
bookworm-backports) started by hand with its state in a temporary directory
(INCUS_DIR; the client's INCUS_CONF there too), a `dir` storage pool and no
network (`incus admin init --preseed`), a busybox image imported with
`incus image import` (a metadata.yaml and a rootfs of busybox-static, with
procps's free and uptime and coreutils's nproc copied in with their
libraries), and cgprocfs --keep-views-on-stop --files-only at
/var/lib/lxcfs. Incus includes LXC's common.conf.d in every container's
configuration, where the lxcfs package's 00-lxcfs.conf runs LXCFS's own
mount hook: it binds every entry of /var/lib/lxcfs/proc and the CPU
directory, as it binds LXCFS's files.

The whole test runs in a mount namespace of its own (it re-executes itself
under unshare -m --propagation private), with the daemon's control socket in
a temporary directory: /var/lib/lxcfs there is its own, so an LXCFS or
another test's daemon at the host's /var/lib/lxcfs (test_lxc's, run beside
it) is neither seen nor touched; one mounted there when the test starts is
detached in its namespace only.

One unprivileged container (its init runs as a host uid of Incus's map) with
limits.memory=256MiB and limits.cpu.allowance=50ms/100ms:
  - the LXCFS hook's binds are the view's; /proc/meminfo, /proc/cpuinfo,
    /proc/stat, the CPU directory, /proc/uptime and /proc/loadavg are the
    container's; procps's free and uptime (which read the files) agree;
  - busybox free and uptime ask sysinfo(2): with
    security.syscalls.intercept.sysinfo=true Incus's own seccomp listener
    answers it (the container restarted), with the container's memory and
    uptime but the host's load averages; without it, the kernel (the host's);
  - nproc asks sched_getaffinity(2): Incus's listener does not answer it:
    the kernel's mask (the cpuset's CPUs);
  - the daemon's listener in Incus's place (LXC gives a container one notify
    proxy): security.syscalls.deny notifying sysinfo and sched_getaffinity
    (Incus appends it to the profile as it is) and raw.lxc naming the
    daemon's LXC proxy; busybox free, uptime (its load too) and nproc are
    then the view's;
  - limits.cpu=1 (a cpuset) and limits.memory=128MiB set on the running
    container are followed;
  - a reader in the container reads on with no failed read through a
    daemon --replace and a SIGKILL and a fresh start;
  - nothing is left: the container, incusd, the daemon and its keeper, the
    mounts, the cgroups, the temporary directories."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_cpuview  # noqa: E402
from cgtest import check, check_equal, describe  # noqa: E402
from lxclab import (check_online, cgroup_dirs, fields_of, hierarchies, host_threads, kb, load_of,  # noqa: E402
                    sysinfo_loads_agree, uptime_seconds)

MIB = 1 << 20
LIMIT, LIMIT_AFTER = 256 * MIB, 128 * MIB
LXCFS_DIR = "/var/lib/lxcfs"
CONF_D = "/usr/share/lxc/config/common.conf.d"
LXCFS_CONF = os.path.join(CONF_D, "00-lxcfs.conf")
NAME = "cgprocfs-%d" % os.getpid()
IMAGE = "cgprocfs-busybox"
INCUSD = ("incusd", "/usr/libexec/incus/incusd", "/usr/lib/incus/incusd", "/usr/sbin/incusd")
# What LXCFS's hook binds of the view (--files-only): every served file the
# container's /proc has, and the CPU directory.
VIEW_BINDS = sorted(["/proc/" + n for n in ("cpuinfo", "diskstats", "loadavg", "meminfo", "pressure", "stat", "swaps",
                                            "uptime", "vmstat")] + ["/sys/devices/system/cpu"])
# Host programs copied into the image, with their libraries: they read the
# files (procps) or ask the scheduler (coreutils's nproc), as a Debian
# container's would; busybox's own ask sysinfo(2). Run by their paths:
# Debian's busybox-static sh runs its own applet for a bare name.
HOST_TOOLS = ("/usr/bin/free", "/usr/bin/uptime", "/usr/bin/nproc")
PRESEED = """storage_pools:
- name: default
  driver: dir
profiles:
- name: default
  devices:
    root:
      path: /
      pool: default
      type: disk
"""
LXC_ATTACH_RACE = "Failed to retrieve PID of executing child process"
INIT = "#!/bin/sh\nwhile :; do sleep 3600; done\n"
PROBE = r"""
grep -E "^(MemTotal|MemFree|MemAvailable):" /proc/meminfo
echo "processors $(grep -c ^processor /proc/cpuinfo)"
echo "statcpus $(grep -c "^cpu[0-9]" /proc/stat)"
echo "online $(cat /sys/devices/system/cpu/online)"
echo "uptime $(cat /proc/uptime)"
echo "loadavg $(cat /proc/loadavg)"
echo "procpsuptime $(/usr/bin/uptime)"
echo "loadavg2 $(cat /proc/loadavg)"
echo "bbuptime $(busybox uptime)"
/usr/bin/free -k | sed -n "s/^Mem:/procpsfree/p"
busybox free | sed -n "s/^Mem:/bbfree/p"
echo "nproc $(/usr/bin/nproc)"
echo "bbnproc $(busybox nproc)"
awk '/^Cpus_allowed_list:/ { print "allowed", $2 }' /proc/self/status
"""
# Reads until /tmp/stop exists: MemTotal ($1 kB) and one processor each round.
READER = ('n=0; bad=0; while [ ! -e /tmp/stop ]; do m=$(awk "/^MemTotal:/ { print \\$2 }" /proc/meminfo 2>&1); '
          'c=$(grep -c ^processor /proc/cpuinfo 2>&1); if [ "$m" = "$1" ] && [ "$c" = 1 ]; then n=$((n+1)); '
          'else bad=$((bad+1)); echo "bad: $m $c"; fi; sleep 0.02; done; echo "reads $n bad $bad"')


def own_mount_namespace():
    """Re-execute this script in a mount namespace of its own (unshare runs
    it in place: same pid, so meson's signals reach it)."""
    if os.environ.get("CGPROCFS_INCUS_NS") == str(os.getpid()):
        return
    cgtest.skip_all_unless_runnable()
    os.environ["CGPROCFS_INCUS_NS"] = str(os.getpid())
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable] + sys.argv)


def find_incusd():
    for name in INCUSD:
        path = shutil.which(name) if "/" not in name else name
        if path and os.access(path, os.X_OK):
            return path
    return None


def copy_with_libraries(program, rootfs):
    """program and the libraries ldd names for it, at their paths in rootfs."""
    res = cgtest.run(["ldd", program])
    check(res[0] == 0, "ldd " + program, describe(res))
    paths = [program] + re.findall(r"(/\S+) \(0x", res[1])
    for path in paths:
        dest = os.path.join(rootfs, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.exists(dest):
            shutil.copy(os.path.realpath(path), dest)


def make_image(workdir):
    """A unified image tarball: metadata.yaml and rootfs/ (busybox-static,
    its applets as links, /sbin/init a shell that sleeps, the HOST_TOOLS)."""
    rootfs = os.path.join(workdir, "rootfs")
    for d in ("bin", "sbin", "usr/bin", "etc", "root", "proc", "sys", "dev", "run", "var", "tmp"):
        os.makedirs(os.path.join(rootfs, d))
    os.chmod(os.path.join(rootfs, "tmp"), 0o1777)
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    applets = cgtest.run(["/bin/busybox", "--list"])[1].split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    with open(os.path.join(rootfs, "sbin", "init"), "w") as f:
        f.write(INIT)
    os.chmod(os.path.join(rootfs, "sbin", "init"), 0o755)
    with open(os.path.join(rootfs, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(rootfs, "etc", "group"), "w") as f:
        f.write("root:x:0:\n")
    for tool in HOST_TOOLS:
        copy_with_libraries(tool, rootfs)
    with open(os.path.join(workdir, "metadata.yaml"), "w") as f:
        f.write("architecture: %s\ncreation_date: %d\nproperties:\n  description: busybox for cgprocfs's test\n"
                "  os: busybox\n" % (os.uname().machine, int(time.time())))
    path = os.path.join(workdir, "image.tar.gz")

    def as_root(info):
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        tar.add(os.path.join(workdir, "metadata.yaml"), arcname="metadata.yaml", filter=as_root)
        tar.add(rootfs, arcname="rootfs", filter=as_root)
    return path


class Incus:
    """An incusd of its own: INCUS_DIR (and the client's INCUS_CONF) in a
    temporary directory."""

    def __init__(self, incusd):
        self.incusd = incusd
        self.dir = tempfile.mkdtemp(prefix="cgprocfs-incus-")
        os.chmod(self.dir, 0o711)  # the containers' ids walk to their rootfs
        self.env = dict(os.environ, INCUS_DIR=self.dir, INCUS_CONF=os.path.join(self.dir, "client"))
        self.log = os.path.join(self.dir, "incusd.log")
        self.process = None

    def start(self):
        with open(os.path.join(self.dir, "incusd.out"), "w") as out:
            self.process = subprocess.Popen([self.incusd, "--logfile", self.log], env=self.env,
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        res = self.incus("admin", "waitready", "--timeout", "60", timeout=70)
        check(res[0] == 0, "incus admin waitready", describe(res), self.log_tail())

    def incus(self, *args, timeout=60, input=None):
        return cgtest.run(["incus"] + list(args), env=self.env, timeout=timeout, input=input)

    def ok(self, *args, timeout=60, input=None):
        res = self.incus(*args, timeout=timeout, input=input)
        check(res[0] == 0, "incus " + " ".join(args), describe(res), self.log_tail())
        return res[1]

    def exec(self, script, *args):
        """sh -c script in the container, again (said) where LXC's attach
        race lost it: with a notify proxy in the container's profile (Incus's
        listener or the daemon's), LXC 5.0's attach now and then gets the
        attached process's seccomp listener before its pid, gives up, and
        Incus says "Failed to retrieve PID of executing child process"."""
        argv = ["exec", NAME, "--", "sh", "-c", script, "sh"] + list(args)
        for attempt in range(1, 6):
            res = self.incus(*argv)
            if res[0] == 0 or LXC_ATTACH_RACE not in res[2]:
                break
            cgtest.diag("incus exec %d of 5 lost LXC's attach race: again" % attempt)
        check(res[0] == 0, "incus exec", describe(res), self.log_tail())
        return res[1]

    def log_tail(self, chars=3000):
        text = ""
        for name in ("incusd.out", "incusd.log"):
            with contextlib.suppress(OSError), open(os.path.join(self.dir, name), errors="replace") as f:
                text += "%s:\n%s\n" % (name, f.read()[-chars:])
        with contextlib.suppress(OSError), open(os.path.join(self.dir, "logs", NAME, "lxc.log"), errors="replace") as f:
            text += "lxc.log:\n" + f.read()[-chars:]
        return text

    def init_pid(self):
        state = json.loads(self.ok("query", "/1.0/instances/%s/state" % NAME))
        check(state.get("pid", 0) > 0, "no pid of the container's init", state)
        return state["pid"]

    def stop(self):
        """Delete the container, shut incusd down (killed if it does not go
        within 30 s), unmount what is left below INCUS_DIR; the problems."""
        problems = []
        if self.process is None:
            return problems
        if self.process.poll() is None:
            self.incus("delete", "--force", NAME, timeout=60)
            res = self.incus("admin", "shutdown", timeout=60)
            if res[0] != 0:
                problems.append("incus admin shutdown: " + describe(res))
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                problems.append("incusd still runs 30 s after its shutdown: killed")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        cgtest.force_unmount(self.dir)
        return problems

    def remove(self):
        if not cgtest.mounts_under(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)


class LxcfsDaemon(cgtest.Daemon):
    """cgtest.Daemon whose keeper is told apart by its path (another test's
    keeper serves a /var/lib/lxcfs of its own namespace)."""

    def wait_published(self):
        keeper = self.control + ".keeper"

        def published():
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.connect(keeper)
                return True
            return False
        check(cgtest.wait_until(published, timeout=10, step=0.05), "the daemon's keeper is not published at %s"
              % keeper, self.log())


# What the closing notes show, each command after its prompt (the host's
# tools by their paths: HOST_TOOLS).
SHOW = ("free", "busybox free", "nproc", "busybox nproc", "uptime", "busybox uptime", "head -3 /proc/meminfo",
        "ls -ln /proc | head -3")


def show(incus, what):
    run = {os.path.basename(tool): tool for tool in HOST_TOOLS}
    script = "; ".join("echo '$ %s'; %s" % (cmd, run.get(cmd, cmd)) for cmd in SHOW)
    cgtest.diag("%s:\n%s" % (what, incus.exec(script)))


def probe(incus):
    fields = fields_of(incus.exec(PROBE))
    cgtest.diag("\n".join("%s: %s" % kv for kv in sorted(fields.items())))
    return fields


def make_tests(state):
    t, test = cgtest.test_registry()

    def incus():
        if "incus" not in state or "started" not in state:
            raise cgtest.Skip("Incus or its container is not up: see the tests before")
        return state["incus"]

    def daemon():
        return state["daemon"]

    @test("Incus is installed (incusd, incus) with LXCFS's hook in LXC's common.conf.d; cgprocfs "
          "--keep-views-on-stop --files-only serves /var/lib/lxcfs (in this test's mount namespace)")
    def _():
        incusd = find_incusd()
        if not incusd or not shutil.which("incus"):
            raise cgtest.Skip("Incus is not installed (Debian 12: apt-get install -t bookworm-backports incus; "
                              "contrib/scripts/deps.sh does)")
        if not os.path.exists(LXCFS_CONF):
            raise cgtest.Skip("%s is missing (apt-get install lxcfs): no hook binds /var/lib/lxcfs" % LXCFS_CONF)
        if not os.path.isdir(LXCFS_DIR):
            raise cgtest.Skip("%s is missing (apt-get install lxcfs makes it)" % LXCFS_DIR)
        for mp in reversed(cgtest.mounts_under(LXCFS_DIR)):
            cgtest.diag("%s was mounted here (another LXCFS or test): detached in this test's namespace only" % mp)
            subprocess.run(["umount", "-l", mp], check=False)
        state["run"] = tempfile.mkdtemp(prefix="cgprocfs-incus-run-")
        d = LxcfsDaemon(mountpoint=LXCFS_DIR, args=["--keep-views-on-stop", "--files-only",
                                                    "--control-socket=" + os.path.join(state["run"], "lxcfs.sock")])
        d.control = os.path.join(state["run"], "lxcfs.sock")
        state["daemon"] = d
        d.start()
        state["incusd"] = incusd

    @test("incusd started by hand (INCUS_DIR in a temporary directory), a dir storage pool and no network "
          "(incus admin init --preseed), a busybox image imported (incus image import)")
    def _():
        if "incusd" not in state:
            raise cgtest.Skip("see the first test")
        state["pivots"] = [p for p in pivots() if not os.path.isdir(p)]
        state["incus"] = i = Incus(state["incusd"])
        i.start()
        i.ok("admin", "init", "--preseed", input=PRESEED)
        image = make_image(tempfile.mkdtemp(dir=i.dir, prefix="image-"))
        i.ok("image", "import", image, "--alias", IMAGE, timeout=120)

    @test("an unprivileged container (limits.memory=256MiB, limits.cpu.allowance=50ms/100ms) starts; its init "
          "runs as a host uid of Incus's map; LXCFS's hook bound the view's files over /proc's and the CPU "
          "directory")
    def _():
        if "incus" not in state:
            raise cgtest.Skip("see the test before")
        i = state["incus"]
        i.ok("init", IMAGE, NAME, "-c", "limits.memory=256MiB", "-c", "limits.cpu.allowance=50ms/100ms")
        state["age0"] = time.monotonic()
        i.ok("start", NAME, timeout=120)
        state["started"] = True
        pid = i.init_pid()
        state["cgroups"] = sorted(set(cgroup_dirs(pid).values()))
        with open("/proc/%d/status" % pid) as f:
            uid = next(line.split()[1] for line in f if line.startswith("Uid:"))
        cgtest.diag("the container's init: host pid %d, host uid %s" % (pid, uid))
        check(int(uid) >= 65536, "the container's init runs as host uid %s: not an unprivileged container" % uid)
        mounts = i.exec("cat /proc/mounts")
        bound = sorted(line.split()[1] for line in mounts.splitlines() if line.split()[2:3] == ["fuse.cgprocfs"])
        check_equal(bound, VIEW_BINDS, "the container's fuse.cgprocfs mounts")

    @test("incus exec: MemTotal 256 MiB, one processor in cpuinfo and stat, one CPU online, /proc/uptime and "
          "/proc/loadavg the container's; procps's free and uptime (the files) say the same")
    def _():
        i = incus()
        host_threads_now = host_threads()
        f = probe(i)
        age = time.monotonic() - state["age0"]
        check_equal(f.get("MemTotal"), "%d kB" % (LIMIT >> 10), "MemTotal")
        check(kb(f["MemFree"]) <= LIMIT >> 10 and kb(f["MemAvailable"]) <= LIMIT >> 10,
              "MemFree or MemAvailable above the limit", f)
        check_equal((f.get("processors"), f.get("statcpus")), ("1", "1"), "processors in cpuinfo, cpus in stat")
        check_online(f.get("online"), 1, "/sys/devices/system/cpu/online")
        up = float(f["uptime"].split()[0])
        check(0 <= up <= age + 2, "/proc/uptime says %.1f s, the container is %.1f s old" % (up, age))
        threads = int(f["loadavg"].split()[3].split("/")[1])
        check(threads < host_threads_now, "/proc/loadavg counts %d threads, the host %d: not the container's"
              % (threads, host_threads_now))
        check_equal(f.get("procpsfree", "").split()[:1], [str(LIMIT >> 10)], "procps free -k's total")
        check(uptime_seconds(f["procpsuptime"]) <= age + 60, "procps uptime: %s" % f["procpsuptime"])
        check(load_of(f["procpsuptime"]) in (f["loadavg"].split()[:3], f["loadavg2"].split()[:3]),
              "procps uptime's load is not /proc/loadavg's", f)
        show(i, "sysinfo(2) not intercepted (the kernel's: the host's figures)")

    @test("nproc (coreutils and busybox: sched_getaffinity) says the kernel's mask, the container's cpuset "
          "(Incus's seccomp listener does not answer it and holds LXC's one notify proxy), where cpuinfo says 1")
    def _():
        f = probe(incus())
        allowed = len(test_cpuview.parse_cpu_list(f.get("allowed", "")))
        check(allowed > 0, "no Cpus_allowed_list", f)
        check_equal((f.get("nproc"), f.get("bbnproc")), (str(allowed), str(allowed)), "nproc, busybox nproc")
        check_equal(f.get("processors"), "1", "processors in cpuinfo")
        cgtest.diag("nproc %s (Cpus_allowed_list %s), /proc/cpuinfo 1 processor" % (f["nproc"], f["allowed"]))

    @test("security.syscalls.intercept.sysinfo=true and a restart: busybox free's total (Incus's listener) is "
          "/proc/meminfo's 256 MiB, busybox uptime the container's; the load averages Incus gives are said")
    def _():
        i = incus()
        i.ok("config", "set", NAME, "security.syscalls.intercept.sysinfo=true")
        state["age0"] = time.monotonic()
        i.ok("restart", "--force", NAME, timeout=120)
        f = probe(i)
        age = time.monotonic() - state["age0"]
        check_equal(f.get("MemTotal"), "%d kB" % (LIMIT >> 10), "MemTotal after the restart")
        check_equal(f.get("bbfree", "").split()[:1], [str(LIMIT >> 10)], "busybox free's total")
        check(uptime_seconds(f["bbuptime"]) <= age + 60, "busybox uptime: %s" % f["bbuptime"])
        show(i, "sysinfo(2) answered by Incus (security.syscalls.intercept.sysinfo=true)")
        cgtest.diag("load averages: Incus's sysinfo answer (busybox uptime) %s, the view's /proc/loadavg %s, "
                    "the host's %s" % (", ".join(load_of(f["bbuptime"])), " ".join(f["loadavg"].split()[:3]),
                                       " ".join(open("/proc/loadavg").read().split()[:3])))

    @test("cgprocfs's listener in Incus's place: intercept.sysinfo off, security.syscalls.deny notifying "
          "sysinfo and sched_getaffinity, raw.lxc naming the daemon's LXC proxy, a restart: busybox free and "
          "uptime (load included) are the view's, nproc and busybox nproc say 1")
    def _():
        i = incus()
        with open(os.path.join(daemon().mnt, ".cgprocfs", "control")) as f:
            proxy = f.read().strip() + ".lxc"
        i.ok("config", "unset", NAME, "security.syscalls.intercept.sysinfo")
        i.ok("config", "set", NAME, "security.syscalls.deny=sysinfo notify\nsched_getaffinity notify\n")
        i.ok("config", "set", NAME, "raw.lxc=lxc.seccomp.notify.proxy = unix:" + proxy)
        state["age0"] = time.monotonic()
        i.ok("restart", "--force", NAME, timeout=120)
        f = probe(i)
        age = time.monotonic() - state["age0"]
        check_equal(f.get("bbfree", "").split()[:1], [str(LIMIT >> 10)], "busybox free's total")
        check(uptime_seconds(f["bbuptime"]) <= age + 60, "busybox uptime: %s" % f["bbuptime"])
        check(any(sysinfo_loads_agree(load_of(f["bbuptime"]), f[k]) for k in ("loadavg", "loadavg2")),
              "busybox uptime's load is not /proc/loadavg's", f)
        check_equal((f.get("nproc"), f.get("bbnproc")), ("1", "1"), "nproc, busybox nproc")
        show(i, "sysinfo(2) and sched_getaffinity(2) answered by the daemon (its LXC proxy)")

    @test("limits.cpu=1 set on the running container (a cpuset of one CPU): cpuinfo, online and nproc say "
          "that CPU")
    def _():
        i = incus()
        i.ok("config", "set", NAME, "limits.cpu=1")
        found = cgtest.wait_until(lambda: (lambda f: f if len(test_cpuview.parse_cpu_list(f.get("allowed", ""))) == 1
                                           else None)(fields_of(i.exec(PROBE))), timeout=15, step=0.5)
        check(found, "the container's cpuset is not one CPU 15 s after limits.cpu=1")
        f = probe(i)
        check_equal(f.get("online"), f.get("allowed"), "online (the cpuset's CPU, by its host number)")
        check_equal((f.get("processors"), f.get("nproc"), f.get("bbnproc")), ("1", "1", "1"),
                    "processors in cpuinfo, nproc, busybox nproc")

    @test("limits.memory=128MiB set on the running container: MemTotal and procps free say 128 MiB at once, "
          "busybox free (the daemon's sysinfo answer, reused for up to a second) once that second is past")
    def _():
        i = incus()
        i.ok("config", "set", NAME, "limits.memory=128MiB")
        f = probe(i)
        check_equal(f.get("MemTotal"), "%d kB" % (LIMIT_AFTER >> 10), "MemTotal")
        check_equal(f.get("procpsfree", "").split()[:1], [str(LIMIT_AFTER >> 10)], "procps free -k's total")
        time.sleep(1.1)
        out = i.exec("busybox free")
        total = [line.split()[1:2] for line in out.splitlines() if line.startswith("Mem:")]
        check_equal(total, [[str(LIMIT_AFTER >> 10)]], "busybox free's total 1.1 s after the change")

    @test("ls -ln /proc: the pid directories are the container's own procfs (its root's, uid 0); /proc/meminfo "
          "is a FUSE file, owned as the kernel's own /proc files (/proc/version's owner)")
    def _():
        out = incus().exec("ls -ln /proc | head -3; echo; stat -f -c %t /proc/meminfo /proc/version; echo; "
                           "ls -ln /proc/1/status /proc/meminfo /proc/cpuinfo /proc/version")
        cgtest.diag(out)
        _, types, listing = out.split("\n\n", 2)
        check_equal(types.split(), ["65735546", "9fa0"], "the filesystem types of /proc/meminfo (FUSE's) and "
                    "/proc/version (procfs)")
        owners = {}
        for line in listing.splitlines():
            parts = line.split()
            owners[parts[-1]] = (parts[2], parts[3])
        check_equal(owners.get("/proc/1/status"), ("0", "0"), "the owner of /proc/1/status")
        for path in ("/proc/meminfo", "/proc/cpuinfo"):
            check_equal(owners.get(path), owners.get("/proc/version"), "the owner of %s (/proc/version's)" % path)

    @test("a reader in the container (MemTotal and cpuinfo every 20 ms) through a daemon --replace, then a "
          "SIGKILL and a fresh start: 0 failed reads")
    def _():
        i = incus()
        d = daemon()
        i.exec("rm -f /tmp/stop")
        for attempt in range(1, 6):
            reader = subprocess.Popen(["incus", "exec", NAME, "--", "sh", "-c", READER, "sh",
                                       str(LIMIT_AFTER >> 10)], env=i.env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                out = reader.communicate(timeout=1)[0]
            except subprocess.TimeoutExpired:
                break  # reading
            check(LXC_ATTACH_RACE in out, "the reader ended at once", out)
            cgtest.diag("the reader's incus exec %d of 5 lost LXC's attach race: again" % attempt)
        try:
            time.sleep(1)
            rc = d.take_over()
            check_equal(rc, 0, "the replaced daemon's exit status")
            time.sleep(1)
            d.args = [a for a in d.args if a != "--keep-views-on-stop"]  # the last one ends its views on SIGTERM
            d.crash_and_restart()
            time.sleep(1)
        finally:
            i.exec("touch /tmp/stop")
            try:
                out = reader.communicate(timeout=30)[0]
            except subprocess.TimeoutExpired:
                reader.kill()
                out = reader.communicate()[0]
        m = re.search(r"reads (\d+) bad (\d+)", out)
        check(m and int(m.group(1)) > 0, "the reader did not read", out[-2000:])
        check_equal(m.group(2), "0", "failed reads (%s)" % out.strip()[-500:])
        cgtest.diag("the reader: %s reads, 0 failed, through a --replace, a SIGKILL and a fresh start" % m.group(1))

    @test("nothing is left: the container and incusd gone, no mount below INCUS_DIR, the container's cgroups "
          "removed, the daemon and its keeper stopped, the temporary directories removed")
    def _():
        problems = cleanup(state)
        check_equal(problems, [], "left behind")

    return t


def cmdline(pid):
    with contextlib.suppress(OSError), open("/proc/%s/cmdline" % pid, "rb") as f:
        return f.read().decode(errors="replace")
    return ""


def pivots():
    """LXC's monitor leaves an lxc.pivot cgroup in every hierarchy."""
    return [os.path.join(mp, "lxc.pivot") for mp in set(hierarchies().values())]


def leftover_cgroups(state):
    """The container's cgroups (its init's, and LXC's names for it) still there."""
    found = [d for d in state.get("cgroups", []) if os.path.isdir(d)]
    for mp in set(hierarchies().values()):
        for prefix in ("lxc.payload.", "lxc.monitor."):
            if os.path.exists(os.path.join(mp, prefix + NAME)):
                found.append(os.path.join(mp, prefix + NAME))
    return found


def cleanup(state):
    """Stop everything the test started; the problems found doing it."""
    problems = []
    i = state.pop("incus", None)
    if i is not None:
        problems += i.stop()
        processes = [p for p in os.listdir("/proc") if p.isdigit() and i.dir in cmdline(p)]
        if processes:
            problems.append("processes naming %s: %s" % (i.dir, processes))
        i.remove()
        if os.path.exists(i.dir):
            problems.append("%s is left" % i.dir)
    if not cgtest.wait_until(lambda: not leftover_cgroups(state), timeout=10, step=0.1):
        problems.append("cgroups: %s" % leftover_cgroups(state))
    d = state.pop("daemon", None)
    if d is not None:
        if "--keep-views-on-stop" in d.args and d.ready:  # the reader's test did not run: end the views too
            d.args.remove("--keep-views-on-stop")
            with contextlib.suppress(cgtest.Failure):
                d.take_over()
        problems += d.stop()
        keeper = d.control + ".keeper"
        if any(argv[2:3] == [keeper] for argv in cgtest.keeper_commands(LXCFS_DIR).values()):
            problems.append("the daemon's keeper still runs")
    for pivot in state.pop("pivots", []):  # made during the test, and empty
        with contextlib.suppress(OSError):
            os.rmdir(pivot)
    run = state.pop("run", None)
    if run:
        shutil.rmtree(run, ignore_errors=True)
    return problems


def main():
    own_mount_namespace()
    state = {}
    try:
        cgtest.run_tests(make_tests(state))
    finally:
        cleanup(state)


if __name__ == "__main__":
    main()
