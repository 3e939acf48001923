"""What a tenant's walks under the daemon's shared locks cost another
tenant (issue 54, findings 3 and 4): the scenarios test_hostile.py
checks and tests/bench/bench-hostile.py --walks measures. Work a tenant
sizes (a cgroup subtree, the host's /proc) must not run under a lock
another tenant's read takes."""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check  # noqa: E402

WALK_CGROUPS = 3000  # the hostile tenant's sub-cgroups
WALK_SECONDS = 5
# The victim's median read allowed (test_hostile: or three times its
# median beside empty groups, if the machine's other work makes that
# more); 45 to 350 ms before the fix.
WALK_MEDIAN_MS = 10

# Through the view over /proc: reads each of argv[3:] (names under /proc)
# once, prints "ready", waits for a line on stdin, then reads them all
# every argv[2] ms for argv[1] s, each read from a new thread (a caller the
# daemon finds afresh, as a new process); prints as JSON each file's
# [p50, p99, worst] in ms and the rounds.
WALK_VICTIM = r"""
import json, sys, threading, time
seconds, period = float(sys.argv[1]), float(sys.argv[2]) / 1e3
names = sys.argv[3:]
def once(name):
    took = []
    def read():
        t = time.perf_counter()
        with open("/proc/" + name, "rb") as f:
            f.read()
        took.append((time.perf_counter() - t) * 1e3)
    th = threading.Thread(target=read)
    th.start()
    th.join()
    return took[0]
for n in names:
    once(n)
print("ready", flush=True)
sys.stdin.readline()
times = {n: [] for n in names}
end = time.monotonic() + seconds
while time.monotonic() < end:
    for n in names:
        times[n].append(once(n))
    time.sleep(period)
out = {n: [sorted(v)[len(v) // 2], sorted(v)[len(v) * 99 // 100], max(v)] for n, v in times.items()}
out["rounds"] = len(times[names[0]])
print(json.dumps(out), flush=True)
"""

# In the cgroups argv[2:] (their paths on the host, the first one's with
# the subtree), for argv[1] s: a process in a new cgroup namespace (whose
# root is the group its figures come from) reads the view's
# /proc/loadavg, the first read of that group; then the cgroups are
# renamed: the next read is of a group not sampled yet, with the same
# subtree. (All of its cgroups: the daemon keeps a namespace's root by
# its number, which the kernel gives again, while the caller's memory
# cgroup is within it.) Prints the reads made and their mean in ms.
WALK_RENAMER = r"""
import os, subprocess, sys, time
seconds, paths = float(sys.argv[1]), sys.argv[2:]
took, end, i = [], time.monotonic() + seconds, 0
while time.monotonic() < end:
    t = time.perf_counter()
    subprocess.run(["unshare", "--cgroup", "cat", "/proc/loadavg"], stdout=subprocess.DEVNULL, check=True)
    took.append((time.perf_counter() - t) * 1e3)
    i += 1
    for j, path in enumerate(paths):
        paths[j] = "%s.%d" % (path.rsplit(".", 1)[0], i)
        os.rename(path, paths[j])
print(len(took), sum(took) / max(len(took), 1), flush=True)
"""

# For argv[1] s, argv[2] times a second (as many at once as that takes): a
# new pid namespace whose init reads the view's /proc/uptime. Prints how
# many it made.
WALK_UNSHARER = r"""
import subprocess, sys, time
seconds, rate = float(sys.argv[1]), float(sys.argv[2])
n, start, running = 0, time.monotonic(), []
while time.monotonic() < start + seconds:
    running = [p for p in running if p.poll() is None]
    if len(running) < 64:
        running.append(subprocess.Popen(["unshare", "--pid", "--fork", "cat", "/proc/uptime"],
                                        stdout=subprocess.DEVNULL))
        n += 1
    ahead = start + n / rate - time.monotonic()
    time.sleep(max(ahead, 0.001))
for p in running:
    p.wait()
print(n, flush=True)
"""

# Finding 4: new pid namespaces a second, more processes on the host (each
# a pid the search of /proc met), and the victim's worst read allowed
# (3.5 s before the fix, ~30 ms after; other work on the machine takes a
# worst to 500 ms at times).
PIDNS_RATE, PIDNS_SLEEPERS, PIDNS_BOUND_MS = 200, 1000, 1000

CPUACCT, MEMORY = "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/memory"


def walk_cgroups(name, subtree):
    """Under the v1 cpuacct hierarchy: name/victim, and name/tenant.0 with
    subtree sub-cgroups; under memory, name/tenant.0: (victim, [tenant's])."""
    if not os.path.isdir(CPUACCT) or not os.path.isdir(MEMORY):
        raise cgtest.Skip("needs the cgroup v1 cpuacct and memory hierarchies at " + CPUACCT + ", " + MEMORY)
    top = os.path.join(CPUACCT, name)
    victim, tenant = os.path.join(top, "victim"), [os.path.join(CPUACCT, name, "tenant.0"),
                                                   os.path.join(MEMORY, name, "tenant.0")]
    for d in (top, victim, *tenant):
        os.makedirs(d)
    for i in range(subtree):
        os.mkdir(os.path.join(tenant[0], "s%d" % i))
    return victim, tenant


def remove_walk_cgroups(name):
    for root in (CPUACCT, MEMORY):
        top = os.path.join(root, name)
        if os.path.isdir(top):
            cgtest.remove_cgroups([p for p, _, _ in os.walk(top, topdown=False)], root)


def victim_beside(mnt, victim_group, names, attacker_argv, seconds, period_ms=10):
    """A victim in pid and cgroup namespaces of its own in victim_group
    (where its figures come from) reading names
    (under the view's /proc) every period_ms while attacker_argv runs:
    (the victim's JSON, the attacker's output)."""
    env = dict(os.environ, CG_MNT=mnt)
    argv = ["unshare", "--pid", "--fork", "--cgroup", cgtest.PYTHON, "-c", WALK_VICTIM, str(seconds),
            str(period_ms)] + names
    victim = subprocess.Popen(cgtest.in_cgroups([victim_group], argv, cgtest.BIND_PROC), env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    attacker = None
    try:
        check(victim.stdout.readline().strip() == "ready", "the victim did not start")
        attacker = subprocess.Popen(attacker_argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        time.sleep(0.2)
        victim.stdin.write("go\n")
        victim.stdin.flush()
        out = victim.stdout.readline()
        a_out, a_err = attacker.communicate(timeout=seconds + 60)
        check(attacker.returncode == 0, "the attacker failed", a_err[-2000:])
    finally:
        for p in (victim, attacker):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    check(out, "the victim printed nothing")
    return json.loads(out), a_out.strip()


def loadavg_walk_figures(mnt, name, seconds=WALK_SECONDS, subtree=WALK_CGROUPS):
    """Finding 3's figures: the victim's reads beside first loadavg reads
    of a group of subtree sub-cgroups, and the tenant's (reads, mean ms).
    The cgroups are under name in each hierarchy (remove_walk_cgroups)."""
    victim, tenant = walk_cgroups(name, subtree)
    attacker = cgtest.in_cgroups(tenant, ["unshare", "--pid", "--fork", cgtest.PYTHON, "-c", WALK_RENAMER,
                                          str(seconds)] + tenant, cgtest.BIND_PROC)
    got, out = victim_beside(mnt, victim, ["loadavg", "stat"], attacker, seconds)
    reads, mean = out.split()
    return got, int(reads), float(mean)


def pidns_walk_figures(mnt, name, seconds=WALK_SECONDS, rate=200, sleepers=1000):
    """Finding 4's figures: the victim's uptime reads beside rate new pid
    namespaces a second, each reading uptime, with sleepers more processes
    on the host; and the namespaces made."""
    victim, _ = walk_cgroups(name, 0)
    many = subprocess.Popen(["sh", "-c", "for i in $(seq %d); do sleep 600 & done; wait" % sleepers],
                            start_new_session=True)
    try:
        time.sleep(1)
        attacker = cgtest.in_cgroups([], [cgtest.PYTHON, "-c", WALK_UNSHARER, str(seconds), str(rate)],
                                     cgtest.BIND_PROC)
        got, out = victim_beside(mnt, victim, ["uptime", "loadavg"], attacker, seconds)
    finally:
        os.killpg(many.pid, signal.SIGKILL)
        many.wait()
    return got, int(out)


# A process that gives its sysinfo(2) to the daemon's seccomp listener (a
# filter of its own notifies it; the listener fd sent on argv[1], as a
# runtime sends a container's), then: "once", one call, its 1-minute load
# printed; or "loop SECONDS PERIOD_MS", a call first, "ready", a line on
# stdin, then a call every PERIOD_MS for SECONDS, each timed: "p50 p99
# worst" in ms.
SYSINFO_PROBE_C = r"""
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int give(const char *path)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sysinfo, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
	if (fd < 0 || s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	char state[] = "{\"fds\": [\"seccompFd\"]}";
	union { struct cmsghdr h; char space[CMSG_SPACE(sizeof(int))]; } c;
	struct iovec iov = { state, strlen(state) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &c, .msg_controllen = sizeof(c) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	if (sendmsg(s, &m, 0) < 0)
		return -1;
	close(s);
	close(fd);
	return 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct sysinfo si;
	if (argc < 3 || give(argv[1]) < 0 || sysinfo(&si) != 0)
		return 1;
	if (strcmp(argv[2], "once") == 0) {
		printf("%.2f\n", si.loads[0] / 65536.0);
		return 0;
	}
	double seconds = atof(argv[3]), period = atof(argv[4]), *took = malloc(1000000 * sizeof(double));
	char line[16];
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	int n = 0;
	for (double end = now_ms() + seconds * 1e3; now_ms() < end && n < 1000000; n++) {
		double t = now_ms();
		if (sysinfo(&si) != 0)
			return 1;
		took[n] = now_ms() - t;
		usleep((useconds_t)(period * 1e3));
	}
	qsort(took, n, sizeof(double), by_value);
	printf("%.3f %.3f %.3f %d\n", took[n / 2], took[n * 99 / 100], took[n - 1], n);
	return 0;
}
"""


def sysinfo_probe(work):
    """SYSINFO_PROBE_C built in work: its path."""
    src, exe = os.path.join(work, "sysinfo-probe.c"), os.path.join(work, "sysinfo-probe")
    with open(src, "w") as f:
        f.write(SYSINFO_PROBE_C)
    res = cgtest.run(["cc", "-O2", "-o", exe, src])
    check(res[0] == 0, "cc (the sysinfo probe)", cgtest.describe(res))
    return exe


def listener_socket(mnt):
    with open(os.path.join(mnt, ".cgprocfs", "control")) as f:
        return f.read().strip() + ".seccomp"


def sysinfo_walk_figures(mnt, name, probe, seconds=WALK_SECONDS, subtree=WALK_CGROUPS, attack=True):
    """Finding 3 through the seccomp listener's one thread: a victim's
    sysinfo(2) every 10 ms, in pid and cgroup namespaces of its own,
    beside a tenant's first sysinfo(2) calls of a group of subtree
    sub-cgroups (renamed after each, as in WALK_RENAMER): (the victim's
    p50, p99 and worst in ms, its calls), and the tenant's (calls, mean ms).
    Not attack: the tenant sleeps meanwhile."""
    victim, tenant = walk_cgroups(name, subtree)
    sock = listener_socket(mnt)
    renamer = WALK_RENAMER.replace('["unshare", "--cgroup", "cat", "/proc/loadavg"]',
                                   '["unshare", "--cgroup", %r, %r, "once"]' % (probe, sock))
    attacker_argv = cgtest.in_cgroups(tenant, ["unshare", "--pid", "--fork", cgtest.PYTHON, "-c", renamer,
                                               str(seconds)] + tenant, cgtest.BIND_PROC) if attack else \
        ["sh", "-c", "sleep %s; echo 0 0" % seconds]
    env = dict(os.environ, CG_MNT=mnt)
    v = subprocess.Popen(cgtest.in_cgroups([victim], ["unshare", "--pid", "--fork", "--cgroup", probe, sock, "loop",
                                                      str(seconds), "10"], cgtest.BIND_PROC),
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    attacker = None
    try:
        check(v.stdout.readline().strip() == "ready", "the sysinfo victim did not start")
        attacker = subprocess.Popen(attacker_argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.2)
        v.stdin.write("go\n")
        v.stdin.flush()
        out = v.stdout.readline().split()
        a_out, a_err = attacker.communicate(timeout=seconds + 60)
        check(attacker.returncode == 0, "the attacker failed", a_err[-2000:])
    finally:
        for p in (v, attacker):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    check(len(out) == 4, "the sysinfo victim printed", out)
    calls, mean = a_out.split()
    return [float(x) for x in out[:3]], int(out[3]), int(calls), float(mean)
