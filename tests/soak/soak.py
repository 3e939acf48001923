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
    them stopped and a new one started every --containers-every s, whose
    sysinfo(2) the daemon's seccomp listener answers (busybox free's
    total must be 128 MiB, through every daemon event);
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

Each wrong read is reported on its own, with the daemon events around it
and the reader's cgroup and limits before and after; a CPU reader's texts
of that round are saved in a directory the report names (roles.py).

It passes when no read failed (a process that is gone may be ENOENT or
ESRCH; a read() of a file opened before a takeover may be ESTALE after a
class change: Soak.stale_past_start), no content was wrong, every event ended with a daemon serving
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
import test_sysinfo  # noqa: E402
from groups import Groups  # noqa: E402
from roles import ROLES, READER_FILES, dump_ask, dumped_rounds, kib_field, read  # noqa: E402

PYTHON = "/usr/bin/python3"
HOLDER_MIB = (16, 32, 48, 64)
TAKEOVER_WINDOW = 5  # s: see Soak.stale_past_start
LIMITS_EVERY, MOVES_EVERY, SAMPLE_EVERY = 10.0, 5.0, 10.0
GRACE = 1.0  # s the views have to follow a change
CONTAINER_MEMORY = 128 << 20
RSS_GROWTH, FD_GROWTH = 5 << 20, 16
SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|ThreadSanitizer")


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="cgprocfs-soak-")
        self.lock = threading.Lock()
        self.failures = []       # (time, what)
        self.wrong_reads = []    # (time, reader, what, the round's start as the reader printed it, or None)
        self.dumps = os.path.join(self.work, "dumps")  # readers' texts (roles.dump_ask)
        self.counts = collections.Counter()
        self.events = []         # (time, reader name or group, phase/group): see expected_at
        self.writes = []         # (an event's time, when its cgroup files were all written)
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

    def wrong(self, name, what, start=None):
        """A wrong read by reader name, whose round began at start (as the
        reader printed it) if its texts are kept (roles.role_reader)."""
        self.counts["wrong"] += 1
        self.fail("wrong: %s: %s" % (name, what))
        with self.lock:
            self.wrong_reads.append((time.monotonic() - self.t0, name, what, start))
        if start:
            dump_ask(self.dumps, name)

    def daemon_context(self, t):
        """Where t (s from the start) falls among the daemon events."""
        before = [(w, what) for w, what in self.daemon_events if w <= t]
        after = [(w, what) for w, what in self.daemon_events if w > t]
        parts = ["%.2f s after the daemon event %r (at %.0f s)" % (t - before[-1][0], before[-1][1], before[-1][0])
                 if before else "before any daemon event"]
        if after:
            parts.append("%.2f s before %r" % (after[0][0] - t, after[0][1]))
        return "; ".join(parts)

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
                self.counts["reads across a takeover and a class change (ESTALE)"] += 1
            elif line.startswith("err "):  # readers report a gone process's ENOENT only where it may be
                self.fail("%s: %s" % (name, line[4:]))
                self.counts["failed reads"] += 1
            elif line.startswith("wrong"):
                self.wrong(name, line)
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
        continue, or to any read of a text the page cache keeps of a class
        the new daemon has not met (README "Upgrading without a remount")."""
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
            # A change still being written a grace before t: what was before
            # it (a text rendered meanwhile is served up to a grace later).
            times += [when - 1e-6 for when, done in self.writes if when < t - GRACE <= done]
            # A move and a change of limits each within the grace, apart.
            at = [self.group_at(name, tau) for tau in times]
            allowed = [self.groups.expected(phase, g) for g in {a[0] for a in at} for phase in {a[1] for a in at}]
        self.counts["reads checked"] += 4
        t_rel = t - self.t0
        # Each file as it was at some time within the grace: the four reads
        # of a round are not one snapshot.
        if not all(any(v == (want[0] if i < 3 else want[1]) for want in allowed) for i, v in enumerate(got)):
            self.wrong(name, "read (cpuinfo, stat, online, MemTotal) = %s from %.2f s to %.2f s, expected (CPUs, "
                       "MemTotal) among %s; its (group, limits phase) %s before, %s at the end; last change at %.2f s"
                       % (tuple(got), t_rel, end - self.t0, sorted(set(allowed)), at[0], at[1],
                          max([e[0] for e in self.events if e[0] <= t] or [self.t0]) - self.t0), start=f[0])

    def check_smaps_line(self, name, line):
        _, _, pid, view, real = line.split()
        view, real = int(view), int(real)
        self.counts["reads checked"] += 1
        if abs(view - real) > real * 0.05:
            self.wrong(name, "smaps_rollup of %s: Rss %d kB in the view, %d kB in the kernel's" % (pid, view, real))

    def check_churn_line(self, line):
        _, _, checked, gone, stale = line.split()
        self.counts["churned processes checked"] += int(checked)
        self.counts["churned processes gone meanwhile"] += int(gone)
        self.counts["churned processes walked before their exec"] += int(stale)

    def start_readers(self):
        me = [PYTHON, os.path.abspath(__file__)]
        os.mkdir(self.dumps)
        files_setup = "".join('mount --bind "$CG_MNT%s" %s || exit 97\n' % (p, p) for p in (
            "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys/devices/system/cpu/online"))
        for i in range(10):
            kind = "view" if i < 6 else "files"
            name = "cpu-%s-%d" % (kind, i)
            g = i % 2 if kind == "view" else 2
            self.readers[name] = {"group0": g}
            argv = cgtest.in_cgroups(self.groups.dirs[g], me + ["--role", "reader", "--name", name,
                                                                  "--dump-dir", self.dumps],
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

    # A round: the CPUs of cpuinfo, MemTotal, and busybox free's total,
    # which is sysinfo(2)'s totalram, answered by the daemon's listener.
    CONTAINER_READER = ("while :; do echo \"R $(grep -c ^processor /proc/cpuinfo) $(grep MemTotal /proc/meminfo) "
                        "F $(busybox free | busybox awk '/^Mem:/ { print $2 }')\"; sleep 0.05; done")

    def start_container(self):
        def edit(config):
            config["linux"]["resources"]["memory"] = {"limit": CONTAINER_MEMORY}
            config["linux"]["seccomp"] = test_sysinfo.seccomp_notify(self.listener, ["sysinfo"])
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
                m = re.match(r"R (\d+) MemTotal:\s+(\d+) kB F (\d+)$", line)
                self.counts["reads checked"] += 2
                self.counts["container sysinfo() calls checked"] += 1
                if not m or tuple(map(int, m.groups())) != (tc.expected_cpus(), want_mem, want_mem):
                    self.wrong("container " + c.id, "read %r, expected %d CPUs, MemTotal %d kB and busybox free's "
                               "total %d" % (line, tc.expected_cpus(), want_mem, want_mem))

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
        self.listener = test_sysinfo.listener_path(self.daemon)
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
                # from then on; and what was before, until it is written.
                if k == "limits":
                    with self.lock:
                        self.events.append((time.monotonic(), "limits", 1 - self.groups.phase))
                        self.groups.set_phase(1 - self.groups.phase)
                        self.writes.append((self.events[-1][0], time.monotonic()))
                elif k == "moves":
                    name = movable[moves % len(movable)]
                    moves += 1
                    with self.lock:
                        g = 1 - self.group_at(name, time.monotonic())[0]
                        self.events.append((time.monotonic(), name, g))
                        self.groups.move(self.readers[name]["proc"].pid, g)
                        self.writes.append((self.events[-1][0], time.monotonic()))
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

    def report_wrong_reads(self):
        """Each wrong read, where it falls among the daemon events, and
        the texts a reader kept of it, in a directory kept for them."""
        if not self.wrong_reads:
            return
        kept = tempfile.mkdtemp(prefix="cgprocfs-soak-wrong-")
        cgtest.wait_until(lambda: not any(n.endswith(".ask") for n in os.listdir(self.dumps)), timeout=5)
        print("  wrong reads (their texts, where a reader kept them, in %s):" % kept)
        dumped = {name: dumped_rounds(self.dumps, name) for _, name, _, start in self.wrong_reads[:50] if start}
        for i, (t, name, what, start) in enumerate(self.wrong_reads[:50]):
            texts = dumped[name].get(start) if start else None
            saved = ""
            if texts:
                saved = os.path.join(kept, "%d-%s.txt" % (i, name))
                with open(saved, "w") as f:
                    for path in READER_FILES:
                        f.write("==> %s <==\n%s\n" % (path, texts.get(path, "(not read)")))
                saved = "; texts in " + os.path.basename(saved)
            elif start:
                saved = "; its texts were not kept (the reader did not answer)"
            print("  %6.2f s %s: %s (%s)%s" % (t, name, what, self.daemon_context(t), saved))

    def report(self):
        if self.args.samples:
            with open(self.args.samples, "w") as f:
                f.write("# s daemon-pid rss-bytes fds pidfds\n")
                f.writelines("%.1f %d %d %d %d\n" % row for row in self.samples)
        print("\nsoak: %.1f minutes" % ((time.monotonic() - self.t0) / 60))
        for k in sorted(self.counts):
            print("  %-36s %d" % (k, self.counts[k]))
        self.report_wrong_reads()
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


def events_of(text):
    """--events' round: [(kind, fault or None), ...], each one of daemons.ROUND."""
    round_ = [(e.split("=", 1) + [None])[:2] for e in text.split(",")]
    round_ = [(kind, fault) for kind, fault in round_]
    unknown = [e for e in round_ if e not in daemons.ROUND]
    if unknown:
        raise argparse.ArgumentTypeError("not a daemon event of the round: %s (they are %s)" % (
            unknown, ", ".join(k + ("=" + f if f else "") for k, f in daemons.ROUND)))
    return round_


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
    p.add_argument("--events", type=events_of,
                   help="a round of only these daemon events, for a targeted run: KIND[=FAULT],... of the round "
                        "tests/soak/daemons.py describes, e.g. replace=daemon:take-host,replace")
    p.add_argument("--log", help="write the daemons' stderr to this file at the end")
    p.add_argument("--samples", help="write the daemons' RSS and fds, sampled every %g s, to this file at the end"
                   % SAMPLE_EVERY)
    p.add_argument("--warmup", type=float, default=60, help="s of a daemon's life before growth counts (default 60)")
    p.add_argument("--role", choices=("reader", "smaps", "holder", "churn"), help=argparse.SUPPRESS)
    p.add_argument("--pids", help=argparse.SUPPRESS)
    p.add_argument("--mib", type=int, help=argparse.SUPPRESS)
    p.add_argument("--name", help=argparse.SUPPRESS)
    p.add_argument("--dump-dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.events:
        daemons.ROUND[:] = args.events
    if args.role:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        return ROLES[args.role](args) or 0
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
