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
WALK_BOUND_MS = 60  # the victim's worst read allowed; ~150 ms before the fix

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

# For argv[1] s, argv[2] times a second: a new pid namespace whose init
# reads the view's /proc/uptime. Prints how many it made.
WALK_UNSHARER = r"""
import subprocess, sys, time
seconds, rate = float(sys.argv[1]), float(sys.argv[2])
n, start = 0, time.monotonic()
while time.monotonic() < start + seconds:
    subprocess.run(["unshare", "--pid", "--fork", "cat", "/proc/uptime"], stdout=subprocess.DEVNULL, check=True)
    n += 1
    ahead = start + n / rate - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
print(n, flush=True)
"""

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
