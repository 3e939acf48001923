#!/usr/bin/python3
"""One sched_getaffinity(2) call in a runc container (0.5 CPU over two
CPUs, the view in place): answered by the daemon through seccomp user
notification, left to the kernel by the daemon (a container of a cpuset of
one CPU: the kernel's mask has N CPUs already, the call goes the round
trip and back), and the kernel's own (a container whose profile does not
notify it): p50 and p99 of --calls calls.

    sudo /usr/bin/python3 tests/bench/bench-affinity.py [--build-dir build] [--calls 20000]

It starts the daemon from the build directory (as tests/integration's
test_affinity does, with its rootfs and runc lab) and only reports figures.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

PROBE_C = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	double *call = malloc(n * sizeof(double));
	for (int i = 0; i < n; i++) {
		cpu_set_t s;
		double t0 = now_us();
		if (syscall(SYS_sched_getaffinity, 0, sizeof(s), &s) < 0)
			return 1;
		call[i] = now_us() - t0;
	}
	qsort(call, n, sizeof(*call), by_value);
	printf("%.1f %.1f\n", call[n / 2], call[n * 99 / 100]);
	return 0;
}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    os.environ.setdefault("CGPROCFS", os.path.join(build, "daemon", "cgprocfs"))
    os.environ.setdefault("CGPROCFS_OCI_HOOK", os.path.join(build, "contrib", "oci", "cgprocfs-oci-hook"))
    import cgtest
    import test_affinity
    import test_containers
    d = cgtest.Daemon().start()
    lab = test_containers.Lab(d)
    try:
        lab.build()
        cgtest.check_ran(lab.compile("affinity-bench", PROBE_C), "cc -static (the probe)")
        one_cpu = str(test_containers.container_cpus()[-1])
        arms = (("answered by the daemon", test_affinity.notify(d)),
                ("left to the kernel by the daemon (a cpuset of 1 CPU)",
                 test_affinity.both(test_affinity.notify(d), test_affinity.cpuset_only(one_cpu))),
                ("the kernel's own (not notified)", None))
        print("%-56s %8s %8s" % ("%d calls" % args.calls, "p50 µs", "p99 µs"))
        for arm, edit in arms:
            script = "echo @@probe; affinity-bench %d" % args.calls
            with test_containers.Container(lab, script, edit=edit) as c:
                secs, _ = c.run_ok("the probe", timeout=600)
            p50, p99 = secs["probe"].split()
            print("%-56s %8.1f %8.1f" % (arm, float(p50), float(p99)))
        print(cgtest.read_stats(d.mnt, prefix="cgprocfs_affinity_"))
    finally:
        for problem in lab.cleanup():
            print(problem)
        d.stop()


if __name__ == "__main__":
    main()
