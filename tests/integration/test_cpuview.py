"""The CPU view seen by callers in real cgroup v1 cpusets and CPU quotas.

Each caller is a fresh process that first joins the test's cgroups and
then binds the view over /proc and /sys/devices/system/cpu (or, LXCFS
style, over the three files alone) in a private mount namespace. What
it must see is derived at run time from the host's files and from the
cgroup files the test wrote, with the design's rule:

    C = effective cpuset & online
    N = max(1, min(|C|, ceil(min over the cgroup and its ancestors of quota/period)))

The view shows N CPUs of C with their host numbers: all of C when N = |C|;
under a quota the N its placement chose (spread over the machine, kept
for the cgroup's life), which the test takes from the caller's `online`
and checks against C; every other file must agree with it. A present CPU
not shown looks offlined (online 0, no topology).

The test cgroups are named cgprocfs-test-<pid> (one directory per
controller, the cases' cgroups below it) and are removed on every exit
path; a last test checks that they are gone."""

import contextlib
import errno
import fractions
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, check_ran, describe, diag  # noqa: E402

CGROUP_ROOTS = {"cpuset": "/sys/fs/cgroup/cpuset", "cpu": "/sys/fs/cgroup/cpu"}
SYS_CPU = "/sys/devices/system/cpu"
TOP = "cgprocfs-test-%d" % os.getpid()
MOVE_DEADLINE = 1.5      # the view follows a moved process within this (s)
SUITE_TIMEOUT = 120
SEPARATOR = "=" * 70

# The caller: join the cgroups (before anything reads the view, so the
# daemon never sees this process elsewhere), then make the mounts in a
# private mount namespace and exec the command with the same pid.
SETUPS = {
    # The whole view, as cgtest.in_view binds it.
    "view": ('mount --rbind "$CG_MNT/proc" /proc || exit 97\n'
             'mount --bind "$CG_MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n'),
    # File by file, the way LXCFS users bind: the rest of /proc stays real.
    "files": ('mount --bind "$CG_MNT/proc/cpuinfo" /proc/cpuinfo || exit 97\n'
              'mount --bind "$CG_MNT/proc/stat" /proc/stat || exit 97\n'
              'mount --bind "$CG_MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n'),
    # The real /proc, same cgroups.
    "real": "",
}

# Everything a caller reports in one run, as JSON on stdout.
PROBE = r'''
import glob, json, os, subprocess

def sh(cmd):
    p = subprocess.run(["bash", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return {"errno": e.errno, "error": str(e)}

res = {"cgroup": read("/proc/self/cgroup"), "os_cpu_count": os.cpu_count(),
       "affinity": len(os.sched_getaffinity(0))}
try:
    import psutil
    res["psutil_logical"] = psutil.cpu_count()
    res["psutil_physical"] = psutil.cpu_count(logical=False)
    res["psutil_percpu"] = len(psutil.cpu_times(percpu=True))
except Exception as e:
    res["psutil_error"] = repr(e)
for key, cmd in [("getconf_onln", "getconf _NPROCESSORS_ONLN"), ("getconf_conf", "getconf _NPROCESSORS_CONF"),
                 ("nproc_all", "nproc --all"), ("nproc", "nproc"), ("lscpu_p", "lscpu -p"),
                 ("grep_processor", "grep -c ^processor /proc/cpuinfo"),
                 ("ls_cpus", "ls /sys/devices/system/cpu | grep -c '^cpu[0-9]'")]:
    res[key] = sh(cmd)
res["files"] = {name: read(path) for name, path in [
    ("cpuinfo", "/proc/cpuinfo"), ("stat", "/proc/stat"),
    ("online", "/sys/devices/system/cpu/online"), ("possible", "/sys/devices/system/cpu/possible"),
    ("present", "/sys/devices/system/cpu/present"), ("offline", "/sys/devices/system/cpu/offline")]}
res["listing"] = sorted(os.listdir("/sys/devices/system/cpu"))
res["cpudirs"] = {}
for d in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*")):
    topo = os.path.join(d, "topology")
    res["cpudirs"][os.path.basename(d)] = {
        "entries": sorted(os.listdir(d)),
        "online": read(os.path.join(d, "online")) if os.path.exists(os.path.join(d, "online")) else None,
        "topology": {n: read(os.path.join(topo, n)) for n in sorted(os.listdir(topo))}
                    if os.path.isdir(topo) else None}
for key, cmd in [("hwloc_count", "hwloc-calc --number-of pu all"),
                 ("hwloc_pus", "hwloc-calc --physical-output --intersect pu all")]:
    res[key] = sh(cmd)
print(json.dumps(res))
'''

# Joins argv[1]'s cpu cgroup only to read, then goes back to argv[2].
TINY_PROBE = r'''
import json, os, sys, time

def join(d):
    with open(os.path.join(d, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))

def read(path):
    with open(path) as f:
        return f.read()

join(sys.argv[1])
time.sleep(1.1)
res = {"cgroup": read("/proc/self/cgroup"), "os_cpu_count": os.cpu_count()}
res["files"] = {n: read(p) for n, p in [
    ("cpuinfo", "/proc/cpuinfo"), ("stat", "/proc/stat"), ("online", "/sys/devices/system/cpu/online"),
    ("possible", "/sys/devices/system/cpu/possible"), ("present", "/sys/devices/system/cpu/present"),
    ("offline", "/sys/devices/system/cpu/offline")]}
res["listing"] = sorted(os.listdir("/sys/devices/system/cpu"))
res["cpudirs"] = {e: None for e in res["listing"] if e[3:].isdigit() and e.startswith("cpu")}
join(sys.argv[2])
print(json.dumps(res))
'''

# Pins itself to the CPUs its online file names, says "ready", spins 2 s
# from a line on stdin, and reports where it ran and its CPU time per
# second (a figure for the log, not a check: other load moves it).
PINNER = r'''
import json, os, sys, time
text = open("/sys/devices/system/cpu/online").read().strip()
cpus = []
for part in text.split(","):
    first, _, last = part.partition("-")
    cpus += range(int(first), int(last or first) + 1)
os.sched_setaffinity(0, cpus)
print("ready", flush=True)
sys.stdin.readline()
t0, c0 = time.monotonic(), time.process_time()
while time.monotonic() - t0 < 2:
    pass
share = (time.process_time() - c0) / (time.monotonic() - t0)
with open("/proc/self/stat") as f:
    ran_on = int(f.read().rsplit(")", 1)[1].split()[36])
print(json.dumps({"online": cpus, "ran_on": ran_on, "share": share}))
'''

# A caller that stays: prints the online file it sees every 0.1 s.
WATCHER = r'''
import sys, time
while True:
    with open("/sys/devices/system/cpu/online") as f:
        print(f.read().strip(), flush=True)
    time.sleep(0.1)
'''

# One thread reads cpuinfo (only), waits for the test to change its cpuset,
# reads stat 0.3 s after cpuinfo (within the daemon's per-thread half
# second) and both again at 0.65 s: it prints the CPUs it saw, and when.
LAGGER = r'''
import json, sys, time

def cpus():
    with open("/proc/cpuinfo") as f:
        info = sum(1 for l in f if l.startswith("processor"))
    with open("/proc/stat") as f:
        stat = sum(1 for l in f if l[:3] == "cpu" and l[3].isdigit())
    return info, stat

t0 = time.monotonic()
with open("/proc/cpuinfo") as f:
    print(sum(1 for l in f if l.startswith("processor")), flush=True)
sys.stdin.readline()
changed = time.monotonic() - t0
time.sleep(max(0, 0.3 - (time.monotonic() - t0)))
stat_at = time.monotonic() - t0
with open("/proc/stat") as f:
    f.read()
time.sleep(max(0, 0.65 - (time.monotonic() - t0)))
at = time.monotonic() - t0
info, stat = cpus()
print(json.dumps({"changed": changed, "stat_at": stat_at, "at": at, "cpuinfo": info, "stat": stat}))
'''


# ------------------------------------------------------------ cpu lists --

def parse_cpu_list(text):
    """{cpus} of a kernel CPU list ("0-3,5"; "" or "\\n" is empty)."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def format_cpu_list(cpus):
    """The kernel's text for a set of CPUs, without the newline."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [c]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


def parse_cpu_mask(text):
    return int(text.strip().replace(",", ""), 16)


def read_text(path):
    with open(path) as f:
        return f.read()


def host_online():
    return parse_cpu_list(read_text(os.path.join(SYS_CPU, "online")))


# -------------------------------------------------------------- cgroups --

class Cgroups:
    """The test's cgroups: TOP in each controller, the cases' groups below.
    remove_all() moves any process left in them to the controller's root
    and removes them, deepest first."""

    def __init__(self):
        self.made = []

    def path(self, controller, name=""):
        return os.path.join(CGROUP_ROOTS[controller], TOP, *([name] if name else []))

    def make(self, controller, name="", **files):
        path = self.path(controller, name)
        os.mkdir(path)
        self.made.append(path)
        if controller == "cpuset":
            # A v1 cpuset takes no task until it has CPUs and memory nodes.
            parent = os.path.dirname(path.rstrip("/"))
            files.setdefault("cpuset.cpus", read_text(os.path.join(parent, "cpuset.effective_cpus")).strip())
            files.setdefault("cpuset.mems", read_text(os.path.join(parent, "cpuset.effective_mems")).strip())
            for name_ in ("cpuset.cpus", "cpuset.mems"):
                write(os.path.join(path, name_), files.pop(name_))
        for name_, value in files.items():
            write(os.path.join(path, name_.replace("__", ".")), value)
        return path

    @staticmethod
    def evacuate(path):
        root = next(r for r in CGROUP_ROOTS.values() if path.startswith(r + "/"))
        for _ in range(3):
            try:
                pids = read_text(os.path.join(path, "cgroup.procs")).split()
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    write(os.path.join(root, "cgroup.procs"), pid)

    def remove(self, path):
        """Empty and remove path; return None or the reason it stays."""
        if not os.path.isdir(path):
            if path in self.made:
                self.made.remove(path)
            return None
        deadline = time.monotonic() + 3
        while True:
            self.evacuate(path)
            try:
                os.rmdir(path)
                break
            except OSError as e:
                if e.errno == errno.ENOENT:
                    break
                if time.monotonic() > deadline:
                    return "%s: %s" % (path, e)
                time.sleep(0.05)
        if path in self.made:
            self.made.remove(path)
        return None

    def remove_all(self):
        problems = []
        for path in sorted(self.made, key=lambda p: p.count("/"), reverse=True):
            problem = self.remove(path)
            if problem:
                problems.append(problem)
        return problems


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def cgroup_of_text(text, controller):
    for line in text.splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


def cgroup_of(pid, controller):
    return cgroup_of_text(read_text("/proc/%d/cgroup" % pid), controller)


def expected_view(cpuset_dir, cpu_dir, use_quota=True):
    """(N, the CPUs C it may be shown (sorted), why) for a caller in these
    cgroups, from the files as they are now."""
    cpus = sorted(parse_cpu_list(read_text(os.path.join(cpuset_dir, "cpuset.effective_cpus"))) & host_online())
    n = len(cpus)
    why = "cpuset %s" % format_cpu_list(cpus)
    if use_quota:
        ratios = []
        path = cpu_dir
        while True:
            quota = int(read_text(os.path.join(path, "cpu.cfs_quota_us")))
            period = int(read_text(os.path.join(path, "cpu.cfs_period_us")))
            if quota > 0 and period > 0:
                ratios.append(fractions.Fraction(quota, period))
            if os.path.realpath(path) == os.path.realpath(CGROUP_ROOTS["cpu"]):
                break
            path = os.path.dirname(path.rstrip("/"))
        if ratios:
            limit = min(ratios)
            n = min(n, -(-limit.numerator // limit.denominator))
            why += ", quota %s CPUs" % limit
    n = max(1, n)
    return n, cpus, why


def host_cpu_dirs():
    return sorted(e for e in os.listdir(SYS_CPU) if re.match(r"cpu\d+$", e))


def shown_in(res, expect):
    """The CPUs the caller was shown (its online file), checked against
    expect (expected_view's): N of C, and all of C when N = |C|."""
    n, allowed, why = expect
    shown = sorted(parse_cpu_list(file_of(res, "online")))
    check(len(shown) == n and set(shown) <= set(allowed),
          "online %s is not %d CPUs of %s (%s)" % (format_cpu_list(shown), n, format_cpu_list(allowed), why))
    return shown


def expected_nproc_all(n, affinity):
    """What `nproc --all` prints when sysconf(_SC_NPROCESSORS_CONF) is n.

    gnulib's num_processors(NPROC_ALL) distrusts a sysconf answer of 1 or 2
    (glibc gives those when /sys and /proc are missing) and then reports
    the affinity mask's count if that is larger, so that nproc --all is
    never below nproc. The affinity mask is the cpuset, which a file view
    cannot change: under a quota alone `nproc --all` keeps the cpuset's
    count, by gnulib's design, not by a fault of the view."""
    return max(n, affinity) if n in (1, 2) else n


# ------------------------------------------------------------- callers --

def caller_argv(mnt, argv, cgroups=(), setup="view"):
    joins = "".join('echo $$ > %s || exit 96\n' % shlex.quote(os.path.join(g, "cgroup.procs")) for g in cgroups)
    inner = SETUPS[setup] + 'exec "$@"\n'
    script = joins + 'exec unshare --mount --propagation private bash -c %s cgview "$@"\n' % shlex.quote(inner)
    return ["bash", "-c", script, "cgcaller"] + list(argv)


def caller_env(mnt):
    env = dict(os.environ, CG_MNT=mnt)
    # nproc without --all honours these; keep them out of the comparison.
    env.pop("OMP_NUM_THREADS", None)
    env.pop("OMP_THREAD_LIMIT", None)
    return env


def run_caller(mnt, argv, cgroups=(), setup="view", **kw):
    return cgtest.run(caller_argv(mnt, argv, cgroups, setup), env=caller_env(mnt), **kw)


def prompted_caller(mnt, code, cgroups, between):
    """Run Python code as a caller that prints a line, then waits for one
    on stdin: call between(pid) after its line, answer, and return (its
    first line, the rest of its output) once it exited 0."""
    proc = subprocess.Popen(caller_argv(mnt, [cgtest.PYTHON, "-c", code], cgroups), env=caller_env(mnt),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        first = proc.stdout.readline()
        between(proc.pid)
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait()
    check_equal(proc.returncode, 0, "the caller's exit status (stderr: %s)" % err.strip())
    return first, out


def host_snapshot():
    return {"stat": read_text("/proc/stat"), "cpuinfo": read_text("/proc/cpuinfo")}


def probe(mnt, cgroups=(), setup="view"):
    """Run PROBE as a caller; return (its report, host snapshots taken just
    before and just after)."""
    before = host_snapshot()
    result = run_caller(mnt, [cgtest.PYTHON, "-c", PROBE], cgroups, setup)
    after = host_snapshot()
    check(result[0] not in (96, 97), "the caller could not join its cgroups or make its mounts", describe(result))
    res = json.loads(check_ran(result, "the probe"))
    check("psutil_error" not in res, "psutil failed in the caller", res.get("psutil_error", ""))
    return res, before, after


# ------------------------------------------------------- file parsing --

def stat_lines(text):
    """[(key, [fields])] of a /proc/stat text, in order."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if parts:
            out.append((parts[0], parts[1:]))
    return out


def cpuinfo_blocks(text):
    """[[(key, raw line)]] per processor block."""
    blocks = []
    for chunk in text.split("\n\n"):
        lines = [line for line in chunk.splitlines() if line]
        if lines:
            blocks.append([(line.split(":", 1)[0].strip(), line) for line in lines])
    return blocks


def block_value(block, key):
    for k, line in block:
        if k == key:
            return line.split(":", 1)[1].strip()
    return None


def host_block(cpuinfo, cpu):
    for block in cpuinfo_blocks(cpuinfo):
        if block_value(block, "processor") == str(cpu):
            return block
    raise cgtest.Failure("the host's /proc/cpuinfo has no block for processor %d" % cpu)


def out_of(res, key):
    r = res[key]
    check(r["rc"] == 0, "`%s` failed in the caller" % key, "rc %s, stderr: %s" % (r["rc"], r["err"]))
    return r["out"]


def file_of(res, name):
    text = res["files"][name]
    check(isinstance(text, str), "reading %s in the caller failed" % name, text)
    return text


# ------------------------------------------------------------ checks --

def counts(res):
    """{what: CPU count} of every tool and file the probe asked."""
    rows = [l for l in out_of(res, "lscpu_p").splitlines() if l and not l.startswith("#")]
    return {
        "os.cpu_count()": res["os_cpu_count"],
        "getconf _NPROCESSORS_ONLN": int(out_of(res, "getconf_onln")),
        "getconf _NPROCESSORS_CONF": int(out_of(res, "getconf_conf")),
        "nproc --all": int(out_of(res, "nproc_all")),
        "psutil.cpu_count()": res["psutil_logical"],
        "psutil.cpu_count(logical=False)": res["psutil_physical"],
        "len(psutil.cpu_times(percpu=True))": res["psutil_percpu"],
        "lscpu -p rows": len(rows),
        "lscpu -p CPU column": [r.split(",")[0] for r in rows],
        "grep -c ^processor /proc/cpuinfo": int(res["grep_processor"]["out"] or 0),
        # grep -c exits 1 when it counts 0
        "cpuN directories in /sys/devices/system/cpu": int(res["ls_cpus"]["out"] or 0),
    }


def check_counts(res, shown, where):
    """Every count of online CPUs the caller can ask for is len(shown);
    those of configured CPUs (getconf _NPROCESSORS_CONF, nproc --all, the
    cpuN directories) are the host's, as on a machine with offlined CPUs
    (psutil's physical count: 1..n)."""
    n = len(shown)
    conf = len(host_cpu_dirs())
    got = counts(res)
    want = {k: n for k in got}
    want["getconf _NPROCESSORS_CONF"] = conf
    want["cpuN directories in /sys/devices/system/cpu"] = conf
    want["nproc --all"] = expected_nproc_all(conf, res["affinity"])
    want["lscpu -p CPU column"] = [str(c) for c in shown]
    physical = got.pop("psutil.cpu_count(logical=False)")
    wrong = ["%s = %r, expected %r" % (k, got[k], want[k]) for k in got if got[k] != want[k]]
    if not (isinstance(physical, int) and 1 <= physical <= n):
        wrong.append("psutil.cpu_count(logical=False) = %r, expected 1..%d" % (physical, n))
    check(not wrong, "CPU counts in %s" % where, *wrong, "caller cgroups:", res["cgroup"])


def check_sys_files(res, shown):
    """online lists the CPUs shown; possible and present are the host's;
    offline is the host's and the present CPUs not shown; every host cpuN
    directory is there."""
    check_equal(file_of(res, "online"), format_cpu_list(shown) + "\n", "/sys/devices/system/cpu/online")
    for name in ("possible", "present"):
        check_equal(file_of(res, name), read_text(os.path.join(SYS_CPU, name)), "/sys/devices/system/cpu/%s" % name)
    offline = (parse_cpu_list(read_text(os.path.join(SYS_CPU, "present"))) - set(shown)) \
        | parse_cpu_list(read_text(os.path.join(SYS_CPU, "offline")))
    check_equal(file_of(res, "offline"), format_cpu_list(offline) + "\n", "/sys/devices/system/cpu/offline")
    check_equal(sorted(k for k in res["cpudirs"]), host_cpu_dirs(), "cpuN directories in the view")
    non_cpu_view = [e for e in res["listing"] if not re.match(r"cpu\d+$", e)]
    non_cpu_host = [e for e in sorted(os.listdir(SYS_CPU)) if not re.match(r"cpu\d+$", e)]
    check_equal(non_cpu_view, non_cpu_host, "other entries of /sys/devices/system/cpu (view vs host)")


def check_offline_dirs(res, shown):
    """A present CPU not shown looks offlined, as the kernel shows one:
    its directory without topology/ and cache/, online "0"."""
    for name in host_cpu_dirs():
        if int(name[3:]) in shown:
            continue
        d = res["cpudirs"].get(name)
        check(d is not None, "no %s directory in the view (a CPU not shown)" % name)
        host = set(os.listdir(os.path.join(SYS_CPU, name)))
        check_equal(d["entries"], sorted((host - {"topology", "cache"}) | {"online"}),
                    "entries of %s, a CPU not shown" % name)
        check_equal(d["online"], "0\n", "%s/online, a CPU not shown" % name)
        check(d["topology"] is None, "%s, a CPU not shown, has a topology directory" % name)


def check_topology(res, shown):
    """cpuK/ of a CPU shown mirrors host cpuK, with the CPU lists and masks
    restricted to the CPUs shown."""
    to_view = {host: host for host in shown}
    for k in shown:
        host = k
        d = res["cpudirs"].get("cpu%d" % k)
        check(d is not None, "no cpu%d directory in the view" % k)
        host_dir = os.path.join(SYS_CPU, "cpu%d" % host)
        check_equal(d["entries"], sorted(os.listdir(host_dir)), "entries of cpu%d (view) vs cpu%d (host)" % (k, host))
        host_topo = os.path.join(host_dir, "topology")
        if not os.path.isdir(host_topo):
            continue
        check(d["topology"] is not None, "cpu%d/topology is missing in the view" % k)
        check_equal(sorted(d["topology"]), sorted(os.listdir(host_topo)), "files of cpu%d/topology" % k)
        for name, text in sorted(d["topology"].items()):
            check(isinstance(text, str), "reading cpu%d/topology/%s failed" % (k, name), text)
            host_text = read_text(os.path.join(host_topo, name))
            what = "cpu%d/topology/%s (host cpu%d: %r)" % (k, name, host, host_text.strip())
            if name.endswith("_list"):
                want = {to_view[c] for c in parse_cpu_list(host_text) if c in to_view}
                check_equal(text, format_cpu_list(want) + "\n", what)
            elif os.path.exists(os.path.join(host_topo, name + "_list")):
                want = {to_view[c] for c in parse_cpu_list(read_text(os.path.join(host_topo, name + "_list")))
                        if c in to_view}
                check_equal(parse_cpu_mask(text), sum(1 << c for c in want), what + " as a mask")
            else:
                check_equal(text, host_text, what)


def check_stat(res, shown, before, after):
    """cpuK lines carry host cpu shown[K]'s counters (between the host's
    reads before and after), the cpu line is their sum, and the other lines
    are the host's."""
    view = stat_lines(file_of(res, "stat"))
    host_b, host_a = dict(stat_lines(before["stat"])), dict(stat_lines(after["stat"]))
    view_cpus = [(k, v) for k, v in view if re.match(r"cpu\d+$", k)]
    check_equal([k for k, _ in view_cpus], ["cpu%d" % c for c in shown], "cpuN lines of /proc/stat")
    for (k, fields), host in zip(view_cpus, shown):
        lo, hi = host_b["cpu%d" % host], host_a["cpu%d" % host]
        check_equal(len(fields), len(lo), "number of fields of the %s line" % k)
        bad = [i for i, f in enumerate(fields) if not int(lo[i]) <= int(f) <= int(hi[i])]
        check(not bad, "%s of the view is not host cpu%d's line" % (k, host),
              "view %s: %s" % (k, " ".join(fields)),
              "host cpu%d before: %s" % (host, " ".join(lo)),
              "host cpu%d after:  %s" % (host, " ".join(hi)))
    agg = dict(view).get("cpu")
    check(agg is not None, "no aggregate cpu line")
    sums = [sum(int(f[i]) for _, f in view_cpus) for i in range(len(agg))]
    check_equal([int(x) for x in agg], sums, "the cpu line vs the sum of the cpuN lines")
    others = [k for k, _ in view if not k.startswith("cpu")]
    check_equal(others, [k for k, _ in stat_lines(after["stat"]) if not k.startswith("cpu")],
                "the other lines of /proc/stat (keys)")
    check_equal(dict(view)["btime"], host_a["btime"], "btime")
    for key in ("intr", "ctxt", "processes", "softirq"):
        got = int(dict(view)[key][0])
        check(int(host_b[key][0]) <= got <= int(host_a[key][0]), "%s %d is not the host's (%s..%s)"
              % (key, got, host_b[key][0], host_a[key][0]))


def check_cpuinfo(res, shown, before, after):
    """Block K is host cpu shown[K]'s block but for processor (K) and the
    recounted siblings / cpu cores."""
    blocks = cpuinfo_blocks(file_of(res, "cpuinfo"))
    check_equal(len(blocks), len(shown), "number of processor blocks in /proc/cpuinfo")
    recounted = ("processor", "siblings", "cpu cores")
    for k, (block, host) in enumerate(zip(blocks, shown)):
        check_equal(block_value(block, "processor"), str(host), "processor of block %d" % k)
        hb, ha = host_block(before["cpuinfo"], host), host_block(after["cpuinfo"], host)
        # "cpu MHz" moves on hosts with frequency scaling: compare it only
        # when the host's reads before and after agree.
        skip = set(recounted)
        if block_value(hb, "cpu MHz") != block_value(ha, "cpu MHz"):
            skip.add("cpu MHz")
        got = [(key, line) for key, line in block if key not in skip]
        want = [(key, line) for key, line in ha if key not in skip]
        check(got == want, "block %d of the view's cpuinfo is not host cpu%d's block" % (k, host),
              *["  view: %s" % line for _, line in got if (_, line) not in want],
              *["  host: %s" % line for _, line in want if (_, line) not in got])
        package = block_value(block, "physical id")
        same = [b for b in blocks if block_value(b, "physical id") == package]
        check_equal(block_value(block, "siblings"), str(len(same)), "siblings of block %d" % k)
        if block_value(block, "cpu cores") is not None:
            cores = {block_value(b, "core id") for b in same}
            check_equal(block_value(block, "cpu cores"), str(len(cores)), "cpu cores of block %d" % k)


def check_limited_view(res, before, after, expect, where):
    n, allowed, why = expect
    shown = shown_in(res, expect)
    diag("%s: expect N=%d of %s (%s): shown %s" % (where, n, format_cpu_list(allowed), why, format_cpu_list(shown)))
    check_counts(res, shown, where)
    check_sys_files(res, shown)
    check_offline_dirs(res, shown)
    check_topology(res, shown)
    check_stat(res, shown, before, after)
    check_cpuinfo(res, shown, before, after)


def view_case(mnt, cgroups, expect, where):
    """Probe a caller in cgroups and check what it sees against expect
    (from expected_view). A limit that leaves every online CPU shown is no
    limit: that caller gets the host's text, as an unlimited one does (the
    host's own cpu line of /proc/stat is not the exact sum of its cpuN
    lines, so the two cases differ there)."""
    res, before, after = probe(mnt, cgroups)
    n, allowed, why = expect
    if n == len(allowed) and allowed == sorted(host_online()):
        diag("%s: expect N=%d (%s): every online CPU, so the host's files" % (where, n, why))
        real = probe(mnt, cgroups, setup="real")[0]
        check_equal(res["os_cpu_count"], n, "os.cpu_count() (%s)" % where)
        check_host_view(res, real, before, after, where)
    else:
        check_limited_view(res, before, after, expect, where)
    return res


def check_host_view(res, real, before, after, where):
    """An unlimited caller sees the host's files: the same counts as the
    same caller on the real /proc (real), the host's cpuinfo byte for
    byte, the same /proc/stat lines and the host's sys files."""
    view_counts, real_counts = counts(res), counts(real)
    wrong = ["%s: view %r, real %r" % (k, view_counts[k], real_counts[k])
             for k in real_counts if view_counts[k] != real_counts[k]]
    check(not wrong, "CPU counts differ from the real /proc's (%s)" % where, *wrong)
    check(file_of(res, "cpuinfo") in (before["cpuinfo"], after["cpuinfo"]),
          "/proc/cpuinfo differs from the host's (%s)" % where)
    for name in ("online", "possible", "present", "offline"):
        check_equal(file_of(res, name), read_text(os.path.join(SYS_CPU, name)),
                    "/sys/devices/system/cpu/%s (%s, view vs host)" % (name, where))
    check_equal([k for k, _ in stat_lines(file_of(res, "stat"))], [k for k, _ in stat_lines(after["stat"])],
                "lines of /proc/stat (%s, view vs host)" % where)
    check_equal(res["listing"], sorted(os.listdir(SYS_CPU)), "ls /sys/devices/system/cpu (%s, view vs host)" % where)


def host_probe(mnt, cgroups):
    """The view's probe and the same probe on the real /proc, same cgroups."""
    real = probe(mnt, cgroups, setup="real")[0]
    res, before, after = probe(mnt, cgroups)
    return res, real, before, after


# ------------------------------------------------------- psutil tests --

# psutil tests that take the count of online CPUs (psutil.cpu_count()) to
# be that of the configured ones: they fail on any machine with an
# offlined CPU, and so in a view that does not show every present CPU (the
# CPUs not shown look offlined; the configured count stays the host's,
# for programs that index per-CPU arrays by sched_getcpu()).
COUNT_OFFLINE_CPUS = {
    "test_against_sysdev_cpu_num": "counts the cpuN directories, offline CPUs' too",
    "test_against_nproc": "nproc --all is sysconf(_SC_NPROCESSORS_CONF), the cpuN directories",
}

def unittest_failures(result):
    """({test id: first lines of its report}, tests run) of a unittest run."""
    rc, out, err = result
    text = err + out
    m = re.search(r"^Ran (\d+) tests? in ", text, re.M)
    ran = int(m.group(1)) if m else None
    failures = {}
    for block in text.split(SEPARATOR)[1:]:
        m = re.match(r"\n(FAIL|ERROR): (\S+)(?: \((\S+)\))?\n", block)
        if m:
            test_id = m.group(3) or m.group(2)
            lines = block[m.end():].strip().splitlines()
            failures[test_id] = "%s: %s: %s" % (m.group(1), test_id, lines[-1] if lines else "")
    m = re.search(r"^(OK|FAILED)\b(?: \((.*)\))?$", text, re.M)
    counted = 0
    if m and m.group(2):
        for item in m.group(2).split(", "):
            key, _, value = item.partition("=")
            if key in ("failures", "errors"):
                counted += int(value)
    check(ran and m, "no unittest summary", describe(result)[-3000:])
    check_equal(len(failures), counted, "failures and errors parsed vs the summary's count")
    return failures, ran


# ---------------------------------------------------------------- tests --

def make_tests(d, groups, workdir):
    t = []
    g = {}          # name -> cgroup directory

    def test(name):
        def register(fn):
            t.append((name, fn))
            return fn
        return register

    def need(*names):
        missing = [n for n in names if n not in g]
        check(not missing, "the test cgroups were not made: %s" % ", ".join(missing))
        return [g[n] for n in names]

    def two_cpus():
        usable = parse_cpu_list(read_text(os.path.join(CGROUP_ROOTS["cpuset"], "cpuset.effective_cpus"))) \
            & host_online()
        if len(usable) < 2:
            raise cgtest.Skip("needs at least 2 usable CPUs, the host has %s" % format_cpu_list(usable))
        return sorted(usable)

    @test("make the test cgroups (cpuset with one CPU, quotas: 1/2, nested 1 over unlimited, 1.5, 1/1000)")
    def _():
        cpus = two_cpus()
        # The last CPU: the view shows it by its number, CPU 0 offline.
        g["cpuset_top"] = groups.make("cpuset")
        g["one_cpu"] = groups.make("cpuset", "one", **{"cpuset.cpus": str(cpus[-1])})
        g["cpu_top"] = groups.make("cpu")
        g["half"] = groups.make("cpu", "half", cpu__cfs_period_us=100000, cpu__cfs_quota_us=50000)
        g["parent"] = groups.make("cpu", "parent", cpu__cfs_period_us=100000, cpu__cfs_quota_us=100000)
        g["child"] = groups.make("cpu", "parent/child", cpu__cfs_period_us=100000)
        # cgroup v1 refuses a child quota above its parent's (EINVAL): the
        # case where the ancestor is the smallest is then a child without a
        # quota of its own, and the view must walk up to find the limit.
        try:
            write(os.path.join(g["child"], "cpu.cfs_quota_us"), 200000)
            diag("the kernel took child quota 200000/100000 under parent 100000/100000")
        except OSError as e:
            diag("the kernel refused child quota 200000/100000 under parent 100000/100000 (%s):"
                 " the child has no quota (-1)" % errno.errorcode.get(e.errno, e.errno))
        g["fraction"] = groups.make("cpu", "fraction", cpu__cfs_period_us=100000, cpu__cfs_quota_us=150000)
        # 1/100 CPU, not the least v1 takes (1/1000): where the scheduler
        # charges a wake-up about 1 ms (seen on a virtual machine with
        # kernel 6.18), a 1/1000 quota leaves a caller in debt for tens of
        # seconds (a Python sleeping 0.2 s ten times did not get past its
        # first in 20 s). test_cgroup's unit case has 1/1000 give one CPU.
        g["tiny"] = groups.make("cpu", "tiny", cpu__cfs_period_us=1000000, cpu__cfs_quota_us=10000)
        for name in ("half", "parent", "child", "fraction", "tiny"):
            diag("%s: quota %s / period %s" % (name, read_text(os.path.join(g[name], "cpu.cfs_quota_us")).strip(),
                                             read_text(os.path.join(g[name], "cpu.cfs_period_us")).strip()))
        root_cpu, root_cpuset = CGROUP_ROOTS["cpu"], CGROUP_ROOTS["cpuset"]
        g["root_cpu"], g["root_cpuset"] = root_cpu, root_cpuset

    # 1. ---------------------------------------------------------------

    @test("a caller in a one-CPU cpuset (the last CPU) sees that CPU, by its host number, in every file and tool")
    def _():
        one, root_cpu = need("one_cpu", "root_cpu")
        view_case(d.mnt, [one, root_cpu], expected_view(one, root_cpu), "one-CPU cpuset")

    # 2. ---------------------------------------------------------------

    @test("a caller with quota 50000/100000 over the whole cpuset sees one CPU; nproc --all and nproc follow affinity")
    def _():
        root_cpuset, half = need("root_cpuset", "half")
        expect = expected_view(root_cpuset, half)
        res = view_case(d.mnt, [root_cpuset, half], expect, "quota 1/2")
        diag("nproc --all printed %s: gnulib distrusts sysconf(_SC_NPROCESSORS_CONF) = 1 or 2 and then reports"
             " the affinity count (%d) if larger; affinity is the cpuset, which the quota does not change"
             % (out_of(res, "nproc_all").strip(), res["affinity"]))
        # nproc (no --all) is sched_getaffinity: the cpuset, not the view.
        want = len(parse_cpu_list(read_text(os.path.join(root_cpuset, "cpuset.effective_cpus"))) & host_online())
        diag("nproc (no --all) counts the affinity mask, which the quota does not change: expect %d" % want)
        check_equal(int(out_of(res, "nproc")), want, "nproc (affinity)")

    # 2b. placement ----------------------------------------------------

    def online_in(mnt, cgroups):
        result = run_caller(mnt, ["cat", "/sys/devices/system/cpu/online"], cgroups)
        return check_ran(result, "a caller in %s" % " and ".join(cgroups)).strip()

    def one_cpu_pair(args, tag):
        """(what a caller of each of two cgroups with a quota of one CPU,
        over the root cpuset, is shown in a daemon of its own, read one
        after the other, then the first's again), checked to be one CPU of
        the cpuset each."""
        root_cpuset, = need("root_cpuset")
        pair = [groups.make("cpu", tag + x, cpu__cfs_period_us=100000, cpu__cfs_quota_us=100000) for x in "ab"]
        expect = expected_view(root_cpuset, pair[0])
        check_equal(expect[0], 1, "N for a quota of one CPU (test setup)")
        with cgtest.Daemon(args=args) as d2:
            got = [online_in(d2.mnt, [root_cpuset, g]) for g in pair + pair[:1]]
        diag("%s: the two cgroups were shown %s and %s, the first again %s" % (" ".join(args) or "default", *got))
        for text in got:
            check(len(parse_cpu_list(text)) == 1 and parse_cpu_list(text) <= set(expect[1]),
                  "online %r is not one CPU of the cpuset %s" % (text, format_cpu_list(expect[1])))
        for g in pair:
            problem = groups.remove(g)
            check(problem is None, "could not remove the cgroup", problem)
        return got

    @test("two cgroups limited to one CPU by quota over the same cpuset are shown different CPUs, each kept")
    def _():
        two_cpus()
        first, second, again = one_cpu_pair([], "spread")
        check(first != second, "both cgroups were shown CPU %s: programs pinning a thread per CPU shown would "
              "share it while the other CPU idles" % first)
        check_equal(again, first, "the first cgroup's CPU when read again")

    @test("with --cpu-placement=first the same two cgroups are both shown the first CPU of the cpuset")
    def _():
        cpus = two_cpus()
        first, second, again = one_cpu_pair(["--cpu-placement=first"], "first")
        check_equal((first, second, again), (str(cpus[0]),) * 3, "online of the two cgroups (and the first again)")

    def pinned_pair(args, tag):
        """Two callers of two one-CPU quota cgroups, in a daemon of its own,
        each pinned (sched_setaffinity) to the CPUs its online file names,
        spinning together for 2 s: [what each reported]."""
        root_cpuset, = need("root_cpuset")
        pair = [groups.make("cpu", tag + x, cpu__cfs_period_us=100000, cpu__cfs_quota_us=100000) for x in "ab"]
        procs = []
        try:
            with cgtest.Daemon(args=args) as d2:
                for g in pair:
                    procs.append(subprocess.Popen(caller_argv(d2.mnt, [cgtest.PYTHON, "-c", PINNER], [root_cpuset, g]),
                                                  env=caller_env(d2.mnt), stdin=subprocess.PIPE,
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                  start_new_session=True))
                for p in procs:
                    check_equal(p.stdout.readline().strip(), "ready", "a pinned caller's first line")
                for p in procs:
                    p.stdin.write("\n")
                    p.stdin.flush()
                got = [json.loads(p.communicate(timeout=30)[0]) for p in procs]
        finally:
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 9)
                p.wait()
            for g in pair:
                groups.remove(g)
        diag("%s: %s" % (" ".join(args) or "default", "; ".join(
            "shown %s, ran on CPU %d, %.2f CPU-s per s" % (r["online"], r["ran_on"], r["share"]) for r in got)))
        for r in got:
            check(len(r["online"]) == 1, "online %r is not one CPU" % r["online"])
            check_equal(r["ran_on"], r["online"][0], "the CPU a pinned caller ran on (/proc/self/stat field 39)")
        return [r["online"][0] for r in got]

    @test("two callers of one-CPU quota cgroups pinning themselves to the CPU they are shown run on different "
          "CPUs; with --cpu-placement=first on the same one")
    def _():
        cpus = two_cpus()
        spread = pinned_pair([], "pinned")
        check(spread[0] != spread[1], "both pinned to CPU %d" % spread[0])
        first = pinned_pair(["--cpu-placement=first"], "pinfirst")
        check_equal(first, [cpus[0]] * 2, "the CPUs both pinned to with --cpu-placement=first")

    @test("a placed cgroup removed is let go by the sweep (at most 10 s): the next one placed may take its CPU")
    def _():
        cpus = two_cpus()
        pair = groups.make("cpuset", "sweep", **{"cpuset.cpus": format_cpu_list(cpus[:2])})
        made = {x: groups.make("cpu", "sweep" + x, cpu__cfs_period_us=100000, cpu__cfs_quota_us=100000)
                for x in "abcd"}
        with cgtest.Daemon() as d2:
            shown = {x: online_in(d2.mnt, [pair, made[x]]) for x in "abc"}
            placed = cgtest.read_stats(d2.mnt, "cgprocfs_cpu_")
            diag("a, b, c shown %s; placed %s" % (shown, placed.get("placed")))
            check(shown["a"] != shown["b"] and shown["c"] == shown["a"],
                  "a and b not spread, or c not on a's CPU (test setup)", shown)
            check_equal(placed.get("placed"), 3, "cgprocfs_cpu_placed")
            problem = groups.remove(made["c"])
            check(problem is None, "could not remove the cgroup", problem)
            time.sleep(10.5)
            # c let go, a's CPU and b's hold one each: d gets the lower, a's;
            # c kept, a's holds two: d gets b's.
            got = online_in(d2.mnt, [pair, made["d"]])
            placed = cgtest.read_stats(d2.mnt, "cgprocfs_cpu_")
        diag("d shown %s; placed %s" % (got, placed.get("placed")))
        check_equal(got, shown["a"], "d's CPU, c's let go")
        check_equal((placed.get("placed"), placed.get("placement_full_total")), (3, 0),
                    "cgprocfs_cpu_placed and cgprocfs_cpu_placement_full_total (a, b, d)")
        for g in list(made.values()) + [pair]:
            groups.remove(g)

    @test("a quota-limited caller's CPUs not shown look offlined: online 0, no topology/, listed in offline")
    def _():
        root_cpuset, half = need("root_cpuset", "half")
        expect = expected_view(root_cpuset, half)
        res = probe(d.mnt, [root_cpuset, half])[0]
        shown = shown_in(res, expect)
        hidden = [c for c in host_cpu_dirs() if int(c[3:]) not in shown]
        check(hidden, "every CPU is shown (test setup)", format_cpu_list(shown))
        diag("shown %s; looking offlined: %s" % (format_cpu_list(shown), " ".join(hidden)))
        check_offline_dirs(res, shown)
        check(set(int(c[3:]) for c in hidden) <= parse_cpu_list(file_of(res, "offline")),
              "offline %r does not list %s" % (file_of(res, "offline"), " ".join(hidden)))

    @test("hwloc (hwloc-calc) counts and names the CPUs the view shows, all within the cgroup's cpuset")
    def _():
        one, half, root_cpuset, root_cpu = need("one_cpu", "half", "root_cpuset", "root_cpu")
        if not shutil.which("hwloc-calc"):
            raise cgtest.Skip("hwloc-calc is not installed (Debian's hwloc-nox)")
        for cgroups, where in [([one, root_cpu], "one-CPU cpuset"), ([root_cpuset, half], "quota 1/2"),
                               ([one, half], "one-CPU cpuset and quota 1/2")]:
            expect = expected_view(*cgroups)
            res = probe(d.mnt, cgroups)[0]
            diag("%s: online %r; hwloc-calc --number-of pu all: %r %r; --intersect pu all: %r %r"
                 % (where, file_of(res, "online").strip(), res["hwloc_count"]["out"].strip(),
                    res["hwloc_count"]["err"].strip(), res["hwloc_pus"]["out"].strip(),
                    res["hwloc_pus"]["err"].strip()))
            shown = shown_in(res, expect)
            cpuset = parse_cpu_list(read_text(os.path.join(cgroups[0], "cpuset.effective_cpus")))
            check(set(shown) <= cpuset, "online %s is outside the cgroup's cpuset %s (%s)"
                  % (format_cpu_list(shown), format_cpu_list(cpuset), where))
            check_equal(out_of(res, "hwloc_count").strip(), str(len(shown)),
                        "hwloc-calc --number-of pu all (%s)" % where)
            check_equal(out_of(res, "hwloc_pus").strip(), ",".join(map(str, shown)),
                        "hwloc-calc --physical-output --intersect pu all (%s)" % where)

    # 3. ---------------------------------------------------------------

    @test("nested quota: parent 100000/100000 over a child without a smaller one gives the parent's N")
    def _():
        root_cpuset, child, parent = need("root_cpuset", "child", "parent")
        expect = expected_view(root_cpuset, child)
        own = int(read_text(os.path.join(child, "cpu.cfs_quota_us")))
        check(expect[0] < len(two_cpus()), "the parent's quota does not limit (test setup)", expect)
        view_case(d.mnt, [root_cpuset, child], expect, "nested quota (child's own quota %d)" % own)

    @test("fractional quota 150000/100000 rounds up to 2 CPUs")
    def _():
        root_cpuset, fraction = need("root_cpuset", "fraction")
        expect = expected_view(root_cpuset, fraction)
        check_equal(expect[0], min(2, len(two_cpus())), "N for quota 3/2 (test setup)")
        view_case(d.mnt, [root_cpuset, fraction], expect, "quota 3/2")

    # 4. ---------------------------------------------------------------

    @test("--cpu-limit=cpuset: the quota is ignored, the cpuset still counts")
    def _():
        root_cpuset, half, one, root_cpu = need("root_cpuset", "half", "one_cpu", "root_cpu")
        with cgtest.Daemon(args=["--cpu-limit=cpuset"]) as d2:
            res, real, before, after = host_probe(d2.mnt, [root_cpuset, half])
            expect = expected_view(root_cpuset, half, use_quota=False)
            check_equal(expect[0], len(host_online()), "N without the quota (test setup)")
            check_host_view(res, real, before, after, "--cpu-limit=cpuset, quota 1/2")
            view_case(d2.mnt, [one, root_cpu], expected_view(one, root_cpu, use_quota=False),
                      "--cpu-limit=cpuset, one-CPU cpuset")
            log = d2.log()
        check(not re.search("error", log, re.I), "the --cpu-limit=cpuset daemon logged an error", log)

    # 5. ---------------------------------------------------------------

    @test("an unlimited caller (root cgroups) sees the host's cpuinfo, stat shape, sys files and cpu* entries")
    def _():
        root_cpuset, root_cpu = need("root_cpuset", "root_cpu")
        res, real, before, after = host_probe(d.mnt, [root_cpuset, root_cpu])
        check_host_view(res, real, before, after, "root cgroups")

    # 6. ---------------------------------------------------------------

    @test("a running caller moved from the one-CPU cpuset to the root cpuset sees the host's CPUs within 1.5 s")
    def _():
        one, root_cpuset, root_cpu = need("one_cpu", "root_cpuset", "root_cpu")
        n, allowed, _ = expected_view(one, root_cpu)
        limited = format_cpu_list(allowed[:n])
        host = read_text(os.path.join(SYS_CPU, "online")).strip()
        check(limited != host, "the one-CPU view would look like the host's (test setup)")
        lines = []          # (monotonic time, line)
        proc = subprocess.Popen(caller_argv(d.mnt, [cgtest.PYTHON, "-c", WATCHER], [one, root_cpu]),
                                env=caller_env(d.mnt), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

        def reader():
            for line in proc.stdout:
                lines.append((time.monotonic(), line.strip()))
        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            check(cgtest.wait_until(lambda: any(l == limited for _, l in lines), timeout=10),
                  "the watcher never printed %r before the move" % limited, [l for _, l in lines][-5:],
                  proc.stderr.read() if proc.poll() is not None else "")
            check_equal(cgroup_of(proc.pid, "cpuset"), "/" + TOP + "/one", "the watcher's cpuset (pid %d)" % proc.pid)
            moved = time.monotonic()
            write(os.path.join(root_cpuset, "cgroup.procs"), proc.pid)
            check_equal(cgroup_of(proc.pid, "cpuset"), "/", "the watcher's cpuset after the move")
            cgtest.wait_until(lambda: any(t > moved and l == host for t, l in lines), timeout=MOVE_DEADLINE + 3)
            after = [(t - moved, l) for t, l in lines if t > moved]
            seen = [dt for dt, l in after if l == host]
            check(seen, "the watcher never saw the host's online %r after the move" % host,
                  ["%.2f s: %s" % x for x in after[-10:]])
            diag("the watcher saw %r %.2f s after the move" % (host, seen[0]))
            check(seen[0] <= MOVE_DEADLINE, "the view followed the move only after %.2f s" % seen[0])
            late = [l for dt, l in after if dt > seen[0] and l != host]
            check(not late, "after showing the host's CPUs the watcher saw %r again" % late[:3])
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait()
            thread.join(5)

    @test("a caller's cpuset changed between its cpuinfo and its stat: stat follows as soon as cpuinfo does")
    def _():
        root_cpu, = need("root_cpu")
        cpus = two_cpus()
        pair = groups.make("cpuset", "pair", **{"cpuset.cpus": format_cpu_list(cpus[:2])})
        first, out = prompted_caller(d.mnt, LAGGER, [pair, root_cpu],
                                     lambda pid: write(os.path.join(pair, "cpuset.cpus"), cpus[-1]))
        check_equal(first.split(), ["2"], "cpuinfo's CPUs before the change")
        res = json.loads(out)
        diag("the change came %.3f s after the first cpuinfo, stat was read at %.3f s, both again at %.3f s"
             % (res["changed"], res["stat_at"], res["at"]))
        check(res["changed"] < res["stat_at"] < 0.5, "the caller was too slow to test the lag (test setup)", res)
        # What each file showed then; the change is more than half a
        # second old, past the daemon's per-thread cache.
        check_equal((res["cpuinfo"], res["stat"]), (1, 1),
                    "(cpuinfo, stat) CPUs %.3f s after the change" % (res["at"] - res["changed"]))
        problem = groups.remove(pair)
        check(problem is None, "could not remove the cgroup", problem)

    # 7. ---------------------------------------------------------------

    @test("odd quota 10000/1000000 (1/100 CPU) gives one CPU")
    def _():
        root_cpuset, root_cpu, tiny = need("root_cpuset", "root_cpu", "tiny")
        expect = expected_view(root_cpuset, tiny)
        n, _, why = expect
        diag("expect N=%d (%s)" % (n, why))
        # A caller throttled to 10 ms of CPU a second takes long to start
        # Python: it starts in the root cgroup and joins the tiny one only
        # for its reads (sleeping past the daemon's per-thread cache second
        # first), then leaves it to finish.
        before = host_snapshot()
        result = run_caller(d.mnt, [cgtest.PYTHON, "-c", TINY_PROBE, tiny, root_cpu], [root_cpuset, root_cpu],
                            timeout=30)
        check(result[0] not in (96, 97), "the caller could not join its cgroups or make its mounts",
              describe(result))
        res = json.loads(check_ran(result, "the throttled probe"))
        check_equal(cgroup_of_text(res["cgroup"], "cpu"), "/" + TOP + "/tiny", "the caller's cpu cgroup while reading")
        check_equal(res["os_cpu_count"], n, "os.cpu_count()")
        shown = shown_in(res, expect)
        check_sys_files(res, shown)
        check_equal(len(cpuinfo_blocks(file_of(res, "cpuinfo"))), n, "processor blocks in /proc/cpuinfo")
        check_stat(res, shown, before, host_snapshot())

    @test("after a caller's cgroup is removed, the view still serves (root caller sees the host's files)")
    def _():
        root_cpu, root_cpuset = need("root_cpu", "root_cpuset")
        cpus = two_cpus()
        gone = groups.make("cpuset", "gone", **{"cpuset.cpus": str(cpus[-1])})
        result = run_caller(d.mnt, ["cat", "/sys/devices/system/cpu/online"], [gone, root_cpu])
        check_equal(check_ran(result, "the caller in the doomed cgroup"), "%d\n" % cpus[-1],
                    "online seen in that cgroup")
        problem = groups.remove(gone)
        check(problem is None, "could not remove the cgroup", problem)
        check(not os.path.exists(gone), "the cgroup is still there")
        res, real, before, after = host_probe(d.mnt, [root_cpuset, root_cpu])
        check_host_view(res, real, before, after, "root cgroups, after the removal")

    @test("a caller moved out of a cgroup that is then removed at once keeps being served")
    def _():
        root_cpu, root_cpuset = need("root_cpu", "root_cpuset")
        cpus = two_cpus()
        gone = groups.make("cpuset", "gone2", **{"cpuset.cpus": str(cpus[-1])})
        # The caller reads, is moved and its cgroup removed within the
        # daemon's cache second, then reads again for 1.5 s.
        code = ("import sys, time\n"
                "def online():\n"
                "    with open('/sys/devices/system/cpu/online') as f: return f.read().strip()\n"
                "print(online(), flush=True)\n"
                "sys.stdin.readline()\n"
                "end = time.monotonic() + 1.5\n"
                "while time.monotonic() < end: last = online()\n"
                "print(last, flush=True)\n")
        problems = []

        def move_and_remove(pid):
            write(os.path.join(root_cpuset, "cgroup.procs"), pid)
            problems.append(groups.remove(gone))
        first, out = prompted_caller(d.mnt, code, [gone, root_cpu], move_and_remove)
        check(problems == [None], "could not remove the cgroup", problems)
        check_equal(first.strip(), str(cpus[-1]), "online before the move")
        check_equal(out.strip(), read_text(os.path.join(SYS_CPU, "online")).strip(), "online 1.5 s after")

    # 8. ---------------------------------------------------------------

    @test("file-level binds (cpuinfo, stat, sys cpu dir only) in the one-CPU cpuset: every count is 1")
    def _():
        one, root_cpu = need("one_cpu", "root_cpu")
        res, before, after = probe(d.mnt, [one, root_cpu], setup="files")
        expect = expected_view(one, root_cpu)
        n = expect[0]
        got = {"os.cpu_count()": res["os_cpu_count"],
               "getconf _NPROCESSORS_ONLN": int(out_of(res, "getconf_onln")),
               "grep -c ^processor /proc/cpuinfo": int(out_of(res, "grep_processor")),
               "lscpu -p rows": len([l for l in out_of(res, "lscpu_p").splitlines() if l and not l.startswith("#")])}
        wrong = ["%s = %r, expected %d" % (k, v, n) for k, v in got.items() if v != n]
        check(not wrong, "CPU counts with file-level binds", *wrong)
        check_equal(file_of(res, "online"), format_cpu_list(expect[1][:n]) + "\n", "/sys/devices/system/cpu/online")

    # 9. ---------------------------------------------------------------

    psutil_runs = {}

    def psutil_cpu_tests(setup):
        one, root_cpu = need("one_cpu", "root_cpu")
        argv = [cgtest.PYTHON, "-m", "unittest", "-v", "psutil.tests.test_linux", "-k", "CPU", "-k", "Cpu",
                "-k", "cpu"]
        result = run_caller(d.mnt, argv, [one, root_cpu], setup, cwd=workdir, timeout=SUITE_TIMEOUT)
        check(result[0] not in (96, 97), "the caller could not join its cgroups or make its mounts",
              describe(result))
        failures, ran = unittest_failures(result)
        psutil_runs[setup] = (failures, ran)
        diag("%s: %d tests, %d failed: %s" % (setup, ran, len(failures), ", ".join(sorted(failures)) or "none"))
        for line in sorted(failures.values()):
            diag("  " + line[:300])
        check(ran >= 10, "only %d CPU tests ran" % ran, describe(result)[-3000:])

    @test("psutil's CPU tests (test_linux) on the real /proc in the one-CPU cpuset")
    def _():
        psutil_cpu_tests("real")

    @test("psutil's CPU tests (test_linux) with the view bound, in the one-CPU cpuset")
    def _():
        psutil_cpu_tests("view")

    @test("every psutil CPU test failing in the view also fails on the real /proc, but two that count offline CPUs")
    def _():
        check("real" in psutil_runs and "view" in psutil_runs, "a run is missing")
        (real, real_ran), (view, view_ran) = psutil_runs["real"], psutil_runs["view"]
        check_equal(view_ran, real_ran, "number of tests run (view vs real)")
        only_view = sorted(set(view) - set(real))
        offline = [k for k in only_view if k.rsplit(".", 1)[-1] in COUNT_OFFLINE_CPUS]
        for k in offline:
            diag("fails in the view as on a machine with offlined CPUs: %s (%s)"
                 % (view[k], COUNT_OFFLINE_CPUS[k.rsplit(".", 1)[-1]]))
        rest = [k for k in only_view if k not in offline]
        check(not rest, "%d test(s) fail only in the view" % len(rest), *[view[k] for k in rest])

    # ---------------------------------------------------------- after --

    @test("the daemon still serves after all cases, and logged no error")
    def _():
        check(d.ready, "the daemon is not serving")
        result = run_caller(d.mnt, ["cat", "/sys/devices/system/cpu/online"],
                            [CGROUP_ROOTS["cpuset"], CGROUP_ROOTS["cpu"]])
        check_equal(check_ran(result, "a last read"), read_text(os.path.join(SYS_CPU, "online")),
                    "online for a root caller")
        log = d.log()
        diag("daemon log:\n" + log)
        check(not re.search("error", log, re.I), "the daemon logged an error")

    @test("the test cgroups are removed")
    def _():
        problems = groups.remove_all()
        left = [p for p in (groups.path("cpuset"), groups.path("cpu")) if os.path.exists(p)]
        check(not problems and not left, "test cgroups left behind", *(problems + left))

    return t


def main():
    cgtest.skip_all_unless_runnable()
    for controller, path in CGROUP_ROOTS.items():
        marker = "cpuset.cpus" if controller == "cpuset" else "cpu.cfs_quota_us"
        if not os.path.exists(os.path.join(path, marker)):
            print("1..0 # SKIP needs a cgroup v1 %s hierarchy at %s" % (controller, path))
            return
    if cgtest.run([cgtest.PYTHON, "-c", "import psutil.tests"])[0] != 0:
        print("1..0 # SKIP psutil's test suite is not installed for %s" % cgtest.PYTHON)
        return
    groups = Cgroups()
    workdir = tempfile.mkdtemp(prefix="cgprocfs-cpuview-")
    try:
        cgtest.run_with_daemon(lambda d: make_tests(d, groups, workdir))
    finally:
        problems = groups.remove_all()
        if problems:
            diag("could not remove test cgroups: %s" % "; ".join(problems))
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
