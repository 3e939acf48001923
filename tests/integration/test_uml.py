"""The served files on a kernel without the splice change of Linux 6.5 and
with pure cgroup v2: the daemon in a user-mode Linux guest (tests/uml/
uml-run, Linux 6.1), read every way by a caller under a cpu.max quota.
Compared with the same reads on this machine's kernel by test_served.py."""

import contextlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_ioview  # noqa: E402
import test_memview  # noqa: E402
import test_served  # noqa: E402
from cgtest import check, check_equal  # noqa: E402

UML_RUN = cgtest.UML_RUN

# What every guest script starts with: the daemon (argv[1]) serving
# /tmp/mnt, its log in /tmp/daemon.log.
START_DAEMON = r"""
import json, os, subprocess, sys, time
exe = sys.argv[1]
mnt = "/tmp/mnt"
os.mkdir(mnt)
log = open("/tmp/daemon.log", "w")
daemon = subprocess.Popen([exe, mnt], stdout=log, stderr=log)
for _ in range(200):
    if os.path.exists(mnt + "/proc/.real/self"):
        break
    time.sleep(0.05)
"""

# In the guest: a cgroup with half a CPU, a sleeping process; then
# READ_WAYS as a caller in that cgroup.
GUEST = START_DAEMON + r"""
read_ways, mem_probe, io_probe = sys.argv[2:5]
sleeper = subprocess.Popen(["sleep", "60"])
cg = "/sys/fs/cgroup/half"
os.mkdir(cg)
with open(cg + "/cpu.max", "w") as f:
    f.write("50000 100000")
files = ["proc/cpuinfo", "proc/stat", "sys/devices/system/cpu/online", "sys/devices/system/cpu/kernel_max",
         "sys/devices/system/cpu/cpu0/topology/core_siblings_list", "proc/%d/smaps_rollup" % sleeper.pid,
         "proc/meminfo", "proc/swaps", "proc/vmstat", "proc/uptime", "proc/loadavg"]
def joiner(group):
    def join():
        with open(group + "/cgroup.procs", "w") as f:
            f.write("0")
    return join
out = subprocess.run([sys.executable, "-c", read_ways, mnt] + files, preexec_fn=joiner(cg),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
sleeper.kill()
# The memory view: 256 MiB and 64 MiB of swap (on the swap disk), for a
# cgroup, for a child of it without limits of its own, and for a child
# the memory controller is not enabled for (LXC's attach leaf .lxc),
# charged to its parent.
swapon = subprocess.run(["sh", "-c", "mkswap /dev/ubdc && swapon /dev/ubdc"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
def limited(group, *more):
    os.mkdir(group)
    for name, value in (("memory.max", "268435456"), ("memory.swap.max", "67108864")) + more:
        with open(group + "/" + name, "w") as f:
            f.write(value)
mem, parent, leafy = "/sys/fs/cgroup/mem", "/sys/fs/cgroup/parent", "/sys/fs/cgroup/leafy"
limited(mem)
limited(parent, ("cgroup.subtree_control", "+memory"))
os.mkdir(parent + "/child")
limited(leafy)
os.mkdir(leafy + "/.lxc")
meminfo = {}
for line in open("/proc/meminfo"):
    name, value = line.split(":", 1)
    meminfo[name] = int(value.split()[0]) * (1024 if value.split()[1:] == ["kB"] else 1)
probes = {}
for group in (mem, parent + "/child", leafy + "/.lxc"):
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        'mount --rbind "$0/proc" /proc && exec "$@"', mnt, sys.executable, "-c", mem_probe],
                       preexec_fn=joiner(group), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    probes[group] = {"rc": p.returncode, "err": p.stderr[-2000:], "out": p.stdout}
# CPU time: a busy loop in the half-CPU cgroup, psutil.cpu_percent through
# the view bound over /proc in it and in an idle one.
# The guest has one CPU: half of it is still one. A caller of the host's
# namespaces gets its own cgroup's figures only under a limit (the
# container rule, README "Whose figures"): the idle cgroup has a memory
# limit, and the busy one its quota. The busy one is a new cgroup: the
# half-CPU one's load was read above, and has been idle since (a
# cgroup's first read starts its averages from what runs then).
def memory_limited(group):
    os.mkdir(group)
    with open(group + "/memory.max", "w") as f:
        f.write(str(1 << 30))
memory_limited("/sys/fs/cgroup/idle")
busy = "/sys/fs/cgroup/busy"
os.mkdir(busy)
with open(busy + "/cpu.max", "w") as f:
    f.write("50000 100000")
cpu_probe = ('import psutil; load = open("/proc/loadavg").read().split()[0]; '
             'print(psutil.cpu_percent(interval=2), load)')
spin = subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=joiner(busy))
cpu = {}
for name, group in (("busy", busy), ("idle", "/sys/fs/cgroup/idle")):
    p = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--propagation", "private", "sh", "-c",
                        'mount --rbind "$0/proc" /proc && "$@"', mnt, sys.executable, "-c", cpu_probe],
                       preexec_fn=joiner(group), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu[name] = p.stdout.strip() or p.stderr[-500:]
spin.kill()
spin.wait()
# uptime: of a pid namespace made a second ago
new_ns = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "sleep 1; cat " + mnt + "/proc/uptime"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
# I/O: a cgroup writes 8 MiB to the scratch disk, another one looks, and
# a cgroup the io controller is not enabled for (LXC's attach leaf .lxc)
# writes 8 MiB, counted in its parent's io.stat.
io = {}
memory_limited("/sys/fs/cgroup/io-leafy")
os.mkdir("/sys/fs/cgroup/io-leafy/.lxc")
for name, write in (("io-writer", "1"), ("io-other", "0"), ("io-leafy/.lxc", "1")):
    group = "/sys/fs/cgroup/" + name
    if not os.path.isdir(group):
        memory_limited(group)
    counted = group if os.path.exists(group + "/io.stat") else os.path.dirname(group)
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        'mount --rbind "$0/proc" /proc && exec "$@"', mnt, sys.executable, "-c", io_probe, "ubdb"],
                       preexec_fn=joiner(group), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, CG_WRITE=write))
    io[name] = {"rc": p.returncode, "err": p.stderr[-2000:], "out": p.stdout, "counted": counted,
                "io.stat": open(counted + "/io.stat").read()}
io["host"] = open("/proc/diskstats").read()
io["pressure_dir"] = os.path.exists(mnt + "/proc/pressure")
daemon.terminate()
daemon.wait()
print(json.dumps({"io": io, "cpu_percent": cpu, "new_ns_uptime": new_ns.stdout, "new_ns_err": new_ns.stderr,"kernel": os.uname().release, "rc": out.returncode, "err": out.stderr[-2000:],
                  "reads": json.loads(out.stdout) if out.returncode == 0 else None,
                  "swapon": swapon.returncode, "swapon_err": swapon.stderr, "meminfo": meminfo, "probes": probes,
                  "log": open("/tmp/daemon.log").read()[-2000:]}))
"""


# A container's runtime and sysinfo caller at once (static, run in the
# guest): installs a seccomp filter that notifies sysinfo, sends its
# listener fd to the daemon's seccomp socket (argv[1]) as runc does
# (linux.seccomp.listenerPath), then prints sysinfo's totalram in bytes.
NOTIFY_PROBE_C = r"""
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sysinfo, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char state[] = "{\"ociVersion\": \"1.0.2\", \"fds\": [\"seccompFd\"], \"pid\": 1, \"state\": {}}";
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	int sock = socket(AF_UNIX, SOCK_STREAM, 0);
	strncpy(addr.sun_path, argv[1], sizeof(addr.sun_path) - 1);
	if (fd < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("notify-probe");
		return 1;
	}
	char control[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { (void *)state, sizeof(state) - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) < 0) {
		perror("notify-probe: sendmsg");
		return 1;
	}
	close(sock);
	close(fd);
	struct sysinfo s;
	if (sysinfo(&s) != 0) {
		perror("notify-probe: sysinfo");
		return 1;
	}
	printf("%llu\n", (unsigned long long)s.totalram * s.mem_unit);
	return 0;
}
"""


# In the guest: the container rule (README "Whose figures") on cgroup v2. A
# container cgroup c (256 MiB, 2 CPUs of quota) whose sub-cgroup hold holds
# 100 MiB; readers with a cgroup namespace rooted at c in c itself, in
# c/leaf, and in c/tight (64 MiB, half a CPU), moved there once c's
# children take controllers (v2 keeps processes out of a cgroup that gives
# its children controllers: c has none of its own by then); and a reader
# in c/tight of the guest's own namespaces. Each reads meminfo, cpuinfo,
# stat and diskstats through the view, and with busybox cat (sendfile), and asks
# sysinfo(2) through the daemon (NOTIFY_PROBE_C, argv[2]).
SCOPE_GUEST = START_DAEMON + r"""
notify_probe = sys.argv[2]
R = "/sys/fs/cgroup"
def w(path, value):
    with open(path, "w") as f:
        f.write(value)
def mk(rel, **files):
    os.mkdir(R + "/" + rel)
    for name, value in files.items():
        w(R + "/" + rel + "/" + name.replace("__", "."), value)
w(R + "/cgroup.subtree_control", "+memory +cpu")
mk("c", memory__max=str(256 << 20), cpu__max="200000 100000")
mk("c/leaf")
mk("c/hold")
holder = subprocess.Popen([sys.executable, "-c", "b = bytearray(100 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
                           "print('held', flush=True)\nimport time\ntime.sleep(600)"],
                          stdout=subprocess.PIPE, text=True, preexec_fn=lambda: w(R + "/c/hold/cgroup.procs", "0"))
holder.stdout.readline()
READ = '''
import json, subprocess, sys
m = sys.argv[1]
def busybox(f):
    return subprocess.run(["busybox", "cat", m + f], stdout=subprocess.PIPE, text=True).stdout
mem = {l.split(":")[0]: int(l.split()[1]) << 10 for l in open(m + "/proc/meminfo")}
print(json.dumps({"total": mem["MemTotal"], "used": mem["MemTotal"] - mem["MemFree"],
                  "cpus": sum(1 for l in open(m + "/proc/cpuinfo") if l.startswith("processor")),
                  "busybox_cpuinfo_same": busybox("/proc/cpuinfo") == open(m + "/proc/cpuinfo").read(),
                  "busybox_memtotal": busybox("/proc/meminfo").splitlines()[0],
                  "busybox_stat_lines": len(busybox("/proc/stat").splitlines()),
                  "disks": [[l.split()[2] for l in text.splitlines()]
                            for text in (busybox("/proc/diskstats"), open(m + "/proc/diskstats").read())],
                  "cgroup": open("/proc/self/cgroup").read().strip(),
                  "sysinfo": subprocess.run([sys.argv[2], open(m + "/.cgprocfs/control").read().strip() + ".seccomp"],
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout}))
'''
def reader(move_to=None, wait=False):
    inner = ("echo $$ > %s/%s/cgroup.procs; " % (R, move_to) if move_to else "") + \
            ("echo ready; read x; " if wait else "") + 'exec "$@"'
    inner = "mount --rbind %s/proc /proc && %s" % (mnt, inner)
    return subprocess.Popen(["sh", "-c", "echo $$ > %s/c/cgroup.procs; exec unshare -C -m --propagation private "
                             "sh -c '%s' sh \"$@\"" % (R, inner),
                             "sh", sys.executable, "-c", READ, mnt, notify_probe],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
out = {"c": reader().communicate(), "c/leaf": reader("c/leaf").communicate()}
tight = reader("c/leaf", wait=True)
tight.stdout.readline()
w(R + "/c/cgroup.subtree_control", "+memory +cpu")
mk("c/tight", memory__max=str(64 << 20), cpu__max="50000 100000")
w(R + "/c/tight/cgroup.procs", str(tight.pid))
out["c/tight"] = tight.communicate("go\n")
bound = ["unshare", "-m", "--propagation", "private", "sh", "-c", 'mount --rbind "$0/proc" /proc && exec "$@"', mnt]
for name, prefix in (("own c/tight", bound), ("unbound c/tight", [])):
    own = subprocess.run(prefix + [sys.executable, "-c", READ, mnt, notify_probe], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=lambda: w(R + "/c/tight/cgroup.procs", "0"))
    out[name] = (own.stdout, own.stderr)
guest_total = int(open("/proc/meminfo").readline().split()[1]) << 10
holder.kill()
daemon.terminate()
daemon.wait()
print(json.dumps({"readers": {k: o.strip() or e[-500:] for k, (o, e) in out.items()}, "guest_total": guest_total,
                  "log": open("/tmp/daemon.log").read()[-1500:]}))
"""


# In the guest (Linux 6.1: no clone of a detached mount): busybox
# containers under memory.max 256M, run by runc and by crun with the hook
# (argv[2]) as their createContainer hook, its stderr kept, and by the
# runtime wrapper (argv[3]) with a seccomp profile that allows everything
# (so that the wrapper has sysinfo notified to the daemon). Each prints
# what its /proc is and busybox free.
RUNTIME_GUEST = START_DAEMON + r"""
import shutil
hook, wrapper = sys.argv[2:4]
rootfs = "/tmp/rootfs"
for d in ("bin", "proc", "sys", "dev", "tmp"):
    os.makedirs(rootfs + "/" + d)
shutil.copy2("/bin/busybox", rootfs + "/bin/busybox")
for applet in ("sh", "cat", "grep", "head", "free"):
    os.symlink("busybox", rootfs + "/bin/" + applet)
PROBE = ("echo @@meminfo; head -1 /proc/meminfo; echo @@mounts; grep ' /proc' /proc/mounts; "
         "echo @@real; head -1 /proc/.real/meminfo; echo @@free; free")
def container(name, hooked, seccomp=False):
    b = "/tmp/" + name
    os.mkdir(b)
    shutil.copytree(rootfs, b + "/rootfs", symlinks=True)
    subprocess.run(["runc", "spec", "--bundle", b], check=True)
    with open(b + "/config.json") as f:
        c = json.load(f)
    c["process"]["terminal"] = False
    c["process"]["args"] = ["sh", "-c", PROBE]
    c["linux"]["resources"]["memory"] = {"limit": 256 << 20}
    if seccomp:
        c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                                 "syscalls": []}
    if hooked:
        keep = '"$@" 2>%s/hook.stderr' % b
        c["hooks"] = {"createContainer": [{"path": "/bin/sh", "args": ["sh", "-c", keep, "sh", hook,
                                                                          "--mountpoint", mnt]}]}
    with open(b + "/config.json", "w") as f:
        json.dump(c, f)
    return b
out = {}
for name, argv, hooked, seccomp in (
        ("runc", ["runc"], True, False), ("crun", ["crun"], True, False),
        ("wrapper", [wrapper, "--cgprocfs-always", "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=" + mnt],
         False, True)):
    b = container(name, hooked, seccomp)
    p = subprocess.run(argv + ["run", "--bundle", b, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    hook_err = open(b + "/hook.stderr").read() if os.path.exists(b + "/hook.stderr") else None
    out[name] = {"rc": p.returncode, "out": p.stdout, "err": p.stderr[-1000:], "hook": hook_err}
daemon.terminate()
daemon.wait()
print(json.dumps({"containers": out, "log": open("/tmp/daemon.log").read()[-1500:]}))
"""


# In the guest, for each fault of argv[2:]: a daemon that SIGKILLs itself
# with a read in hand (read-taken), or while the kernel would copy its
# answer to a read (answer-copy-fails: the answer's bytes unreadable, as
# a killed process's pages always are to user-mode Linux, which has no
# fast get_user_pages), its keeper holding the view; then a second
# daemon, which takes the view over from the keeper. Linux 6.1 cannot
# resend that read: the second daemon must answer it from what the first
# kept.
CRASH_GUEST = r"""
import json, os, subprocess, sys, time
exe = sys.argv[1]
log = open("/tmp/daemon.log", "w")
results = {}
for i, fault in enumerate(sys.argv[2:]):
    mnt = "/tmp/m%d" % i
    os.mkdir(mnt)
    log.write("=== %s\n" % fault)
    log.flush()
    first = subprocess.Popen([exe, mnt], stdout=log, stderr=log, env=dict(os.environ, CGPROCFS_FAULT="daemon:" + fault))
    keeper = "/run/cgprocfs/tmp-m%d.sock.keeper" % i
    for _ in range(200):
        if os.path.exists(mnt + "/proc/.real/self") and os.path.exists(keeper):
            break
        time.sleep(0.05)
    time.sleep(0.5)  # the keeper holds every view once published: it is
    reader = subprocess.Popen(["cat", mnt + "/proc/stat"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first.wait(10)
    second = subprocess.Popen([exe, mnt], stdout=log, stderr=log)
    try:
        out, err = reader.communicate(timeout=20)
        got = {"rc": reader.returncode, "out": out.decode()[:200], "err": err.decode()}
    except subprocess.TimeoutExpired:
        got = {"rc": None, "out": "", "err": "(still waiting 20 s after the second daemon started)"}
        reader.kill()
    got["first"] = first.returncode
    second.terminate()
    second.wait(20)
    results[fault] = got
print(json.dumps({"results": results, "log": open("/tmp/daemon.log").read()[-4000:]}))
"""


def main():
    cgtest.skip_all_unless_runnable()
    why = cgtest.uml_unusable()
    if why:
        print("1..0 # SKIP " + why)
        return
    # The guest mounts empty tmpfs over /tmp, /run and /var/tmp: the daemon
    # it runs is a copy outside them.
    cache = "/var/cache/cgprocfs-uml"
    os.makedirs(cache, exist_ok=True)
    copies = {}
    for var in ("CGPROCFS", "CGPROCFS_OCI_HOOK", "CGPROCFS_RUNTIME_WRAPPER"):
        copies[var] = os.path.join(cache, "%s-%d" % (os.path.basename(os.environ[var]), os.getpid()))
        shutil.copy2(os.environ[var], copies[var])
    exe = copies["CGPROCFS"]
    probe = os.path.join(cache, "notify-probe-%d" % os.getpid())
    try:
        with open(probe + ".c", "w") as f:
            f.write(NOTIFY_PROBE_C)
        built = cgtest.run(["cc", "-static", "-O2", "-o", probe, probe + ".c"])
        run(exe, probe if built[0] == 0 else None, built[2], copies)
    finally:
        for path in list(copies.values()) + [probe, probe + ".c"]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def run(exe, probe, probe_err, copies):
    t, test = cgtest.test_registry()
    state, guest = {}, {}

    @test("a user-mode Linux guest (Linux 6.1, cgroup v2) runs the daemon and a caller under cpu.max reads "
          "its files")
    def _():
        res = cgtest.run([UML_RUN, "--", "/usr/bin/python3", "-c", GUEST, exe, test_served.READ_WAYS,
                          test_memview.PROBE, test_ioview.PROBE], timeout=600)
        out = cgtest.check_ran(res, "the guest")
        got = json.loads(out.strip().splitlines()[-1])
        check_equal(got["rc"], 0, "the reader in the guest (stderr: %s; daemon log: %s)" % (got["err"], got["log"]))
        cgtest.diag("guest kernel %s" % got["kernel"])
        state.update(got["reads"])
        guest.update(got)

    @test("in the guest every way of reading (read in any chunk, pread, sendfile, busybox cat, dd bs=1) gives "
          "one text for cpuinfo, stat, online, the mirror's kernel_max, a virtual CPU's file and smaps_rollup")
    def _():
        check(state, "the guest gave no reads")
        for name, r in state.items():
            test_served.check_ways("in the guest", name, r)
        check_equal(state["proc/cpuinfo"]["processors"], 1, "processors in the guest's cpuinfo")
        for name in ("proc/cpuinfo", "sys/devices/system/cpu/kernel_max",
                     "sys/devices/system/cpu/cpu0/topology/core_siblings_list"):
            check_equal(state[name]["size"], state[name]["len"], "st_size of " + name)

    @test("in the guest (cgroup v2, swap on), a caller under memory.max 256M and memory.swap.max 64M, one in a "
          "child cgroup without limits, and one in a child the memory controller is not enabled for (LXC's attach "
          "leaf .lxc), see them in meminfo, swaps, free, top, vmstat and psutil")
    def _():
        check(guest, "the guest gave nothing")
        check_equal(guest["swapon"], 0, "swapon in the guest: %s" % guest["swapon_err"])
        check_equal(sorted(guest["probes"]), ["/sys/fs/cgroup/leafy/.lxc", "/sys/fs/cgroup/mem",
                                              "/sys/fs/cgroup/parent/child"], "the guest's memory probes")
        for group, p in sorted(guest["probes"].items()):
            check_equal(p["rc"], 0, "the probe in %s (stderr: %s; daemon log: %s)" % (group, p["err"], guest["log"]))
            # procps's vmstat fails on the guest's real /proc ("Unable to
            # create system stat structure"), and top shows no memory
            # lines there: neither is checked in the guest.
            test_memview.check_probe("the guest's " + group, json.loads(p["out"]), test_memview.LIMIT,
                                     test_memview.SWAP, guest["meminfo"], top_vmstat_run=False)

    @test("in the guest, psutil.cpu_percent says 50 % ± 15 in a cgroup under cpu.max 50000 100000 running a busy "
          "loop, and ≤ 5 % in an idle cgroup at the same time, each in a pid namespace of its own; their 1-minute "
          "loads ≥ 0.6 and ≤ 0.2")
    def _():
        check(guest, "the guest gave nothing")
        got = guest["cpu_percent"]
        cgtest.diag("cpu %%: %s" % got)
        busy, idle = got["busy"].split(), got["idle"].split()
        check(len(busy) == 2 and len(idle) == 2, "the probes failed", got)
        check(35 <= float(busy[0]) <= 65, "busy cgroup: %s %%" % busy[0])
        check(float(idle[0]) <= 5, "idle cgroup: %s %%" % idle[0])
        check(float(busy[1]) >= 0.6, "busy cgroup's 1-minute load: %s" % busy[1])
        check(float(idle[1]) <= 0.2, "idle cgroup's 1-minute load: %s" % idle[1])

    @test("in the guest, a pid namespace made a second ago reads an uptime of about a second")
    def _():
        check(guest, "the guest gave nothing")
        fields = guest["new_ns_uptime"].split()
        check(len(fields) == 2, "no uptime from the new namespace: %s" % guest["new_ns_err"], guest["new_ns_uptime"])
        check(0.9 <= float(fields[0]) < 10, "uptime of a pid namespace 1 s old: %s s" % fields[0])

    @test("in the guest, a cgroup that writes 8 MiB to the scratch disk sees them in diskstats and psutil (its "
          "io.stat), and so does one the io controller is not enabled for (LXC's attach leaf .lxc: its parent's "
          "io.stat), another cgroup sees 0 for every disk; the guest has no PSI: no pressure directory")
    def _():
        check(guest, "the guest gave nothing")
        io = guest["io"]
        for name in ("io-writer", "io-other", "io-leafy/.lxc"):
            check_equal(io[name]["rc"], 0, "the probe in %s (stderr: %s; daemon log: %s)"
                        % (name, io[name]["err"], guest["log"]))
        check_equal(io["io-leafy/.lxc"]["counted"], "/sys/fs/cgroup/io-leafy", "where .lxc's I/O is counted")
        for name in ("io-writer", "io-leafy/.lxc"):
            writer = json.loads(io[name]["out"])
            wbytes = int(dict(kv.split("=") for kv in io[name]["io.stat"].split()[1:])["wbytes"])
            check(wbytes >= 8 << 20, "io.stat of %s: %r" % (io[name]["counted"], io[name]["io.stat"]))
            check_equal(writer["before"]["lines"].get("ubdb"), [0] * len(writer["after"]["lines"]["ubdb"]),
                        "%s: the line of a disk the cgroup had not used yet" % name)
            line = writer["after"]["lines"].get("ubdb")
            check(line is not None, "%s: no ubdb line after the writes" % name, writer["after"]["lines"])
            check_equal(line[test_ioview.SECTORS_WRITTEN], wbytes // 512,
                        "%s: sectors written (%s's io.stat wbytes / 512)" % (name, io[name]["counted"]))
            check_equal(writer["after"]["psutil"]["ubdb"]["write_bytes"], wbytes, "%s: psutil's write_bytes" % name)
        other = json.loads(io["io-other"]["out"])
        check_equal(set(map(tuple, other["after"]["lines"].values())), {(0,) * len(line)},
                    "the lines another cgroup sees (it did no I/O: every disk, at 0)")
        check_equal(other["after"]["psutil"]["ubdb"]["write_bytes"], 0, "psutil's write_bytes in the other cgroup")
        host = {l.split()[2]: l.split()[3:] for l in io["host"].splitlines()}
        check(int(host["ubdb"][test_ioview.SECTORS_WRITTEN]) >= (8 << 20) // 512, "the guest's own diskstats",
              host["ubdb"])
        check_equal(io["pressure_dir"], False, "a pressure directory on a kernel without PSI")

    @test("in the guest (cgroup v2), readers with a cgroup namespace rooted at a container's cgroup (256 MiB, 2 "
          "CPUs), in it and in sub-cgroups of it (one with 64 MiB and half a CPU of its own), see the container's "
          "limit and the 100 MiB another sub-cgroup holds; one of the guest's own namespaces in the tight "
          "sub-cgroup sees its own 64 MiB; busybox cat (sendfile) reads the same, and sysinfo(2), notified to the "
          "daemon as a runtime's seccomp profile would, says the same total with the view bound over /proc, and "
          "the guest's total without")
    def _():
        check(probe, "cc -static of the notify probe failed", probe_err)
        res = cgtest.run([UML_RUN, "--", "/usr/bin/python3", "-c", SCOPE_GUEST, exe, probe], timeout=600)
        got = json.loads(cgtest.check_ran(res, "the guest").strip().splitlines()[-1])
        readers = {}
        for where, text in got["readers"].items():
            check(text.startswith("{"), "the reader in %s failed: %s (daemon log: %s)" % (where, text, got["log"]))
            readers[where] = json.loads(text)
        cgtest.diag("readers (MemTotal MiB, used MiB, cgroup, sysinfo's totalram MiB): %s"
                    % {k: (r["total"] >> 20, r["used"] >> 20, r["cgroup"], r["sysinfo"].strip()[:40])
                       for k, r in readers.items()})
        for where in ("c", "c/leaf", "c/tight"):
            r = readers[where]
            check_equal(r["total"], 256 << 20, "MemTotal in %s (cgroup namespace at c)" % where)
            check(r["used"] >= 100 << 20, "%s: %d MiB used, not the 100 MiB c/hold holds" % (where, r["used"] >> 20))
        unbound = readers.pop("unbound c/tight")
        check_equal(unbound["sysinfo"].strip(), str(got["guest_total"]), "sysinfo(2)'s totalram for a caller "
                    "whose /proc is the guest's (the kernel's answer: the view is not in place)")
        own = readers["own c/tight"]
        check_equal(own["total"], 64 << 20, "MemTotal in c/tight of the guest's namespaces")
        check(own["used"] < 100 << 20, "c/tight of the guest's namespaces counts c's usage", own)
        for where, r in readers.items():
            check(r["busybox_cpuinfo_same"], "busybox cat of cpuinfo in %s is not what read() gives" % where)
            check_equal(r["busybox_memtotal"].split(), ["MemTotal:", str(r["total"] >> 10), "kB"],
                        "busybox cat's MemTotal in " + where)
            check(r["busybox_stat_lines"] > 2, "busybox cat of stat in %s" % where, r)
            check(r["disks"][0] and r["disks"][0] == r["disks"][1],
                  "diskstats' disks in %s, by busybox cat and by read()" % where, r["disks"])
            check_equal(r["sysinfo"].strip(), str(r["total"]), "sysinfo(2)'s totalram, answered by the daemon, in "
                        + where)


    @test("in the guest (Linux 6.1, which cannot resend a dead daemon's requests, and copies a killed daemon's "
          "answer from its pages with the slow get_user_pages, which fails), a daemon SIGKILLed with a read of "
          "/proc/stat (its own text at each open, not kept in the page cache) in hand, and one SIGKILLed as the kernel copies its answer to it, each with its keeper holding "
          "the view: the next daemon answers that read (cat prints the cpu line and exits 0, no EIO), from the "
          "requests in hand the first one kept")
    def _():
        faults = ["read-taken", "answer-copy-fails"]
        res = cgtest.run([UML_RUN, "--", "/usr/bin/python3", "-c", CRASH_GUEST, exe] + faults, timeout=300)
        got = json.loads(cgtest.check_ran(res, "the guest").strip().splitlines()[-1])
        for fault in faults:
            r = got["results"][fault]
            check(r["first"] == -9, "the first daemon's end (SIGKILL at %s): %s" % (fault, r["first"]), got["log"])
            check(r["rc"] == 0 and r["out"].startswith("cpu "), "the read in hand at the crash at %s: exit %s, "
                  "%r, %s" % (fault, r["rc"], r["out"][:60], r["err"]), got["log"])

    @test("in the guest (Linux 6.1, older than 6.15), busybox containers under memory.max 256M run by runc and "
          "by crun with the hook as their createContainer hook, and by the runtime wrapper, get the view over "
          "/proc (fuse.cgprocfs, MemTotal 256 MiB, the container's procfs at /proc/.real) and the hook says "
          "nothing; in the wrapper's, busybox free (sysinfo(2), answered by the daemon) agrees")
    def _():
        res = cgtest.run([UML_RUN, "--", "/usr/bin/python3", "-c", RUNTIME_GUEST, exe, copies["CGPROCFS_OCI_HOOK"],
                          copies["CGPROCFS_RUNTIME_WRAPPER"]], timeout=600)
        got = json.loads(cgtest.check_ran(res, "the guest").strip().splitlines()[-1])
        for name, c in sorted(got["containers"].items()):
            what = "the %s container (stderr: %s; hook: %s; daemon log: %s)" % (name, c["err"], c["hook"], got["log"])
            check_equal(c["rc"], 0, "exit status of " + what)
            secs = {}
            for chunk in c["out"].split("@@")[1:]:
                title, _, body = chunk.partition("\n")
                secs[title] = body.strip()
            cgtest.diag("%s: %s; busybox free: %s" % (name, secs.get("meminfo"), secs.get("free", "").splitlines()[1:2]))
            check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(256 << 10), "kB"], "MemTotal in " + what)
            on_proc = [line.split()[2] for line in secs.get("mounts", "").splitlines() if line.split()[1] == "/proc"]
            check(on_proc[-1:] == ["fuse.cgprocfs"], "/proc is not the view (its mounts: %s) in %s" % (on_proc, what))
            check(secs.get("real", "").startswith("MemTotal:") and secs["real"] != secs["meminfo"],
                  "/proc/.real is not the guest's procfs in " + what, secs.get("real"))
            check(c["hook"] in (None, ""), "the hook said something in " + what)
        free = got["containers"]["wrapper"]["out"].split("@@free")[-1].split()
        mem = free[free.index("Mem:") + 1:free.index("Mem:") + 7]
        check_equal(mem[0], str(256 << 10), "busybox free's total in the wrapper's container (sysinfo)")
        check(all(int(v) <= 256 << 10 for v in mem), "busybox free's figures in the wrapper's container", free)

    cgtest.run_tests(t)


if __name__ == "__main__":
    main()
