#!/usr/bin/python3
"""One sysinfo(2) call in a runc container, answered by the daemon through
seccomp user notification, side by side with the kernel's own sysinfo(2)
(a container whose profile does not notify it) and with an open + read +
close of the container's /proc/uptime through the view (a FUSE request):
p50 and p99 of --calls calls, interleaved in one static probe.

    sudo /usr/bin/python3 tests/bench/bench-sysinfo.py [--build-dir build] [--calls 20000]

It starts the daemon from the build directory (as tests/integration's
test_sysinfo does, with its rootfs and runc lab) and only reports figures.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

PROBE_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysinfo.h>
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
	double *call = malloc(n * sizeof(double)), *file = malloc(n * sizeof(double));
	char buf[256];
	for (int i = 0; i < n; i++) {
		struct sysinfo s;
		double t0 = now_us();
		if (sysinfo(&s) != 0)
			return 1;
		double t1 = now_us();
		int fd = open("/proc/uptime", O_RDONLY);
		while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		double t2 = now_us();
		call[i] = t1 - t0;
		file[i] = t2 - t1;
	}
	report("sysinfo", call, n);
	report("uptime", file, n);
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
    import test_sysinfo
    d = cgtest.Daemon().start()
    lab = test_containers.Lab(d)
    try:
        lab.build()
        cgtest.check_ran(lab.compile("sysinfo-bench", PROBE_C), "cc -static (the probe)")
        rows = {}
        for arm, edit in (("answered by the daemon", test_sysinfo.notify(d, ["sysinfo"])),
                          ("the kernel's", None)):
            script = "echo @@probe; sysinfo-bench %d" % args.calls
            with test_containers.Container(lab, script, edit=edit) as c:
                secs, _ = c.run_ok("the probe", timeout=600)
            for line in secs["probe"].splitlines():
                what, p50, p99 = line.split()
                rows["%s (%s)" % ("sysinfo(2)" if what == "sysinfo" else "/proc/uptime through the view", arm)] = (
                    float(p50), float(p99))
        print("%-52s %8s %8s" % ("%d calls, interleaved" % args.calls, "p50 µs", "p99 µs"))
        for what, (p50, p99) in rows.items():
            print("%-52s %8.1f %8.1f" % (what, p50, p99))
        print(cgtest.read_stats(d.mnt, prefix="cgprocfs_sysinfo_"))
    finally:
        for problem in lab.cleanup():
            print(problem)
        d.stop()


if __name__ == "__main__":
    main()
