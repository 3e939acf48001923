"""How unmodified programs count CPUs in a container limited by quota, with
the view in place and sched_getaffinity(2) notified to the daemon's seccomp
listener: coreutils and busybox nproc, a static musl program's sysconf,
Python's os.sched_getaffinity, Node's availableParallelism, libgomp's
omp_get_max_threads, Go's NumCPU and GOMAXPROCS, taskset, hwloc, getconf.
Then whether two containers that pin one thread per CPU of what they are
told end up on the same host CPU (they must not), and whether the answers
hold while the daemon is killed and replaced.

Needs what test_sysinfo needs, and musl-gcc, go, node, hwloc-calc."""

import contextlib
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_containers  # noqa: E402
import test_cpuview  # noqa: E402
import test_sysinfo  # noqa: E402
from cgtest import check, check_equal, diag  # noqa: E402
from test_containers import Container, container_cpus, host_python  # noqa: E402

# sysconf's two counts, musl's (the bit count of sched_getaffinity, no file read).
SYSCONF_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void)
{
	printf("%ld %ld\n", sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF));
	return 0;
}
"""

OMP_C = r"""
#include <omp.h>
#include <stdio.h>
int main(void)
{
	printf("%d\n", omp_get_max_threads());
	return 0;
}
"""

GO_SRC = """package main

import (
	"os"
	"runtime"
	"strconv"
)

func main() {
	os.Stdout.WriteString(strconv.Itoa(runtime.NumCPU()) + " " + strconv.Itoa(runtime.GOMAXPROCS(0)) + "\\n")
}
"""

# One thread per CPU of the mask it is told, each pinned there and
# spinning for argv[1] seconds: "cpus <list>", then "share <CPU seconds of
# them all a wall second>". With "loop WANT": sched_getaffinity every 10 ms, and every
# 100 calls "calls failed other" (other: a count not WANT).
SPIN_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double secs;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET((int)(long)arg, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0) {
		perror("sched_setaffinity");
		exit(1);
	}
	for (double end = now() + secs; now() < end;)
		;
	return NULL;
}

static int loop(int want)
{
	unsigned long calls = 0, failed = 0, other = 0;
	for (;;) {
		cpu_set_t m;
		if (sched_getaffinity(0, sizeof(m), &m) != 0)
			failed++;
		else if (CPU_COUNT(&m) != want)
			other++;
		if (++calls % 100 == 0) {
			printf("%lu %lu %lu\n", calls, failed, other);
			fflush(stdout);
		}
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	static pthread_t threads[CPU_SETSIZE];
	cpu_set_t m;
	int n = 0;
	if (argc == 3 && strcmp(argv[1], "loop") == 0)
		return loop(atoi(argv[2]));
	secs = argc > 1 ? atof(argv[1]) : 1;
	if (sched_getaffinity(0, sizeof(m), &m) != 0) {
		perror("sched_getaffinity");
		return 1;
	}
	printf("cpus");
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &m)) {
			printf(" %d", c);
			pthread_create(&threads[n++], NULL, spin, (void *)(long)c);
		}
	printf("\n");
	double start = now();
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	double wall = now() - start;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("share %.3f\n", cpu / wall);
	return 0;
}
"""

# Each program's count, one section each (test_containers' run_ok splits them).
COUNTS = """
echo @@online; cat /sys/devices/system/cpu/online
echo @@nproc; nproc
echo @@busybox; busybox nproc
echo @@musl; musl-sysconf
echo @@python; python3 -c 'import os; print(len(os.sched_getaffinity(0)), sorted(os.sched_getaffinity(0)))'
echo @@node; node -e 'console.log(require("os").availableParallelism())'
echo @@omp; omp-threads
echo @@go; go-numcpu
echo @@taskset; taskset -p $$
echo @@hwloc; hwloc-calc --number-of pu all
echo @@getconf; getconf _NPROCESSORS_ONLN
echo @@status; grep Cpus_allowed_list /proc/self/status
"""


def missing_tools():
    need = {"musl-gcc": "musl-tools", "go": "golang-go", "node": "nodejs", "hwloc-calc": "hwloc-nox"}
    return ["%s (Debian: %s)" % (t, p) for t, p in need.items() if not shutil.which(t)]


def notify_both(d, quota=None, cpus=None):
    """Container edit: the host's /usr, sysinfo and sched_getaffinity
    notified to d's listener, and (if given) the CPU limits."""
    def edit(config):
        host_python(config)
        config["linux"]["seccomp"] = test_sysinfo.seccomp_notify(test_sysinfo.listener_path(d),
                                                                 ["sysinfo", "sched_getaffinity"])
        cpu = config["linux"]["resources"]["cpu"]
        if quota is False:
            del cpu["quota"], cpu["period"]
        elif quota is not None:
            cpu["quota"], cpu["period"] = quota
        if cpus is not None:
            cpu["cpus"] = test_containers.format_cpu_list(cpus)
    return edit


def count_of(secs, name):
    """The first number a program printed."""
    words = secs[name].split()
    check(words, "%s printed nothing" % name, secs)
    return int(words[0].rstrip(","))


def counts(secs):
    """What each program said, as a dict of numbers."""
    out = {name: count_of(secs, name) for name in ("nproc", "busybox", "musl", "python", "node", "omp",
                                                    "hwloc", "getconf")}
    numcpu, maxprocs = secs["go"].split()
    out["go NumCPU"], out["go GOMAXPROCS"] = int(numcpu), int(maxprocs)
    mask = int(secs["taskset"].split(":")[-1].strip(), 16)
    out["taskset"] = bin(mask).count("1")
    return out


def make_tests(d, lab):
    t, test = cgtest.test_registry()
    cpus = container_cpus()
    quota_n = max(1, min(len(cpus), math.ceil(test_containers.QUOTA / test_containers.PERIOD)))
    state = {}

    @test("build the busybox rootfs with the probes: a static musl program (sysconf), a static libgomp program, "
          "a static Go program, a pinning spinner")
    def _():
        lacking = missing_tools()
        if lacking:
            raise cgtest.Failure("not installed: %s (the README's test command installs them)" % ", ".join(lacking))
        lab.build()
        bin_dir = os.path.join(lab.template, "bin")
        src = os.path.join(lab.dir, "musl-sysconf.c")
        with open(src, "w") as f:
            f.write(SYSCONF_C)
        cgtest.check_ran(cgtest.run(["musl-gcc", "-static", "-O2", "-o", os.path.join(bin_dir, "musl-sysconf"), src]),
                         "musl-gcc -static")
        cgtest.check_ran(lab.compile("omp-threads", OMP_C, ["-fopenmp"]), "cc -static -fopenmp")
        cgtest.check_ran(lab.compile("spin", SPIN_C, ["-pthread"]), "cc -static (the spinner)")
        go_dir = os.path.join(lab.dir, "go")
        os.mkdir(go_dir)
        with open(os.path.join(go_dir, "main.go"), "w") as f:
            f.write(GO_SRC)
        env = dict(os.environ, CGO_ENABLED="0", GOCACHE=os.path.join(go_dir, "cache"), HOME=go_dir,
                   GO111MODULE="off", GOPATH=os.path.join(go_dir, "path"))
        cgtest.check_ran(cgtest.run(["go", "build", "-o", os.path.join(bin_dir, "go-numcpu"), "main.go"],
                                    timeout=300, env=env, cwd=go_dir), "go build")
        if len(cpus) < 2:
            diag("this machine gives containers %d CPU: a quota cannot make fewer; the counts below cannot tell "
                 "the view's answer from the kernel's" % len(cpus))

    @test("quota %d/%d over CPUs %s, the view in place, sysinfo and sched_getaffinity notified: every program "
          "counts %d CPU(s), the mask they are told is the view's online list, inside the container's cpuset"
          % (test_containers.QUOTA, test_containers.PERIOD, test_containers.format_cpu_list(cpus), quota_n))
    def _():
        with Container(lab, test_containers.VIEW_MARK + COUNTS, edit=notify_both(d)) as c:
            secs, result = c.run_ok("the CPU counts")
        test_containers.check_view_in_place(secs, result)
        said = counts(secs)
        diag("quota container, what each printed:\n" + "\n".join("%s: %s" % (k, v.strip()) for k, v in secs.items()))
        check_equal(said, {k: quota_n for k in said}, "the programs' CPU counts")
        told = sorted(int(x) for x in secs["python"].split("[", 1)[1].rstrip("]\n ").split(","))
        online = test_cpuview.parse_cpu_list(secs["online"].strip())
        check_equal(told, sorted(online), "the mask told (Python) against the view's online list")
        check(set(told) <= set(cpus), "the mask told is not inside the container's cpuset", told, cpus)
        state["quota_counts"] = said

    @test("the same container with the view in place but nothing notified: the programs that ask the scheduler "
          "say the kernel's %d (the counts above are the daemon's answer)" % len(cpus))
    def _():
        def files_only(config):
            host_python(config)
        with Container(lab, test_containers.VIEW_MARK + COUNTS, edit=files_only) as c:
            secs, result = c.run_ok("the CPU counts")
        said = counts(secs)
        diag("not notified: %s" % said)
        for name in ("busybox", "musl", "python", "node", "omp", "go NumCPU", "taskset"):
            check_equal(said[name], len(cpus), "%s without the listener" % name)

    @test("a cpuset of one CPU and no quota, notified: the kernel's mask is already one CPU, every program says 1 "
          "and the mask told is the cpuset's CPU")
    def _():
        one = [cpus[-1]]
        with Container(lab, test_containers.VIEW_MARK + COUNTS, edit=notify_both(d, quota=False, cpus=one)) as c:
            secs, result = c.run_ok("the CPU counts")
        said = counts(secs)
        diag("one-CPU cpuset container, what each printed:\n" + "\n".join("%s: %s" % (k, v.strip())
                                                                             for k, v in secs.items()))
        check_equal(said, {k: 1 for k in said}, "the programs' CPU counts in a one-CPU cpuset")
        check_equal(secs["python"].split(None, 1)[1].strip(), str(one), "the mask told")
        check_equal(secs["online"].strip(), str(one[0]), "the view's online list")

    def spin_pair(daemon):
        """Two containers of one CPU (quota) over cpus, each spinning one pinned
        thread per CPU it is told for 4 s at once: [(cpus told, share)]."""
        with contextlib.ExitStack() as stack:
            pair = [stack.enter_context(Container(lab, "exec spin 4", mountpoint=daemon.mnt,
                                                  edit=notify_both(daemon, quota=(100000, 100000))))
                    for _ in range(2)]
            for c in pair:
                c.start_detached()
            outs = []
            for c in pair:
                path = os.path.join(c.bundle, "stdout")
                check(cgtest.wait_until(lambda: "share" in open(path).read(), timeout=20),
                      "a spinner did not finish", open(path).read(), daemon.log())
                lines = dict(line.split(" ", 1) for line in open(path).read().splitlines())
                outs.append((lines["cpus"], float(lines["share"])))
            return outs

    @test("crowding: two containers of 1 CPU each on 2 CPUs, each pinning one spinning thread per CPU it is told: "
          "they are told different CPUs and each gets at least 0.8 of its CPU; with --cpu-placement=first (both "
          "told the first CPU) each gets at most 0.65 (so the test can fail)")
    def _():
        if len(cpus) < 2:
            raise cgtest.Skip("containers get %d CPU here: two cannot be spread" % len(cpus))
        with cgtest.Daemon() as spread:
            shares = spin_pair(spread)
        with cgtest.Daemon(args=["--cpu-placement=first"]) as first:
            crowded = spin_pair(first)
        diag("spread: %s; first: %s" % (shares, crowded))
        check(shares[0][0] != shares[1][0], "the two containers were told the same CPUs", shares)
        for told, share in shares:
            check(share >= 0.8, "a container told CPU %s got %.2f of its CPU" % (told, share), shares)
        check(crowded[0][0] == crowded[1][0], "--cpu-placement=first told two CPUs apart", crowded)
        for told, share in crowded:
            check(share <= 0.65, "crowded on CPU %s, a container still got %.2f" % (told, share), crowded)

    def calls(c):
        with open(os.path.join(c.bundle, "stdout")) as f:
            last = (f.read().splitlines() or ["0 0 0"])[-1]
        return [int(x) for x in last.split()]

    def looping_caller(stack, own):
        """A container of own's calling sched_getaffinity every 10 ms, started
        and seen calling."""
        c = stack.enter_context(Container(lab, "exec spin loop %d" % quota_n, mountpoint=own.mnt,
                                          edit=notify_both(own)))
        c.start_detached()
        check(cgtest.wait_until(lambda: calls(c)[0] >= 100, timeout=10), "the container made no calls")
        return c

    def calls_go_on(c, own, after):
        seen = calls(c)[0]
        check(cgtest.wait_until(lambda: calls(c)[0] >= seen + 200, timeout=30),
              "the calls stopped after %s" % after, calls(c), own.log())

    @test("a container calling sched_getaffinity every 10 ms while its daemon is SIGKILLed (the keeper holds "
          "its notification fd, a new daemon takes over) and then replaced (--replace): no call fails, every "
          "call says %d CPU(s)" % quota_n)
    def _():
        with cgtest.Daemon() as own, contextlib.ExitStack() as stack:
            c = looping_caller(stack, own)
            for step in ("a SIGKILL", "--replace"):
                if step == "--replace":
                    check_equal(own.take_over(), 0, "the replaced daemon's exit status")
                else:
                    own.crash_and_restart()
                calls_go_on(c, own, step)
            n, failed, other = calls(c)
            diag("%d calls, %d failed, %d another count" % (n, failed, other))
            check(failed == 0 and other == 0, "%d calls: %d failed, %d said another count" % (n, failed, other))

    @test("a container calling sched_getaffinity every 10 ms while its daemon stops for good (SIGTERM, its views "
          "not kept): the calls go on and none fails (the keeper lets them through to the kernel; they failed "
          "ENOSYS before)")
    def _():
        with cgtest.Daemon() as own, contextlib.ExitStack() as stack:
            c = looping_caller(stack, own)
            problems = own.stop()
            check(not problems, "the daemon did not stop cleanly", *problems, own.log())
            calls_go_on(c, own, "the daemon stopped")
            n, failed, other = calls(c)
            diag("%d calls, %d failed, %d the kernel's count" % (n, failed, other))
            check_equal(failed, 0, "calls failed after the daemon stopped")

    @test("the daemon logged no error")
    def _():
        check("error" not in d.log(), "the daemon logged an error", d.log())

    return t


if __name__ == "__main__":
    test_containers.run_in_lab(make_tests)
