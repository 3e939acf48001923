#!/usr/bin/python3
"""What cgprocfs-runtime adds to a Docker container's start.

    sudo /usr/bin/python3 tests/bench/bench-docker.py [--build-dir build] [--runs 15]

It starts the daemon from the build directory on a temporary mountpoint
and a dockerd with its state in a temporary directory (as test_docker
does: Debian's docker.io, the vfs storage driver, a busybox image made
with docker import), then times, alternating, `docker run --rm IMAGE true`
with runc and with --runtime cgprocfs (the wrapper adds the hook, the hook
attaches the container), and the same with `cat /proc/cpuinfo` (the first
read in a new container). It reports the median and the spread of each,
and the differences. Everything it started goes on every exit path.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import benchlib  # noqa: E402
import test_docker  # noqa: E402

BenchError = benchlib.BenchError


class Bench:
    def __init__(self, args):
        self.args = args
        self.daemon_bin, self.hook_bin, self.runtime_bin = benchlib.built(
            args.build_dir, "daemon/cgprocfs", "contrib/oci/cgprocfs-oci-hook", "contrib/oci/cgprocfs-runtime")
        for exe in (test_docker.DOCKER, test_docker.DOCKERD):
            if not os.access(exe, os.X_OK):
                raise BenchError("%s is missing (apt-get install docker.io containerd)" % exe)
        self.work = tempfile.mkdtemp(prefix="cgprocfs-bench-docker.")
        self.mnt = os.path.join(self.work, "mnt")
        os.mkdir(self.mnt)
        self.daemon = self.docker = None
        self.state = {"run_before": set(os.listdir("/run"))}  # for test_docker.cleanup

    def daemon_log(self):
        with open(os.path.join(self.work, "daemon.log")) as f:
            return f.read()[-3000:]

    def timed_run(self, runtime, argv):
        t0 = time.monotonic()
        rc, out, err = self.docker.docker(["run", "--rm", "--runtime", runtime, test_docker.IMAGE] + argv)
        ms = (time.monotonic() - t0) * 1e3
        if rc != 0:
            raise BenchError("docker run --runtime %s failed: %s" % (runtime, err.strip()))
        return ms, out

    def run(self):
        self.daemon = benchlib.start_daemon([self.daemon_bin, self.mnt], self.mnt,
                                            os.path.join(self.work, "daemon.log"))
        dwork = os.path.join(self.work, "docker")
        os.mkdir(dwork)
        self.docker = test_docker.Docker(dwork, self.runtime_bin, self.hook_bin, self.mnt)
        test_docker.make_image(self.docker, dwork)
        # cgprocfs-gated: the wrapper, adding no hook (no annotation).
        # runc-by-path: runc as a runtime of daemon.json, the fair baseline
        # (Docker treats such a runtime apart from its default one).
        # runc-with-args: runc with a runtimeArgs entry, run through the
        # shell script Docker writes for such a runtime, as the cgprocfs
        # runtimes are.
        cases = [("runc-by-path", ["true"]), ("cgprocfs", ["true"]), ("runc-by-path", ["cat", "/proc/cpuinfo"]),
                 ("cgprocfs", ["cat", "/proc/cpuinfo"]), ("cgprocfs-gated", ["true"]), ("runc", ["true"]),
                 ("runc-with-args", ["true"])]
        times = {i: [] for i in range(len(cases))}
        for i, (runtime, argv) in enumerate(cases):  # warm-up
            self.timed_run(runtime, argv)
        for _ in range(self.args.runs):
            for i, (runtime, argv) in enumerate(cases):
                times[i].append(self.timed_run(runtime, argv)[0])
        print("docker run --rm wall time, %d runs each, alternating (ms):" % self.args.runs)
        print("%-34s %8s %8s %8s" % ("", "median", "min", "max"))
        med = {}
        for i, (runtime, argv) in enumerate(cases):
            xs = times[i]
            med[i] = statistics.median(xs)
            print("%-34s %8.1f %8.1f %8.1f" % ("--runtime %s %s" % (runtime, " ".join(argv)), med[i], min(xs),
                                                 max(xs)))
        print("added by cgprocfs-runtime (median): true %+.1f ms, first cat /proc/cpuinfo %+.1f ms; "
              "the wrapper alone (no hook added) %+.1f ms" % (med[1] - med[0], med[3] - med[2], med[4] - med[0]))
        print("of which Docker's script for a runtime with arguments (runc with one): %+.1f ms"
              % (med[6] - med[0]))

    def cleanup(self):
        problems = []
        if self.docker:
            self.docker.close()
        test_docker.cleanup(self.state)
        problems += benchlib.stop_daemon_and_work(self.daemon, self.mnt, self.work)
        for p in problems:
            print("bench-docker: " + p, file=sys.stderr)
        return not problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--runs", type=int, default=15)
    args = p.parse_args()
    return benchlib.run_bench("bench-docker", lambda: Bench(args))


if __name__ == "__main__":
    sys.exit(main())
