"""What test_lxc.py runs LXC containers with: the host's cgroup
hierarchies and sub-cgroups made below a container's, LXC's tools on an
lxcpath of the test's (a container, its start logged at DEBUG level, its
attach with a clean environment), the common.conf.d snippet filled in, and
readers of what the probes print (free, uptime, top, /proc/stat)."""

import contextlib
import os
import re
import shutil
import time

import cgtest
import test_cpuview
from cgtest import check, check_cpu_share, check_equal, describe

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20
# The systemd container's memory limit, and what its hog holds.
DEB_LIMIT, DEB_HOLD = 512 * MIB, 128 * MIB
SNIPPET = os.path.join(SOURCE, "contrib", "lxc", "cgprocfs.conf.in")
ATTACH_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=dumb", "LC_ALL=C"]


# ---------------------------------------------------------------- cgroups --

def hierarchies():
    """{frozenset of a hierarchy's names as /proc/<pid>/cgroup gives them
    (frozenset() for v2): the host's mount point of its root}."""
    with open("/proc/cgroups") as f:
        known = {line.split()[0] for line in f if not line.startswith("#")}
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-", 6)
            fstype, root, mp = fields[sep + 1], fields[3], cgtest.unescape_mountinfo(fields[4])
            if root != "/":
                continue
            if fstype == "cgroup2":
                found.setdefault(frozenset(), mp)
            elif fstype == "cgroup":
                names = frozenset(o for o in fields[sep + 3].split(",") if o in known or o.startswith("name="))
                found.setdefault(names, mp)
    return found


def cgroup_dirs(pid):
    """{hierarchy (a frozenset, as hierarchies()): host directory} of pid's cgroups."""
    mounts = hierarchies()
    dirs = {}
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            key = frozenset(n for n in names.split(",") if n)
            if key in mounts:
                dirs[key] = mounts[key] + path
    return dirs


def pure_v2():
    return os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def limits_config(memory, quota_us, period_us=100000):
    """LXC's keys for a memory limit and a CPU quota: lxc.cgroup.* on v1 (and
    a hybrid), lxc.cgroup2.* on pure v2."""
    if pure_v2():
        return ["lxc.cgroup2.memory.max = %d" % memory, "lxc.cgroup2.cpu.max = %d %d" % (quota_us, period_us)]
    return ["lxc.cgroup.memory.limit_in_bytes = %d" % memory, "lxc.cgroup.cpu.cfs_quota_us = %d" % quota_us,
            "lxc.cgroup.cpu.cfs_period_us = %d" % period_us]


class SubCgroup:
    """A cgroup below a container's in every hierarchy but cpuset (a v1
    cpuset child takes no process before its cpus and mems are set), made
    on the host."""

    def __init__(self, container_dirs, name, memory_limit=None):
        self.dirs = [os.path.join(d, name) for key, d in container_dirs.items() if "cpuset" not in key]
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)
        if memory_limit is not None:
            memory = [os.path.join(d, name) for key, d in container_dirs.items() if "memory" in key]
            for d in memory:  # v1; on v2 a child of a cgroup with processes gets no controller
                with open(os.path.join(d, "memory.limit_in_bytes"), "w") as f:
                    f.write(str(memory_limit))

    def move(self, pid):
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def remove(self):
        for d in self.dirs:  # what is left in it goes back to the container's
            cgtest.remove_cgroups([d], os.path.dirname(d))


# -------------------------------------------------------------------- LXC --

def find_marked(marker, timeout=10.0):
    """The host pid of the process of another pid namespace run as
    sh -c SCRIPT MARKER (lxc-attach's own command line has the marker too)."""
    own = os.readlink("/proc/self/ns/pid")
    found = []

    def look():
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            with contextlib.suppress(OSError):
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
                if argv[:2] == ["sh", "-c"] and marker in argv and os.readlink("/proc/%s/ns/pid" % p) != own:
                    found.append(int(p))
                    return True
        return False
    check(cgtest.wait_until(look, timeout=timeout, step=0.05), "no process marked %s in a container" % marker)
    return found[0]


class Container:
    """One LXC container of lxcpath: its config, start (lxc-start -d, logged
    at DEBUG level to a new file each start), attach, stop and destroy."""

    def __init__(self, lxcpath, name):
        self.lxcpath, self.name = lxcpath, name
        self.dir = os.path.join(lxcpath, name)
        self.rootfs = os.path.join(self.dir, "rootfs")
        self.log = self.console = None
        self.starts = 0
        self.started = None

    def tool(self, tool, *args, timeout=60):
        return cgtest.run([tool, "-P", self.lxcpath, "-n", self.name] + list(args), timeout=timeout)

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.lxcpath, "%s-%d.log" % (self.name, self.starts))
        console = os.path.join(self.lxcpath, "%s-console-%d.log" % (self.name, self.starts))
        self.console = console
        self.started = time.monotonic()
        res = self.tool("lxc-start", "-d", "-l", "DEBUG", "-o", self.log, "-s", "lxc.console.logfile=" + console)
        check(res[0] == 0, "lxc-start %s" % self.name, describe(res), self.log_tail())
        res = self.tool("lxc-wait", "-s", "RUNNING", "-t", "20")
        check(res[0] == 0, "%s is not RUNNING" % self.name, describe(res), self.log_tail())

    def log_text(self):
        with contextlib.suppress(OSError), open(self.log, errors="replace") as f:
            return f.read()
        return ""

    def hook_output(self):
        """What the hook said at the last start, as LXC logs it (at DEBUG
        level only): one entry per run that said anything."""
        said = []
        for record in re.split(r"\n(?=lxc-start %s )" % re.escape(self.name), self.log_text()):
            head, sep, output = record.partition(" produced output: ")
            if sep and os.environ["CGPROCFS_LXC_HOOK"] in head:
                said.append(output.rstrip("\n"))
        return said

    def log_tail(self, chars=3000):
        text = self.log_text()[-chars:]
        with contextlib.suppress(OSError, TypeError), open(self.console, errors="replace") as f:
            text += "\nconsole:\n" + f.read()[-chars:]
        return text

    def attach_argv(self, argv):
        env = []
        for e in ATTACH_ENV:
            env += ["-v", e]
        return ["lxc-attach", "-P", self.lxcpath, "-n", self.name, "--clear-env"] + env + ["--"] + list(argv)

    def attach(self, argv, timeout=60, input=None):
        return cgtest.run(self.attach_argv(argv), timeout=timeout, input=input)

    def init_pid(self):
        res = self.tool("lxc-info", "-pH")
        check(res[0] == 0 and res[1].strip().isdigit(), "lxc-info -pH", describe(res))
        return int(res[1])

    def age(self):
        return time.monotonic() - self.started

    def stop(self):
        return self.tool("lxc-stop", "-k", timeout=60)

    def destroy(self):
        self.stop()
        return self.tool("lxc-destroy", "-f", timeout=120)


def snippet_config(lxcpath, mnt):
    """The common.conf.d snippet, its @HOOK@ and @MOUNTPOINT@ filled in for
    this test; the path of the file to lxc.include."""
    with open(SNIPPET) as f:
        text = f.read()
    text = text.replace("@HOOK@", os.environ["CGPROCFS_LXC_HOOK"]).replace("@MOUNTPOINT@", mnt)
    path = os.path.join(lxcpath, "01-cgprocfs.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def fields_of(out):
    """{first word: the rest} of a probe's lines (a trailing ':' dropped)."""
    fields = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if parts:
            fields[parts[0].rstrip(":")] = parts[1].strip() if len(parts) > 1 else ""
    return fields


def kb(value):
    return int(value.split()[0])


def host_meminfo_kb(name):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(name + ":"):
                return kb(line.split(":", 1)[1])
    raise cgtest.Failure("no %s in the host's /proc/meminfo" % name)


def host_processors():
    with open("/proc/cpuinfo") as f:
        return sum(1 for line in f if line.startswith("processor"))


def host_threads():
    with open("/proc/loadavg") as f:
        return int(f.read().split()[3].split("/")[1])


def check_online(text, n, what):
    """text, a CPU list the view shows, names n of the host's online CPUs
    (by their host numbers: which ones is the daemon's placement)."""
    with open("/sys/devices/system/cpu/online") as f:
        host = test_cpuview.parse_cpu_list(f.read())
    shown = test_cpuview.parse_cpu_list(text or "")
    check(len(shown) == n and shown <= host, "%s: %r is not %d of the host's online CPUs %s" % (what, text, n, host))


# ------------------------------------------------------ what readers print --

# In the systemd container, as each reader: what the tools say, as JSON.
# argv[1]: the hog's pid there, whose CPU time is read over the same
# windows as /proc/stat and psutil.cpu_percent.
PROBE = r"""
import json, os, subprocess, sys, time
import psutil

hog = int(sys.argv[1])


def sh(cmd):
    p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout


def hog_ticks():
    with open("/proc/%d/stat" % hog) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_line():
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def read(path):
    with open(path) as f:
        return f.read()


out = {"cgroup": read("/proc/self/cgroup"), "clk_tck": os.sysconf("SC_CLK_TCK")}
out["loadavg_before"] = read("/proc/loadavg")
for key, cmd in (("free", "free -b"), ("free_m", "free -m"), ("uptime", "uptime"), ("top", "top -bn1 | head -5"),
                 ("nproc_all", "nproc --all"), ("nproc", "nproc"), ("lscpu", "lscpu"),
                 ("getconf", "getconf _NPROCESSORS_ONLN; getconf _NPROCESSORS_CONF")):
    out[key] = sh(cmd)
out["loadavg"] = read("/proc/loadavg")
out["getloadavg"] = os.getloadavg()
out["proc_uptime"] = read("/proc/uptime")
out["cpu_count"] = os.cpu_count()
out["psutil_cpu_count"] = psutil.cpu_count()
out["vm"] = psutil.virtual_memory()._asdict()
h0, t0, c0 = hog_ticks(), time.monotonic(), cpu_line()
time.sleep(2)
h1, t1, c1 = hog_ticks(), time.monotonic(), cpu_line()
out["stat"] = {"before": c0, "after": c1, "hog_ticks": h1 - h0, "seconds": t1 - t0}
h0, t0 = hog_ticks(), time.monotonic()
percent = psutil.cpu_percent(interval=1)
h1, t1 = hog_ticks(), time.monotonic()
out["cpu_percent"] = {"percent": percent, "hog_ticks": h1 - h0, "seconds": t1 - t0}
print(json.dumps(out))
"""

def parse_free(text):
    """{total, used, free, shared, buff/cache, available} of free's Mem: line."""
    header = text.splitlines()[0].split()
    for line in text.splitlines():
        if line.startswith("Mem:"):
            return dict(zip(header, (int(v) for v in line.split()[1:])))
    raise cgtest.Failure("no Mem: line in free's output", text)


def uptime_seconds(text):
    """The time uptime or top's first line says the machine is up."""
    m = re.search(r"up\s+(?:(\d+) days?,\s+)?(?:(\d+):(\d+)|(\d+) min)", text)
    check(m, "no 'up ...' in %r" % text)
    days = int(m.group(1) or 0)
    if m.group(4) is not None:
        return days * 86400 + int(m.group(4)) * 60
    return days * 86400 + int(m.group(2)) * 3600 + int(m.group(3)) * 60


def load_of(text):
    m = re.search(r"load average:\s*([\d.]+),\s*([\d.]+),\s*([\d.]+)", text)
    check(m, "no load average in %r" % text)
    return list(m.groups())


def sysinfo_loads_agree(shown, text):
    """Whether loads shown from sysinfo(2) (busybox cuts them to hundredths)
    are a /proc/loadavg text's (rounded, as the kernel's): 0.01 below at most."""
    return all(-1e-9 <= float(t) - float(v) <= 0.01 + 1e-9 for v, t in zip(shown, text.split()[:3]))


def busy_percent(before, after):
    """The busy share of /proc/stat cpu lines (user nice system idle iowait
    irq softirq steal ...), and the ticks between them."""
    delta = [a - b for a, b in zip(after, before)]
    total = sum(delta[:8])
    busy = total - delta[3] - delta[4]
    return (100.0 * busy / total if total else 0.0), total


def systemd_cgroup(out):
    """The name=systemd (or, on v2, the unified) path of a reader's cgroup."""
    paths = {}
    for line in out["cgroup"].splitlines():
        _, names, path = line.split(":", 2)
        paths[names] = path
    return paths.get("name=systemd", paths.get(""))


def memory_cgroup(out):
    for line in out["cgroup"].splitlines():
        _, names, path = line.split(":", 2)
        if "memory" in names.split(",") or (names == "" and pure_v2()):
            return path
    return None


# -------------------------------------------------- unprivileged containers --

# Root's unprivileged containers: the container's 0 is a host uid of
# root's ranges. Root writes the maps itself where newuidmap is not
# installed; where it is (Debian's uidmap), LXC and lxc-usernsexec map
# only ranges /etc/subuid and /etc/subgid give root.
USERNS_SIZE = 65536
SUBID_FILES = ("/etc/subuid", "/etc/subgid")


def root_ranges(path):
    """[(start, count)] of root's lines in path (an /etc/subuid)."""
    ranges = []
    with contextlib.suppress(FileNotFoundError), open(path) as f:
        for line in f:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[0] == "root" and fields[1].isdigit() and fields[2].isdigit():
                ranges.append((int(fields[1]), int(fields[2])))
    return ranges


def userns_base(state):
    """The host uid (and gid) of root in root's unprivileged containers:
    the start of a range of 65536 that both files give root, or 100000.
    With newuidmap installed and no such range, the line root:100000:65536
    is added to both files (state["subid_lines"]: remove_subid_lines takes
    them out again)."""
    both = set(root_ranges(SUBID_FILES[0])) & set(root_ranges(SUBID_FILES[1]))
    fit = sorted(start for start, count in both if count >= USERNS_SIZE)
    if fit:
        return fit[0]
    if shutil.which("newuidmap"):
        line = "root:100000:%d\n" % USERNS_SIZE
        for path in SUBID_FILES:
            with open(path, "a") as f:
                f.write(line)
            state.setdefault("subid_lines", []).append((path, line))
    return 100000


def remove_subid_lines(state):
    """Take the lines userns_base added out of their files, nothing else."""
    for path, line in state.pop("subid_lines", []):
        with contextlib.suppress(FileNotFoundError):
            with open(path) as f:
                lines = f.readlines()
            if line in lines:
                lines.remove(line)
                with open(path + ".cgprocfs-tmp", "w") as f:
                    f.writelines(lines)
                os.chmod(path + ".cgprocfs-tmp", 0o644)
                os.replace(path + ".cgprocfs-tmp", path)


def idmap(base):
    return ["lxc.idmap = u 0 %d %d" % (base, USERNS_SIZE), "lxc.idmap = g 0 %d %d" % (base, USERNS_SIZE)]


def seccomp_proxy_config(lxcpath, mnt):
    """The config lines of LXC's seccomp proxy (README, LXC): Debian's
    common.seccomp with sysinfo and sched_getaffinity notified, the proxy
    the daemon's .lxc socket."""
    profile_path = os.path.join(lxcpath, "cgprocfs.seccomp")
    if not os.path.exists(profile_path):
        with open("/usr/share/lxc/config/common.seccomp") as f:
            profile = f.read().rstrip("\n") + "\nsysinfo notify\nsched_getaffinity notify\n"
        with open(profile_path, "w") as f:
            f.write(profile)
    with open(os.path.join(mnt, ".cgprocfs", "control")) as f:
        proxy = f.read().strip() + ".lxc"
    return ["lxc.seccomp.profile = " + profile_path, "lxc.seccomp.notify.proxy = unix:" + proxy]


def host_uid(pid):
    """The real uid of host process pid."""
    with open("/proc/%d/status" % pid) as f:
        return int(next(line for line in f if line.startswith("Uid:")).split()[1])


# In an unprivileged container (busybox): the files, sysinfo (busybox
# free), sched_getaffinity (nproc), and /proc's owners as it sees them.
UNPRIV_PROBE = ('grep -E "^MemTotal:" /proc/meminfo; echo "processors $(grep -c ^processor /proc/cpuinfo)"; '
                'echo "uptime $(cat /proc/uptime)"; echo "nproc $(nproc)"; '
                'busybox free | sed -n "s/^Mem:/freemem/p"; echo "--- ls -ln /proc | head -3"; '
                'ls -ln /proc | head -3; echo "--- ls -ln /proc/meminfo /proc/version"; '
                'ls -ln /proc/meminfo /proc/version')

# Run in a container's user namespace alone (nsenter -U: its root, the
# host's pid and mount namespaces): for each pid of argv[2:], whether the
# kernel's /proc and the host's view at argv[1] let it read smaps_rollup
# (served by the daemon as the caller), environ (a link into the real
# procfs) and the exe link (its text served): "ok" or the errno's name.
USERNS_READER = r"""
import errno, json, os, sys
view = sys.argv[1]


def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def read(path):
    with open(path, "rb") as f:
        f.read(1)


out = {"ids": [os.getuid(), os.geteuid()], "pids": {}}
for pid in sys.argv[2:]:
    got = out["pids"][pid] = {}
    for where, root in (("kernel", "/proc"), ("view", view)):
        base = os.path.join(root, pid)
        got[where] = {"smaps_rollup": attempt(lambda: read(base + "/smaps_rollup")),
                      "environ": attempt(lambda: read(base + "/environ")),
                      "exe": attempt(lambda: os.readlink(base + "/exe"))}
print(json.dumps(out))
"""


# ------------------------------------------------------ the systemd checks --

def check_reader(what, out, age, view_cpus, host_cpus, host_threads_now):
    """The figures a reader of the systemd container got (PROBE's JSON)."""
    free = parse_free(out["free"])
    check_equal(free["total"], DEB_LIMIT, "%s: free -b total" % what)
    check(free["used"] >= DEB_HOLD,
          "%s: free -b used %d, less than the %d the hog holds" % (what, free["used"], DEB_HOLD), out["free"])
    top = out["top"].splitlines()
    mem = next((line for line in top if line.startswith("MiB Mem")), "")
    m = re.search(r"([\d.]+) total,\s*([\d.]+) free,\s*([\d.]+) used", mem)
    check(m, "%s: no MiB Mem line in top's head" % what, out["top"])
    check_equal(float(m.group(1)), DEB_LIMIT / MIB, "%s: top's MiB Mem total" % what)
    check(float(m.group(3)) >= DEB_HOLD / MIB, "%s: top's MiB Mem used below the hog's" % what, out["top"])
    vm = out["vm"]
    check_equal(vm["total"], DEB_LIMIT, "%s: psutil.virtual_memory().total" % what)
    check(vm["used"] >= DEB_HOLD and vm["available"] <= DEB_LIMIT - DEB_HOLD,
          "%s: psutil.virtual_memory() does not count the hog's memory" % what, vm)
    # Uptime: the container's (it started age seconds ago), not the host's.
    up = float(out["proc_uptime"].split()[0])
    check(0 <= up <= age + 2, "%s: /proc/uptime says %.1f s, the container is %.1f s old" % (what, up, age))
    for name, text in (("uptime", out["uptime"]), ("top", top[0])):
        check(uptime_seconds(text) <= age + 60, "%s: %s says up %d s, the container is %.0f s old"
              % (what, name, uptime_seconds(text), age), text)
        # glibc's getloadavg() asks sysinfo(2): procps reads the file.
        loads = [out[k].split()[:3] for k in ("loadavg_before", "loadavg")]
        check(load_of(text) in loads, "%s: %s's load average is not /proc/loadavg's" % (what, name), text, loads)
    threads = int(out["loadavg"].split()[3].split("/")[1])
    check(threads < host_threads_now, "%s: /proc/loadavg counts %d threads, the host has %d: not the container's"
          % (what, threads, host_threads_now), out["loadavg"])
    # CPUs: one, every way that reads the files.
    lscpu = dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in out["lscpu"].splitlines()))
    # The CPUs shown keep their host numbers; the others look offlined, so
    # the configured count (lscpu's CPU(s), _CONF, nproc --all) is the
    # host's (README "The CPU view").
    check_equal(lscpu.get("CPU(s)"), str(host_cpus), "%s: lscpu CPU(s)" % what)
    check_online(lscpu.get("On-line CPU(s) list"), view_cpus, "%s: lscpu On-line CPU(s) list" % what)
    check_equal(out["getconf"].split(), [str(view_cpus), str(host_cpus)], "%s: getconf _NPROCESSORS_ONLN, _CONF"
                % what)
    check_equal((out["cpu_count"], out["psutil_cpu_count"]), (view_cpus, view_cpus),
                "%s: os.cpu_count(), psutil.cpu_count()" % what)
    check_equal(int(out["nproc_all"]), host_cpus, "%s: nproc --all (nproc: %s)" % (what, out["nproc"]))
    # CPU time: the hog's share of the container's CPU.
    stat, clk = out["stat"], out["clk_tck"]
    busy, ticks = busy_percent(stat["before"], stat["after"])
    expected_ticks = clk * stat["seconds"] * view_cpus
    check(abs(ticks - expected_ticks) <= 0.1 * expected_ticks + 2,
          "%s: the /proc/stat cpu line grew by %d ticks in %.2f s: not %d CPU(s)"
          % (what, ticks, stat["seconds"], view_cpus), stat)
    check_cpu_share("%s: the /proc/stat cpu line over 2 s" % what, busy, stat["hog_ticks"], stat["seconds"], clk,
                    view_cpus, host_cpus)
    pct = out["cpu_percent"]
    check_cpu_share("%s: psutil.cpu_percent(interval=1)" % what, pct["percent"], pct["hog_ticks"], pct["seconds"], clk,
                    view_cpus, host_cpus)


# ------------------------------------------------------------ LXC's race --

def lost_to_lxc_race(res, log):
    """Whether an lxc-attach of a container with a notify profile failed in
    LXC 5.0's own race (its TRACE log): the attached process sends its
    seccomp listener on the socket its intermediate process sends the pid
    on; when the listener comes first, lxc-attach never receives the pid,
    gives up (exit 1, nothing said), and closes the listener, and the
    command runs on with sysinfo(2) failing ENOSYS (busybox free: zeros).
    No request reaches the daemon. About 1 in 10 attaches under load here."""
    loaded = log.find("Loaded seccomp profile")
    return (res[0] == 1 and "Received pid" not in log and loaded >= 0 and
            re.search(r"Attached process \d+ started initializing", log[loaded:]) is not None)


def attach_past_lxc_race(c, argv, tries=5):
    """c.attach(argv), again (said in a diagnostic) when LXC's attach race
    (lost_to_lxc_race) made it fail; any other failure is the caller's."""
    for attempt in range(1, tries + 1):
        log = os.path.join(c.lxcpath, "%s-attach-%d.log" % (c.name, attempt))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(log)  # LXC appends
        argv_logged = c.attach_argv(argv)
        argv_logged[1:1] = ["-l", "TRACE", "-o", log]
        res = cgtest.run(argv_logged, timeout=60)
        text = ""
        with contextlib.suppress(OSError), open(log, errors="replace") as f:
            text = f.read()  # none if lxc-attach did not get as far
        if not lost_to_lxc_race(res, text):
            return res
        cgtest.diag("lxc-attach %d of %d lost LXC's race (the listener sent before the pid): again"
                    % (attempt, tries))
    return res


def pivots():
    return [os.path.join(mp, "lxc.pivot") for mp in set(hierarchies().values())]


def cleanup(state):
    for key in ("systemd", "busybox", "unpriv"):
        c = state.pop(key, None)
        if c is not None:
            c.destroy()
    for sub in state.pop("subcgroups", []):
        sub.remove()
    remove_subid_lines(state)
    path = state.pop("lxcpath", None)
    if path:
        cgtest.force_unmount(path)
        shutil.rmtree(path, ignore_errors=True)
        # LXC's lock files for that lxcpath.
        lock = os.path.join("/run/lxc/lock", path.lstrip("/"))
        shutil.rmtree(lock, ignore_errors=True)
        parent = os.path.dirname(lock)
        while parent != "/run/lxc/lock" and parent.startswith("/run/lxc/lock/"):
            with contextlib.suppress(OSError):
                os.rmdir(parent)
            parent = os.path.dirname(parent)
    for pivot in state.pop("pivots", []):  # made during the test, and empty
        with contextlib.suppress(OSError):
            os.rmdir(pivot)
