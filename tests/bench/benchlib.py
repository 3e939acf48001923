"""Helpers shared by the Python benchmarks (imported from the script's
own directory)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import cgtest  # noqa: E402

READY_TIMEOUT = 10.0


# Functions the benches' reader scripts (run with python -c, in cgroups and
# containers) start with: once(path), an open + read to EOF + close of
# path, its ns; requests(mnt), the FUSE requests MNT's daemon has taken.
READER_FUNCTIONS = r"""
import os, time
def once(path):
    t = time.perf_counter_ns()
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, 65536):
        pass
    os.close(fd)
    return time.perf_counter_ns() - t
def requests(mnt):
    with open(mnt + "/.cgprocfs/stats") as f:
        return sum(int(l.split()[-1]) for l in f if l.startswith("cgprocfs_requests_total{"))
"""


class BenchError(Exception):
    """A benchmark cannot go on; the message says why."""


def start_daemon(cmd, mnt, log_path, **popen_args):
    """Start the daemon (cmd, ending with its mountpoint mnt) with its output
    in log_path, in a session of its own, and wait until it serves."""
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True, **popen_args)
    deadline = time.monotonic() + READY_TIMEOUT
    while not os.path.exists(os.path.join(mnt, "proc", ".real", "self")):
        if daemon.poll() is not None:
            raise BenchError("daemon exited at start-up (status %s)" % daemon.returncode)
        if time.monotonic() > deadline:
            raise BenchError("daemon not ready after %.0f s" % READY_TIMEOUT)
        time.sleep(0.05)
    return daemon


def start_lxcfs(mnt, pidfile, log_path, options=()):
    """Start LXCFS (Debian's lxcfs, with options) on mnt with its own
    pidfile, in the foreground of a session of its own, and wait until it
    serves."""
    lxcfs = shutil.which("lxcfs")
    if not lxcfs:
        raise BenchError("lxcfs is not installed (apt-get install lxcfs)")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([lxcfs, *options, "-p", pidfile, mnt], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(os.path.join(mnt, "proc", "cpuinfo")):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise BenchError("lxcfs did not start (see %s)" % log_path)
        time.sleep(0.05)
    return proc


def stop_served(proc, mnt):
    """Stop the daemon or LXCFS proc (if it was started) serving mnt, and
    make sure nothing stays mounted there."""
    if proc:
        proc.terminate()
        proc.wait(timeout=10)
    subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)


def read_stats(mnt, prefix="cgprocfs_smaps_"):
    """The samples of MNT/.cgprocfs/stats, {name: value}, with prefix
    taken off the names that have it."""
    out = {}
    with open(os.path.join(mnt, ".cgprocfs", "stats")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, value = line.split()
                out[name[len(prefix):] if name.startswith(prefix) else name] = float(value)
    return out


def exit_on_signals():
    """SIGTERM and SIGHUP exit (so that finally blocks clean up), and SIGINT
    raises KeyboardInterrupt even where it came in ignored (a background
    job of a script)."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)


class Namespaces:
    """The cheapest real containers (cgtest.start_namespace), each given the
    view at mnt by the real OCI hook (hook_bin), so each has its own pid
    namespace, FUSE session and procfs in the daemon. work: a directory for
    the bundle. close() ends them all."""

    def __init__(self, hook_bin, mnt, work):
        self.hook_bin, self.mnt = hook_bin, mnt
        self.bundle = os.path.join(work, "bundle")
        os.makedirs(self.bundle, exist_ok=True)
        with open(os.path.join(self.bundle, "config.json"), "w") as f:
            json.dump(cgtest.HOOK_BUNDLE_CONFIG, f)
        self.holders = []  # the unshare processes
        self.inits = []  # their namespaces' inits (host pids)

    def add(self):
        """One more: (its init's host pid, the hook's run in ms)."""
        holder, pid = cgtest.start_namespace()
        self.holders.append(holder)
        self.inits.append(pid)
        t0 = time.monotonic()
        rc, _, err = cgtest.give_view(self.mnt, self.bundle, pid, "bench-%d" % pid, hook=self.hook_bin)
        ms = (time.monotonic() - t0) * 1e3
        if rc != 0:
            raise BenchError("the hook failed for container %d: %s" % (len(self.inits), err.strip()))
        return pid, ms

    @staticmethod
    def command(init, argv):
        """argv run in the pid and mount namespaces of init."""
        return ["nsenter", "--target", str(init), "--mount", "--pid"] + list(argv)

    def close(self):
        for holder in self.holders:
            cgtest.end_namespace(holder)
        self.holders, self.inits = [], []


class Cgroup:
    """One cgroup of a bench in every v1 hierarchy it limits through (or
    the v2 one): a CPU quota of quota per period (µs), and memory bytes."""

    def __init__(self, name, quota, period, memory):
        root = "/sys/fs/cgroup"
        v2 = os.path.exists(os.path.join(root, "cgroup.controllers"))
        names = [""] if v2 else ["cpu", "cpuacct", "cpuset", "memory", "blkio"]
        self.dirs = [os.path.join(root, c, name) for c in names if os.path.isdir(os.path.join(root, c))]
        for d in self.dirs:
            os.mkdir(d)
            if "/cpuset/" in d:
                for f in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(os.path.dirname(d), f)) as src, open(os.path.join(d, f), "w") as dst:
                        dst.write(src.read())
        limits = {"cpu.max": "%d %d" % (quota, period), "memory.max": str(memory)} if v2 else \
            {"cpu.cfs_quota_us": str(quota), "memory.limit_in_bytes": str(memory)}
        for d in self.dirs:
            for f, value in limits.items():
                if os.path.exists(os.path.join(d, f)):
                    with open(os.path.join(d, f), "w") as out:
                        out.write(value)

    def run(self, argv):
        """argv in the cgroup: the JSON of its last line of output."""
        r = subprocess.run(cgtest.in_cgroups(self.dirs, argv), capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise BenchError("%s failed:\n%s" % (argv[:3], r.stderr))
        return json.loads(r.stdout.strip().splitlines()[-1])

    def remove(self):
        for d in self.dirs:
            cgtest.remove_cgroups([d], os.path.dirname(d))


def cpu_seconds(pid):
    """utime + stime of a whole process (all its threads, alive or not);
    0 once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_sum(pid, read):
    """The sum of read(task directory) over the live threads of pid (a
    thread that ended meanwhile counts 0)."""
    total = 0
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            total += read(os.path.join(task, tid))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def run_seconds(pid):
    """The time the scheduler ran pid's live threads (schedstat's
    sum_exec_runtime, ns, exact), where cpu_seconds counts clock ticks
    (one tick for whichever thread runs when it comes)."""
    def read(d):
        with open(os.path.join(d, "schedstat")) as f:
            return int(f.read().split()[0])
    return threads_sum(pid, read) / 1e9


def switches(pid):
    """Context switches of pid's live threads, voluntary (a wait: each
    wakeup of a worker) and not."""
    def read(d):
        with open(os.path.join(d, "status")) as f:
            return sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
    return threads_sum(pid, read)


def status_field(pid, name):
    """The number of the field name of /proc/<pid>/status (kB for sizes)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise BenchError("no %s in /proc/%d/status" % (name, pid))


def percentile(values, q):
    """The q-quantile (0..1) of values, nearest rank; nan for none."""
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def built(build_dir, *paths):
    """The absolute paths of executables built in build_dir (paths relative
    to it); BenchError if one is missing."""
    out = [os.path.join(os.path.abspath(build_dir), p) for p in paths]
    for exe in out:
        if not os.access(exe, os.X_OK):
            raise BenchError("%s is missing (run ninja -C %s)" % (exe, build_dir))
    return out


def run_bench(name, make):
    """Run make().run(), then its cleanup() on every exit path: the exit
    status (0 ran, 1 failed or left something behind, 130 interrupted).
    On a failure, the bench's daemon_log(), if it has one, is printed."""
    exit_on_signals()
    bench, status = None, 1
    try:
        bench = make()
        bench.run()
        status = 0
    except (BenchError, cgtest.Failure, OSError, subprocess.TimeoutExpired) as e:
        print("%s: %s" % (name, e), file=sys.stderr)
        if bench is not None and hasattr(bench, "daemon_log"):
            print("daemon log:\n" + bench.daemon_log(), file=sys.stderr)
    except KeyboardInterrupt:
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if bench is not None and not bench.cleanup() and status == 0:
            status = 1
    return status


def stop_daemon_and_work(daemon, mnt, work):
    """Stop the daemon serving mnt (if started), then remove work unless
    something is still mounted under it: the problems met, as lines."""
    problems = []
    if daemon is not None:
        try:
            stop_served(daemon, mnt)
        except subprocess.TimeoutExpired:
            problems.append("daemon did not stop on SIGTERM; killed it")
            daemon.kill()
            daemon.wait()
    with open("/proc/self/mountinfo") as f:
        if any(work in line for line in f):
            problems.append("left mounts under %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return problems
