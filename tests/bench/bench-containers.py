#!/usr/bin/python3
"""cgprocfs in runc containers: the seed scenario and the first requests of a
new pid namespace, with the OCI hook (the view over the container's /proc)
and without it (the container's real /proc).

    sudo /usr/bin/python3 tests/bench/bench-containers.py [--build-dir build]
        [--mib 2048] [--children 16] [--duration 20] [--interval 2] [--starts 10]

It starts the daemon from the build directory on a temporary mountpoint,
builds a rootfs of read-only binds of the host's /usr and /etc (and the
host's /bin, /lib, /lib64, /sbin, as symlinks where the host has merged
/usr, as binds otherwise), so /usr/bin/python3 and psutil run inside, and
runs containers with runc and a private state directory:

1. the seed scenario: in one container, a parent writes --mib MiB of
   anonymous memory (4 KiB pages), forks --children sleeping children, and
   the container's pid 1 polls psutil.Process(parent).children(recursive=True)
   and memory_full_info() of each, every --interval s for --duration s,
   timing each poll; once with the hook and once without;
2. first requests: --starts containers with the hook (wrapped to time the
   hook's own run) and as many without, each running a static probe that
   times its first open + read + close of /proc/cpuinfo and
   /proc/1/smaps_rollup, the second, and 100 more.

Containers, bundles, mounts and the daemon go on every exit path. It only
reports figures; its exit status says whether it ran.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
MADV_POPULATE_WRITE = 23
STOP_TIMEOUT = 10.0
RUN_TIMEOUT = 30.0
HOST_DIRS = ("usr", "etc", "bin", "lib", "lib64", "sbin")
LXCFS_REFERENCE = "LXCFS takes 9\u201316 ms here"
PROBE_PATHS = ("/proc/cpuinfo", "/proc/1/smaps_rollup")
PROBE_MORE = 100

# The probe: one open + read to EOF + close of each path, timed with
# CLOCK_MONOTONIC; the first call, then the second, then PROBE_MORE more
# (their p50 and max). Prints "path first second p50 max" in µs.
PROBE_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static double once(const char *path)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		;
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (n < 0)
		return -1;
	return (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
	int more = atoi(argv[1]);
	double *t = calloc(more > 0 ? more : 1, sizeof *t);
	double first[argc], second[argc];
	/* Every path's first read before any second one: each first is a
	   first request of this pid namespace for that file. */
	for (int i = 2; i < argc; i++)
		first[i] = once(argv[i]);
	for (int i = 2; i < argc; i++)
		second[i] = once(argv[i]);
	for (int i = 2; i < argc; i++) {
		for (int k = 0; k < more; k++)
			if ((t[k] = once(argv[i])) < 0)
				return 1;
		qsort(t, more, sizeof *t, cmp);
		if (first[i] < 0 || second[i] < 0)
			return 1;
		printf("%s %.1f %.1f %.1f %.1f\n", argv[i], first[i], second[i], t[more / 2], t[more - 1]);
	}
	return 0;
}
"""


BenchError = benchlib.BenchError


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def mounts_under(path):
    """Mount points at or below path in this mount namespace, deepest first."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == path or mp.startswith(path.rstrip("/") + "/"):
                found.append(mp)
    return sorted(found, key=len, reverse=True)


# ------------------------------------------------ roles inside containers --

def role_holder(args):
    """The parent: --mib MiB written, then --children sleeping children.
    Prints its pid when ready, then waits for EOF on stdin."""
    import ctypes
    import mmap
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    size = args.mib << 20
    mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    mem.madvise(mmap.MADV_NOHUGEPAGE)
    try:
        mem.madvise(MADV_POPULATE_WRITE)
    except OSError:
        memoryview(mem)[::PAGE] = bytes(size // PAGE)
    kids = []
    for _ in range(args.children):
        pid = os.fork()
        if pid == 0:
            try:
                ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
                while True:
                    signal.pause()
            finally:
                os._exit(0)
        kids.append(pid)
    print(os.getpid(), flush=True)
    sys.stdin.read()
    for pid in kids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return 0


def role_seed(args):
    """pid 1 of the seed container: start the holder, poll it, print JSON."""
    import psutil
    with open("/proc/self/mountinfo") as f:
        fstype = [l.split(" - ")[1].split()[0] for l in f if l.split()[4] == "/proc"][-1]
    holder = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--role", "holder",
                               "--mib", str(args.mib), "--children", str(args.children)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    parent = int(holder.stdout.readline())

    def poll():
        t0 = time.perf_counter()
        root = psutil.Process(parent)
        procs = [root] + root.children(recursive=True)
        rss = pss = 0
        for p in procs:
            info = p.memory_full_info()
            rss += info.rss
            pss += info.pss
        return time.perf_counter() - t0, len(procs), rss, pss

    first = poll()
    polls = []
    start = time.monotonic()
    k = 1
    while time.monotonic() - start < args.duration:
        delay = start + k * args.interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        polls.append(poll())
        k += 1
    holder.stdin.close()
    holder.wait()
    print(json.dumps({"proc_fstype": fstype, "real_dir": os.path.isdir("/proc/.real"),
                      "first": first, "polls": polls}), flush=True)
    return 0


def role_hook_wrapper(argv):
    """createContainer hook: run the real hook (argv[1:]) with our stdin (the
    container state) and append its run time in ns and its status to argv[0]."""
    out = argv[0]
    t0 = time.monotonic_ns()
    rc = subprocess.run(argv[1:]).returncode
    t1 = time.monotonic_ns()
    with open(out, "a") as f:
        f.write("%d %d\n" % (t1 - t0, rc))
    return rc


# ------------------------------------------------------------- the bench --

class Bench:
    def __init__(self, args):
        self.args = args
        self.daemon_bin, self.hook_bin = benchlib.built(args.build_dir, "daemon/cgprocfs",
                                                        "contrib/oci/cgprocfs-oci-hook")
        if shutil.which("runc") is None:
            raise BenchError("needs runc")
        self.script = os.path.abspath(__file__)
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-containers.")
        self.mnt = os.path.join(self.work, "mnt")
        self.state = os.path.join(self.work, "state")
        self.rootfs = os.path.join(self.work, "rootfs")
        self.daemon = None
        self.ids = []
        self.serial = 0

    # --- setup ---------------------------------------------------------

    def start_daemon(self):
        os.mkdir(self.mnt)
        self.log_path = os.path.join(self.work, "daemon.log")
        self.daemon = benchlib.start_daemon([self.daemon_bin, self.mnt], self.mnt, self.log_path)

    def build_rootfs(self):
        """Mount points, symlinks for merged-/usr dirs, this script and the
        static probe in /bench. The binds themselves are in config.json."""
        self.binds = []
        for d in HOST_DIRS:
            host = "/" + d
            if os.path.islink(host):
                os.symlink(os.readlink(host), os.path.join(self.rootfs, d))
            elif os.path.isdir(host):
                os.makedirs(os.path.join(self.rootfs, d))
                self.binds.append(host)
        for d in ("proc", "sys", "dev", "tmp", "bench"):
            os.makedirs(os.path.join(self.rootfs, d), exist_ok=True)
        shutil.copy2(self.script, os.path.join(self.rootfs, "bench", "bench-containers.py"))
        shutil.copy2(os.path.join(os.path.dirname(self.script), "benchlib.py"),
                     os.path.join(self.rootfs, "bench", "benchlib.py"))
        src = os.path.join(self.work, "probe.c")
        with open(src, "w") as f:
            f.write(PROBE_C)
        r = subprocess.run(["cc", "-static", "-O2", "-o", os.path.join(self.rootfs, "bench", "probe"), src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError("cc -static of the probe failed:\n" + r.stderr)

    def bundle(self, args, hook, hook_times=None):
        """A bundle sharing the rootfs (read-only root): config.json from
        `runc spec`, the host binds, a tmpfs /tmp, and the hook if asked
        (through the timing wrapper if hook_times is a file)."""
        self.serial += 1
        cid = "cgprocfs-bench-%d-%d" % (os.getpid(), self.serial)
        path = os.path.join(self.work, cid)
        os.mkdir(path)
        r = subprocess.run(["runc", "spec", "--bundle", path], capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError("runc spec: " + r.stderr)
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
        config["root"] = {"path": self.rootfs, "readonly": True}
        config["process"]["terminal"] = False
        config["process"]["args"] = args
        config["process"]["env"] = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"]
        config["mounts"] += [{"destination": h, "type": "bind", "source": h, "options": ["rbind", "ro"]}
                             for h in self.binds]
        config["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                                 "options": ["nosuid", "nodev", "mode=1777"]})
        if hook:
            hook_args = ["--mountpoint", self.mnt]
            if hook_times:
                entry = {"path": sys.executable,
                         "args": [sys.executable, "-I", "-S", self.script, "--role", "hook-wrapper",
                                  hook_times, self.hook_bin, "cgprocfs-oci-hook"] + hook_args}
            else:
                entry = {"path": self.hook_bin, "args": ["cgprocfs-oci-hook"] + hook_args}
            config["hooks"] = {"createContainer": [entry]}
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(config, f, indent=1)
        return cid, path

    def runc(self, *args, timeout=RUN_TIMEOUT):
        return subprocess.run(["runc", "--root", self.state] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def run_container(self, args, hook, hook_times=None, timeout=RUN_TIMEOUT):
        """Run to the end; (stdout, wall seconds of runc run)."""
        cid, path = self.bundle(args, hook, hook_times)
        self.ids.append(cid)
        t0 = time.monotonic()
        try:
            r = self.runc("run", "--bundle", path, cid, timeout=timeout)
        finally:
            wall = time.monotonic() - t0
            self.runc("delete", "-f", cid)
            self.ids.remove(cid)
            if not mounts_under(path):
                shutil.rmtree(path, ignore_errors=True)
        if r.returncode != 0:
            raise BenchError("runc run of %s failed (status %d):\n%s%s" % (" ".join(args), r.returncode,
                                                                           r.stdout, r.stderr))
        return r.stdout, wall

    # --- 1. the seed scenario ------------------------------------------

    def seed(self, hook):
        a = self.args
        argv = ["/usr/bin/python3", "/bench/bench-containers.py", "--role", "seed", "--mib", str(a.mib),
                "--children", str(a.children), "--duration", str(a.duration), "--interval", str(a.interval)]
        out, wall = self.run_container(argv, hook, timeout=a.duration + 120)
        res = json.loads(out.strip().splitlines()[-1])
        want = ("fuse.cgprocfs", True) if hook else ("proc", False)
        got = (res["proc_fstype"], res["real_dir"])
        if got != want:
            raise BenchError("container /proc is %s (/proc/.real: %s), expected %s" % (got + (want,)))
        return res

    # --- 2. first requests ---------------------------------------------

    def first_requests(self, hook):
        times = os.path.join(self.work, "hook-times") if hook else None
        argv = ["/bench/probe", str(PROBE_MORE)] + list(PROBE_PATHS)
        rows, walls = {p: [] for p in PROBE_PATHS}, []
        for _ in range(self.args.starts):
            out, wall = self.run_container(argv, hook, times)
            walls.append(wall)
            for line in out.splitlines():
                f = line.split()
                rows[f[0]].append([float(x) for x in f[1:]])
        hook_ns = []
        if times:
            with open(times) as f:
                for line in f:
                    ns, rc = map(int, line.split())
                    if rc != 0:
                        raise BenchError("the hook exited with status %d" % rc)
                    hook_ns.append(ns)
            if len(hook_ns) != self.args.starts:
                raise BenchError("the hook wrapper recorded %d runs of %d" % (len(hook_ns), self.args.starts))
        return rows, walls, hook_ns

    def stats(self):
        return benchlib.read_stats(self.mnt)

    # --- report --------------------------------------------------------

    def run(self):
        a = self.args
        self.start_daemon()
        os.mkdir(self.rootfs)
        self.build_rootfs()
        print("cgprocfs in runc containers: %d CPUs, kernel %s, %s" % (
            os.cpu_count(), os.uname().release, self.runc("--version").stdout.splitlines()[0]))
        print("command: %s" % " ".join(["/usr/bin/python3"] + sys.argv), flush=True)

        print("\n1. seed scenario in a container: %d MiB parent, %d sleeping children, "
              "psutil children(recursive) + memory_full_info() every %g s for %g s"
              % (a.mib, a.children, a.interval, a.duration), flush=True)
        s0 = self.stats()
        seed = {"view": self.seed(True)}
        s1 = self.stats()
        seed["real"] = self.seed(False)
        print("  %-22s %6s %10s %10s %10s %12s %12s" % ("", "polls", "first ms", "median ms", "max ms",
                                                         "rss sum MiB", "pss sum MiB"))
        for name, label in (("real", "real /proc"), ("view", "view (hook)")):
            r = seed[name]
            ms = [p[0] * 1e3 for p in r["polls"]]
            seed[name]["median"] = median(ms)
            last = r["polls"][-1]
            print("  %-22s %6d %10.2f %10.2f %10.2f %12.1f %12.1f" % (
                label, len(ms), r["first"][0] * 1e3, median(ms), max(ms), last[2] / 2**20, last[3] / 2**20))
        procs = seed["view"]["polls"][-1][1]
        print("  processes per poll: %d; real/view median ratio: %.1fx; max ratio %.1fx" % (
            procs, seed["real"]["median"] / seed["view"]["median"],
            max(p[0] for p in seed["real"]["polls"]) / max(p[0] for p in seed["view"]["polls"])))
        print("  daemon memo over the view run: %s" % ", ".join(
            "%s +%g" % (k, s1[k] - s0.get(k, 0))
            for k in sorted(s1) if k.endswith("_total") and s1[k] != s0.get(k, 0)))

        print("\n2. first requests of a new pid namespace: %d container starts each, "
              "probe = static open+read+close timer" % a.starts, flush=True)
        view_rows, view_walls, hook_ns = self.first_requests(True)
        real_rows, real_walls, _ = self.first_requests(False)
        hook_ms = [n / 1e6 for n in hook_ns]
        print("  (a) hook run time (createContainer, timing wrapper): median %.2f ms, min %.2f, max %.2f ms"
              % (median(hook_ms), min(hook_ms), max(hook_ms)))
        print("      runc run wall time, median: %.1f ms with the hook, %.1f ms without"
              % (median(view_walls) * 1e3, median(real_walls) * 1e3))
        print("  (b) inside the container, µs (medians over the starts; p50/max of %d more reads per start):"
              % PROBE_MORE)
        print("      %-26s %10s %10s %10s %10s %11s" % ("", "first", "first max", "second", "p50", "max"))
        for path in PROBE_PATHS:
            for label, rows in (("real", real_rows), ("view", view_rows)):
                r = rows[path]
                col = lambda i: [x[i] for x in r]  # noqa: E731
                print("      %-26s %10.1f %10.1f %10.1f %10.1f %11.1f" % (
                    "%s:%s" % (label, path), median(col(0)), max(col(0)), median(col(1)),
                    median(col(2)), max(col(3))))
        print("      reference from the issue (first request, not run here): %s" % LXCFS_REFERENCE)
        first_view = max(median([x[0] for x in view_rows[p]]) for p in PROBE_PATHS)
        print("      view's first request (slowest file, median): %.2f ms; with the hook's run: %.2f ms"
              % (first_view / 1e3, first_view / 1e3 + median(hook_ms)))

    # --- cleanup -------------------------------------------------------

    def cleanup(self):
        problems = []
        for cid in list(self.ids):
            with contextlib.suppress(Exception):
                self.runc("delete", "-f", cid)
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append("daemon did not stop on SIGTERM; killed it")
                self.daemon.kill()
                self.daemon.wait()
        for mp in mounts_under(self.work):
            problems.append("%s still mounted; unmounting it" % mp)
            subprocess.run(["umount", "-l", mp], check=False)
        if not mounts_under(self.work):
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            problems.append("left %s behind" % self.work)
        for p in problems:
            print("bench-containers: %s" % p, file=sys.stderr)
        return not problems

    def daemon_log(self):
        with contextlib.suppress(OSError), open(self.log_path) as f:
            return f.read()
        return ""


def main():
    if len(sys.argv) > 2 and sys.argv[1:3] == ["--role", "hook-wrapper"]:
        return role_hook_wrapper(sys.argv[3:])
    p = argparse.ArgumentParser(description="cgprocfs in runc containers (needs root).")
    p.add_argument("--build-dir", default="build", help="meson build directory (default: build)")
    p.add_argument("--mib", type=int, default=2048, help="MiB the parent holds (default 2048)")
    p.add_argument("--children", type=int, default=16, help="sleeping children (default 16)")
    p.add_argument("--duration", type=float, default=20, help="seconds of polling (default 20)")
    p.add_argument("--interval", type=float, default=2, help="seconds between polls (default 2)")
    p.add_argument("--starts", type=int, default=10, help="container starts per arm in part 2 (default 10)")
    p.add_argument("--role", choices=("seed", "holder"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "seed":
        return role_seed(args)
    if args.role == "holder":
        return role_holder(args)
    if os.geteuid() != 0:
        p.error("needs root (runc, mounts)")
    if importlib.util.find_spec("psutil") is None:
        p.error("needs psutil: run it with /usr/bin/python3 (Debian's python3-psutil)")
    if min(args.mib, args.children, args.duration, args.interval, args.starts) <= 0:
        p.error("--mib, --children, --duration, --interval and --starts must be positive")

    return benchlib.run_bench("bench-containers", lambda: Bench(args))


if __name__ == "__main__":
    sys.exit(main())
