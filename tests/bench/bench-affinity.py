#!/usr/bin/python3
"""One sched_getaffinity(2) call in a runc container, side by side: answered
by the daemon (0.5 CPU of 2: the view's one CPU), notified and left to the
kernel (a cpuset of one CPU: the kernel's mask is already the view's), and
the kernel's own (a container whose profile does not notify it). Each arm
asks for pid 0 (Python, nproc, musl's sysconf) and for the caller's own
tid (glibc's pthread_getaffinity_np, libgomp): p50 and p99 of --calls
calls, interleaved in one static probe.

    sudo /usr/bin/python3 tests/bench/bench-affinity.py [--build-dir build] [--calls 20000]

It starts the daemon from the build directory (as tests/integration's
test_cpucount does, with its rootfs and runc lab) and only reports figures.
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

static void report(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), by_value);
	printf("%s %.1f %.1f\n", what, v[n / 2], v[n * 99 / 100]);
}

int main(int argc, char **argv)
{
	int n = atoi(argv[1]);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	double *self = malloc(n * sizeof(double)), *own = malloc(n * sizeof(double));
	int count = 0;
	for (int i = 0; i < n; i++) {
		cpu_set_t m;
		double t0 = now_us();
		if (sched_getaffinity(0, sizeof(m), &m) != 0)
			return 1;
		double t1 = now_us();
		if (sched_getaffinity(tid, sizeof(m), &m) != 0)
			return 1;
		double t2 = now_us();
		self[i] = t1 - t0;
		own[i] = t2 - t1;
		count = CPU_COUNT(&m);
	}
	report("pid0", self, n);
	report("tid", own, n);
	printf("cpus %d 0\n", count);
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
    import test_containers
    import test_cpucount
    d = cgtest.Daemon().start()
    lab = test_containers.Lab(d)
    cpus = test_containers.container_cpus()
    try:
        lab.build()
        cgtest.check_ran(lab.compile("affinity-bench", PROBE_C), "cc -static (the probe)")
        rows = {}
        for arm, edit in (("answered by the daemon", test_cpucount.notify_both(d)),
                          ("notified, the kernel's", test_cpucount.notify_both(d, quota=False, cpus=cpus[-1:])),
                          ("the kernel's", None)):
            script = "echo @@probe; affinity-bench %d" % args.calls
            with test_containers.Container(lab, script, edit=edit) as c:
                secs, _ = c.run_ok("the probe", timeout=600)
            for line in secs["probe"].splitlines():
                what, p50, p99 = line.split()
                rows["%s (%s)" % (what, arm)] = (float(p50), float(p99))
        print("%-46s %8s %8s" % ("%d calls, interleaved" % args.calls, "p50 µs", "p99 µs"))
        for what, (p50, p99) in rows.items():
            if not what.startswith("cpus"):
                print("%-46s %8.1f %8.1f" % (what, p50, p99))
        print("CPUs told:", {what: int(p50) for what, (p50, _) in rows.items() if what.startswith("cpus")})
        print({k: v for k, v in cgtest.read_stats(d.mnt, prefix="").items() if "affinity" in k})
    finally:
        for problem in lab.cleanup():
            print(problem)
        d.stop()


if __name__ == "__main__":
    main()
