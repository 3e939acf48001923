#!/usr/bin/python3
"""cgprocfs with one container misbehaving: do the others' reads keep
their latency?

    sudo /usr/bin/python3 tests/bench/bench-hostile.py [--build-dir build]
        [--iterations 3000] [--processes 200]

It starts the daemon from the build directory on a temporary mountpoint
and two containers (benchlib.Namespaces: own pid namespace, the view given
by the real OCI hook), each in a CPU cgroup of its own as a runtime would
put it: a victim, and a hostile one limited to 1 CPU. The victim times
open + read + close of its /proc/cpuinfo, /proc/stat, /proc/meminfo and
/proc/1/smaps_rollup with cgprocfs-bench-latency, first with the hostile
container idle, then while it does each of these (cgprocfs-hostile):

- files: 4 processes each open /proc/cpuinfo 16,000 times and hold them;
- dirs: one process holds 10,000 directory handles of /proc;
- smaps: it runs --processes sleeping processes and reads the
  smaps_rollup of every pid it sees, over and over;
- threads: 1,000 threads open + read + close /proc/stat in a loop.

It reports each file's p50/p99 under each attack and the p99 over the
idle one (the aim: within 2x), with the kernel's own /proc/.real/stat and
/proc/.real/1/smaps_rollup beside them: what the machine's load alone does
to a read.

With --walks it measures instead what a tenant's walks under the
daemon's shared locks cost another tenant (issue 54, findings 3 and 4;
the scenarios of tests/integration/hostile_walks.py): a victim in a pid
namespace and cpuacct cgroup of its own reads loadavg and /proc/stat
(then uptime and loadavg) every 10 ms through the view while a tenant
(a) makes first loadavg reads of a group with --cgroups sub-cgroups (its
cgroup renamed after each), (b) makes --rate new pid namespaces a second,
each reading uptime, beside --sleepers more processes on the host; it
reports the victim's p50/p99/worst; and (a') as (a), each of the
tenant's reads a first sysinfo(2) and the victim's every 10 ms a
sysinfo(2), both given to the daemon's seccomp listener. Everything goes on every exit path;
its exit status only says whether it ran.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import hostile_walks  # noqa: E402

BenchError = benchlib.BenchError
FILES = ("cpuinfo=/proc/cpuinfo", "stat=/proc/stat", "meminfo=/proc/meminfo", "smaps=/proc/1/smaps_rollup")
# The kernel's files beside them: what the machine's load alone does to a
# read, with no daemon in the way.
REAL = ("real-stat=/proc/.real/stat", "real-smaps=/proc/.real/1/smaps_rollup")
ATTACKS = (
    ("idle", []),
    ("files", [["files", "16000", "/proc/cpuinfo"]] * 4),
    ("dirs", [["dirs", "10000", "/proc"]]),
    ("smaps", [["smaps", "/proc"]]),
    ("threads", [["threads", "1000", "/proc/stat"]]),
)


class Bench:
    def __init__(self, args):
        self.args = args
        self.daemon_bin, hook_bin, self.latency_bin, self.hostile_bin = benchlib.built(
            args.build_dir, "daemon/cgprocfs", "contrib/oci/cgprocfs-oci-hook", "tests/bench/cgprocfs-bench-latency",
            "tests/bench/cgprocfs-hostile")
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-hostile.")
        self.mnt = os.path.join(self.work, "mnt")
        os.mkdir(self.mnt)
        self.daemon = None
        self.ns = benchlib.Namespaces(hook_bin, self.mnt, self.work)
        self.attackers = []
        self.cgroups = []

    def cgroup(self, name, quota_cpus):
        """A CPU cgroup (v2, or v1's cpu hierarchy) with a quota, or none
        if quota_cpus is 0: the command prefix that runs in it."""
        v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        path = os.path.join("/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/cpu",
                            "cgprocfs-bench-%s-%d" % (name, os.getpid()))
        os.mkdir(path)
        self.cgroups.append(path)
        if quota_cpus:
            with open(os.path.join(path, "cpu.max" if v2 else "cpu.cfs_quota_us"), "w") as f:
                f.write("%d 100000" % (quota_cpus * 100000) if v2 else str(quota_cpus * 100000))
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', path]

    def victim_reads(self, victim):
        argv = [self.latency_bin, "--iterations", str(self.args.iterations), "--warmup", "300",
                "--pause-us", str(self.args.pause_us)]
        r = subprocess.run(self.victim_cg + self.ns.command(victim, argv + ["view:" + f for f in FILES + REAL]),
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise BenchError("the victim's reads failed: " + (r.stderr or r.stdout).strip())
        rows = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if f and f[0].startswith("view:"):
                rows[f[0][5:]] = (float(f[1]), float(f[2]))
        if len(rows) != len(FILES + REAL):
            raise BenchError("the latency probe printed no rows:\n" + r.stdout)
        return rows

    def attack(self, hostile, argvs):
        """Start argvs in the hostile container; return once each is ready."""
        for argv in argvs:
            p = subprocess.Popen(self.hostile_cg + self.ns.command(hostile, ["prlimit", "--nofile=20000",
                                                                              self.hostile_bin] + argv),
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                 start_new_session=True)
            self.attackers.append(p)
            line = p.stdout.readline()
            if not line.startswith("ready"):
                raise BenchError("cgprocfs-hostile %s did not start" % " ".join(argv))

    def stop_attack(self):
        for p in self.attackers:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self.attackers = []

    def run(self):
        a = self.args
        self.daemon = benchlib.start_daemon([self.daemon_bin, self.mnt], self.mnt,
                                            os.path.join(self.work, "daemon.log"))
        victim = self.ns.add()[0]
        hostile = self.ns.add()[0]
        self.victim_cg = self.cgroup("victim", 0)
        self.hostile_cg = self.cgroup("hostile", 1)
        sleepers = subprocess.Popen(self.hostile_cg + self.ns.command(hostile, [
            "sh", "-c", "for i in $(seq %d); do sleep infinity & done; wait" % a.processes]),
            stdin=subprocess.DEVNULL, start_new_session=True)
        self.attackers.append(sleepers)
        print("cgprocfs, one container misbehaving: %d CPUs, kernel %s" % (os.cpu_count(), os.uname().release))
        print("command: %s" % " ".join(["/usr/bin/python3"] + sys.argv))
        print("victim: %d open+read+close of each file per attack, %d µs apart; hostile: %d sleeping processes besides"
              % (a.iterations, a.pause_us, a.processes), flush=True)
        time.sleep(1)
        results = {}
        for name, argvs in ATTACKS:
            self.attack(hostile, argvs)
            time.sleep(1)
            results[name] = self.victim_reads(victim)
            for p in self.attackers[1:]:
                if p.poll() is not None:
                    raise BenchError("the %s attack ended by itself" % name)
            for p in self.attackers[1:]:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            del self.attackers[1:]
        print("\n%-8s" % "attack" + "".join("%26s" % f.split("=")[0] for f in FILES + REAL))
        print("%-8s" % "" + "".join("%26s" % "p50 / p99 µs (p99 x idle)" for _ in FILES + REAL))
        for name, _ in ATTACKS:
            cells = []
            for f in FILES + REAL:
                label = f.split("=")[0]
                p50, p99 = results[name][label]
                cells.append("%7.1f / %7.1f (%4.2fx)" % (p50, p99, p99 / results["idle"][label][1]))
            print("%-8s" % name + "".join("%26s" % c for c in cells))

    def run_walks(self):
        a = self.args
        self.daemon = benchlib.start_daemon([self.daemon_bin, self.mnt], self.mnt,
                                            os.path.join(self.work, "daemon.log"))
        print("cgprocfs, walks under shared locks: %d CPUs, kernel %s" % (os.cpu_count(), os.uname().release))
        print("command: %s" % " ".join(["/usr/bin/python3"] + sys.argv), flush=True)
        top = "cgprocfs-bench-walk-%d" % os.getpid()
        self.walk_cgroups = top
        row = "%-40s %s"
        cells = lambda v: "%7.2f / %7.2f / %7.2f ms" % tuple(v)  # noqa: E731
        try:
            victim, _ = hostile_walks.walk_cgroups(top, 0)
            got, _ = hostile_walks.victim_beside(self.mnt, victim, ["loadavg", "stat", "uptime"],
                                                ["sleep", str(a.seconds)], a.seconds)
        finally:
            hostile_walks.remove_walk_cgroups(top)
        print("\n(0) no tenant attacking: what the machine's load alone does")
        print(row % ("victim's reads every 10 ms (%d rounds)" % got["rounds"], "p50 / p99 / worst"))
        for name in ("loadavg", "stat", "uptime"):
            print(row % ("  /proc/" + name, cells(got[name])))
        try:
            got, reads, mean = hostile_walks.loadavg_walk_figures(self.mnt, top, a.seconds, a.cgroups)
        finally:
            hostile_walks.remove_walk_cgroups(top)
        print("\n(a) a tenant's first loadavg reads of a group of %d sub-cgroups: %d in %.0f s, %.1f ms each"
              % (a.cgroups, reads, a.seconds, mean))
        print(row % ("victim's reads every 10 ms (%d rounds)" % got["rounds"], "p50 / p99 / worst"))
        for name in ("loadavg", "stat"):
            print(row % ("  /proc/" + name, cells(got[name])))
        probe = hostile_walks.sysinfo_probe(self.work)
        try:
            got, calls, tenant_calls, mean = hostile_walks.sysinfo_walk_figures(self.mnt, top, probe, a.seconds,
                                                                               a.cgroups)
        finally:
            hostile_walks.remove_walk_cgroups(top)
        print("\n(a') the same through the seccomp listener: the tenant's first sysinfo(2) of such a group, %d in "
              "%.0f s, %.1f ms each" % (tenant_calls, a.seconds, mean))
        print(row % ("victim's sysinfo(2) every 10 ms (%d calls)" % calls, "p50 / p99 / worst"))
        print(row % ("  sysinfo", cells(got)))
        try:
            got, made = hostile_walks.pidns_walk_figures(self.mnt, top, a.seconds, a.rate, a.sleepers)
        finally:
            hostile_walks.remove_walk_cgroups(top)
        print("\n(b) %d new pid namespaces in %.0f s (asked: %d a second), %d sleeping processes on the host"
              % (made, a.seconds, a.rate, a.sleepers))
        print(row % ("victim's reads every 10 ms (%d rounds)" % got["rounds"], "p50 / p99 / worst"))
        for name in ("uptime", "loadavg"):
            print(row % ("  /proc/" + name, cells(got[name])))

    def cleanup(self):
        problems = []
        try:
            self.stop_attack()
        except OSError:
            pass
        self.ns.close()
        if getattr(self, "walk_cgroups", None):
            hostile_walks.remove_walk_cgroups(self.walk_cgroups)
        for path in self.cgroups:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                problems.append("cannot remove cgroup %s" % path)
        problems += benchlib.stop_daemon_and_work(self.daemon, self.mnt, self.work)
        for p in problems:
            print("bench-hostile: %s" % p, file=sys.stderr)
        return not problems


class WalkBench(Bench):
    def run(self):
        self.run_walks()


def main():
    p = argparse.ArgumentParser(description="cgprocfs with one container misbehaving (needs root).")
    p.add_argument("--build-dir", default="build", help="meson build directory (default: build)")
    p.add_argument("--iterations", type=int, default=3000, help="victim reads per file and attack (default 3000)")
    p.add_argument("--pause-us", type=int, default=1000,
                   help="the victim's pause between rounds of reads, µs (default 1000; 0: reads without a pause)")
    p.add_argument("--processes", type=int, default=200, help="processes in the hostile container (default 200)")
    p.add_argument("--walks", action="store_true",
                   help="measure a tenant's walks under shared locks instead (loadavg's first sample, a new pid "
                        "namespace's init)")
    p.add_argument("--seconds", type=float, default=5, help="--walks: seconds of each attack (default 5)")
    p.add_argument("--cgroups", type=int, default=3000, help="--walks: the tenant's sub-cgroups (default 3000)")
    p.add_argument("--rate", type=int, default=200, help="--walks: new pid namespaces a second (default 200)")
    p.add_argument("--sleepers", type=int, default=1000,
                   help="--walks: more processes on the host, each a pid a walk of /proc meets (default 1000)")
    args = p.parse_args()
    if args.iterations <= 0 or args.processes <= 0:
        p.error("--iterations and --processes must be positive")
    if os.geteuid() != 0:
        p.error("needs root (mounts, namespaces)")

    if args.walks:
        return benchlib.run_bench("bench-hostile", lambda: WalkBench(args))
    return benchlib.run_bench("bench-hostile", lambda: Bench(args))


if __name__ == "__main__":
    sys.exit(main())
