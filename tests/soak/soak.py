#!/usr/bin/python3
"""Hours of mixed load on one daemon, every read checked.

    sudo CGPROCFS=build/daemon/cgprocfs CGPROCFS_OCI_HOOK=build/contrib/oci/cgprocfs-oci-hook \\
        /usr/bin/python3 tests/soak/soak.py [--minutes 60] [--containers-every 30]
        [--daemon-every 10] [--calm 300] [--warmup 60] [--rounds 0]

(`tests/soak/run-soak.sh BUILD_DIR [options]` sets the two variables.)

At once, for --minutes:

- 16 readers, each checking what it reads, never merely that a read
  worked:
  - 6 in private mount namespaces with the view bound over /proc and
    /sys/devices/system/cpu, and 4 with file-level binds of cpuinfo,
    meminfo, stat and cpu/online (the LXCFS way), all in two cgroups
    whose limits change every 10 s (CFS quota, cpuset, memory) and
    between which readers are moved every 5 s: cpuinfo, stat's cpuN
    lines and cpu/online must give the CPUs the limits allow, and
    MemTotal the memory limit, within 1 s of any change;
  - 2 in the view comparing /proc/<pid>/smaps_rollup's Rss of four
    processes holding 16 to 64 MiB with the kernel's (within 5 %);
  - 4 in runc containers with the hook (1 CPU of quota, 128 MiB), one of
    them stopped and a new one started every --containers-every s;
- process churn in a pid namespace of its own with the view: 200 spawns
  and exits a second, pids reused on purpose (ns_last_pid), and a
  checker comparing each settled process's smaps_rollup through the view
  with the kernel's (the span of its mappings: another process's text
  would show another span);
- a daemon event every --daemon-every s (daemons.py): the daemon
  replaced (--replace) or killed (SIGKILL, then a new daemon takes over
  from the keeper), plainly or with a process killed at a step of the
  handover (the old daemon, the new one, or the keeper); one round takes
  each kind of event once, then --calm s follow without one (that
  daemon's growth is measured).

It passes when no read failed (a process that is gone may be ENOENT or
ESRCH; a read() past the start across a takeover and a class change may be
ESTALE: Soak.stale_past_start), no content was wrong, every event ended with a daemon serving
(and each fault of every round done fired), no daemon exited non-zero
but of a fault, the daemons logged no sanitizer report, the last one
stopped with exit 0 and left no keeper, and each daemon that lived past the
warm-up grew by less than 5 MiB of RSS (not checked under a sanitizer,
whose allocator keeps freed memory aside) and 16 fds from its first
sample after the warm-up to its last. Every process, cgroup, container
and mount it made goes on every exit path.
"""

import argparse
import collections
import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import benchlib  # noqa: E402
import cgtest  # noqa: E402
import daemons  # noqa: E402
import test_containers as tc  # noqa: E402
from test_cpuview import parse_cpu_list  # noqa: E402

PYTHON = "/usr/bin/python3"
HOLDER_MIB = (16, 32, 48, 64)
CHURN_RATE, CHURN_WINDOW, CHURN_LIFE = 200, 64, 0.2
SETTLED = 0.05  # s: a churned process is checked once this old
TAKEOVER_WINDOW = 5  # s: see Soak.stale_past_start
LIMITS_EVERY, MOVES_EVERY, SAMPLE_EVERY = 10.0, 5.0, 10.0
GRACE = 1.0  # s the views have to follow a change
CONTAINER_MEMORY = 128 << 20
RSS_GROWTH, FD_GROWTH = 5 << 20, 16
GONE = ("No such file or directory", "No such process")
SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|ThreadSanitizer")


# ---------------------------------------------------- roles (subprocesses) --

def kib_field(text, name):
    m = re.search(r"^%s:\s+(\d+) kB" % name, text, re.M)
    return int(m.group(1)) if m else -1


def read(path):
    with open(path) as f:
        return f.read()


def role_reader(args):
    """Read the CPU and memory files over and over: one line a round,
    "<monotonic at start> <at end> <cpuinfo CPUs> <stat cpuN lines> <online
    CPUs> <MemTotal kB>", or "err <what>" (and go on)."""
    while True:
        t = time.monotonic()
        try:
            cpus = len(re.findall(r"^processor\s", read("/proc/cpuinfo"), re.M))
            stat = len(re.findall(r"^cpu\d+ ", read("/proc/stat"), re.M))
            online = len(parse_cpu_list(read("/sys/devices/system/cpu/online")))
            mem = kib_field(read("/proc/meminfo"), "MemTotal")
            print("%.6f %.6f %d %d %d %d" % (t, time.monotonic(), cpus, stat, online, mem), flush=True)
        except OSError as e:
            print("err %s: %s" % (e.filename, e.strerror), flush=True)
        time.sleep(0.02)


def rss_of(path):
    return kib_field(read(path), "Rss")


def rollup_range(path):
    """smaps_rollup's first line: the span of the process's mappings, fixed
    from its exec on (a young process's Rss moves faster than the memo
    follows; this never does, and tells processes apart)."""
    return read(path).split("\n", 1)[0]


def unless_gone(fn, path, reused=False):
    """fn(path), or None for a process that is gone (reported otherwise).
    With reused, ESTALE is returned, for the caller to report unless the
    pid was taken by another process meanwhile."""
    try:
        return fn(path)
    except OSError as e:
        if reused and e.errno == errno.ESTALE:
            return e
        if e.strerror not in GONE:
            print("err %s: %s" % (e.filename, e.strerror), flush=True)
        return None


def role_smaps(args):
    """Compare smaps_rollup's Rss through the view with the kernel's, for
    the pids given: "<monotonic> smaps <pid> <view kB> <kernel kB>"."""
    pids = [int(p) for p in args.pids.split(",")]
    while True:
        for pid in pids:
            t = time.monotonic()
            try:
                print("%.6f smaps %d %d %d" % (t, pid, rss_of("/proc/%d/smaps_rollup" % pid),
                                               rss_of("/proc/.real/%d/smaps_rollup" % pid)), flush=True)
            except OSError as e:
                print("err %s: %s" % (e.filename, e.strerror), flush=True)
        time.sleep(0.05)


def role_holder(args):
    import mmap
    mem = mmap.mmap(-1, args.mib << 20)
    mem.write(b"x" * (args.mib << 20))
    print("ready", flush=True)
    sys.stdin.read()


def start_time(pid):
    """Field 22 of the kernel's stat of pid, or None if it is gone or a
    zombie (whose memory is gone)."""
    try:
        fields = read("/proc/.real/%d/stat" % pid).rsplit(")", 1)[1].split()
        return None if fields[0] in "ZX" else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def role_churn(args):
    """In its own pid namespace: CHURN_RATE spawns of sleep a second, each
    with a pid of a window of CHURN_WINDOW (ns_last_pid); a process checks
    that every settled process of the window has, through the view, the
    smaps_rollup of its own (the span of its mappings, which differs from
    exec to exec) and not another's: "<monotonic> churn <checked> <gone>
    <stale>" every second, "wrong ..." or "err ..." as they come. Stale:
    the view's text is of this process before or during its exec (a vfork
    child shares its parent's memory until then; halfway, only its new
    stack is mapped, ending where its span ends), which the memo may serve
    up to its maximum age; the checker skips processes younger than
    SETTLED, so that is only seen when an exec took longer."""
    base = 10000
    ticks = os.sysconf("SC_CLK_TCK")

    parent = os.getpid()

    def check():
        checked = gone = stale = 0
        last = time.monotonic()
        while True:
            for pid in range(base + 1, base + CHURN_WINDOW + 1):
                s1 = start_time(pid)
                with open("/proc/.real/uptime") as f:
                    now_ticks = float(f.read().split()[0]) * ticks
                if s1 is None or now_ticks - s1 < SETTLED * ticks:
                    continue
                view = unless_gone(rollup_range, "/proc/%d/smaps_rollup" % pid, reused=True)
                real = unless_gone(rollup_range, "/proc/.real/%d/smaps_rollup" % pid)
                if start_time(pid) != s1:  # gone, or another process took the pid, meanwhile
                    # A walk held up by a daemon event can meet the pid
                    # taken twice (it is taken every 0.32 s here): the
                    # kernel walks again once only, then gives ESTALE.
                    gone += 1
                    continue
                if isinstance(view, OSError):
                    print("err %s: %s (its process unchanged)" % (view.filename, view.strerror), flush=True)
                    checked += 1
                    continue
                # The same process throughout: the view must have it if the
                # kernel does (both may say it is gone as it exits).
                if view is None and real is not None:
                    print("wrong: the view says churned pid %d is gone, the kernel has it" % pid, flush=True)
                elif real is not None and view != real and (
                        view == rollup_range("/proc/.real/%d/smaps_rollup" % parent)
                        or view.split()[0].split("-")[1] == real.split()[0].split("-")[1]):
                    # Its parent's span (a vfork child before its exec), or
                    # its own stack top with less mapped below (mid-exec).
                    stale += 1
                elif real is not None and view != real:
                    print("wrong smaps_rollup of churned pid %d (started at tick %d, %d ticks old): %r in the "
                          "view, %r in the kernel's" % (pid, s1, now_ticks - s1, view, real), flush=True)
                checked += 1
            if time.monotonic() - last >= 1:
                print("%.6f churn %d %d %d" % (time.monotonic(), checked, gone, stale), flush=True)
                checked = gone = stale = 0
                last = time.monotonic()

    # The checker in a process of its own: the churn's forks hold the GIL.
    if os.fork() == 0:
        check()
    n = 0
    start = time.monotonic()
    while True:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(base + n % CHURN_WINDOW))
        os.posix_spawn("/bin/sleep", ["sleep", str(CHURN_LIFE)], os.environ)
        n += 1
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        delay = start + n / CHURN_RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)


# ---------------------------------------------------------------- cgroups --

class Groups:
    """Three reader cgroups in the cpu, cpuset and memory hierarchies (v1)
    or one v2 directory each, with limits the soak changes, and what a
    reader of each must see. The third, for file-level binds, keeps its
    CPUs: a bind keeps the CPU class it was made in (see the README)."""

    PHASES = (
        # (CFS quota in CPUs or None, cpuset, memory MiB) of each group
        ((2, "0-1", 512), (1, "0-1", 384), (1, "0-1", 320)),
        ((None, "1", 256), (3, "0-1", 192), (1, "0-1", 160)),
    )

    def __init__(self, tag):
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        self.online = parse_cpu_list(read("/sys/devices/system/cpu/online"))
        if not {0, 1} <= self.online:
            raise benchlib.BenchError("needs CPUs 0 and 1 online (the limits it sets name them)")
        self.host_kib = kib_field(read("/proc/meminfo"), "MemTotal")
        roots = ["/sys/fs/cgroup"] if self.v2 else ["/sys/fs/cgroup/%s" % c for c in ("cpu", "cpuset", "memory")]
        self.dirs = [[os.path.join(r, "cgprocfs-soak-%s-%d" % (tag, g)) for r in roots] for g in range(3)]
        self.made = []
        for dirs in self.dirs:
            for d in dirs:
                os.mkdir(d)
                self.made.append(d)
            if not self.v2:
                cpuset = next(d for d in dirs if "/cpuset/" in d)
                parent = os.path.dirname(cpuset)
                for f in ("cpuset.mems", "cpuset.cpus"):
                    with open(os.path.join(cpuset, f), "w") as out:
                        out.write(read(os.path.join(parent, f)).strip())
        self.phase = None
        self.set_phase(0)

    def write(self, g, controller, name, value):
        d = self.dirs[g][0] if self.v2 else next(x for x in self.dirs[g] if "/%s/" % controller in x)
        with open(os.path.join(d, name), "w") as f:
            f.write(value)

    def set_phase(self, phase):
        for g, (quota, cpus, mib) in enumerate(self.PHASES[phase]):
            if self.v2:
                self.write(g, "cpu", "cpu.max", "%s 100000" % (quota * 100000 if quota else "max"))
                self.write(g, "memory", "memory.max", str(mib << 20))
                self.write(g, "cpuset", "cpuset.cpus", cpus)
            else:
                self.write(g, "cpu", "cpu.cfs_quota_us", str(quota * 100000 if quota else -1))
                self.write(g, "memory", "memory.limit_in_bytes", str(mib << 20))
                self.write(g, "cpuset", "cpuset.cpus", cpus)
        self.phase = phase

    def expected(self, phase, g):
        """(CPUs, MemTotal kB) a reader of group g sees in phase."""
        quota, cpus, mib = self.PHASES[phase][g]
        n = len(parse_cpu_list(cpus) & self.online)
        if quota:
            n = min(n, quota)
        return max(1, n), min(self.host_kib, mib << 10)

    def move(self, pid, g):
        for d in self.dirs[g]:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def remove(self):
        for d in reversed(self.made):
            cgtest.remove_cgroups([d], os.path.dirname(d))
        return ["cgroup left: %s" % d for d in self.made if os.path.exists(d)]


# ------------------------------------------------------------------ soak --

class Soak:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="cgprocfs-soak-")
        self.lock = threading.Lock()
        self.failures = []       # (time, what)
        self.counts = collections.Counter()
        self.events = []         # (time, reader name or group, phase/group): see expected_at
        self.procs = []          # every Popen to kill at the end
        self.readers = {}        # name -> dict(proc, kind, group history)
        self.daemon = None       # the one serving: self.daemons.current
        self.daemons = None
        self.groups = None
        self.namespaces = None
        self.lab = None
        self.containers = collections.deque()
        self.samples = []        # (time, daemon pid, RSS bytes, fds)
        self.daemon_events = []  # (time, what)
        self.event_running = False
        self.stop = threading.Event()
        self.sanitized = bool(os.environ.get("CGPROCFS_SANITIZED"))

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 1000:
                self.failures.append((time.monotonic() - self.t0, what))

    # --- readers -------------------------------------------------------

    def spawn(self, argv, name, on_line):
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                             start_new_session=True, env=dict(os.environ, CG_MNT=self.daemon.mnt))
        self.procs.append(p)
        threading.Thread(target=self.pump, args=(p, name, on_line), daemon=True).start()
        return p

    def pump(self, p, name, on_line):
        for line in p.stdout:
            line = line.strip()
            if self.stop.is_set():  # the end: what it reads goes first
                continue
            if line.startswith("err ") and self.stale_past_start(name, line):
                self.counts["reads past the start across a takeover and a class change (ESTALE)"] += 1
            elif line.startswith("err "):  # readers report a gone process's ENOENT only where it may be
                self.fail("%s: %s" % (name, line[4:]))
                self.counts["failed reads"] += 1
            elif line.startswith("wrong"):
                self.fail("%s: %s" % (name, line))
                self.counts["wrong"] += 1
            elif line:
                on_line(line)
        if not self.stop.is_set() and not name.startswith("container"):
            self.fail("%s ended early (exit %s)" % (name, p.wait()))

    def stale_past_start(self, name, line):
        """A read() (no file name: not an open) that got ESTALE, within
        TAKEOVER_WINDOW s of both a daemon event and a change of the
        reader's class (a move, or new limits): the documented answer to
        a read past the start of a per-open text (stat's) whose pass began
        with a class the caller no longer has, which the new daemon cannot
        continue (README "Upgrading without a remount")."""
        if not line.endswith("None: Stale file handle"):
            return False
        now = time.monotonic()
        with self.lock:
            moved = any(now - when <= TAKEOVER_WINDOW and who in (name, "limits") for when, who, _ in self.events)
            event = self.event_running or any(now - (self.t0 + when) <= TAKEOVER_WINDOW
                                              for when, _ in self.daemon_events)
        return moved and event

    def group_at(self, name, t):
        g = self.readers[name]["group0"]
        phase = 0
        for when, who, what in self.events:
            if when > t:
                break
            if who == name:
                g = what
            elif who == "limits":
                phase = what
        return g, phase

    def check_cpu_line(self, name, line):
        f = line.split()
        t, end, got = float(f[0]), float(f[1]), [int(x) for x in f[2:]]
        with self.lock:
            # Read between t and end: as things were at some time from a
            # grace before t to end.
            times = [t - GRACE, end] + [e[0] for e in self.events if t - GRACE <= e[0] <= end]
            # A move and a change of limits each within the grace, apart.
            at = [self.group_at(name, tau) for tau in times]
            allowed = [self.groups.expected(phase, g) for g in {a[0] for a in at} for phase in {a[1] for a in at}]
        self.counts["reads checked"] += 4
        t_rel = t - self.t0
        # Each file as it was at some time within the grace: the four reads
        # of a round are not one snapshot.
        if not all(any(v == (want[0] if i < 3 else want[1]) for want in allowed) for i, v in enumerate(got)):
            self.counts["wrong"] += 1
            self.fail("%s read (cpuinfo, stat, online, MemTotal) = %s at %.2f s, expected (CPUs, MemTotal) among %s; "
                      "last change at %.2f s" % (name, tuple(got), t_rel, sorted(set(allowed)),
                                                 max([e[0] for e in self.events if e[0] <= t] or [self.t0]) - self.t0))

    def check_smaps_line(self, name, line):
        _, _, pid, view, real = line.split()
        view, real = int(view), int(real)
        self.counts["reads checked"] += 1
        if abs(view - real) > real * 0.05:
            self.counts["wrong"] += 1
            self.fail("%s: smaps_rollup of %s: Rss %d kB in the view, %d kB in the kernel's" % (name, pid, view, real))

    def check_churn_line(self, line):
        _, _, checked, gone, stale = line.split()
        self.counts["churned processes checked"] += int(checked)
        self.counts["churned processes gone meanwhile"] += int(gone)
        self.counts["churned processes walked before their exec"] += int(stale)

    def start_readers(self):
        me = [PYTHON, os.path.abspath(__file__)]
        files_setup = "".join('mount --bind "$CG_MNT%s" %s || exit 97\n' % (p, p) for p in (
            "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys/devices/system/cpu/online"))
        for i in range(10):
            kind = "view" if i < 6 else "files"
            name = "cpu-%s-%d" % (kind, i)
            g = i % 2 if kind == "view" else 2
            self.readers[name] = {"group0": g}
            argv = cgtest.in_cgroups(self.groups.dirs[g], me + ["--role", "reader"],
                                     cgtest.view_setup_script("rbind") if kind == "view" else files_setup)
            self.readers[name]["proc"] = self.spawn(argv, name, lambda line, n=name: self.check_cpu_line(n, line))
        holders = []
        for mib in HOLDER_MIB:
            h = subprocess.Popen(me + ["--role", "holder", "--mib", str(mib)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            self.procs.append(h)
            if h.stdout.readline().strip() != "ready":
                raise benchlib.BenchError("a memory holder did not start")
            holders.append(h.pid)
        for i in range(2):
            name = "smaps-%d" % i
            argv = cgtest.in_cgroups([], me + ["--role", "smaps", "--pids", ",".join(map(str, holders))],
                                     cgtest.view_setup_script("rbind"))
            self.spawn(argv, name, lambda line, n=name: self.check_smaps_line(n, line))

    def start_churn(self):
        self.namespaces = benchlib.Namespaces(os.environ["CGPROCFS_OCI_HOOK"], self.daemon.mnt, self.work)
        init, _ = self.namespaces.add()
        self.spawn(self.namespaces.command(init, [PYTHON, os.path.abspath(__file__), "--role", "churn"]),
                   "churn", self.check_churn_line)

    # --- containers ----------------------------------------------------

    CONTAINER_READER = ("while :; do echo \"R $(grep -c ^processor /proc/cpuinfo) $(grep MemTotal /proc/meminfo)\"; "
                        "sleep 0.05; done")

    def start_container(self):
        def edit(config):
            config["linux"]["resources"]["memory"] = {"limit": CONTAINER_MEMORY}
        c = tc.Container(self.lab, self.CONTAINER_READER, edit=edit)
        c.start_detached()
        c.read_at = 0
        self.containers.append(c)
        self.counts["containers started"] += 1

    def check_containers(self, containers=None):
        want_mem = min(self.groups.host_kib, CONTAINER_MEMORY >> 10)
        for c in list(self.containers if containers is None else containers):
            with open(os.path.join(c.bundle, "stdout")) as f:
                f.seek(c.read_at)
                text = f.read()
            done = text.rfind("\n") + 1
            c.read_at += len(text[:done].encode())
            for line in text[:done].splitlines():
                m = re.match(r"R (\d+) MemTotal:\s+(\d+) kB$", line)
                self.counts["reads checked"] += 2
                if not m or (int(m.group(1)), int(m.group(2))) != (tc.expected_cpus(), want_mem):
                    self.counts["wrong"] += 1
                    self.fail("container %s read %r, expected %d CPUs and MemTotal %d kB"
                              % (c.id, line, tc.expected_cpus(), want_mem))

    def stop_container(self):
        c = self.containers.popleft()
        # Killed and gone before it is deleted: a view with a request of a
        # running reader would look stuck to Container.remove.
        cgtest.run(c.runtime.argv("kill", c.id, "KILL"), timeout=tc.RUN_TIMEOUT)
        if not cgtest.wait_until(lambda: not c.pids(), timeout=10):
            self.fail("container %s still runs 10 s after SIGKILL" % c.id)
        self.check_containers([c])
        for p in c.remove():
            self.fail("container %s: %s" % (c.id, p))

    # --- the daemon ----------------------------------------------------

    def sample(self):
        """The daemon's RSS and fds; pidfds (one per process whose entry
        the kernel caches, so as many as the churn has alive) apart."""
        pid = self.daemon.process.pid
        fds = pidfds = 0
        try:
            rss = kib_field(read("/proc/%d/status" % pid), "VmRSS") << 10
            for fd in os.listdir("/proc/%d/fd" % pid):
                with contextlib.suppress(OSError):
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[pidfd]":
                        pidfds += 1
                        continue
                fds += 1
        except OSError:
            return
        self.samples.append((time.monotonic() - self.t0, pid, rss, fds, pidfds))

    def daemon_event(self):
        """The next daemon event; the s to wait before the one after."""
        self.sample()
        self.event_running = True
        what = self.daemons.event()
        self.event_running = False
        self.daemon = self.lab.daemon = self.daemons.current
        self.daemon_events.append((time.monotonic() - self.t0, what))
        self.counts["daemon events"] += 1
        return self.args.calm if self.daemons.done % len(daemons.ROUND) == 0 else 0

    def check_faults(self):
        """Each fault of every round done fired (else the event tested
        nothing); the counts."""
        fired = self.daemons.fired()
        rounds = self.daemons.done // len(daemons.ROUND)
        if rounds < self.args.rounds:
            self.fail("%d whole rounds of daemon events done in %.1f minutes, where --rounds asks %d"
                      % (rounds, (time.monotonic() - self.t0) / 60, self.args.rounds))
        for _, fault in daemons.ROUND:
            if fault and fired.get(fault, 0) < rounds:
                self.fail("the fault %s fired %d times in %d rounds of daemon events"
                          % (fault, fired.get(fault, 0), rounds))
        return fired

    # --- the run -------------------------------------------------------

    def run(self):
        a = self.args
        self.daemon = cgtest.Daemon()
        self.daemon.start()
        self.daemons = daemons.Daemons(self.daemon, self.fail)
        self.groups = Groups(str(os.getpid()))
        self.lab = tc.Lab(self.daemon)
        self.lab.build()
        self.t0 = time.monotonic()
        self.start_readers()
        self.start_churn()
        for _ in range(4):
            self.start_container()
        print("soak: %g minutes; containers every %g s, a daemon event every %g s (%d a round, then %g s calm); "
              "%s daemon" % (a.minutes, a.containers_every, a.daemon_every, len(daemons.ROUND), a.calm,
                             "sanitized" if self.sanitized else "plain"), flush=True)
        end = self.t0 + a.minutes * 60
        # --rounds: on past --minutes until that many whole rounds of daemon
        # events are done, for as long again at most (a slower machine
        # takes longer over each event).
        events = a.rounds * len(daemons.ROUND)
        last = self.t0 + 2 * a.minutes * 60
        due = {"limits": LIMITS_EVERY, "moves": MOVES_EVERY, "sample": SAMPLE_EVERY,
               "containers": a.containers_every, "daemon": a.daemon_every}
        next_at = {k: self.t0 + v for k, v in due.items()}
        movable = sorted(n for n in self.readers if n.startswith("cpu-view-"))
        moves = 0
        while (time.monotonic() < end or self.daemons.done < events and time.monotonic() < last) and \
                len(self.failures) < 1000:
            now = time.monotonic()
            self.check_containers()
            for k in sorted(next_at, key=next_at.get):
                if next_at[k] > now:
                    continue
                next_at[k] += due[k]
                # Each change dated before it is made: a reader may see it
                # from then on.
                if k == "limits":
                    with self.lock:
                        self.events.append((time.monotonic(), "limits", 1 - self.groups.phase))
                        self.groups.set_phase(1 - self.groups.phase)
                elif k == "moves":
                    name = movable[moves % len(movable)]
                    moves += 1
                    with self.lock:
                        g = 1 - self.group_at(name, time.monotonic())[0]
                        self.events.append((time.monotonic(), name, g))
                        self.groups.move(self.readers[name]["proc"].pid, g)
                    self.counts["cgroup moves"] += 1
                elif k == "sample":
                    self.sample()
                elif k == "containers":
                    self.stop_container()
                    self.start_container()
                elif k == "daemon":
                    next_at[k] = time.monotonic() + due[k] + self.daemon_event()
            time.sleep(0.1)
        self.sample()
        self.stop.set()

    def growth(self):
        """Per daemon: (pid, lived s, RSS and fd growth after the warm-up)."""
        out = []
        by_pid = collections.OrderedDict()
        for t, pid, rss, fds, pidfds in self.samples:
            by_pid.setdefault(pid, []).append((t, rss, fds, pidfds))
        for pid, rows in by_pid.items():
            first = rows[0][0]
            after = [r for r in rows if r[0] - first >= self.args.warmup - 1e-6]
            if len(after) >= 2:
                out.append((pid, rows[-1][0] - first, after[-1][1] - after[0][1], after[-1][2] - after[0][2],
                            after[0][1], after[0][2], max(r[3] for r in after)))
        return out

    def report(self):
        print("\nsoak: %.1f minutes" % ((time.monotonic() - self.t0) / 60))
        for k in sorted(self.counts):
            print("  %-36s %d" % (k, self.counts[k]))
        for t, what in self.daemon_events:
            print("  at %6.0f s: daemon %s" % (t, what))
        fired = self.check_faults()
        print("  faults fired: %s" % (", ".join("%s %d" % kv for kv in sorted(fired.items())) or "none"))
        grown = self.growth()
        for pid, lived, rss, fds, base, base_fds, pidfds in grown:
            print("  daemon %d: %.1f MiB and %d fds after the warm-up, then %+.2f MiB and %+d fds over %.0f s "
                  "(besides up to %d pidfds)" % (pid, base / 2**20, base_fds, rss / 2**20, fds,
                                                  lived - self.args.warmup, pidfds))
            if fds >= FD_GROWTH:
                self.fail("daemon %d grew by %d fds" % (pid, fds))
            if rss >= RSS_GROWTH and not self.sanitized:
                self.fail("daemon %d grew by %.1f MiB" % (pid, rss / 2**20))
        if not grown:
            print("  no daemon lived past the %g s warm-up: growth not measured" % self.args.warmup)

    def cleanup(self):
        self.stop.set()
        problems = []
        for p in self.procs:
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                p.kill()
            p.wait()
        while self.containers:
            problems += self.containers.popleft().remove()
        if self.namespaces:
            self.namespaces.close()
        if self.groups:
            problems += self.groups.remove()
        if self.lab:
            problems += self.lab.cleanup()
        if self.daemons:
            problems += self.daemons.stop()
            if self.daemon.returncode not in (0, None):
                problems.append("the daemon exited with status %s" % self.daemon.returncode)
            log = self.daemons.log()
            if self.args.log:
                with open(self.args.log, "w") as f:
                    f.write(log)
            for m in SANITIZER.finditer(log):
                problems.append("sanitizer report: " + log[m.start():m.start() + 8000])
                break
        if cgtest.mounts_under(self.work):
            problems.append("mounts left under %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)
        return problems


def main():
    p = argparse.ArgumentParser(description="cgprocfs under hours of mixed load (needs root).")
    p.add_argument("--minutes", type=float, default=60, help="how long (default 60)")
    p.add_argument("--containers-every", type=float, default=30, help="s between container restarts (default 30)")
    p.add_argument("--daemon-every", type=float, default=10,
                   help="s between daemon events: --replace, SIGKILL, faults in a handover (default 10)")
    p.add_argument("--calm", type=float, default=300,
                   help="s without a daemon event after each round of them (default 300)")
    p.add_argument("--rounds", type=int, default=0,
                   help="go on past --minutes (up to twice as long) until this many whole rounds of daemon events "
                        "are done, and fail if they are not (default 0)")
    p.add_argument("--log", help="write the daemons' stderr to this file at the end")
    p.add_argument("--warmup", type=float, default=60, help="s of a daemon's life before growth counts (default 60)")
    p.add_argument("--role", choices=("reader", "smaps", "holder", "churn"), help=argparse.SUPPRESS)
    p.add_argument("--pids", help=argparse.SUPPRESS)
    p.add_argument("--mib", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        return {"reader": role_reader, "smaps": role_smaps, "holder": role_holder, "churn": role_churn}[
            args.role](args) or 0
    if os.geteuid() != 0:
        p.error("needs root")
    for var in ("CGPROCFS", "CGPROCFS_OCI_HOOK"):
        if not os.environ.get(var):
            p.error("$%s must name the built %s (see tests/soak/run-soak.sh)" % (var, var.lower()))
    benchlib.exit_on_signals()
    soak, status = None, 1
    try:
        soak = Soak(args)
        soak.run()
        soak.report()
        status = 0
    except (benchlib.BenchError, cgtest.Failure, OSError, subprocess.TimeoutExpired) as e:
        print("soak: %s" % e, file=sys.stderr)
    except KeyboardInterrupt:
        status = 130
        if soak is not None and getattr(soak, "t0", None) is not None:
            soak.report()           # what an interrupted soak saw until then
            print("soak: interrupted")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if soak is not None:
            for problem in soak.cleanup():
                soak.fail(problem)
            kinds = collections.OrderedDict()
            for t, what in soak.failures:
                kinds.setdefault(re.sub(r"\d+", "N", what), []).append((t, what))
            for seen in kinds.values():
                print("FAIL at %.0f s: %s%s" % (seen[0][0], seen[0][1], " (and %d more like it)" % (len(seen) - 1)
                                                 if len(seen) > 1 else ""), file=sys.stderr)
            if soak.failures:
                print("soak: %d failures" % len(soak.failures), file=sys.stderr)
                status = 1
            elif status == 0:
                print("soak: passed")
    return status


if __name__ == "__main__":
    sys.exit(main())
