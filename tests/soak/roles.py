"""What the soak's subprocesses run (soak.py --role ...): readers that
check what they read, the memory holders, the process churn."""

import collections
import contextlib
import errno
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from test_cpuview import parse_cpu_list  # noqa: E402

CHURN_RATE, CHURN_WINDOW, CHURN_LIFE = 200, 64, 0.2
SETTLED = 0.05  # s: a churned process is checked once this old
GONE = ("No such file or directory", "No such process")
# The rounds a reader keeps the texts of, for the soak to ask for (dump_ask).
READER_KEEPS = 64


def kib_field(text, name):
    m = re.search(r"^%s:\s+(\d+) kB" % name, text, re.M)
    return int(m.group(1)) if m else -1


def read(path):
    with open(path) as f:
        return f.read()


READER_FILES = ("/proc/cpuinfo", "/proc/stat", "/sys/devices/system/cpu/online", "/proc/meminfo")


def role_reader(args):
    """Read the CPU and memory files over and over: one line a round,
    "<monotonic at start> <at end> <cpuinfo CPUs> <stat cpuN lines> <online
    CPUs> <MemTotal kB>", or "err <what>" (and go on). It keeps the texts
    of its last READER_KEEPS rounds, for the soak to ask for (dump_ask)."""
    kept = collections.deque(maxlen=READER_KEEPS)
    ask = os.path.join(args.dump_dir, args.name + ".ask") if args.dump_dir else None
    while True:
        t = time.monotonic()
        try:
            texts = {path: read(path) for path in READER_FILES}
            cpus = len(re.findall(r"^processor\s", texts["/proc/cpuinfo"], re.M))
            stat = len(re.findall(r"^cpu\d+ ", texts["/proc/stat"], re.M))
            online = len(parse_cpu_list(texts["/sys/devices/system/cpu/online"]))
            mem = kib_field(texts["/proc/meminfo"], "MemTotal")
            print("%.6f %.6f %d %d %d %d" % (t, time.monotonic(), cpus, stat, online, mem), flush=True)
            kept.append(["%.6f" % t, texts])
        except OSError as e:
            print("err %s: %s" % (e.filename, e.strerror), flush=True)
        if ask and os.path.exists(ask):
            dump_kept(ask, kept)
        time.sleep(0.02)


def dump_kept(ask, kept):
    """Answer the soak's ask (a file NAME.ask): the rounds kept, as JSON
    [[start, {path: text}], ...], in NAME.<n>.json; the ask goes."""
    n = 0
    while os.path.exists("%s.%d.json" % (ask[:-len(".ask")], n)):
        n += 1
    out = "%s.%d.json" % (ask[:-len(".ask")], n)
    with open(out + ".part", "w") as f:
        json.dump(list(kept), f)
    os.rename(out + ".part", out)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ask)


def dump_ask(dump_dir, name):
    """Ask reader name for the texts of its last rounds (role_reader)."""
    with open(os.path.join(dump_dir, name + ".ask"), "w"):
        pass


def dumped_rounds(dump_dir, name):
    """{start: {path: text}} of every round reader name dumped."""
    rounds = {}
    n = 0
    while os.path.exists(os.path.join(dump_dir, "%s.%d.json" % (name, n))):
        with open(os.path.join(dump_dir, "%s.%d.json" % (name, n))) as f:
            rounds.update({t: texts for t, texts in json.load(f)})
        n += 1
    return rounds


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


ROLES = {"reader": role_reader, "smaps": role_smaps, "holder": role_holder, "churn": role_churn}
