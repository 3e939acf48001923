"""The control socket under garbage and floods, from root (the only peer
it takes): every bad request gets a one-line "error: ..." and the
connection closed, nothing is kept (the daemon's fds come back to what
they were), and a container attaches right after, or during, the flood."""

import array
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import hostile_walks  # noqa: E402
from cgtest import check  # noqa: E402

FLOOD = 1000
TENANT_HANDLES_MAX = 16384  # fs/handles.h
OLD_HANDLES_MAX = 65536  # a session's, before there were tenants
HOLDERS, HOLDER_FDS = 4, 17000  # past OLD_HANDLES_MAX in all

# Opens argv[2] (/proc/cpuinfo) up to argv[1] times and keeps every fd;
# prints how many opens succeeded and the errno name of the first that
# failed ("none"); exits at a line on stdin.
HOLDER = r'''
import errno, os, sys
fds, err = [], "none"
path = sys.argv[2] if len(sys.argv) > 2 else "/proc/cpuinfo"
while len(fds) < int(sys.argv[1]):
    try:
        fds.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
print(len(fds), err, flush=True)
sys.stdin.readline()
'''

# The daemon's threads of one each: main, control socket, pid watcher,
# refresher, seccomp listener, PSI triggers' watcher.
ONE_THREAD_EACH = {"cgprocfs", "control", "pidwatch", "refresher", "seccomp", "triggers"}


def release(holders):
    """Let HOLDER processes close their fds and end."""
    for h in holders:
        h.stdin.close()
        h.wait()


def threads_over_bounds(names, stalled):
    """The kinds of the daemon's threads in names that number more than
    their bound: FUSE workers 2 per CPU and the loop (and those made for
    stalls), pooled walkers 2 per CPU (4 at least), a namespace's reader
    per worker, one thread each for the rest; a thread of another name is
    over its bound of 0."""
    cpus = os.cpu_count()
    bounds = {"fuse": 2 * cpus + 1 + stalled, "pool-": max(2 * cpus, 4), "cgprocfs-cgns": 2 * cpus + stalled}
    kinds = {}
    for name in names:
        kind = "pool-" if name.startswith("pool-") else name
        kinds[kind] = kinds.get(kind, 0) + 1
    return {k: n for k, n in kinds.items() if n > bounds.get(k, 1 if k in ONE_THREAD_EACH else 0)}


def holders_got(got):
    """The opens HOLDERs got in all (their split lines), and the errors
    they ended on."""
    return sum(int(g[0]) for g in got if g), sorted({g[1] for g in got if g})


# For each line on stdin, the number of processors in argv[1]'s cpuinfo.
CPU_COUNT_READER = r'''
import os, sys
for _ in sys.stdin:
    with open(os.path.join(sys.argv[1], "proc", "cpuinfo")) as f:
        print(sum(1 for l in f if l.startswith("processor")), flush=True)
'''
READERS = 8

# In a container with one CPU: argv[1] rounds of cpuinfo, stat, meminfo and
# 1/smaps_rollup; prints the rounds whose content was right and the first
# thing that was not ("none").
VICTIM = r'''
import sys
good, wrong = 0, "none"
for _ in range(int(sys.argv[1])):
    try:
        with open("/proc/cpuinfo") as f:
            cpus = sum(1 for l in f if l.startswith("processor"))
        with open("/proc/stat") as f:
            stat_cpus = sum(1 for l in f if l.startswith("cpu") and l[3].isdigit())
        with open("/proc/meminfo") as f:
            mem = f.readline().startswith("MemTotal:")
        with open("/proc/1/smaps_rollup") as f:
            smaps = "Rss:" in f.read()
    except OSError as e:
        wrong = "%s (%s)" % (e.strerror, e.filename)
        break
    if (cpus, stat_cpus, mem, smaps) != (1, 1, True, True):
        wrong = "cpuinfo %d, stat %d, meminfo %s, smaps_rollup %s" % (cpus, stat_cpus, mem, smaps)
        break
    good += 1
print(good, wrong, flush=True)
'''
VICTIM_ROUNDS = 300
HOSTILE_PROCESSES = 100

# Reads argv[1]'s cpuinfo and stat for argv[2] seconds, each read by a new
# process (cat: a caller the daemon has not seen yet); prints as JSON how
# many reads showed the one CPU of the caller's quota ("right"), how many
# failed and how, and how many showed another count.
COUNTING_READER = r'''
import json, os, subprocess, sys, time
mnt, seconds = sys.argv[1], float(sys.argv[2])
counts = {}
end = time.monotonic() + seconds
while time.monotonic() < end:
    for name, prefix, follows in (("cpuinfo", "processor", " \t"), ("stat", "cpu", "0123456789")):
        p = subprocess.run(["cat", os.path.join(mnt, "proc", name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if p.returncode == 0:
            n = sum(1 for l in p.stdout.splitlines() if l.startswith(prefix) and l[len(prefix):][:1] in follows)
            key = "right" if n == 1 else "%s shows %d" % (name, n)
        else:
            key = "EMFILE" if "Too many open files" in p.stderr else p.stderr.strip()[-80:]
        counts[key] = counts.get(key, 0) + 1
print(json.dumps(counts))
'''


def socket_path(mnt):
    with open(os.path.join(mnt, ".cgprocfs", "control")) as f:
        return f.read().strip()


def connect(path, timeout=10):
    """A connection to the socket at path; while its listen backlog is full
    (EAGAIN: a unix socket's connect does not wait), tried again."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def answer(s):
    """The daemon's answer, and whether it then closed the connection."""
    text = s.recv(65536)
    closed = s.recv(65536) == b""
    return text.decode(errors="replace"), closed


CPU = "/sys/fs/cgroup/cpu"


@contextlib.contextmanager
def one_cpu_group(name):
    """A v1 cpu cgroup with a quota of one CPU, removed after the block."""
    if not os.path.exists(os.path.join(CPU, "cpu.cfs_quota_us")):
        raise cgtest.Skip("needs the cgroup v1 cpu controller at " + CPU)
    group = os.path.join(CPU, "cgprocfs-hostile-%s-%d" % (name, os.getpid()))
    os.mkdir(group)
    try:
        for file, value in (("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "100000")):
            with open(os.path.join(group, file), "w") as f:
                f.write(value)
        yield group
    finally:
        cgtest.remove_cgroups([group], CPU)


def host_read_latencies(mnt, n=300):
    """p50 and p99 in µs of open + read + close of the host view's cpuinfo."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        with open(os.path.join(mnt, "proc", "cpuinfo"), "rb") as f:
            f.read()
        times.append((time.perf_counter() - started) * 1e6)
    times.sort()
    return times[n // 2], times[n * 99 // 100]


def fd_count(pid, pipes=True):
    fds = "/proc/%d/fd" % pid
    if pipes:
        return len(os.listdir(fds))
    links = []
    for fd in os.listdir(fds):
        with contextlib.suppress(FileNotFoundError):
            links.append(os.readlink(os.path.join(fds, fd)))
    return sum(1 for link in links if not link.startswith("pipe:"))


def make_tests(d):
    t, test = cgtest.test_registry()
    state = {}

    def settled_fds():
        """The daemon's fd count once it stops changing (connections being
        closed), pipes left out: each thread that answers gets a pipe of
        its own at its first answer (daemon/answers.c), and a flood may
        leave the pool a worker larger. The control socket makes none."""
        last = None
        for _ in range(50):
            n = fd_count(d.process.pid, pipes=False)
            if n == last:
                return n
            last = n
            time.sleep(0.1)
        return last

    def attach_works(what):
        with cgtest.namespace_with_view(d.mnt, state["bundle"], what) as (pid, res):
            check(res[0] == 0 and not res[2].strip(), "the hook %s" % what, cgtest.describe(res))
            with open("/proc/%d/mountinfo" % pid) as f:
                check("fuse.cgprocfs" in f.read(), "%s: no view over the namespace's /proc" % what)

    @test("garbage, a truncated word, an unknown word, a 200 KiB message, an attach with an fd it does not take: "
          "each answered with a reason and closed")
    def _():
        if not os.environ.get("CGPROCFS_OCI_HOOK"):
            raise cgtest.Skip("CGPROCFS_OCI_HOOK is not set (run through meson test)")
        state["bundle"] = tempfile.mkdtemp(prefix="cgprocfs-hostile-bundle-")
        with open(os.path.join(state["bundle"], "config.json"), "w") as f:
            json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
        path = state["path"] = socket_path(d.mnt)
        state["fds"] = settled_fds()
        for what, payload in (("garbage", b"\x00\xff\xfe garbage \x01"), ("a truncated word", b"atta"),
                              ("an unknown word", b"detach 1"), ("a 200 KiB message", b"attach " + b"9" * 200000)):
            with connect(path) as s:
                s.send(payload)
                text, closed = answer(s)
            check(text.startswith("error: bad request"), "%s: answered %r" % (what, text[:200]))
            check(closed, "%s: the connection stays open" % what)
        with connect(path) as s, open("/dev/null") as extra:
            s.sendmsg([b"attach %d" % os.getpid()],
                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [extra.fileno()]))])
            text, closed = answer(s)
        check(text.startswith("error: bad request"), "an attach with an fd: answered %r" % text[:200])
        check(settled_fds() == state["fds"], "the daemon's fds: %d before, %d after" % (state["fds"], settled_fds()))
        attach_works("after the bad requests")

    @test("a non-root process cannot connect to the control socket")
    def _():
        check("path" in state, "the first test did not run")
        code = "import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(%r)" % state["path"]
        res = cgtest.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", cgtest.PYTHON, "-c", code])
        check(res[0] != 0 and "PermissionError" in res[2], "nobody's connect", cgtest.describe(res))

    @test("%d connections at once that say nothing: a container attaches meanwhile, each of them gets a reason "
          "and is closed, and the daemon's fds come back" % FLOOD)
    def _():
        check("path" in state, "the first test did not run")
        idle = []
        try:
            for _ in range(FLOOD):
                idle.append(connect(state["path"], timeout=5))
            started = time.monotonic()
            attach_works("during the flood")
            took = time.monotonic() - started
            cgtest.diag("an attach during the flood took %.2f s" % took)
            check(took < 3, "an attach during the flood took %.1f s" % took)
            reasons = {}
            deadline = time.monotonic() + 30
            for s in idle:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    text = s.recv(65536).decode(errors="replace")
                except (OSError, socket.timeout) as e:
                    text = "(%s)" % type(e).__name__
                reason = text.split(";")[0][:60]
                reasons[reason] = reasons.get(reason, 0) + 1
            cgtest.diag("what the %d idle connections got: %s" % (FLOOD, reasons))
            bad = {r: n for r, n in reasons.items() if not r.startswith("error: ")}
            check(not bad, "connections with no reason", bad)
        finally:
            for s in idle:
                s.close()
        check(settled_fds() == state["fds"], "the daemon's fds: %d before, %d after" % (state["fds"], settled_fds()))
        attach_works("after the flood")

    @test("a daemon with a limit of open files one above what it holds idle, read by %d callers at once under "
          "a 1-CPU quota: every read is the caller's text or fails with EMFILE, never another text; the start "
          "and the first EMFILE are logged with what to do; it serves on" % READERS)
    def _():
        limit = fd_count(d.process.pid) + 1
        with one_cpu_group("low") as group:
            with cgtest.Daemon(prefix=["prlimit", "--nofile=%d:%d" % (limit, limit)]) as low:
                readers = [subprocess.Popen(cgtest.in_cgroups([group], [cgtest.PYTHON, "-c", COUNTING_READER,
                                                                        low.mnt, "3"]),
                                            stdout=subprocess.PIPE, text=True) for _ in range(READERS)]
                totals = {}
                for p in readers:
                    out, _ = p.communicate(timeout=60)
                    check(p.returncode == 0, "a reader failed", out)
                    for k, v in json.loads(out).items():
                        totals[k] = totals.get(k, 0) + v
                cgtest.diag("reads under the low limit: %s" % totals)
                check(totals.get("right", 0) > 0, "no read succeeded", totals)
                check(set(totals) <= {"right", "EMFILE"}, "reads that were neither right nor EMFILE", totals)
                check("the open-files limit is %d" % limit in low.log(), "no warning of the low limit at start",
                      low.log())
                if totals.get("EMFILE"):
                    check("out of file descriptors" in low.log(), "EMFILE was not logged", low.log())
                with open(os.path.join(low.mnt, "proc/cpuinfo")) as f:
                    check("processor" in f.read(), "cpuinfo after the readers")

    @test("proc/.real unmounted under the view: the daemon mounts it again within 3 s and says so; "
          "proc/self and a process's status read through the view again")
    def _():
        real = os.path.join(d.mnt, "proc", ".real")
        res = cgtest.run(["umount", real])
        check(res[0] == 0, "umount of proc/.real", cgtest.describe(res))
        back = cgtest.wait_until(lambda: os.path.exists(os.path.join(real, "self")), timeout=5)
        check(back, "proc/.real is still not mounted after 5 s", d.log()[-2000:])
        check("was unmounted: mounted it again" in d.log(), "not logged", d.log()[-2000:])
        with open(os.path.join(d.mnt, "proc", "self", "status")) as f:
            check("Pid:\t%d" % os.getpid() in f.read(), "proc/self/status through the view is not the reader's")

    @test("a caller whose 1-CPU cgroup is removed while it reads (moved out first, as a runtime does) sees its "
          "new cgroup's CPUs within a second; the daemon logs no error and serves on")
    def _():
        with one_cpu_group("gone") as group:
            reader = subprocess.Popen(cgtest.in_cgroups([group], [cgtest.PYTHON, "-c", CPU_COUNT_READER, d.mnt]),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                def count():
                    reader.stdin.write("\n")
                    reader.stdin.flush()
                    return int(reader.stdout.readline())
                check(count() == 1, "the reader in the 1-CPU cgroup does not see 1 CPU")
                with open(os.path.join(group, "cgroup.procs")) as f:
                    pids = f.read().split()
                for pid in pids:  # out to the top, then the cgroup goes
                    with open(os.path.join(CPU, "cgroup.procs"), "w") as f:
                        f.write(pid)
                os.rmdir(group)
                host = os.cpu_count()
                check(cgtest.wait_until(lambda: count() == host, timeout=1.5, step=0.05),
                      "the reader does not see the host's %d CPUs 1.5 s after its cgroup went" % host)
            finally:
                reader.stdin.close()
                reader.wait()
        check(not re.search("error|critical", d.log(), re.I), "the daemon logged an error", d.log()[-2000:])

    @test("the init of a pid namespace with a view dies: its view ends (the kernel ends the namespace), the "
          "daemon says so and serves on")
    def _():
        check("bundle" in state, "the first test did not run")
        with cgtest.namespace_with_view(d.mnt, state["bundle"], "init-dies") as (pid, res):
            check(res[0] == 0, "the hook", cgtest.describe(res))
            check(cgtest.read_stats(d.mnt, "cgprocfs_")["container_sessions"] == 1, "no container session")
            os.kill(pid, signal.SIGKILL)
        check(cgtest.wait_until(lambda: cgtest.read_stats(d.mnt, "cgprocfs_")["container_sessions"] == 0,
                                timeout=5), "the view of a namespace whose init died is still served")
        check("ended" in d.log(), "the end of the view is not logged", d.log()[-2000:])
        attach_works("after an init died")

    @test("a container's processes holding open files past %d: its opens then fail with EMFILE (logged), the host "
          "view's readers read on meanwhile, and once it closes them its view opens again" % TENANT_HANDLES_MAX)
    def _():
        check("bundle" in state, "the first test did not run")
        with cgtest.namespace_with_view(d.mnt, state["bundle"], "holder") as (pid, res):
            check(res[0] == 0, "the hook", cgtest.describe(res))
            before = host_read_latencies(d.mnt)
            # Several processes: one may not hold as many fds (a hard limit
            # of 20000 here).
            holders = [subprocess.Popen(["nsenter", "-t", str(pid), "-m", "-p", "--", cgtest.PYTHON, "-c", HOLDER,
                                         str(HOLDER_FDS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                       for _ in range(HOLDERS)]
            try:
                got = [h.stdout.readline().split() for h in holders]
                during = host_read_latencies(d.mnt)
            finally:
                release(holders)
            held, errors = holders_got(got)
            cgtest.diag("the holders got %d opens in all, then %s; host view cpuinfo p50/p99 %.0f/%.0f µs before, "
                        "%.0f/%.0f µs while they held them" % (held, errors, *before, *during))
            check(TENANT_HANDLES_MAX - 16 <= held <= TENANT_HANDLES_MAX and "EMFILE" in errors and
                  set(errors) <= {"EMFILE", "none"}, "the holders' opens: %d in all, then %s" % (held, errors), got)
            check("hold %d open files" % TENANT_HANDLES_MAX in d.log(), "the limit was not logged", d.log()[-2000:])
            res = cgtest.run(["nsenter", "-t", str(pid), "-m", "-p", "--", "cat", "/proc/cpuinfo"])
            check(res[0] == 0 and "processor" in res[1], "an open in the view once the holder closed its files",
                  cgtest.describe(res))

    @test("a tenant of the host's view (a pid namespace, as LXC's and docker -v's binds are used) holding %d "
          "opens of its meminfo gets EMFILE past %d, in a namespace it makes below its own too; the host and "
          "another namespace open on" % (HOLDERS * HOLDER_FDS, TENANT_HANDLES_MAX))
    def _():
        # Security review, issue 39 finding 2: one session's 65,536
        # handles were every tenant's, so one that held them all had every
        # other's opens fail with ENFILE.
        path = os.path.join(d.mnt, "proc", "meminfo")
        holder = lambda argv: subprocess.Popen(argv + [cgtest.PYTHON, "-c", HOLDER, str(HOLDER_FDS), path],  # noqa
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = holder(["unshare", "--pid", "--fork", "--kill-child", "--"])
        holders = [first]
        try:
            inner = cgtest.wait_until(lambda: cgtest._children(first.pid), timeout=5)
            check(inner, "no process in the tenant's namespace")
            enter = ["nsenter", "-t", str(cgtest._children(first.pid)[0]), "-p", "--"]
            holders += [holder(enter) for _ in range(HOLDERS - 1)]
            got = [h.stdout.readline().split() for h in holders]
            nested = holder(enter + ["unshare", "--pid", "--fork", "--kill-child", "--"])
            holders.append(nested)
            below = nested.stdout.readline().split()
            host_errno = cgtest.errno_of(cgtest.read_all, path)
            other = cgtest.run(["unshare", "--pid", "--fork", "--", "cat", path])
        finally:
            release(holders)
        held, errors = holders_got(got)
        cgtest.diag("the tenant's holders got %d opens in all, then %s; one in a namespace below got %s; the host's "
                    "open: %s" % (held, errors, below, cgtest.errname(host_errno)))
        check(host_errno == 0, "the host's open of meminfo while a tenant held its opens: %s"
              % cgtest.errname(host_errno))
        check(other[0] == 0 and "MemTotal" in other[1], "another namespace's cat of meminfo", cgtest.describe(other))
        check(TENANT_HANDLES_MAX - 16 <= held <= TENANT_HANDLES_MAX and "EMFILE" in errors,
              "the tenant's opens: %d in all, then %s" % (held, errors), got)
        check(below[:2] == ["0", "EMFILE"], "a namespace below the tenant's: %s" % below)

    @test("one container holds 10,000 directory handles, reads the smaps_rollup of its %d processes in a loop and "
          "reads /proc/stat from 1,000 threads, all at once: another container reads the right cpuinfo, stat, "
          "meminfo and smaps_rollup every time, the daemon's threads stay within their pools' bounds, and the attacking "
          "view is held back"
          % HOSTILE_PROCESSES)
    def _():
        check("bundle" in state, "the first test did not run")
        hostile_bin = os.environ.get("CGPROCFS_HOSTILE")
        if not hostile_bin:
            raise cgtest.Skip("CGPROCFS_HOSTILE is not set (run through meson test)")
        # Past the pool's bound the daemon makes a worker only when every
        # worker waited 50 ms and none answered, and counts each (slow
        # builds, ASan's, do that here): the bound allows those.
        stalls = lambda: int(cgtest.read_stats(d.mnt, prefix="cgprocfs_worker_").get("stalls_total", 0))  # noqa: E731
        stalls_before = stalls()
        with one_cpu_group("victim") as group, \
                cgtest.namespace_with_view(d.mnt, state["bundle"], "hostile") as (hostile, res), \
                cgtest.namespace_with_view(d.mnt, state["bundle"], "victim", cgroups=[group]) as (victim, vres):
            check(res[0] == 0 and vres[0] == 0, "the hook", cgtest.describe(res), cgtest.describe(vres))
            enter = lambda pid, argv: ["nsenter", "-t", str(pid), "-m", "-p", "--"] + argv  # noqa: E731
            attackers = [subprocess.Popen(enter(hostile, ["sh", "-c", "for i in $(seq %d); do sleep 60 & done; wait"
                                                          % HOSTILE_PROCESSES]), stdin=subprocess.DEVNULL)]
            try:
                for argv in (["dirs", "10000", "/proc"], ["smaps", "/proc"], ["threads", "1000", "/proc/stat"]):
                    attackers.append(subprocess.Popen(enter(hostile, [hostile_bin] + argv), stdout=subprocess.PIPE,
                                                      stdin=subprocess.DEVNULL, text=True))
                    line = attackers[-1].stdout.readline()
                    check(line.startswith("ready"), "cgprocfs-hostile %s did not start: %r" % (argv[0], line))
                threads = []
                victim_reader = subprocess.Popen(
                    ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group] +
                    enter(victim, [cgtest.PYTHON, "-c", VICTIM, str(VICTIM_ROUNDS)]),
                    stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
                while victim_reader.poll() is None:
                    threads.append(sorted(comm for comm, _, _ in cgtest.threads_of(d.process.pid).values()))
                    time.sleep(0.05)
                out = victim_reader.stdout.read().split(None, 1)
                still = [a.poll() is None for a in attackers]
            finally:
                for a in attackers:
                    a.kill()
                    a.wait()
            stalled = stalls() - stalls_before
            most = max(threads, key=len, default=[])
            cgtest.diag("victim: %s right rounds of %d, then %s; daemon threads up to %d (%d workers made for stalls), "
                        "at the most: %s" % (out[0] if out else "?", VICTIM_ROUNDS,
                                             out[1].strip() if len(out) > 1 else "?", len(most), stalled,
                                             ", ".join(most)))
            check(all(still), "an attacker ended before the victim's reads did", still)
            check(out and out[0] == str(VICTIM_ROUNDS) and out[1].strip() == "none",
                  "the victim's reads under attack", out)
            check(threads, "the daemon's threads were never read")
            for names in threads:
                over = threads_over_bounds(names, stalled)
                check(not over, "the daemon's threads passed their bounds: %s (all: %s)" % (over, ", ".join(names)))
            # How the others kept their turn: the threads' view waited for a
            # worker while the reserve was idle, and was answered at a lower
            # priority (more than one at a time, or more than its share).
            stats = cgtest.read_stats(d.mnt, prefix="cgprocfs_")
            check(stats.get("sessions_held_total", 0) > 0 and stats.get("low_priority_requests_total", 0) > 0,
                  "the attacking view was neither held nor answered at a lower priority",
                  {k: v for k, v in stats.items() if k.startswith(("sessions", "low", "workers"))})
        check(not re.search("error|critical", d.log(), re.I), "the daemon logged an error", d.log()[-2000:])

    add_tenant_tests(d, test, state)

    @test("nothing of the test is left")
    def _():
        if "bundle" in state:
            os.unlink(os.path.join(state["bundle"], "config.json"))
            os.rmdir(state.pop("bundle"))

    add_lock_walk_tests(d, test)
    return t


# Issue 54, findings 1 and 2: a tenant is the container, whatever pid
# namespaces it nests; its handles count across a --replace; a directory
# handle costs its handle, not a copy of its listing; the host's PSI
# triggers are set whatever the containers hold.
NESTED_HOLDERS, NESTED_FDS = 3, 6000  # past TENANT_HANDLES_MAX in all
TRIGGER = "some 50000 2000000"  # a window of 2 s: this root lacks CAP_SYS_RESOURCE
TRIGGERS_TENANT_MAX, TRIGGERS_MAX = 64, 1024  # fs/triggers.h
TRIGGER_NAMESPACES = 17  # x 64: past TRIGGERS_MAX

# Opens argv[1] argv[2] times, each fd O_RDWR, and writes the trigger
# argv[3] (with its NUL: the kernel makes the last byte written one) to
# each; prints how many were taken and the errno name of the first that
# failed ("none"); holds them until stdin closes.
TRIGGER_HOLDER = r"""
import errno, os, sys
fds, err = [], "none"
for _ in range(int(sys.argv[2])):
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, (sys.argv[3] + "\0").encode())
        fds.append(fd)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        os.close(fd)
        break
print(len(fds), err, flush=True)
sys.stdin.read()
"""

# Opens argv[1] up to argv[2] times and keeps the fds; prints how many and
# the first error; at a line on stdin, reads a byte of each fd (each made
# again by the daemon that took over) and opens argv[3] more; prints how
# many reads and opens succeeded and the first error of each; holds them
# all until stdin closes.
ACROSS_REPLACE = r"""
import errno, os, sys
path = sys.argv[1]
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
fds, err = [], "none"
while len(fds) < int(sys.argv[2]):
    try:
        fds.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        err = name(e)
        break
print(len(fds), err, flush=True)
sys.stdin.readline()
read, read_err = 0, "none"
for fd in fds:
    try:
        os.pread(fd, 1, 0)
        read += 1
    except OSError as e:
        read_err = name(e) if read_err == "none" else read_err
more, more_err = [], "none"
while len(more) < int(sys.argv[3]):
    try:
        more.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        more_err = name(e)
        break
print(read, read_err, len(more), more_err, flush=True)
sys.stdin.read()
"""
MORE_AFTER_REPLACE = 200

# Opens the directory argv[1] argv[2] times and keeps the fds; prints how
# many it has and the number of entries a listing of it has (. and ..
# included); holds them until stdin closes.
DIR_HOLDER = r"""
import errno, os, sys
fds, err = [], "none"
while len(fds) < int(sys.argv[2]):
    try:
        fds.append(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
print(len(fds), err, len(os.listdir(sys.argv[1])) + 2, flush=True)
sys.stdin.read()
"""
DIR_HANDLES, DIR_PROCESSES = 2048, 400
# The least a copy of a listing costs per entry: a struct view_dirent (24
# bytes) and its name's block.
LISTING_BYTES_PER_ENTRY = 32


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))


def held_lines(procs):
    """The first line of each process, split."""
    return [p.stdout.readline().split() for p in procs]


def add_tenant_tests(d, test, state):
    enter = lambda pid, argv: ["nsenter", "-t", str(pid), "-m", "-p", "--"] + argv  # noqa: E731
    nested = ["unshare", "--pid", "--fork", "--kill-child", "--"]

    @test("a container's processes in %d pid namespaces nested below its own (unshare -pf inside it) holding "
          "%d opens each of its view's cpuinfo: %d in all at most (its tenant's bound), then EMFILE"
          % (NESTED_HOLDERS, NESTED_FDS, TENANT_HANDLES_MAX))
    def _():
        # Issue 54 finding 1: in a container's view every nested namespace
        # was a tenant of its own (3 of them held 49,152 handles).
        check("bundle" in state, "the first test did not run")
        with cgtest.namespace_with_view(d.mnt, state["bundle"], "nested-holders") as (pid, res):
            check(res[0] == 0, "the hook", cgtest.describe(res))
            holders = [subprocess.Popen(enter(pid, nested + [cgtest.PYTHON, "-c", HOLDER, str(NESTED_FDS)]),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                       for _ in range(NESTED_HOLDERS)]
            try:
                got = held_lines(holders)
            finally:
                release(holders)
        held, errors = holders_got(got)
        cgtest.diag("the nested namespaces' holders got %d opens in all, then %s" % (held, errors))
        check(TENANT_HANDLES_MAX - 16 <= held <= TENANT_HANDLES_MAX and "EMFILE" in errors,
              "the nested namespaces' opens: %d in all, then %s" % (held, errors), got)

    @test("a container's processes in %d pid namespaces nested below its own writing %d PSI triggers each to "
          "its view's pressure/memory hold %d in all, and the host's own trigger write through the host's view "
          "works meanwhile" % (TRIGGER_NAMESPACES, TRIGGERS_TENANT_MAX, TRIGGERS_TENANT_MAX))
    def _():
        # Issue 54 finding 2: 17 nested namespaces x 64 took the whole
        # table (1,024) and the host's write failed with ENOSPC.
        check("bundle" in state, "the first test did not run")
        if not os.path.exists("/proc/pressure/memory"):
            raise cgtest.Skip("this kernel has no PSI (/proc/pressure/memory)")
        with cgtest.namespace_with_view(d.mnt, state["bundle"], "nested-triggers") as (pid, res):
            check(res[0] == 0, "the hook", cgtest.describe(res))
            holders = []
            try:
                for _ in range(TRIGGER_NAMESPACES):  # one after the other: the last ones meet the bound
                    holders.append(subprocess.Popen(
                        enter(pid, nested + [cgtest.PYTHON, "-c", TRIGGER_HOLDER, "/proc/pressure/memory",
                                             str(TRIGGERS_TENANT_MAX), TRIGGER]),
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
                    holders[-1].got = holders[-1].stdout.readline().split()
                got = [h.got for h in holders]
                host = subprocess.Popen([cgtest.PYTHON, "-c", TRIGGER_HOLDER, os.path.join(d.proc, "pressure/memory"),
                                         "1", TRIGGER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                holders.append(host)
                host_got = host.stdout.readline().split()
            finally:
                release(holders)
        held, errors = holders_got(got)
        cgtest.diag("the nested namespaces' trigger writers got %d triggers in all, then %s; the host's: %s"
                    % (held, errors, host_got))
        check(host_got[:2] == ["1", "none"], "the host's trigger write while a container held its triggers: %s"
              % host_got)
        check(held == TRIGGERS_TENANT_MAX and "ENOSPC" in errors,
              "the container's triggers: %d in all, then %s" % (held, errors), got)

    @test("a tenant of the host's view holding %d opens of meminfo across a --replace: each read after it "
          "(the file made again by the new daemon) counts for it, and its %d opens after them fail with EMFILE"
          % (TENANT_HANDLES_MAX, MORE_AFTER_REPLACE))
    def _():
        # Issue 54 finding 1: handles made again after a --replace
        # (handles_adopt) counted for no tenant, so one held 32,768.
        path = os.path.join(d.proc, "meminfo")
        holder = subprocess.Popen(nested + [cgtest.PYTHON, "-c", ACROSS_REPLACE, path, str(TENANT_HANDLES_MAX),
                                            str(MORE_AFTER_REPLACE)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            before = holder.stdout.readline().split()
            check(len(before) == 2 and int(before[0]) >= TENANT_HANDLES_MAX - 16, "the holder's opens", before)
            log_before = d.log()
            d.take_over()
            holder.stdin.write("\n")
            holder.stdin.flush()
            after = holder.stdout.readline().split()
        finally:
            release([holder])
        cgtest.diag("before the --replace: %s opens, then %s; after it: %s reads, then %s, and %s opens more, then %s"
                    % tuple(before + after))
        check(len(after) == 4 and after[0] == before[0], "the reads after the --replace", before, after)
        check(after[2:] == ["0", "EMFILE"], "opens after the held ones were made again: %s, then %s"
              % tuple(after[2:]), before, after)
        new_log = d.log()[len(log_before):]
        check("hold %d open files" % TENANT_HANDLES_MAX in new_log, "the bound was not logged by the new daemon",
              new_log[-2000:])

    @test("%d directory handles of a container's proc/ (%d processes in it) cost the daemon less RSS each than a "
          "copy of the listing would (%d bytes an entry)" % (DIR_HANDLES, DIR_PROCESSES, LISTING_BYTES_PER_ENTRY))
    def _():
        # Issue 54 finding 1: each handle kept its own copy of the listing
        # (about 24 KB a handle for 454 entries).
        check("bundle" in state, "the first test did not run")
        if os.environ.get("CGPROCFS_SANITIZED"):
            # Each open still makes a listing, freed once found shared:
            # ASan's quarantine keeps it (up to 256 MiB).
            raise cgtest.Skip("built with sanitizers: RSS does not tell what the daemon holds (ASan keeps freed "
                              "memory in quarantine)")
        with cgtest.namespace_with_view(d.mnt, state["bundle"], "dir-holder") as (pid, res):
            check(res[0] == 0, "the hook", cgtest.describe(res))
            sleepers = subprocess.Popen(enter(pid, ["sh", "-c", "for i in $(seq %d); do sleep 600 & done; echo ready; "
                                                    "wait" % DIR_PROCESSES]),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            try:
                check(sleepers.stdout.readline().strip() == "ready", "the sleepers did not start")
                # One listing first, so that what the daemon keeps for one
                # directory handle is not counted.
                warm = subprocess.Popen(enter(pid, [cgtest.PYTHON, "-c", DIR_HOLDER, "/proc", "1"]),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                held_lines([warm])
                before = rss_kib(d.process.pid)
                holder = subprocess.Popen(enter(pid, [cgtest.PYTHON, "-c", DIR_HOLDER, "/proc", str(DIR_HANDLES)]),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                got = held_lines([holder])[0]
                after = rss_kib(d.process.pid)
                release([holder, warm])
            finally:
                sleepers.kill()
                sleepers.wait()
        check(len(got) == 3 and got[:2] == [str(DIR_HANDLES), "none"], "the holder's opens", got)
        entries = int(got[2])
        per_handle = (after - before) * 1024 / DIR_HANDLES
        bound = entries * LISTING_BYTES_PER_ENTRY
        cgtest.diag("the daemon's RSS: %d KiB, then %d KiB with %d handles of a proc/ of %d entries: %.0f bytes a "
                    "handle (a copy of the listing: at least %d)" % (before, after, DIR_HANDLES, entries, per_handle,
                                                                     bound))
        check(per_handle < bound, "%.0f bytes of RSS a directory handle, a listing of %d entries costs %d"
              % (per_handle, entries, bound))


def add_lock_walk_tests(d, test):
    """Issue 54, findings 3 and 4: work a tenant sizes (a cgroup subtree,
    the host's /proc) must not run under a lock another tenant's read
    takes (the scenarios: hostile_walks.py). The victim's median is held
    to WALK_MEDIAN_MS, or three times its median beside the same tenant
    with empty groups (the same processes made, no subtree walked) if the
    machine's other work makes that more: before the fix every read
    waited for a walk (medians of 45 to 350 ms here), after it they are
    ~1 ms. Its worst, which the other helpers' work on this 2-CPU machine
    takes to 100-500 ms beside empty groups too, is only reported here;
    bench-hostile.py --walks measures it."""
    w = hostile_walks

    def check_victim(what, got, base):
        """got, base: [p50, p99, worst] ms, beside the tenant and beside
        empty groups."""
        median = max(w.WALK_MEDIAN_MS, 3 * base[0])
        check(got[0] < median, "the victim's %s took %.1f ms as a median (bound %.1f ms)" % (what, got[0], median),
              got, base)

    @test("a tenant whose cgroup has %d sub-cgroups reads loadavg first in a new group, over and over for %d s: "
          "another tenant reading loadavg and /proc/stat every 10 ms reads them in %d ms at the median (or three "
          "times its median beside empty groups)" % (w.WALK_CGROUPS, w.WALK_SECONDS, w.WALK_MEDIAN_MS))
    def _():
        # Issue 54 finding 3: the first sample walked the subtree under
        # the daemon-wide lock (164 ms here; the victim's worst read
        # ~150 ms).
        name = "cgprocfs-hostile-walk-%d" % os.getpid()
        figures = {}
        try:
            for subtree in (0, w.WALK_CGROUPS):
                figures[subtree] = w.loadavg_walk_figures(d.mnt, name, subtree=subtree)
                w.remove_walk_cgroups(name)
        finally:
            w.remove_walk_cgroups(name)
        (base, _, _), (got, reads, mean) = figures[0], figures[w.WALK_CGROUPS]
        cgtest.diag("the tenant's %d first reads took %.1f ms on average; the victim's %d rounds, p50/p99/worst ms: "
                    "loadavg %s, stat %s; beside empty groups: loadavg %s, stat %s"
                    % (reads, mean, got["rounds"], got["loadavg"], got["stat"], base["loadavg"], base["stat"]))
        check(reads >= 3, "the tenant made %d first reads only" % reads)
        for name in ("loadavg", "stat"):
            check_victim("read of " + name, got[name], base[name])

    @test("the same tenant calls sysinfo(2) first in a new group, over and over, through the daemon's seccomp "
          "listener: another tenant's sysinfo(2) every 10 ms is answered in %d ms at the median (or three times its "
          "median beside empty groups)" % w.WALK_MEDIAN_MS)
    def _():
        # The listener's one thread rendered each container's figures in
        # turn: the victim's call waited for the tenant's first sample.
        name = "cgprocfs-hostile-sysinfo-%d" % os.getpid()
        work = tempfile.mkdtemp(prefix="cgprocfs-hostile-probe-")
        figures = {}
        try:
            probe = w.sysinfo_probe(work)
            for subtree in (0, w.WALK_CGROUPS):
                figures[subtree] = w.sysinfo_walk_figures(d.mnt, name, probe, subtree=subtree)
                w.remove_walk_cgroups(name)
        finally:
            w.remove_walk_cgroups(name)
            shutil.rmtree(work, ignore_errors=True)
        base, (got, calls, tenant_calls, mean) = figures[0][0], figures[w.WALK_CGROUPS]
        cgtest.diag("the tenant's %d first calls took %.1f ms on average; the victim's %d calls, p50/p99/worst ms: "
                    "%s; beside empty groups: %s" % (tenant_calls, mean, calls, got, base))
        check(tenant_calls >= 3, "the tenant made %d first calls only" % tenant_calls)
        check_victim("sysinfo(2)", got, base)

    @test("a tenant makes %d new pid namespaces a second for %d s, each reading uptime, beside %d more processes on "
          "the host: another tenant reading uptime and loadavg every 10 ms never waits %d ms"
          % (w.PIDNS_RATE, w.WALK_SECONDS, w.PIDNS_SLEEPERS, w.PIDNS_BOUND_MS))
    def _():
        # Issue 54 finding 4: each new namespace's init was searched for
        # in the whole /proc under the daemon-wide lock, and every other
        # namespace's caller waited behind the searches (3.5 s here).
        name = "cgprocfs-hostile-pidns-%d" % os.getpid()
        try:
            got, made = w.pidns_walk_figures(d.mnt, name, rate=w.PIDNS_RATE, sleepers=w.PIDNS_SLEEPERS)
        finally:
            w.remove_walk_cgroups(name)
        cgtest.diag("the tenant made %d namespaces; the victim's %d rounds, p50/p99/worst ms: uptime %s, loadavg %s"
                    % (made, got["rounds"], got["uptime"], got["loadavg"]))
        check(made >= w.PIDNS_RATE, "the tenant made %d namespaces only" % made)
        worst = max(got["uptime"][2], got["loadavg"][2])
        check(worst < w.PIDNS_BOUND_MS, "the victim waited %.1f ms for a read" % worst, got)


def main():
    cgtest.run_with_daemon(make_tests)


if __name__ == "__main__":
    main()
