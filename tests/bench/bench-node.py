#!/usr/bin/python3
"""A node's scale at a monitor's pace: N containers, each polling five
served files once a second, through cgprocfs's view and through LXCFS's
files in the same containers, in one run.

    sudo /usr/bin/python3 tests/bench/bench-node.py [--build-dir build]
        [--counts 100,300] [--seconds 30] [--probe 300]

It starts the daemon from the build directory and Debian's LXCFS
(`lxcfs -l --enable-cfs`, its own mountpoint and pidfile), both before
any container (each container's mount namespace is a private copy). A
container is the cheapest real one (benchlib: new pid and mount
namespaces, the view over its /proc by the real OCI hook), in a cgroup of
its own with half a CPU and 256 MiB. For each count, containers are added
up to it, then three rounds of --seconds each:

- idle: nothing reads;
- view: in every container, cgprocfs-bench-poller reads /proc/meminfo,
  stat, loadavg, uptime and cpuinfo (the view) once a second, each
  poller's first round at a random point of the first second;
- lxcfs: the same pollers read LXCFS's files of the same names.

Each round reports each daemon's CPU over the round (utime + stime of
all its threads, as a % of one CPU), its CPU per read (the reads are the
pollers' count over the round: N × 5 a second), its threads and RSS;
then, with the pollers still reading, a probe in the first container
(cgprocfs-bench-latency, --probe iterations 10 ms apart) times open +
read + close of meminfo and stat through the round's daemon. It only
reports figures; its exit status says whether it ran.
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

cgtest = benchlib.cgtest
BenchError = benchlib.BenchError
FILES = ["meminfo", "stat", "loadavg", "uptime", "cpuinfo"]
QUOTA, PERIOD, MEMORY = 50000, 100000, 256 << 20


class Node:
    def __init__(self, a):
        self.a = a
        self.counts = [int(c) for c in a.counts.split(",")]
        self.daemon_exe, self.hook, self.poller, self.latency = benchlib.built(
            a.build_dir, "daemon/cgprocfs", "contrib/oci/cgprocfs-oci-hook", "tests/bench/cgprocfs-bench-poller",
            "tests/bench/cgprocfs-bench-latency")
        self.work = tempfile.mkdtemp(prefix="cgprocfs-node-")
        self.mnt = os.path.join(self.work, "view")
        self.lxcfs_mnt = os.path.join(self.work, "lxcfs")
        self.daemon = self.lxcfs = None
        self.containers = []  # (init pid, Cgroup)
        self.spaces = None

    def daemon_log(self):
        with open(os.path.join(self.work, "daemon.log"), errors="replace") as f:
            return f.read()[-3000:]

    def add_container(self):
        i = len(self.containers)
        cg = benchlib.Cgroup("cgprocfs-node-%d-%d" % (os.getpid(), i), QUOTA, PERIOD, MEMORY)
        holder, init = cgtest.start_namespace()
        self.spaces.holders.append(holder)
        self.containers.append((init, cg))
        for d in cg.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(init))
        rc, _, err = cgtest.give_view(self.mnt, self.spaces.bundle, init, "node-%d" % i, hook=self.hook)
        if rc != 0:
            raise BenchError("the hook failed for container %d: %s" % (i, err.strip()))

    def in_container(self, i, argv):
        init, cg = self.containers[i]
        return cgtest.in_cgroups(cg.dirs, benchlib.Namespaces.command(init, argv))

    def paths(self, which):
        top = "/proc" if which == "view" else os.path.join(self.lxcfs_mnt, "proc")
        return [os.path.join(top, f) for f in FILES]

    def start_pollers(self, which):
        return [subprocess.Popen(self.in_container(i, [self.poller, "1000", str(i)] + self.paths(which)),
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
                for i in range(len(self.containers))]

    def stop_pollers(self, pollers):
        """SIGTERM to every poller (each prints its counts): the reads and
        failures in all."""
        subprocess.run(["pkill", "-TERM", "-f", "^" + self.poller])
        reads = failed = 0
        for p in pollers:
            out = p.communicate(timeout=60)[0].split()
            if out[:1] == ["reads"]:
                reads, failed = reads + int(out[1]), failed + int(out[3])
        return reads, failed

    def probe(self, which):
        """p50 and p99 (µs) of meminfo and stat through which, in the first
        container, 10 ms apart."""
        top = self.paths(which)
        argv = [self.latency, "--iterations", str(self.a.probe), "--warmup", "20", "--pause-us", "10000",
                "%s:meminfo=%s" % (which, top[0]), "%s:stat=%s" % (which, top[1])]
        r = subprocess.run(self.in_container(0, argv), capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise BenchError("the probe failed: %s" % r.stderr)
        rows = {line.split()[0]: line.split()[1:3] for line in r.stdout.splitlines() if line.startswith(which + ":")}
        return "%s (%s) / %s (%s)" % (rows["%s:meminfo" % which][0], rows["%s:meminfo" % which][1],
                                      rows["%s:stat" % which][0], rows["%s:stat" % which][1])

    def round(self, n, which):
        pollers = self.start_pollers(which) if which != "idle" else []
        try:
            time.sleep(2)  # every poller in its first second
            pids = {"cgprocfs": self.daemon.pid, "lxcfs": self.lxcfs.pid}
            meters = (benchlib.cpu_seconds, benchlib.run_seconds, benchlib.switches)
            before = {k: [m(p) for m in meters] for k, p in pids.items()}
            asked = self.requests()
            profile = (self.profile(pids["lxcfs" if which == "lxcfs" else "cgprocfs"]) if self.a.perf and which != "idle"
                       else None)
            time.sleep(self.a.seconds)
            used, ran, switched = ({k: meters[i](p) - before[k][i] for k, p in pids.items()} for i in range(3))
            asked = {op: n - asked.get(op, 0) for op, n in self.requests().items() if n > asked.get(op, 0)}
            if profile:
                self.report_profile(which, profile)
            shape = {k: (benchlib.status_field(p, "Threads"), benchlib.status_field(p, "VmRSS") / 1024)
                     for k, p in pids.items()}
            reads = n * len(FILES) * self.a.seconds if pollers else 0
            probe = self.probe("lxcfs" if which == "lxcfs" else "view")
        finally:
            total, failed = self.stop_pollers(pollers) if pollers else (0, 0)
        if failed:
            raise BenchError("%d of %d reads failed through %s" % (failed, total, which))
        row = "| %d | %s |" % (n, which)
        read_by = {"view": "cgprocfs", "lxcfs": "lxcfs"}.get(which)
        for k in ("cgprocfs", "lxcfs"):
            per = ("%.0f µs (%.0f µs run), %.1f switches" % (used[k] / reads * 1e6, ran[k] / reads * 1e6,
                                                              switched[k] / reads) if k == read_by else "-")
            row += " %.1f %% | %s | %d, %.0f MiB |" % (used[k] / self.a.seconds * 100, per, *shape[k])
        print(row + " %s |" % probe, flush=True)
        if which == "view":
            print("(the view's FUSE requests per read: %s)" % ", ".join(
                "%s %.2f" % (op, n / reads) for op, n in sorted(asked.items(), key=lambda kv: -kv[1])), flush=True)

    def requests(self):
        """The daemon's FUSE requests so far, by operation (its stats)."""
        return {name.split('"')[1]: n for name, n in cgtest.read_stats(self.mnt).items()
                if name.startswith("cgprocfs_requests_total{")}

    def profile(self, pid):
        """perf record of pid over the round (--perf): its process."""
        out = os.path.join(self.work, "perf-%d.data" % pid)
        return subprocess.Popen(["perf", "record", "-q", "-F", "999", "-g", "-p", str(pid), "-o", out, "--",
                                 "sleep", str(self.a.seconds)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL), out

    def report_profile(self, which, profile):
        """The symbols where the daemon's samples fall (self), kernel and
        user, the first --perf of them."""
        profile[0].wait(timeout=60)
        r = subprocess.run(["perf", "report", "-q", "-i", profile[1], "--no-children", "--sort", "dso,sym",
                            "-g", "none", "--percent-limit", "0.5"], capture_output=True, text=True)
        lines = [line.rstrip() for line in r.stdout.splitlines() if line.strip()][:self.a.perf]
        print("\n".join(["(%s round, where the daemon's CPU time went:" % which] + lines + [")"]), flush=True)

    def run(self):
        log = os.path.join(self.work, "daemon.log")
        self.daemon = benchlib.start_daemon([self.daemon_exe, self.mnt], self.mnt, log)
        os.makedirs(self.lxcfs_mnt)
        self.lxcfs = benchlib.start_lxcfs(self.lxcfs_mnt, os.path.join(self.work, "lxcfs.pid"),
                                          os.path.join(self.work, "lxcfs.log"), options=["-l", "--enable-cfs"])
        self.spaces = benchlib.Namespaces(self.hook, self.mnt, self.work)
        print("| containers | pollers read | cgprocfs CPU | per read: CPU (ran), switches | threads, RSS | LXCFS CPU | "
              "per read | "
              "threads, RSS | probe meminfo / stat p50 (p99) µs |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n in self.counts:
            while len(self.containers) < n:
                self.add_container()
            for which in ("idle", "view", "lxcfs"):
                self.round(n, which)
        print("(%d s a round, reads %s once a second in each container, 0.5 CPU and 256 MiB each; the probe: %d "
              "reads of each 10 ms apart in the first container, the pollers reading)"
              % (self.a.seconds, ", ".join(FILES), self.a.probe))

    def cleanup(self):
        if self.spaces:
            self.spaces.close()
        for _, cg in self.containers:
            cg.remove()
        problems = []
        if self.lxcfs is not None:
            benchlib.stop_served(self.lxcfs, self.lxcfs_mnt)
        problems += benchlib.stop_daemon_and_work(self.daemon, self.mnt, self.work)
        for p in problems:
            print("bench-node: " + p, file=sys.stderr)
        return not problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--counts", default="100,300")
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--probe", type=int, default=300)
    p.add_argument("--perf", type=int, default=0, help="profile each polled round's daemon: show this many symbols")
    a = p.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(benchlib.run_bench("bench-node", lambda: Node(a)))


if __name__ == "__main__":
    main()
