"""The OCI hook with real runtimes: containers started by runc (and crun)
from a busybox rootfs, with cgprocfs-oci-hook as a createContainer hook,
see the view over their /proc and /sys/devices/system/cpu.

Every container gets a fresh bundle (rootfs, and config.json from
`runc spec`) with a CPU quota of 50000/100000 over two CPUs; what it must
see is derived from the host (its CPUs and its own procfs) and from the
design's rule N = max(1, min(|cpus|, ceil(quota/period))). Containers run
with a private runtime state directory, are always deleted, and the last
tests check that no container state, cgroup or mount is left and that the
daemon ended every container's view.

Needs root, /dev/fuse, runc, a static /bin/busybox, $CGPROCFS (the daemon)
and $CGPROCFS_OCI_HOOK (the hook); crun and podman are tried if present
(podman with contrib/oci/cgprocfs.json.in as its hooks.d file)."""

import collections
import contextlib
import fractions
import itertools
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, describe, diag  # noqa: E402
import test_ioview  # noqa: E402
import test_memview  # noqa: E402
from test_cpuview import parse_cpu_list  # noqa: E402
import test_served  # noqa: E402
import test_timeview  # noqa: E402
from test_psutil_suite import MODULES as PSUTIL_MODULES, SuiteRun, view_only  # noqa: E402

BUSYBOX = "/bin/busybox"
APPLETS = ["sh", "ps", "grep", "head", "wc", "ls", "readlink", "echo", "sleep", "cat", "nproc"]
QUOTA, PERIOD = 50000, 100000
MIB = 1 << 20
UNIFIED = "/sys/fs/cgroup/unified"
RUN_TIMEOUT = 15
# How long the busy container's two loops run before its 1-minute load is
# read: from 0, it reaches 2 × (1 − e^(−35/60)) = 0.88.
LOAD_SECONDS = 35
FUSECTL = "/sys/fs/fuse/connections"
HOOK_LINE = "cgprocfs-oci-hook: "
HOOKS_JSON_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "contrib", "oci", "cgprocfs.json.in")
PODMAN_ANNOTATION = "io.cgprocfs.enable=true"
# What rootful podman makes in fixed places, whatever --root and --runroot
# say: netavark's run directory (for its IPAM database), and runc's state
# directory (podman runs runc with its default --root).
PODMAN_FIXED_DIRS = ["/run/containers", "/run/containers/networks", "/run/runc"]

# A static program printing glibc's two CPU counts, as a container sees them.
SYSCONF_PROBE_C = r"""
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("%ld %ld\n", sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
	return 0;
}
"""

# Printed first by every probe run with the hook: is the view in place?
VIEW_MARK = ('echo @@view; grep -c ^processor /proc/cpuinfo; '
             'if [ -d /proc/.real ]; then echo real; else echo no-real; fi\n')

CPU_PROBE = VIEW_MARK + r"""
echo @@processors; grep -c ^processor /proc/cpuinfo
echo @@stat; head -c 1000000 /proc/stat | grep '^cpu'
echo @@online; head -c 100 /sys/devices/system/cpu/online
echo @@cpudirs; ls /sys/devices/system/cpu | grep '^cpu[0-9]'
echo @@sysconf; sysconf-probe
echo @@nproc; nproc
"""

# The pid 1 shell, one background sleep, ps, and the listings of both procfs.
PS_PROBE = VIEW_MARK + r"""
sleep 30 &
bg=$!
# Until it has exec'd, the sleep is a copy of this shell (its args are the
# shell's): wait for that in the kernel's own procfs, not through the view.
for i in $(seq 200); do
    case "$(tr '\0' ' ' < /proc/.real/$bg/cmdline)" in "sleep 30"*) break;; esac
    sleep 0.01
done
echo @@sh; echo $$
echo @@bg; echo $bg
echo @@ps; ps -o pid,comm,args
echo @@real; ls /proc/.real
echo @@view_pids; ls /proc
kill $bg
"""

SMAPS_PROBE = VIEW_MARK + r"""
echo @@first; head -c 100000 /proc/1/smaps_rollup
echo @@second; head -c 100000 /proc/1/smaps_rollup
"""

# A process whose /proc/<pid> was walked (so the kernel caches the entry)
# exits and is reaped: its directory is gone. Its pid is then handed to a
# new process (ns_last_pid): the new one's directory answers at once.
RECYCLE_PROBE = VIEW_MARK + r"""
sleep 30 &
p=$!
ls /proc/$p >/dev/null && head -c 100 /proc/$p/comm >/dev/null && stat -c %F /proc/$p >/dev/null
kill $p; wait $p
echo @@gone; if [ -e /proc/$p ]; then echo present; else echo gone; fi
echo @@write; echo $((p - 1)) > /proc/sys/kernel/ns_last_pid; echo $?
sleep 31 &
q=$!
# Until it has exec'd, the new process is a copy of this shell: wait for a
# "sleep 3..." command line (the old process's, "sleep 30", would end the
# wait too, and fail the check below).
for i in $(seq 200); do
    case "$(tr '\0' ' ' < /proc/$q/cmdline)" in "sleep 3"*) break;; esac
    sleep 0.01
done
echo @@pids; echo $p $q
echo @@stat; stat -c %F /proc/$q 2>&1
echo @@ls; ls /proc/$q 2>&1 | grep -c '^smaps_rollup$'
echo @@cmdline; tr '\0' ' ' < /proc/$q/cmdline 2>&1; echo
echo @@smaps; head -c 100000 /proc/$q/smaps_rollup 2>&1 | grep -c '^Rss:'
echo @@listed; ls /proc | grep -cx $q
kill $q
"""

# Reads through the view for 5 s, across a handover to a new daemon: counts
# rounds (cpuinfo shows the CPUs, pid 1's status reads, ps lists pid 1) and
# failures.
HANDOVER_PROBE = r"""
end=$(( $(date +%s) + 5 )); reads=0; errors=0; cpus=
while [ $(date +%s) -lt $end ]; do
  c=$(grep -c ^processor /proc/cpuinfo) && head -c 1000 /proc/1/status | grep -q ^Name: &&
    ps -o pid | grep -qx ' *1' && reads=$((reads + 1)) || errors=$((errors + 1))
  cpus="$cpus $c"
done
echo @@reads; echo $reads
echo @@errors; echo $errors
echo @@cpus; echo $cpus
"""

# What psutil's suite is expected to fail in a container with the view, and
# not without it, and why: the view shows 1 CPU (quota 1/2), the other
# looks offlined, as on a machine with an offlined CPU, while
# /proc/<pid>/stat's "processor" field is the CPU the process last ran on
# (see the README).
PSUTIL_VIEW_ONLY = {
    "psutil.tests.test_linux.TestSystemCPUCountLogical.test_against_nproc":
        "nproc --all counts the configured CPUs (cpuN directories, the host's), psutil the online ones",
    "psutil.tests.test_linux.TestSystemCPUCountLogical.test_against_sysdev_cpu_num":
        "counts the cpuN directories, the offlined-looking CPUs' too",
    "psutil.tests.test_process.TestProcess.test_cpu_num":
        "cpu_num() is where the process last ran (the kernel's, a host number), which under a quota may be a "
        "CPU the view does not show: not in range(cpu_count())",
    # compares /proc/loadavg (the container's) with getloadavg() (glibc
    # 2.36 asks sysinfo(): the host's); fails when the two differ by > 1
    "psutil.tests.test_linux.TestLoadAvg.test_getloadavg": "getloadavg() asks sysinfo(), the file is the container's",
}


def host_python(config):
    """Container edit: the host's /usr (python3 and psutil's suite), /etc
    and libraries, read-only, a writable /tmp as the working directory."""
    for dest, src in (("/usr", "/usr"), ("/etc", "/etc"), ("/lib", "/usr/lib"), ("/lib64", "/usr/lib64")):
        if os.path.isdir(src):
            config["mounts"].append({"destination": dest, "type": "bind", "source": src,
                                     "options": ["rbind", "ro"]})
    config["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["rw"]})
    config["process"]["cwd"] = "/tmp"
    config["process"]["env"].append("PSUTIL_TESTING=1")
    # psutil's LimitedUserTestCase runs the process tests again as uid 1000.
    caps = config["process"]["capabilities"]
    for kind in ("bounding", "effective", "permitted"):
        caps[kind] = caps.get(kind, []) + ["CAP_SETUID", "CAP_SETGID"]


SELF_PROBE = VIEW_MARK + r"""
echo @@exe; readlink /proc/self/exe
echo @@fd; ls /proc/self/fd
echo 500 > /proc/self/oom_score_adj
r=$?
echo @@oom_write; echo $r
echo @@oom; head -c 100 /proc/self/oom_score_adj
"""

# What runc's default masks and read-only paths make of /proc. Everything
# after @@masks must read the same with and without the hook.
MASK_PROBE = r"""
echo @@masks
for f in timer_list keys kcore sched_debug timer_stats latency_stats; do
    if [ -e /proc/$f ]; then
        head -c 100000 /proc/$f >/dev/null 2>&1
        r=$?
        echo "read /proc/$f rc=$r bytes=$(head -c 100000 /proc/$f 2>/dev/null | wc -c)"
    else
        echo "read /proc/$f absent"
    fi
done
for d in acpi scsi asound; do
    if [ -d /proc/$d ]; then echo "ls /proc/$d entries=$(ls -A /proc/$d | wc -l)"; else echo "ls /proc/$d absent"; fi
done
echo "read /proc/sys/kernel/ostype: $(head -c 100 /proc/sys/kernel/ostype)"
(echo cgprocfs-test > /proc/sys/kernel/hostname) 2>/dev/null
echo "write /proc/sys/kernel/hostname rc=$?"
(echo h > /proc/sysrq-trigger) 2>/dev/null
echo "write /proc/sysrq-trigger rc=$?"
"""

# The first CPU the view shows (host number): its directory has a topology.
FIRST_SHOWN = 'c=$(head -c 100 /sys/devices/system/cpu/online | cut -d, -f1 | cut -d- -f1)\n'

SENDFILE_PROBE = VIEW_MARK + FIRST_SHOWN + r"""
for f in /proc/cpuinfo /proc/stat /sys/devices/system/cpu/online /proc/meminfo /proc/swaps /proc/vmstat \
         /proc/uptime /proc/loadavg /sys/devices/system/cpu/cpu$c/topology/core_siblings_list \
         /sys/devices/system/cpu/kernel_max /proc/.real/cpuinfo; do
    echo "@@cat $f"; cat $f | wc -c
    echo "@@head $f"; head -c 10000000 $f | wc -c
done
"""

# Four readers in the container, 5 s, each alternating busybox cat
# (sendfile) and head (read()) of three served files; one line per pass.
MIXED_PROBE = VIEW_MARK + FIRST_SHOWN + r"""
pass_of() {
    echo "R $($1 /proc/cpuinfo | grep -c ^processor) $($1 /sys/devices/system/cpu/online)" \
         "$($1 /sys/devices/system/cpu/cpu$c/topology/core_siblings_list)"
}
reader() {
    end=$(( $(date +%s) + 5 ))
    while [ "$(date +%s)" -lt "$end" ]; do pass_of cat; pass_of "head -c 1000000"; done
}
echo @@passes
for i in 1 2 3 4; do reader & done
wait
"""

# What a container of a shared pid namespace sees: its memory and CPUs, and
# the memory cgroup of pid 1 (the first container's init, whose cgroup
# LXCFS gives every process of the namespace: lxc/lxcfs#543).
SHARED_PID_PROBE = VIEW_MARK + r"""
echo @@memtotal; grep ^MemTotal: /proc/meminfo
echo @@online; head -c 100 /sys/devices/system/cpu/online
echo @@pid1; grep :memory: /proc/1/cgroup
echo @@end
"""

FILES_PROBE = r"""
echo @@real; if [ -e /proc/.real ]; then echo exists; else echo absent; fi
echo @@processors; grep -c ^processor /proc/cpuinfo
echo @@stat; head -c 1000000 /proc/stat | grep '^cpu'
echo @@online; head -c 100 /sys/devices/system/cpu/online
echo @@sysconf; sysconf-probe
echo @@exe; readlink /proc/self/exe
echo @@ps; ps -o pid,comm
"""


# --------------------------------------------------------------- helpers --

def hook_exe():
    return os.environ.get("CGPROCFS_OCI_HOOK", "")


def is_static_elf(path):
    """True if path is an ELF executable without a program interpreter."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    if data[:4] != b"\x7fELF" or data[4] != 2:     # 64-bit only, as here
        return False
    end = "<" if data[5] == 1 else ">"
    phoff, = struct.unpack_from(end + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    for i in range(phnum):
        off = phoff + i * phentsize
        if off + 4 > len(data):
            return False
        if struct.unpack_from(end + "I", data, off)[0] == 3:  # PT_INTERP
            return False
    return True


def read_quiet(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e.strerror


def sections(text):
    """{name: text} of output cut by '@@name' lines."""
    out, name = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("@@"):
            name = line[2:].strip()
            out[name] = ""
        elif name is not None:
            out[name] += line
    return out


def section(secs, name, result=None):
    check(name in secs, "the container printed no %r section" % name, describe(result) if result else secs)
    return secs[name]


def pid_rows(ps_text, args=False):
    """[(pid, comm)] of `ps -o pid,comm` output; [(pid, comm, args)] of
    `ps -o pid,comm,args` with args=True."""
    rows = []
    for line in ps_text.splitlines()[1:]:
        parts = line.split(None, 2 if args else 1)
        if parts and parts[0].isdigit():
            parts += [""] * ((3 if args else 2) - len(parts))
            rows.append((int(parts[0]),) + tuple(p.strip() for p in parts[1:]))
    return rows


def pids_of_listing(text):
    return {int(w) for w in text.split() if w.isdigit()}


def init_output(c):
    """The probe's sections as container c's init printed them (detached,
    its stdout in the bundle), and its output."""
    out, err = os.path.join(c.bundle, "stdout"), os.path.join(c.bundle, "stderr")
    check(cgtest.wait_until(lambda: "@@end" in read_quiet(out), timeout=RUN_TIMEOUT),
          "the init of %s did not print its probe" % c.id, read_quiet(out), read_quiet(err))
    return sections(read_quiet(out)), "stdout:\n%sstderr:\n%s" % (read_quiet(out), read_quiet(err))


def memory_line(pid):
    """The memory line of /proc/<pid>/cgroup."""
    with open("/proc/%d/cgroup" % pid) as f:
        return [line.strip() for line in f if ":memory:" in line]


def host_processors():
    with open("/proc/cpuinfo") as f:
        return sum(1 for line in f if re.match(r"processor\s*:", line))


def format_cpu_list(cpus):
    cpus = sorted(cpus)
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else "%d-%d" % (start, c))
            start = None
    return ",".join(out)


def container_cpus():
    """The CPUs given to every container: the first two this process may use."""
    return sorted(os.sched_getaffinity(0))[:2]


def expected_cpus():
    """N for a container limited to container_cpus() and QUOTA/PERIOD."""
    limit = fractions.Fraction(QUOTA, PERIOD)
    return max(1, min(len(container_cpus()), -(-limit.numerator // limit.denominator)))


def need_two_cpus():
    cpus = container_cpus()
    if len(cpus) < 2 or host_processors() < 2:
        raise cgtest.Skip("needs 2 CPUs to tell the view from the host's files; this process may use %s"
                          % format_cpu_list(cpus))


def mount_fields():
    """[(mount root, mount point, fstype, super options)] of this mount namespace."""
    rows = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-", 6)
            rows.append((cgtest.unescape_mountinfo(fields[3]), cgtest.unescape_mountinfo(fields[4]),
                         fields[sep + 1], fields[sep + 3].split(",")))
    return rows


def cgroup_candidates(cid):
    """Where a runtime may have made container cid's cgroups: cid below each
    cgroup mount and below this process's own cgroup in each of them."""
    own = []
    with open("/proc/self/cgroup") as f:
        for line in f:
            own.append(line.rstrip("\n").split(":", 2)[2])
    found = set()
    for root, mp, fstype, _ in mount_fields():
        if fstype not in ("cgroup", "cgroup2"):
            continue
        found.add(os.path.join(mp, cid))
        for path in own:
            rel = os.path.relpath(path, root) if path.startswith(root) else None
            if rel is not None:
                found.add(os.path.normpath(os.path.join(mp, rel, cid)))
    return sorted(found)


def cgroup_file(pid, controller, name):
    """The text of a cgroup v1 file of pid's cgroup, or None without one."""
    with open("/proc/%d/cgroup" % pid) as f:
        paths = {c: line.rstrip("\n").split(":", 2)[2] for line in f for c in line.split(":", 2)[1].split(",")}
    for root, mp, fstype, opts in mount_fields():
        if fstype == "cgroup" and controller in opts and controller in paths:
            path = os.path.join(mp, os.path.relpath(paths[controller], root), name)
            with open(path) as f:
                return f.read().strip()
    return None


def fuse_connections(mountinfo, fstype="fuse.cgprocfs"):
    """{mount point: connection number} of the FUSE mounts in a mountinfo file."""
    found = {}
    with contextlib.suppress(OSError), open(mountinfo) as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-", 6)
            major, minor = fields[2].split(":")
            if fields[sep + 1] == fstype and major == "0":
                found[cgtest.unescape_mountinfo(fields[4])] = int(minor)
    return found


def daemon_threads_waiting(pid):
    """How many of pid's threads wait on a FUSE request."""
    count = 0
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/%d/task" % pid):
            with contextlib.suppress(OSError), open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                count += f.read().strip() == "request_wait_answer"
    return count


def abort_stuck_views(pids, keep, patience=5.0):
    """Abort the FUSE connections of container views (mounts in the mount
    namespaces of pids, none of those in keep) that still have requests
    waiting after patience seconds: a view that deadlocked would otherwise
    hold its callers and the daemon forever. A request in flight a moment
    is no deadlock (a killed reader's is answered after it died, a slow
    sanitized daemon's a little later). Returns ["connection N: W requests
    waiting"]."""
    conns = set()
    for pid in pids:
        conns |= set(fuse_connections("/proc/%d/mountinfo" % pid).values())
    conns -= set(keep)
    if not conns:
        return []
    mounted = False
    if not is_mounted(FUSECTL):
        mounted = cgtest.run(["mount", "-t", "fusectl", "fusectl", FUSECTL])[0] == 0
    aborted = []
    try:
        deadline = time.monotonic() + patience
        for conn in sorted(conns):
            path = os.path.join(FUSECTL, str(conn))
            with contextlib.suppress(OSError, ValueError):
                while True:
                    with open(os.path.join(path, "waiting")) as f:
                        waiting = int(f.read())
                    if waiting == 0 or time.monotonic() >= deadline:
                        break
                    time.sleep(0.05)
                if waiting > 0:
                    with open(os.path.join(path, "abort"), "w") as f:
                        f.write("1")
                    aborted.append("connection %d: %d requests waiting" % (conn, waiting))
    finally:
        if mounted:
            cgtest.run(["umount", FUSECTL])
    return aborted


def is_mounted(path):
    return any(row[1] == path for row in mount_fields())


class Runtime:
    """runc or crun with a private state directory. crun refuses the hybrid
    cgroup layout while /sys/fs/cgroup/unified is mounted, so it runs in a
    private mount namespace where that is unmounted."""

    def __init__(self, name, state_root):
        self.name = name
        self.root = os.path.join(state_root, name)
        self.hybrid_workaround = name == "crun" and is_mounted(UNIFIED)

    def argv(self, *args):
        cmd = [self.name, "--root", self.root] + list(args)
        if self.hybrid_workaround:
            script = "umount %s || exit 97\nexec \"$@\"\n" % shlex.quote(UNIFIED)
            cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "cgprocfs-crun"] + cmd
        return cmd


class Lab:
    """The test's work directory: the rootfs template, the runtimes, and
    every container id used (for the final leftovers check)."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.dir = tempfile.mkdtemp(prefix="cgprocfs-containers-")
        self.template = os.path.join(self.dir, "rootfs-template")
        self.runtimes = {name: Runtime(name, os.path.join(self.dir, "state")) for name in ("runc", "crun")}
        self.ids = []                   # (runtime, id)
        self.podmans = []               # every Podman made
        self.serial = itertools.count(1)
        self.built = False
        self.fuse_mounts_before = set()

    def build(self):
        for d in ("bin", "proc", "sys", "dev", "tmp"):
            os.makedirs(os.path.join(self.template, d))
        shutil.copy2(BUSYBOX, os.path.join(self.template, "bin", "busybox"))
        for applet in APPLETS:
            os.symlink("busybox", os.path.join(self.template, "bin", applet))
        cgtest.check_ran(self.compile("sysconf-probe", SYSCONF_PROBE_C), "cc -static (the sysconf probe)")
        check(is_static_elf(os.path.join(self.template, "bin", "sysconf-probe")), "the sysconf probe is not static")
        self.fuse_mounts_before = {m for _, m, fstype, _ in mount_fields() if fstype == "fuse.cgprocfs"}
        self.built = True

    def compile(self, name, source, flags=()):
        """C source built static into the rootfs template's bin/name: cc's
        (rc, out, err)."""
        src = os.path.join(self.dir, name + ".c")
        with open(src, "w") as f:
            f.write(source)
        return cgtest.run(["cc", "-static", "-O2"] + list(flags) + ["-o", os.path.join(self.template, "bin", name), src])

    def cleanup(self):
        problems = []
        for name, cid in self.ids:
            cgtest.run(self.runtimes[name].argv("delete", "-f", cid), timeout=RUN_TIMEOUT)
        for podman in self.podmans:
            problems += podman.remove()
        left = cgtest.mounts_under(self.dir)
        if left:
            problems.append("mounts left under the work directory: %s" % ", ".join(left))
            cgtest.force_unmount(self.dir)
        if not cgtest.mounts_under(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)
        return problems


class Container:
    """One container: its bundle (rootfs copied from the template, config.json
    from `runc spec`), run by lab.runtimes[runtime]. hook: "proc", "files"
    (--mode files) or None; mountpoint defaults to the daemon's;
    capture_hook wraps the hook in a shell that saves its stderr and exit
    status (runtimes drop the output of a hook that succeeds). On exit the
    container is deleted and its bundle removed; leftovers fail the test.
    edit, if given, changes the config (a dict) before it is written."""

    def __init__(self, lab, script, hook="proc", mountpoint=None, capture_hook=False, runtime="runc",
                 edit=None):
        check(lab.built, "the rootfs was not built")
        self.lab = lab
        self.runtime = lab.runtimes[runtime]
        self.id = "cgprocfs-test-%d-%d" % (os.getpid(), next(lab.serial))
        lab.ids.append((runtime, self.id))
        self.bundle = os.path.join(lab.dir, self.id)
        self.hook_log = os.path.join(self.bundle, "hook.stderr")
        self.hook_rc = os.path.join(self.bundle, "hook.rc")
        os.mkdir(self.bundle)
        shutil.copytree(lab.template, os.path.join(self.bundle, "rootfs"), symlinks=True)
        cgtest.check_ran(cgtest.run(["runc", "spec", "--bundle", self.bundle]), "runc spec")
        path = os.path.join(self.bundle, "config.json")
        with open(path) as f:
            config = json.load(f)
        config["process"]["terminal"] = False
        config["process"]["args"] = ["sh", "-c", script]
        config["linux"].setdefault("resources", {})["cpu"] = {
            "quota": QUOTA, "period": PERIOD, "cpus": format_cpu_list(container_cpus())}
        if hook is not None:
            args = ["--mountpoint", mountpoint or lab.daemon.mnt]
            if hook == "files":
                args += ["--mode", "files"]
            if capture_hook:
                wrapper = '"$@" 2>%s\nrc=$?\necho $rc >%s\nexit $rc\n' % (shlex.quote(self.hook_log),
                                                                           shlex.quote(self.hook_rc))
                entry = {"path": "/bin/sh", "args": ["sh", "-c", wrapper, "cgprocfs-hook-wrapper", hook_exe()] + args}
            else:
                entry = {"path": hook_exe(), "args": ["cgprocfs-oci-hook"] + args}
            config.setdefault("hooks", {})["createContainer"] = [entry]
        if edit:
            edit(config)
        with open(path, "w") as f:
            json.dump(config, f, indent=2)

    def run(self, timeout=RUN_TIMEOUT):
        result = cgtest.run(self.runtime.argv("run", "--bundle", self.bundle, self.id), timeout=timeout)
        if result[0] is None:
            rc, out, err = result
            result = (rc, out, err + "\n" + "\n".join(self.unstick()))
        return result

    def pids(self):
        """The host pids of the container's processes (from its cgroups)."""
        found = set()
        for path in cgroup_candidates(self.id):
            with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.procs")) as f:
                found |= {int(p) for p in f.read().split()}
        return found

    def unstick(self):
        """If the container's view deadlocked, say how, and abort it."""
        pids = self.pids()
        daemon = self.lab.daemon
        notes = ["container processes: " + ", ".join(
            "%d %s (%s)" % (p, read_quiet("/proc/%d/cmdline" % p).replace("\0", " ").strip(),
                            read_quiet("/proc/%d/wchan" % p)) for p in sorted(pids))]
        if daemon.process and daemon.process.poll() is None:
            notes.append("daemon threads waiting on a FUSE request: %d" % daemon_threads_waiting(daemon.process.pid))
        # Never the mounts of this mount namespace (the daemon's own among them).
        aborted = abort_stuck_views(pids, fuse_connections("/proc/self/mountinfo").values())
        notes += ["aborted the view's FUSE " + a for a in aborted]
        return notes

    def run_ok(self, what, timeout=RUN_TIMEOUT):
        result = self.run(timeout)
        cgtest.check_ran(result, "%s run of %s" % (self.runtime.name, what))
        return sections(result[1]), result

    def start_detached(self):
        """runc run -d with the container's stdio on files in the bundle."""
        with open(os.path.join(self.bundle, "stdout"), "w") as out, \
                open(os.path.join(self.bundle, "stderr"), "w") as err:
            proc = subprocess.run(self.runtime.argv("run", "-d", "--bundle", self.bundle, self.id),
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=RUN_TIMEOUT)
        with open(os.path.join(self.bundle, "stderr")) as f:
            check(proc.returncode == 0, "%s run -d failed (exit %s)" % (self.runtime.name, proc.returncode),
                  f.read())

    def exec(self, *argv):
        return cgtest.run(self.runtime.argv("exec", self.id) + list(argv), timeout=RUN_TIMEOUT)

    def state(self):
        result = cgtest.run(self.runtime.argv("state", self.id), timeout=RUN_TIMEOUT)
        return json.loads(cgtest.check_ran(result, "%s state" % self.runtime.name))

    def hook_output(self):
        """(stderr text, exit status) the wrapper saved, or (None, None)."""
        try:
            with open(self.hook_log) as f:
                text = f.read()
            with open(self.hook_rc) as f:
                rc = int(f.read())
        except (OSError, ValueError):
            return None, None
        return text, rc

    def leftovers(self):
        problems = []
        if os.path.exists(os.path.join(self.runtime.root, self.id)):
            problems.append("%s state of %s is left" % (self.runtime.name, self.id))
        problems += ["cgroup left: %s" % p for p in cgroup_candidates(self.id) if os.path.exists(p)]
        problems += ["mount left: %s" % m for m in cgtest.mounts_under(self.bundle)]
        return problems

    def remove(self):
        stuck = [n for n in self.unstick() if n.startswith("aborted")] if self.pids() else []
        cgtest.run(self.runtime.argv("delete", "-f", self.id), timeout=RUN_TIMEOUT)
        problems = stuck + self.leftovers()
        if not cgtest.mounts_under(self.bundle):
            shutil.rmtree(self.bundle, ignore_errors=True)
        return problems

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        problems = self.remove()
        if problems and exc_type is None:
            raise cgtest.Failure("container %s left things behind" % self.id, *problems)
        return False


class Podman:
    """podman with everything it keeps in temporary directories: its storage
    (--root, vfs: the containers run from plain directories, --rootfs),
    --tmpdir and its network configuration (else /etc/cni/net.d or
    /etc/containers/networks gets a lock file) in one of the lab's, its run
    state (--runroot, which podman wants at most 50 characters long) in one
    of /run's. Its hooks directory holds the project's hooks.d file
    (contrib/oci/cgprocfs.json.in: the hook for containers annotated
    io.cgprocfs.enable=true), rendered for the hook just built and the
    test's daemon. Podman needs, on this kind of machine:
      - runc: crun refuses this hybrid cgroup layout (see Runtime);
      - the cgroupfs manager (no systemd), below a parent cgroup of the
        test's own, with conmon left in the caller's cgroup
        (--cgroups no-conmon); podman leaves the parent, remove() removes it;
      - small --ulimit values: as root, podman 4.3 asks by default for
        nofile and nproc limits of 1048576, and without CAP_SYS_RESOURCE
        the runtime cannot set them above the hard limits (later podmans
        clamp them);
      - no network (--network none) and no events log (--events-backend none).
    netavark and runc still make their directories in /run
    (PODMAN_FIXED_DIRS): remove() removes those that were not there before."""

    def __init__(self, lab, exe, runtime=None, runtime_flags=()):
        self.lab = lab
        self.exe = exe
        self.runtime = runtime or shutil.which("runc")
        self.runtime_flags = ["--runtime-flag=" + f for f in runtime_flags]
        self.dir = tempfile.mkdtemp(prefix="podman-", dir=lab.dir)
        self.runroot = tempfile.mkdtemp(prefix="cgprocfs-podman-", dir="/run")
        self.parent = "cgprocfs-test-%d-podman-%d" % (os.getpid(), next(lab.serial))
        self.made = [p for p in PODMAN_FIXED_DIRS if not os.path.exists(p)]
        lab.podmans.append(self)
        self.hooks = os.path.join(self.dir, "hooks.d")
        os.mkdir(self.hooks)
        with open(HOOKS_JSON_IN) as f:
            conf = json.loads(f.read().replace("@HOOK@", json.dumps(hook_exe())[1:-1]))
        args = conf["hook"]["args"]
        args[args.index("--mountpoint") + 1] = lab.daemon.mnt
        with open(os.path.join(self.hooks, "cgprocfs.json"), "w") as f:
            json.dump(conf, f, indent=2)

    def argv(self, *args):
        return [self.exe, "--root", os.path.join(self.dir, "root"), "--runroot", self.runroot,
                "--tmpdir", os.path.join(self.dir, "tmp"), "--storage-driver", "vfs",
                "--network-config-dir", os.path.join(self.dir, "networks"),
                "--runtime", self.runtime] + self.runtime_flags + [
                "--cgroup-manager", "cgroupfs", "--events-backend", "none", "--hooks-dir", self.hooks] + list(args)

    def run(self, script, annotate=True, timeout=60, extra=()):
        """podman run --rm of script in a fresh copy of the lab's rootfs,
        limited to QUOTA/PERIOD over container_cpus() (and extra's options)."""
        name = "cgprocfs-test-%d-%d" % (os.getpid(), next(self.lab.serial))
        rootfs = os.path.join(self.dir, name)
        shutil.copytree(self.lab.template, rootfs, symlinks=True)
        argv = self.argv("run", "--rm", "--name", name, "--network", "none",
                         "--cgroups", "no-conmon", "--cgroup-parent", "/" + self.parent,
                         "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                         "--cpu-quota", str(QUOTA), "--cpu-period", str(PERIOD),
                         "--cpuset-cpus", format_cpu_list(container_cpus()), *extra)
        if annotate:
            argv += ["--annotation", PODMAN_ANNOTATION]
        result = cgtest.run(argv + ["--rootfs", rootfs, "sh", "-c", script], timeout=timeout)
        if not cgtest.mounts_under(rootfs):
            shutil.rmtree(rootfs, ignore_errors=True)
        return result

    def leftovers(self):
        problems = ["cgroup left: %s" % p for p in cgroup_candidates(self.parent) if os.path.exists(p)]
        for d in (self.dir, self.runroot):
            problems += ["mount left: %s" % m for m in cgtest.mounts_under(d)]
            problems += ["podman's directory left: %s" % d] if os.path.exists(d) else []
        problems += ["left in /run: %s" % p for p in self.made if os.path.exists(p)]
        return problems

    def remove(self):
        """Remove the containers (left only if a run failed), the parent
        cgroup, podman's directory and what it made in /run; what is
        still left, as problems."""
        problems = []
        if os.path.exists(self.dir) and os.path.exists(self.runroot):
            cgtest.run(self.argv("rm", "--force", "--time", "0", "--all"), timeout=RUN_TIMEOUT)
            ps = cgtest.run(self.argv("ps", "--all", "--quiet"), timeout=RUN_TIMEOUT)
            if ps[0] != 0 or ps[1].split():
                problems.append("podman's containers left: %s" % (" ".join(ps[1].split()) or describe(ps)))
        for path in cgroup_candidates(self.parent):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        for d in (self.dir, self.runroot):
            if not cgtest.mounts_under(d):
                shutil.rmtree(d, ignore_errors=True)
        for path in reversed(self.made):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        return problems + self.leftovers()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        problems = self.remove()
        if problems and exc_type is None:
            raise cgtest.Failure("podman left things behind", *problems)
        return False


def check_view_in_place(secs, result, n=None):
    """The hook put the whole view in place: N processors and /proc/.real."""
    n = expected_cpus() if n is None else n
    got = section(secs, "view", result).split()
    check(got == [str(n), "real"], "the view is not in place in the container (processors, /proc/.real: %s)"
          % " ".join(got), "expected %d processors and /proc/.real" % n, describe(result))


def log_counts(log):
    serving = re.findall(r"serving the view of pid namespace (\d+) \(container init (\d+)\)", log)
    ended = re.findall(r"container view of pid namespace (\d+) ended", log)
    return serving, ended


def shown_cpus(online, n, where):
    """The CPUs online (a CPU list) names, checked to be n of the
    container's: which ones, under a quota, the daemon's placement chose."""
    shown = sorted(parse_cpu_list(online))
    check(len(shown) == n and set(shown) <= set(container_cpus()), "%s: online %r is not %d of the container's "
          "CPUs %s" % (where, online, n, format_cpu_list(container_cpus())))
    return shown


def host_cpu_dirs():
    return sorted(e for e in os.listdir("/sys/devices/system/cpu") if re.match(r"cpu\d+$", e))


def check_cpu_sections(secs, result, n, where):
    """cpuinfo, stat, online and glibc's _SC_NPROCESSORS_ONLN say n: the
    CPUs online lists, by their host numbers; the cpuN directories and
    _SC_NPROCESSORS_CONF are the host's (the others look offlined)."""
    shown = shown_cpus(section(secs, "online", result), n, where)
    got = {
        "grep -c ^processor /proc/cpuinfo": section(secs, "processors", result).strip(),
        "cpuN lines of /proc/stat": [l.split()[0] for l in section(secs, "stat", result).splitlines()
                                     if re.match(r"cpu\d+ ", l)],
        "/sys/devices/system/cpu/online": section(secs, "online", result),
        "sysconf(_SC_NPROCESSORS_ONLN), (_CONF)": section(secs, "sysconf", result).split(),
    }
    want = {
        "grep -c ^processor /proc/cpuinfo": str(n),
        "cpuN lines of /proc/stat": ["cpu%d" % c for c in shown],
        "/sys/devices/system/cpu/online": format_cpu_list(shown) + "\n",
        "sysconf(_SC_NPROCESSORS_ONLN), (_CONF)": [str(n), str(len(host_cpu_dirs()))],
    }
    if "cpudirs" in secs:
        got["cpuN entries of /sys/devices/system/cpu"] = sorted(secs["cpudirs"].split())
        want["cpuN entries of /sys/devices/system/cpu"] = host_cpu_dirs()
    wrong = ["%s = %r, expected %r" % (k, got[k], want[k]) for k in want if got[k] != want[k]]
    check(not wrong, "CPU counts in %s" % where, *wrong)


# ----------------------------------------------------------------- tests --

def make_tests(d, lab):
    t, test = cgtest.test_registry()
    n = expected_cpus()

    @test("build the busybox rootfs and a static probe of glibc's sysconf CPU counts")
    def _():
        lab.build()

    # 1. ---------------------------------------------------------------

    @test("runc: quota %d/%d over 2 CPUs shows %d CPU in cpuinfo, stat, sys cpu online and glibc's sysconf"
          % (QUOTA, PERIOD, n))
    def _():
        need_two_cpus()
        with Container(lab, CPU_PROBE) as c:
            secs, result = c.run_ok("the CPU probe")
        check_view_in_place(secs, result)
        check_cpu_sections(secs, result, n, "a runc container with the hook")
        diag("nproc (affinity, cpus %s) printed %s; the view does not change the affinity"
             % (format_cpu_list(container_cpus()), section(secs, "nproc").strip()))
        check_equal(section(secs, "nproc").strip(), str(len(container_cpus())), "nproc (sched_getaffinity)")

    # 2. ---------------------------------------------------------------

    @test("runc: ps lists the container's processes only, the ones its own /proc/.real lists")
    def _():
        with Container(lab, PS_PROBE) as c:
            secs, result = c.run_ok("the ps probe")
        check_view_in_place(secs, result)
        sh, bg = int(section(secs, "sh")), int(section(secs, "bg"))
        rows = pid_rows(section(secs, "ps", result), args=True)
        own = [pid for pid, comm, _ in rows if comm == "ps"]
        check(len(own) == 1, "ps does not show itself once", section(secs, "ps"))
        ps_pids = {pid for pid, _, _ in rows} - set(own)
        real = pids_of_listing(section(secs, "real"))
        listed = pids_of_listing(section(secs, "view_pids"))
        check_equal(sh, 1, "the container shell's pid")
        check_equal(ps_pids, {sh, bg}, "pids ps lists (but its own)")
        # busybox sh runs an applet by executing /proc/self/exe, so its comm
        # is "exe", and ps prints a comm unlike argv[0] as "{exe} sleep 30".
        args = {pid: re.sub(r"^\{[^}]*\} ", "", a) for pid, _, a in rows}
        check_equal(args.get(bg), "sleep 30", "the args of pid %d in ps" % bg)
        # Each listing also shows the ls that made it, and nothing else.
        for name, pids in (("/proc/.real", real), ("the view's /proc", listed)):
            extra = pids - ps_pids
            check(ps_pids <= pids and len(extra) <= 1, "%s lists %s, ps lists %s (and itself)"
                  % (name, sorted(pids), sorted(ps_pids)))
        host = pids_of_listing(" ".join(os.listdir("/proc")))
        check(len(host) > len(ps_pids) + 2, "the host has only %d processes (test setup)" % len(host))
        check(os.getpid() not in ps_pids | real, "the test runner's pid %d shows in the container" % os.getpid())
        me = os.path.basename(__file__)
        check(not [a for _, _, a in rows if me in a], "the test runner (%s) shows in the container's ps" % me,
              section(secs, "ps"))

    # 3. ---------------------------------------------------------------

    @test("runc: /proc/1/smaps_rollup read twice in the container is one memo miss, then one hit")
    def _():
        with Container(lab, SMAPS_PROBE) as c:
            s0 = cgtest.read_stats(d.mnt)
            secs, result = c.run_ok("the smaps probe")
            s1 = cgtest.read_stats(d.mnt)
        check_view_in_place(secs, result)
        deltas = {k: s1[k] - s0.get(k, 0) for k in ("misses_total", "hits_total", "stale_serves_total")}
        diag("stats deltas: %s" % deltas)
        check_equal(deltas, {"misses_total": 1, "hits_total": 1, "stale_serves_total": 0},
                    "smaps memo counters over the container's two reads")
        first, second = section(secs, "first"), section(secs, "second")
        check_equal(second, first, "the second read (a hit) vs the first")
        header, fields = cgtest.smaps_fields(first)
        check(header.endswith("[rollup]"), "not an smaps_rollup text", first)
        with open("/proc/self/smaps_rollup") as f:
            host_fields = cgtest.smaps_fields(f.read())[1]
        check_equal(list(fields), list(host_fields), "field names (container's pid 1 vs the kernel's own text)")

    # 4. ---------------------------------------------------------------

    @test("runc: readlink /proc/self/exe, ls /proc/self/fd and oom_score_adj 500 work through the view")
    def _():
        with Container(lab, SELF_PROBE) as c:
            secs, result = c.run_ok("the /proc/self probe")
        check_view_in_place(secs, result)
        check_equal(section(secs, "exe").strip(), "/bin/busybox", "readlink /proc/self/exe")
        fds = section(secs, "fd").split()
        check({"0", "1", "2"} <= set(fds), "ls /proc/self/fd lists %s" % fds, describe(result))
        check_equal(section(secs, "oom_write").strip(), "0", "exit status of echo 500 > /proc/self/oom_score_adj")
        check_equal(section(secs, "oom").strip(), "500", "/proc/self/oom_score_adj read back")

    @test("runc: an exited process's /proc/<pid> is gone once reaped; its pid recycled (ns_last_pid) "
          "shows the new process at once")
    def _():
        def allow_ns_last_pid(config):
            # Writing ns_last_pid takes CAP_CHECKPOINT_RESTORE, and a
            # writable /proc/sys.
            caps = config["process"]["capabilities"]
            for kind in ("bounding", "effective", "permitted"):
                caps[kind] = caps.get(kind, []) + ["CAP_CHECKPOINT_RESTORE"]
            ro = config["linux"].get("readonlyPaths", [])
            config["linux"]["readonlyPaths"] = [p for p in ro if p != "/proc/sys"]
        with Container(lab, RECYCLE_PROBE, edit=allow_ns_last_pid) as c:
            secs, result = c.run_ok("the recycled pid probe")
        check_view_in_place(secs, result)
        check_equal(section(secs, "gone", result).strip(), "gone", "/proc/<pid> of the reaped process")
        if section(secs, "write").strip() != "0":
            raise cgtest.Skip("cannot write ns_last_pid in the container: " + describe(result))
        p, q = section(secs, "pids").split()
        if p != q:
            raise cgtest.Skip("the kernel gave the new process pid %s, not %s" % (q, p))
        check_equal(section(secs, "stat").strip(), "directory", "stat of /proc/%s (the new process)" % q)
        check_equal(section(secs, "ls").strip(), "1", "smaps_rollup in ls /proc/%s" % q)
        check_equal(section(secs, "cmdline").strip(), "sleep 31", "/proc/%s/cmdline" % q)
        check_equal(section(secs, "smaps").strip(), "1", "Rss lines in /proc/%s/smaps_rollup" % q)
        check_equal(section(secs, "listed").strip(), "1", "/proc/%s in ls /proc" % q)

    @test("runc: psutil's suite in a container fails, with the view, only what the 1-CPU view explains")
    def _():
        # Not exec'd: as PID 1 the runner would be the reaper of the
        # grandchild test_wait_non_children orphans, and waitpid would
        # answer for it (racing its parent's end), with or without the view.
        suite = "%s -m unittest %s" % (cgtest.PYTHON, " ".join(PSUTIL_MODULES))

        def run(name, hook):
            with Container(lab, suite, hook=hook, edit=host_python) as c:
                result = SuiteRun(name, c.run(timeout=300))
            problems = result.problems()
            check(not problems, "%s: the suite did not run properly" % name, *problems,
                  describe(result.result)[-3000:])
            result.report()
            for test_id in sorted(set(result.failures) & set(PSUTIL_VIEW_ONLY)):
                diag("%s fails with the view: %s (expected)" % (test_id, PSUTIL_VIEW_ONLY[test_id]))
                del result.failures[test_id]
            return result
        plain = run("without the view", None)
        view = run("with the view", "proc")
        bad = view_only(view, [plain], lambda: run("with the view (second run)", "proc"))
        check(not bad, "%d psutil test(s) fail only with the view, twice" % len(bad),
              *[view.failures[t][:1500] for t in bad])

    # 5. ---------------------------------------------------------------

    @test("runc: masked and read-only /proc paths behave as in the same container without the hook")
    def _():
        with Container(lab, VIEW_MARK + MASK_PROBE) as c:
            secs, result = c.run_ok("the mask probe with the hook")
        check_view_in_place(secs, result)
        with Container(lab, MASK_PROBE, hook=None) as c:
            plain, plain_result = c.run_ok("the mask probe without the hook")
        with_hook, without = section(secs, "masks", result), section(plain, "masks", plain_result)
        diag("without the hook:\n" + without)
        check_equal(with_hook.splitlines(), without.splitlines(), "what the masks do (with the hook vs without)")
        status = {m.group(1): (int(m.group(2)), int(m.group(3) or 0))
                  for m in re.finditer(r"^(\S+ /proc/\S+) rc=(\d+)(?: bytes=(\d+))?$", with_hook, re.M)}
        for f in ("timer_list", "keys"):
            rc, size = status.get("read /proc/" + f, (0, 0))
            check(rc != 0 or size == 0, "/proc/%s reads %d bytes" % (f, size), with_hook)
        for f in ("sys/kernel/hostname", "sysrq-trigger"):
            check(status.get("write /proc/" + f, (0,))[0] != 0, "writing /proc/%s did not fail" % f, with_hook)
        check("read /proc/sys/kernel/ostype: Linux" in with_hook, "/proc/sys is not readable", with_hook)

    # --- the sendfile bug ---------------------------------------------

    @test("runc: busybox cat (sendfile) reads daemon-served files as fully as head (read) does")
    def _():
        with Container(lab, SENDFILE_PROBE) as c:
            secs, result = c.run_ok("the cat probe")
        check_view_in_place(secs, result)
        counts = {}
        for name in secs:
            if name.startswith(("cat ", "head ")):
                tool, path = name.split(" ", 1)
                counts.setdefault(path, {})[tool] = int(secs[name].strip() or -1)
        diag("bytes read (cat vs head): " + ", ".join("%s %d/%d" % (p, c["cat"], c["head"])
                                                       for p, c in sorted(counts.items())))
        check(all(c["head"] > 0 for c in counts.values()), "head read nothing from a file", counts)

        def differs(c):
            # The two reads are two opens: counters in the text may have
            # grown by a few digits in between.
            return c["cat"] <= 0 or abs(c["cat"] - c["head"]) > 64
        real = counts.pop("/proc/.real/cpuinfo")
        check(not differs(real), "cat fails even on the real procfs (test setup)", real)
        short = {p: c for p, c in counts.items() if differs(c)}
        check(not short, "cat read less than head", *["%s: cat %d, head %d bytes" % (p, c["cat"], c["head"])
                                                     for p, c in sorted(short.items())])

    @test("runc: 4 readers in the container mixing busybox cat (sendfile) and head (read) for 5 s, while 3 "
          "readers of the host's class read the same files through MNT, each get their own class's text")
    def _():
        n = expected_cpus()
        files = ("proc/cpuinfo", "sys/devices/system/cpu/online", "sys/devices/system/cpu/cpu0/topology/core_siblings_list")
        host_want = (str(host_processors()), read_quiet("/" + files[1]), read_quiet("/" + files[2]))
        hosts = [subprocess.Popen([cgtest.PYTHON, "-c", test_served.MIXED_READER, os.path.join(d.mnt, f), want, "6"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for f, want in zip(files, host_want)]
        try:
            with Container(lab, MIXED_PROBE) as c:
                secs, result = c.run_ok("the mixed readers", timeout=RUN_TIMEOUT + 10)
        finally:
            outs = [p.communicate(timeout=60) for p in hosts]
        check_view_in_place(secs, result)
        passes = [line.split(None, 1)[1] for line in section(secs, "passes", result).splitlines()
                  if line.startswith("R ")]
        online = format_cpu_list(shown_cpus(passes[0].split()[1], n, "the first pass") if passes else [])
        # the first CPU's core siblings are known here only for one CPU: itself.
        want = [str(n), online] + ([online] if n == 1 else [])
        wrong = collections.Counter(p for p in passes if p.split()[:len(want)] != want)
        diag("%d passes in the container (cat and head), want %r" % (len(passes), want))
        check(passes and not wrong, "readers in the container got another text", dict(wrong))
        for f, (out, err), p in zip(files, outs, hosts):
            check_equal(p.returncode, 0, "a host reader of %s failed: %s" % (f, err.strip()))
            reads, bad, empty = map(int, out.split(maxsplit=3)[:3])
            check(reads and not bad and not empty, "host reader of %s: %d of %d reads wrong, %d empty (%s)"
                  % (f, bad, reads, empty, out.strip()[:300]))

    @test("runc: a container limited to 256 MiB of memory and 64 MiB of swap sees them in meminfo, swaps, "
          "free, top, vmstat and psutil, and 100 MiB it touches")
    def _():
        memsw = os.path.exists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")

        def limits(config):
            host_python(config)
            memory = {"limit": test_memview.LIMIT}
            if memsw:
                memory["swap"] = test_memview.LIMIT + test_memview.SWAP
            config["linux"]["resources"]["memory"] = memory
        with Container(lab, "exec %s -c %s" % (cgtest.PYTHON, shlex.quote(test_memview.PROBE)), edit=limits) as c:
            rc, out, err = c.run(timeout=120)
        check_equal(rc, 0, "the probe in the container: %s" % err[-2000:])
        test_memview.check_probe("runc", json.loads(out.strip().splitlines()[-1]), test_memview.LIMIT,
                                 test_memview.SWAP if memsw else None, test_memview.host_meminfo())

    @test("runc: a container given a loop device with a write_bps_device rule writes 8 MiB to it: diskstats and "
          "psutil inside count its 8 MiB and not the 4 MiB the host wrote before")
    def _():
        with cgtest.LoopDevice() as dev:
            cgtest.check_ran(cgtest.run(["dd", "if=/dev/zero", "of=" + dev.path, "bs=1M", "count=4", "oflag=direct"]),
                             "dd on the host")

            def given(config):
                host_python(config)
                ids = {"major": dev.major, "minor": dev.minor}
                config["linux"].setdefault("devices", []).append(
                    dict(ids, path=dev.path, type="b", fileMode=0o660, uid=0, gid=0))
                resources = config["linux"]["resources"]
                resources.setdefault("devices", []).append(dict(ids, allow=True, type="b", access="rw"))
                resources["blockIO"] = {"throttleWriteBpsDevice": [dict(ids, rate=1 << 30)]}
                config["process"]["env"].append("CG_WRITE=1")
            probe = "exec %s -c %s %s" % (cgtest.PYTHON, shlex.quote(test_ioview.PROBE), dev.name)
            with Container(lab, probe, edit=given) as c:
                rc, out, err = c.run(timeout=120)
            check_equal(rc, 0, "the probe in the container: %s" % err[-2000:])
            got = json.loads(out.strip().splitlines()[-1])
            host = test_ioview.host_lines()[dev.name]
        before, after = got["before"]["lines"][dev.name], got["after"]["lines"][dev.name]
        check(host[test_ioview.SECTORS_WRITTEN] >= 3 * test_ioview.SECTORS_8MIB // 2,
              "the host did not count its 4 MiB and the container's 8 MiB", host)
        check_equal(before[test_ioview.SECTORS_WRITTEN], 0, "sectors written seen in the container before it wrote")
        check_equal(after[test_ioview.SECTORS_WRITTEN], test_ioview.SECTORS_8MIB, "sectors written seen after")
        check_equal(after[test_ioview.SECTORS_READ], 0, "sectors read seen after (dd read nothing from it)")
        check_equal(got["after"]["psutil"][dev.name]["write_bytes"], 8 << 20, "psutil's write_bytes in the container")

    @test("runc: two containers under a 0.5 CPU quota at once, one spinning two threads for %d s, the other idle "
          "while the host outside them spins too: psutil.cpu_percent, top and vmstat say the loops' share of its CPU (50 %%) in the busy one, "
          "≤ 5 %% in the idle one, ≤ 5 %% in the busy one once its loops ended; the busy one's 1-minute load, "
          "from below 0.2 when its loops began, is ≥ 0.6 after %d s, the idle one's ≤ 0.2" % (LOAD_SECONDS, LOAD_SECONDS))
    def _():
        probe = "%s -c %s" % (cgtest.PYTHON, shlex.quote(test_timeview.CPU_PROBE))
        until_60 = 'while [ $(( $(date +%%s) - start )) -lt %d ]; do sleep 1; done\n' % LOAD_SECONDS
        busy_script = ("start=$(date +%s)\necho @@load0; cat /proc/loadavg\n"
                       "sh -c 'while :; do :; done' & a=$!\nsh -c 'while :; do :; done' & b=$!\n"
                       "sleep 3\necho @@cpu; CG_HOGS=\"$a $b\" " + probe + "\n" + until_60 +
                       "echo @@load60; cat /proc/loadavg\nkill $a $b\nsleep 3\necho @@after; " + probe + "\n")
        idle_script = ("start=$(date +%s)\nsleep 3\necho @@cpu; " + probe + "\n" + until_60 +
                       "echo @@load60; cat /proc/loadavg\n")
        results = {}

        def run(name, script):
            with Container(lab, script, edit=host_python) as c:
                results[name] = c.run(timeout=120)

        # Niced: it takes what the machine leaves (the whole of a CPU here,
        # alone), and leaves the suites run beside this one theirs.
        outside = subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
        try:
            threads = [threading.Thread(target=run, args=args) for args in (("busy", busy_script),
                                                                          ("idle", idle_script))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            outside.kill()
            outside.wait()
        secs = {}
        for name in ("busy", "idle"):
            check(name in results, "the %s container did not run" % name)
            cgtest.check_ran(results[name], "the %s container" % name)
            secs[name] = sections(results[name][1])
        got = {"busy": json.loads(section(secs["busy"], "cpu", results["busy"])),
               "idle": json.loads(section(secs["idle"], "cpu", results["idle"])),
               "after": json.loads(section(secs["busy"], "after", results["busy"]))}
        loads = {"load0": float(section(secs["busy"], "load0").split()[0]),
                 "busy60": float(section(secs["busy"], "load60").split()[0]),
                 "idle60": float(section(secs["idle"], "load60").split()[0])}
        diag("cpu %%: %s; 1-minute loads: %s" % (got, loads))
        test_timeview.check_cpu_percent(got)
        check(loads["load0"] <= 0.2, "the busy container's load before its loops: %.2f" % loads["load0"])
        check(loads["busy60"] >= 0.6, "the busy container's load after %d s of two loops: %.2f"
              % (LOAD_SECONDS, loads["busy60"]))
        check(loads["idle60"] <= 0.2, "the idle container's load: %.2f" % loads["idle60"])

    @test("runc: /proc/uptime in a container started a moment ago is the container's, under 10 s")
    def _():
        with Container(lab, VIEW_MARK + "sleep 1; echo @@uptime; cat /proc/uptime") as c:
            secs, result = c.run_ok("the uptime probe")
        check_view_in_place(secs, result)
        up = float(section(secs, "uptime", result).split()[0])
        check(0.9 <= up < 10, "the container's uptime is %.2f s" % up, describe(result))

    @test("runc: a process of a container reading cpuinfo now and then: read again 2 s later (past its "
          "attributes' second) its name is not looked up again; after runc update --cpu-quota for 2 CPUs, the "
          "kept name's next read shows 2 processors")
    def _():
        need_two_cpus()
        lookups = lambda: cgtest.read_stats(d.mnt)['cgprocfs_requests_total{op="lookup"}']  # noqa: E731
        script = ("n() { grep -c ^processor /proc/cpuinfo; }\n"
                  "for step in 1 2 3; do echo @@read$step; n; touch /read$step; "
                  "while [ $step -lt 3 ] && [ ! -e /go$step ]; do sleep 0.05; done; done\n")
        with Container(lab, script, edit=lambda config: config["root"].update(readonly=False)) as c:
            c.start_detached()
            root = os.path.join(c.bundle, "rootfs")  # its marks, and the test's
            ready = lambda step: cgtest.wait_until(lambda: os.path.exists("%s/read%d" % (root, step)),  # noqa: E731
                                                   timeout=20)
            check(ready(1), "the container did not read cpuinfo")
            time.sleep(2)
            before = lookups()
            open(os.path.join(root, "go1"), "w").close()
            check(ready(2), "the container did not read cpuinfo again")
            looked = lookups() - before
            cgtest.check_ran(cgtest.run(c.runtime.argv("update", "--cpu-quota", str(2 * PERIOD), c.id),
                                        timeout=RUN_TIMEOUT), "runc update")
            open(os.path.join(root, "go2"), "w").close()
            check(ready(3), "the container did not read cpuinfo after runc update")
            with open(os.path.join(c.bundle, "stdout")) as f:
                out = f.read()
        secs = sections(out)
        counts = [secs.get("read%d" % step, "").strip() for step in (1, 2, 3)]
        check_equal(counts, [str(expected_cpus())] * 2 + ["2"], "processors at each read")
        check_equal(looked, 0, "lookups between the two reads 2 s apart (the kernel keeps the name)")

    # 6. ---------------------------------------------------------------

    @test("runc: with no daemon the hook says so in one line and exits 0; the container sees the real /proc")
    def _():
        need_two_cpus()
        host = host_processors()
        empty = tempfile.mkdtemp(prefix="no-daemon-", dir=lab.dir)
        stale = tempfile.mkdtemp(prefix="stale-", dir=lab.dir)
        os.mkdir(os.path.join(stale, ".cgprocfs"))
        with open(os.path.join(stale, ".cgprocfs", "control"), "w") as f:
            f.write(os.path.join(stale, "gone.sock") + "\n")
        for where, mnt, words in (("an empty mountpoint", empty, "no cgprocfs daemon serves"),
                                  ("a control file naming a dead socket", stale, "cannot reach the daemon")):
            # The hook alone, as runc runs it ...
            with Container(lab, CPU_PROBE, mountpoint=mnt) as c:
                result = c.run()
            check_equal(result[0], 0, "runc's exit status (%s)" % where)
            secs = sections(result[1])
            check_equal(section(secs, "view", result).split(), [str(host), "no-real"],
                        "processors and /proc/.real (%s): the real /proc" % where)
            diag("%s: runc's stderr %s the hook's line (runc keeps a hook's output only when it fails)"
                 % (where, "has" if HOOK_LINE in result[2] else "does not have"))
            # ... and wrapped, to see its stderr and exit status.
            with Container(lab, CPU_PROBE, mountpoint=mnt, capture_hook=True) as c:
                result = c.run()
                text, rc = c.hook_output()
            check_equal(result[0], 0, "runc's exit status (%s, wrapped hook)" % where)
            check_equal(rc, 0, "the hook's exit status (%s)" % where)
            lines = text.splitlines()
            check(len(lines) == 1 and lines[0].startswith(HOOK_LINE) and words in lines[0]
                  and "real /proc" in lines[0], "the hook's stderr (%s) is not the one expected line" % where,
                  "got: %r" % text, "expected one line with %r and 'real /proc'" % words)
            check_equal(section(sections(result[1]), "processors", result).strip(), str(host),
                        "grep -c ^processor /proc/cpuinfo (%s)" % where)

    @test("runc with no /sys mount, the image's sys/devices/system/cpu a link to ../../../etc: the hook mounts "
          "no CPU view through the link (the container's /etc is its own) and says why in one line")
    def _():
        def no_sys(config):
            config["mounts"] = [m for m in config["mounts"] if m["destination"] != "/sys"]
        probe = VIEW_MARK + "echo @@etc; ls /etc\n"
        with Container(lab, probe, capture_hook=True, edit=no_sys) as c:
            root = os.path.join(c.bundle, "rootfs")
            os.makedirs(os.path.join(root, "etc"))
            open(os.path.join(root, "etc", "marker"), "w").close()
            os.makedirs(os.path.join(root, "sys", "devices", "system"))
            os.symlink("../../../etc", os.path.join(root, "sys", "devices", "system", "cpu"))
            secs, result = c.run_ok("the probe with a linked CPU directory")
            text, rc = c.hook_output()
        check_view_in_place(secs, result)
        check_equal(section(secs, "etc", result).split(), ["marker"], "the container's /etc (its own)")
        check(rc == 0 and "no CPU view" in (text or ""), "the hook's exit status and stderr: %s %r" % (rc, text))

    # 7. ---------------------------------------------------------------

    @test("runc --mode files: cpuinfo, stat and the CPU directory show %d CPU; /proc stays the real one" % n)
    def _():
        need_two_cpus()
        with Container(lab, FILES_PROBE, hook="files") as c:
            secs, result = c.run_ok("the files-mode probe")
        check_equal(section(secs, "real", result).strip(), "absent", "/proc/.real")
        check_cpu_sections(secs, result, n, "a runc container with --mode files")
        check_equal(section(secs, "exe").strip(), "/bin/busybox", "readlink /proc/self/exe")
        rows = pid_rows(section(secs, "ps"))
        check_equal(sorted(comm for _, comm in rows), ["ps", "sh"], "commands ps lists")
        check(1 in dict(rows), "ps does not list pid 1", section(secs, "ps"))

    # 8. ---------------------------------------------------------------

    @test("runc run -d, then runc exec: the exec'd processes see the view; the daemon logged the container's init")
    def _():
        with Container(lab, "exec sleep 30") as c:
            c.start_detached()
            init = c.state()["pid"]
            served = [int(p) for _, p in log_counts(d.log())[0]]
            check(init in served, "the daemon's log does not name the container's init %d" % init, d.log())
            quota = cgroup_file(init, "cpu", "cpu.cfs_quota_us")
            check(quota is None or int(quota) == QUOTA, "the container's cpu.cfs_quota_us is %s" % quota)
            result = c.exec("sh", "-c", CPU_PROBE)
            secs = sections(cgtest.check_ran(result, "runc exec of the CPU probe"))
            check_view_in_place(secs, result)
            check_cpu_sections(secs, result, n, "a process runc exec'd")
            result = c.exec("readlink", "/proc/self/exe")
            check_equal(cgtest.check_ran(result, "runc exec readlink").strip(), "/bin/busybox",
                        "readlink /proc/self/exe (runc exec)")
            result = c.exec("ps", "-o", "pid,comm")
            rows = pid_rows(cgtest.check_ran(result, "runc exec ps"))
            check_equal(sorted(comm for _, comm in rows), ["ps", "sleep"], "commands ps lists (runc exec)")
            check_equal(dict(rows).get(1), "sleep", "pid 1's command")
        check(cgtest.wait_until(lambda: len(log_counts(d.log())[1]) == len(log_counts(d.log())[0]), timeout=5),
              "the view of the deleted container did not end within 5 s", d.log())

    @test("runc: two containers sharing one pid namespace (the second joins the first's by path), each with "
          "its own cgroup and limits (256 MiB and quota %d/%d, 128 MiB and quota %d/%d): each one's init and a "
          "process runc exec'd in it see its own memory and CPUs, not the other's"
          % (QUOTA, PERIOD, 2 * PERIOD, PERIOD))
    def _():
        need_two_cpus()
        # The second container's limits differ from the first's in both
        # memory and CPUs: a reader given the other container's cgroup (its
        # pid namespace's init's, as LXCFS does) reads the other's figures.
        want = {"first": {"memory": 256 * MIB, "quota": QUOTA},
                "second": {"memory": 128 * MIB, "quota": 2 * PERIOD}}
        for w in want.values():
            # N = max(1, min(|cpus|, ceil(quota/period))), as expected_cpus().
            w["cpus"] = max(1, min(len(container_cpus()), -(-w["quota"] // PERIOD)))
        check(want["second"]["cpus"] != want["first"]["cpus"],
              "the two containers' CPU counts are alike (test setup)", want)
        host_total = test_memview.host_meminfo()["MemTotal"]
        if host_total <= want["first"]["memory"]:
            raise cgtest.Skip("the host has %d MiB of memory, not more than the containers' limits"
                              % (host_total >> 20))
        for w in want.values():
            w["memtotal"] = "%d kB" % (min(host_total, w["memory"]) >> 10)

        def limits(name, pid_ns=None):
            def edit(config):
                config["linux"]["resources"]["memory"] = {"limit": want[name]["memory"]}
                config["linux"]["resources"]["cpu"]["quota"] = want[name]["quota"]
                if pid_ns:
                    config["linux"]["namespaces"] = [
                        dict(ns, path=pid_ns) if ns["type"] == "pid" else ns for ns in config["linux"]["namespaces"]]
            return edit

        def figures(w):
            return {"processors": str(w["cpus"]), "MemTotal": w["memtotal"], "CPUs online": w["cpus"]}

        def check_own(name, who, secs, details):
            view = section(secs, "view").split()
            online = sorted(parse_cpu_list(section(secs, "online")))
            got = {"processors": view[0] if view else None,
                   "MemTotal": " ".join(section(secs, "memtotal").split()[1:]),
                   "CPUs online": len(online) if set(online) <= set(container_cpus()) else online}
            other = [w for k, w in want.items() if k != name][0]
            check(got == figures(want[name]), "%s of the %s container does not see its own memory and CPUs"
                  % (who, name), "got:      %r" % got, "expected: %r" % figures(want[name]),
                  "(the other container's: %r)" % figures(other), details)
            check(view[1:] == ["real"], "%s of the %s container: the view is not in place" % (who, name), details)

        with Container(lab, SHARED_PID_PROBE + "exec sleep 30", edit=limits("first")) as first:
            first.start_detached()
            init1 = first.state()["pid"]
            pid_ns = "/proc/%d/ns/pid" % init1
            with Container(lab, SHARED_PID_PROBE + "exec sleep 30", edit=limits("second", pid_ns)) as second:
                second.start_detached()
                init2 = second.state()["pid"]
                # The setup: one pid namespace, two memory cgroups, each
                # holding the limit runc was given.
                check_equal(os.readlink("/proc/%d/ns/pid" % init2), os.readlink(pid_ns),
                            "the second container's pid namespace (the first's)")
                check(memory_line(init1) != memory_line(init2), "the two containers share a memory cgroup",
                      memory_line(init1))
                for name, pid in (("first", init1), ("second", init2)):
                    check_equal(cgroup_file(pid, "memory", "memory.limit_in_bytes"), str(want[name]["memory"]),
                                "the %s container's memory.limit_in_bytes" % name)
                    quota = cgroup_file(pid, "cpu", "cpu.cfs_quota_us")
                    check(quota is None or int(quota) == want[name]["quota"],
                          "the %s container's cpu.cfs_quota_us is %s" % (name, quota))
                diag("pid namespace %s; memory cgroups: %s (first), %s (second)"
                     % (os.readlink(pid_ns), memory_line(init1), memory_line(init2)))
                served = [int(p) for _, p in log_counts(d.log())[0]]
                check(init1 in served and init2 in served, "the daemon's log does not name both containers' inits "
                      "(%d, %d)" % (init1, init2), d.log())
                seen = {}
                for name, c in (("first", first), ("second", second)):
                    secs, details = init_output(c)
                    check_own(name, "the init", secs, details)
                    seen[name] = secs
                # In the second container, pid 1 is the first's init, in the
                # first's cgroup.
                check_equal(section(seen["second"], "pid1").split(), memory_line(init1),
                            "the memory cgroup of pid 1 read in the second container (the first's init)")
                # Processes runc exec'd, now that both containers are attached.
                for name, c in (("second", second), ("first", first)):
                    result = c.exec("sh", "-c", SHARED_PID_PROBE)
                    secs = sections(cgtest.check_ran(result, "runc exec of the probe in the %s container" % name))
                    check_own(name, "a process runc exec'd", secs, describe(result))
                diag("each saw its own: %s" % {k: (w["memtotal"], w["cpus"]) for k, w in want.items()})

    # 9. ---------------------------------------------------------------

    @test("crun (in a private mount namespace without %s): the container sees %d CPU" % (UNIFIED, n))
    def _():
        if shutil.which("crun") is None:
            raise cgtest.Skip("crun is not installed")
        need_two_cpus()
        with Container(lab, CPU_PROBE, runtime="crun", capture_hook=True) as c:
            result = c.run()
            hook_text, hook_rc = c.hook_output()
        if result[0] != 0:
            raise cgtest.Skip("crun cannot run the container here: %s"
                              % (result[2].strip().splitlines() or ["exit status %s" % result[0]])[-1])
        diag("the hook under crun: exit %s, stderr: %r" % (hook_rc, hook_text))
        secs = sections(result[1])
        check_view_in_place(secs, result)
        check_cpu_sections(secs, result, n, "a crun container with the hook")

    # 10. --------------------------------------------------------------

    @test("podman (runc, the hooks.d file, --annotation %s): the container sees %d CPU; "
          "without the annotation, the real /proc" % (PODMAN_ANNOTATION, n))
    def _():
        podman = shutil.which("podman")
        if podman is None:
            raise cgtest.Skip("podman is not installed on this machine")
        need_two_cpus()
        host = host_processors()
        with Podman(lab, podman) as p:
            started = time.monotonic()
            result = p.run(CPU_PROBE)
            diag("podman run with the annotation took %.1f s" % (time.monotonic() - started))
            secs = sections(cgtest.check_ran(result, "podman run with the annotation"))
            check_view_in_place(secs, result)
            check_cpu_sections(secs, result, n, "a podman container with the hook")
            started = time.monotonic()
            result = p.run(VIEW_MARK, annotate=False)
            diag("podman run without it took %.1f s" % (time.monotonic() - started))
            secs = sections(cgtest.check_ran(result, "podman run without the annotation"))
            check_equal(section(secs, "view", result).split(), [str(host), "no-real"],
                        "processors and /proc/.real without the annotation: the real /proc")

    def reads_across(event, log_line):
        """A runc container reads its view (HANDOVER_PROBE) while event()
        happens to the daemon; the daemon then logs log_line."""
        with Container(lab, HANDOVER_PROBE) as c:
            c.start_detached()
            time.sleep(1)
            event()
            check(cgtest.wait_until(lambda: log_line in d.log(), timeout=10),
                  "the new daemon did not take the container's view over", d.log())
            check(cgtest.wait_until(lambda: c.state()["status"] == "stopped", timeout=15),
                  "the container still runs 15 s after it started")
            with open(os.path.join(c.bundle, "stdout")) as f:
                secs = sections(f.read())
            with open(os.path.join(c.bundle, "stderr")) as f:
                stderr = f.read()
        diag("reads %s, errors %s, CPU counts seen %s" % (section(secs, "reads").strip(),
                                                         section(secs, "errors").strip(),
                                                         " ".join(sorted(set(section(secs, "cpus").split())))))
        check(int(section(secs, "reads")) > 0, "the container read nothing", secs)
        check_equal(section(secs, "errors").strip(), "0", "reads that failed in the container")
        check_equal(sorted(set(section(secs, "cpus").split())), [str(n)], "CPU counts the container saw",)
        check_equal(stderr.strip(), "", "what the container wrote on stderr")
        with open(os.path.join(d.proc, "cpuinfo")) as f:
            check("processor" in f.read(), "the host view does not serve cpuinfo afterwards")

    @test("cgprocfs --replace while a runc container reads its view: no read fails, the old daemon exits 0, "
          "the new one serves the container and the host")
    def _():
        def replace():
            check_equal(d.take_over(), 0, "the old daemon's exit status")
        reads_across(replace, "took over the host view and 1 container view(s) from the running daemon")

    @test("SIGKILL of the daemon while a runc container reads its view, then a new daemon: it takes the "
          "container's view over from the keeper, and no read fails")
    def _():
        reads_across(d.crash_and_restart, "1 container view(s) from the keeper")

    # ---------------------------------------------------------- after --

    @test("the daemon ended every container's view and logged no error")
    def _():
        check(cgtest.wait_until(lambda: len(log_counts(d.log())[1]) >= len(log_counts(d.log())[0]), timeout=5),
              "views still served after their containers ended", d.log())
        serving, ended = log_counts(d.log())
        diag("%d container views served, %d ended" % (len(serving), len(ended)))
        check(serving, "the daemon never served a container", d.log())
        check_equal(sorted(ended), sorted(ns for ns, _ in serving), "namespaces whose view ended")
        check(not re.search("error", d.log(), re.I), "the daemon logged an error", d.log())
        stats = cgtest.read_stats(d.mnt)
        check_equal((stats.get("cgprocfs_container_views"), stats.get("cgprocfs_container_sessions")),
                    (0.0, 0.0), "container views and sessions in the stats once every container ended")
        now = {m for _, m, fstype, _ in mount_fields() if fstype == "fuse.cgprocfs"}
        # A container's view left here would be over a /proc (the lab's
        # rootfs, podman's), or below the view; other daemons' mountpoints
        # (tests running beside this one) are not this test's.
        leaked = sorted(m for m in now - lab.fuse_mounts_before
                        if m.startswith((lab.dir + "/", d.mnt + "/")) or os.path.basename(m) == "proc")
        check(d.mnt in now and not leaked, "cgprocfs mounts appeared in the test's mount namespace", leaked)

    @test("no container state, cgroup or mount is left")
    def _():
        problems = []
        for name, cid in lab.ids:
            runtime = lab.runtimes[name]
            if os.path.exists(os.path.join(runtime.root, cid)):
                problems.append("%s state: %s" % (name, cid))
            problems += ["cgroup: %s" % p for p in cgroup_candidates(cid) if os.path.exists(p)]
        for podman in lab.podmans:
            problems += podman.leftovers()
        problems += ["mount: %s" % m for m in cgtest.mounts_under(lab.dir)]
        bundles = [e for e in os.listdir(lab.dir) if e.startswith("cgprocfs-test-")]
        problems += ["bundle: %s" % b for b in bundles]
        diag("%d containers were made" % len(lab.ids))
        check(not problems, "left behind", *problems)

    return t


def missing():
    """Why the containers cannot be tested here, or None."""
    reason = None
    if shutil.which("runc") is None:
        reason = "runc is not installed"
    elif not hook_exe() or not os.access(hook_exe(), os.X_OK):
        reason = "CGPROCFS_OCI_HOOK (the hook to test) is not set or not executable"
    elif not os.path.exists(BUSYBOX) or not is_static_elf(BUSYBOX):
        reason = "%s is not a static busybox (Debian: busybox-static)" % BUSYBOX
    elif shutil.which("cc") is None:
        reason = "no C compiler (cc) for the static sysconf probe"
    return reason


def run_in_lab(make):
    """make(d, lab)'s tests, as TAP, with a daemon and a Lab (cleaned up
    at the end), or a skip that says why they cannot run here."""
    cgtest.skip_all_unless_runnable()
    reason = missing()
    if reason:
        print("1..0 # SKIP " + reason)
        return
    lab = None

    def tests(d):
        nonlocal lab
        lab = Lab(d)
        return make(d, lab)

    try:
        cgtest.run_with_daemon(tests)
    finally:
        if lab is not None:
            for problem in lab.cleanup():
                diag(problem)


if __name__ == "__main__":
    run_in_lab(make_tests)
