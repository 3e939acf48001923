"""sched_getaffinity(2) in a container limited by quota, answered by the
daemon's seccomp listener (daemon/affinity.c) where its CPU view is in
place: the mask has the view's N CPUs, all of them the kernel's, and
everything else is the kernel's own answer: the return value (the bytes
the kernel copies), EINVAL for a length it refuses, EFAULT for a buffer
it cannot write (nothing written), ESRCH for a pid it does not know, the
bytes past the return value untouched. Each case is run in the same
container with the call notified and without (the kernel's answer), and
the two compared; what the kernel answers is never written here.

Needs what test_sysinfo needs (runc, a static busybox, the hook), and
two CPUs."""

import errno
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import test_containers  # noqa: E402
from cgtest import check, check_equal, diag  # noqa: E402
from test_containers import Container  # noqa: E402
from test_sysinfo import I386, X86_64, listener_path, lxc_answers, seccomp_notify  # noqa: E402

CALLS = ["sysinfo", "sched_getaffinity"]

# One line per case: "NAME RET ERRNO CPUS CANARY", CPUS the bits set in
# the RET bytes written ("-": none), CANARY whether the bytes of the
# 2,048-byte buffer from RET on kept their 0xa5.
AFFINITY_PROBE_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void one(const char *name, pid_t pid, size_t len)
{
	unsigned char buf[2048];
	memset(buf, 0xa5, sizeof(buf));
	errno = 0;
	long r = syscall(SYS_sched_getaffinity, pid, len, buf);
	int err = errno, any = 0, canary = 1;
	printf("%s %ld %s ", name, r, r < 0 ? strerrorname_np(err) : "0");
	for (long i = 0; r > 0 && i < r * 8; i++)
		if (buf[i / 8] >> (i % 8) & 1) {
			printf("%s%ld", any ? "," : "", i);
			any = 1;
		}
	for (size_t i = r > 0 ? (size_t)r : 0; i < sizeof(buf); i++)
		canary &= buf[i] == 0xa5;
	printf("%s %s\n", any ? "" : "-", canary ? "canary-kept" : "canary-written");
}

static pid_t other;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;

static void *thread(void *arg)
{
	pthread_mutex_lock(&lock);
	other = gettid();
	pthread_cond_signal(&started);
	pthread_mutex_unlock(&lock);
	for (;;)
		pause();
	return arg;
}

/* sched_getaffinity(0) every 10 ms, and every 100 calls a line "calls
 * failed cpus" (the last answer's CPUs). */
static int loop(void)
{
	unsigned long calls = 0, failed = 0;
	for (;;) {
		cpu_set_t s;
		long r = syscall(SYS_sched_getaffinity, 0, sizeof(s), &s);
		failed += r < 0;
		if (++calls % 100 == 0) {
			printf("%lu %lu %d\n", calls, failed, r < 0 ? 0 : CPU_COUNT_S((size_t)r, &s));
			fflush(stdout);
		}
		usleep(10000);
	}
}

/* sched_getaffinity(0) every 10 ms, each a line "t cpus": t the
 * CLOCK_MONOTONIC µs just before the call. */
static int watch(void)
{
	for (unsigned long calls = 1;; calls++) {
		cpu_set_t s;
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long r = syscall(SYS_sched_getaffinity, 0, sizeof(s), &s);
		printf("%lld %d\n", (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000, r < 0 ? 0 : CPU_COUNT_S((size_t)r, &s));
		if (calls % 10 == 0)
			fflush(stdout);
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "loop") == 0)
		return loop();
	if (argc > 1 && strcmp(argv[1], "watch") == 0)
		return watch();
	if (argc > 2 && strcmp(argv[1], "pid") == 0) { /* pid N, then pid 0 */
		one("pid", atoi(argv[2]), 1024);
		one("self", 0, 1024);
		return 0;
	}
	one("self", 0, 1024);
	one("own-tid", gettid(), 1024);
	one("len8", 0, 8);
	one("len128", 0, 128);
	one("len4", 0, 4);
	one("len12", 0, 12);
	one("pid-1", -1, 1024);
	one("no-such-pid", 999999, 1024);
	unsigned char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = 0;
	long r = ro == MAP_FAILED ? -2 : syscall(SYS_sched_getaffinity, 0, 1024, ro);
	printf("read-only %ld %s %s\n", r, r < 0 ? strerrorname_np(errno) : "0",
	       ro != MAP_FAILED && ro[0] == 0 ? "untouched" : "written");
	pthread_t t;
	pthread_create(&t, NULL, thread, NULL);
	pthread_mutex_lock(&lock);
	while (!other)
		pthread_cond_wait(&started, &lock);
	pthread_mutex_unlock(&lock);
	one("thread", other, 1024);
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	one("child", child, 1024);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fflush(stdout);
	return 0;
}
"""

SCRIPT = test_containers.VIEW_MARK + "echo @@probe; affinity-probe; echo @@nproc; nproc"


def notify(d, names=CALLS):
    def edit(config):
        config["linux"]["seccomp"] = seccomp_notify(listener_path(d), names)
    return edit


def cpuset_only(cpus):
    def edit(config):
        config["linux"]["resources"]["cpu"] = {"cpus": cpus}
    return edit


def both(*edits):
    def edit(config):
        for e in edits:
            e(config)
    return edit


def cases(text):
    """{name: [ret, errno, cpus (a set), canary]} of the probe's lines."""
    out = {}
    for line in text.splitlines():
        name, *rest = line.split()
        if name == "read-only":
            out[name] = rest
        else:
            ret, err, cpus, canary = rest
            out[name] = [int(ret), err, set() if cpus == "-" else {int(c) for c in cpus.split(",")}, canary]
    return out


def stats(d):
    return cgtest.read_stats(d.mnt, prefix="cgprocfs_affinity_")


def make_tests(d, lab):
    t, test = cgtest.test_registry()
    n = test_containers.expected_cpus()
    state = {}

    def probe(edit, hook="proc", mountpoint=None, what="the affinity probe"):
        with Container(lab, SCRIPT, hook=hook, edit=edit, mountpoint=mountpoint) as c:
            secs, result = c.run_ok(what)
        return cases(secs["probe"]), secs, result

    @test("build the busybox rootfs with a static sched_getaffinity probe; the kernel's answers in a container "
          "with the view and no listener")
    def _():
        test_containers.need_two_cpus()
        lab.build()
        cgtest.check_ran(lab.compile("affinity-probe", AFFINITY_PROBE_C, ["-pthread"]), "cc -static (the probe)")
        kernel, secs, result = probe(None)
        test_containers.check_view_in_place(secs, result)
        diag("the kernel's answers: %s" % kernel)
        state["kernel"] = kernel
        check(len(kernel["self"][2]) > n, "the kernel's mask has %d CPUs, the view %d: nothing to tell apart"
              % (len(kernel["self"][2]), n))

    def check_answered(got, where):
        kernel = state["kernel"]
        diag("%s: %s" % (where, got))
        for name in ("self", "own-tid", "len8", "len128", "thread", "child"):
            ret, err, cpus, canary = got[name]
            kret, _, kcpus, _ = kernel[name]
            check(ret == kret and err == "0", "%s, %s: returned %d (%s), the kernel %d" % (where, name, ret, err, kret))
            check(len(cpus) == n and cpus <= kcpus, "%s, %s: CPUs %s, not %d of the kernel's %s"
                  % (where, name, sorted(cpus), n, sorted(kcpus)))
            check_equal(canary, "canary-kept", "%s, %s: the bytes past the return value" % (where, name))
        for name in ("len4", "len12", "pid-1", "no-such-pid"):
            check_equal(got[name][:2], kernel[name][:2], "%s, %s: return value and errno (the kernel's)" % (where, name))
            check_equal(got[name][1] != "0", True, "%s, %s: the kernel refused it" % (where, name))
        check_equal(got["read-only"], kernel["read-only"], "%s: into a read-only page" % where)
        check_equal(got["read-only"][1:], ["EFAULT", "untouched"], "%s: into a read-only page" % where)

    @test("quota 0.5 CPU over 2 CPUs, sched_getaffinity notified, the view in place: N CPUs of the kernel's mask, "
          "the kernel's return value, EINVAL for lengths 4 and 12, ESRCH for pid -1 and a pid not there, EFAULT "
          "into a read-only page with nothing written, the bytes past the return value untouched; another thread "
          "and a child get N CPUs too; busybox nproc says N; counted")
    def _():
        before = stats(d).get("answered_total", 0)
        got, secs, result = probe(notify(d))
        test_containers.check_view_in_place(secs, result)
        check_answered(got, "notified")
        check_equal(secs["nproc"].strip(), str(n), "busybox nproc")
        after = stats(d).get("answered_total", 0)
        check(after >= before + 6, "answers counted: %d before, %d after" % (before, after))

    @test("coreutils nproc and python3's len(os.sched_getaffinity(0)) (the host's, bound in) say N")
    def _():
        script = test_containers.VIEW_MARK + ("echo @@nproc; /usr/bin/nproc; echo @@python; "
                                              "/usr/bin/python3 -c 'import os; print(len(os.sched_getaffinity(0)))'")
        with Container(lab, script, edit=both(notify(d), test_containers.host_python)) as c:
            secs, result = c.run_ok("nproc and python3")
        test_containers.check_view_in_place(secs, result)
        check_equal([secs["nproc"].strip(), secs["python"].strip()], [str(n), str(n)], "nproc, python3")

    @test("a static musl program's sysconf(_SC_NPROCESSORS_ONLN) and _CONF (musl counts the affinity mask: "
          "every Alpine program) say N")
    def _():
        if not shutil.which("musl-gcc"):
            raise cgtest.Skip("needs musl-gcc (Debian: musl-tools) to build a static musl program")
        src = os.path.join(lab.dir, "musl-sysconf.c")
        with open(src, "w") as f:
            f.write(test_containers.SYSCONF_PROBE_C)
        cgtest.check_ran(cgtest.run(["musl-gcc", "-static", "-O2", "-o",
                                     os.path.join(lab.template, "bin", "musl-sysconf"), src]), "musl-gcc -static")
        script = test_containers.VIEW_MARK + "echo @@musl; musl-sysconf"
        with Container(lab, script, edit=notify(d)) as c:
            secs, result = c.run_ok("the musl program")
        test_containers.check_view_in_place(secs, result)
        check_equal(secs["musl"].split(), [str(n), str(n)], "musl's sysconf ONLN and CONF")

    @test("the kernel's mask where it has N CPUs or fewer (a cpuset of one CPU, no quota), and where the "
          "view is not in place (no hook): counted as left to the kernel")
    def _():
        one_cpu = test_containers.container_cpus()[1]
        before = stats(d)
        got, _, _ = probe(both(notify(d), cpuset_only(str(one_cpu))), what="a cpuset-only container")
        diag("cpuset %d: %s" % (one_cpu, got["self"]))
        check_equal(got["self"][2], {one_cpu}, "the mask of a container of cpuset %d" % one_cpu)
        got, _, _ = probe(notify(d), hook=None, what="a container without the view")
        check_equal(got["self"][:3], state["kernel"]["self"][:3], "the mask without the view (the kernel's)")
        after = stats(d)
        for reason in ("pinned", "not_in_place"):
            key = 'continued_total{reason="%s"}' % reason
            check(after.get(key, 0) > before.get(key, 0), "no call counted as %s" % reason, after)

    @test("two containers sharing one pid namespace (a pod's shareProcessNamespace), each in its own cgroup: "
          "the second's call for the first's init (pid 1) gets the kernel's answer, counted as outside; its own "
          "calls N CPUs")
    def _():
        with Container(lab, "exec sleep 1000", edit=notify(d)) as first:
            first.start_detached()
            init = first.state()["pid"]

            def join(config):
                for ns in config["linux"]["namespaces"]:
                    if ns["type"] == "pid":
                        ns["path"] = "/proc/%d/ns/pid" % init
            before = stats(d).get('continued_total{reason="outside"}', 0)
            script = test_containers.VIEW_MARK + "echo @@probe; affinity-probe pid 1"
            with Container(lab, script, edit=both(notify(d), join)) as second:
                secs, result = second.run_ok("the probe in the first container's pid namespace")
            test_containers.check_view_in_place(secs, result)
            got = cases(secs["probe"])
            diag("pid 1 of a shared pid namespace, from the second container: %s" % got)
            check_equal(got["pid"][2], os.sched_getaffinity(init), "the first container's init's mask (the kernel's)")
            check_equal(len(got["self"][2]), n, "the second container's own mask")
            after = stats(d).get('continued_total{reason="outside"}', 0)
            check(after > before, "not counted as outside: %d, then %d" % (before, after))

    @test("a daemon with --no-affinity: the kernel's mask, with the view in place")
    def _():
        with cgtest.Daemon(args=["--no-affinity"]) as own:
            got, secs, result = probe(notify(own), mountpoint=own.mnt)
            test_containers.check_view_in_place(secs, result)
            check_equal(got["self"][:3], state["kernel"]["self"][:3], "the mask with --no-affinity")
            check(stats(own).get('continued_total{reason="off"}', 0) >= 1, "not counted as off", stats(own))

    @test("podman --runtime cgprocfs-runtime (annotated, 0.5 CPU over 2): the wrapper notifies sched_getaffinity "
          "to the daemon and the probe gets N CPUs; annotated io.cgprocfs.affinity=false as well, the kernel's mask")
    def _():
        wrapper, podman = os.environ.get("CGPROCFS_RUNTIME_WRAPPER"), shutil.which("podman")
        if not wrapper or not podman:
            raise cgtest.Skip("needs podman and CGPROCFS_RUNTIME_WRAPPER (run through meson test)")
        p = test_containers.Podman(lab, podman, runtime=wrapper, runtime_flags=[
            "cgprocfs-runtime=" + shutil.which("runc"), "cgprocfs-hook=" + test_containers.hook_exe(),
            "cgprocfs-mountpoint=" + d.mnt])
        got = {}
        for what, extra in (("wrapped", []), ("opted out", ["--annotation", "io.cgprocfs.affinity=false"])):
            res = p.run(SCRIPT, extra=extra)
            cgtest.check_ran(res, "podman run --runtime cgprocfs-runtime (%s)" % what)
            secs = test_containers.sections(res[1])
            test_containers.check_view_in_place(secs, res)
            got[what] = cases(secs["probe"])["self"]
        diag("podman: %s" % got)
        check(len(got["wrapped"][2]) == n, "the wrapped container's mask: %s" % got["wrapped"])
        check_equal(got["opted out"][:3], state["kernel"]["self"][:3], "the opted-out container's (the kernel's)")

    @test("LXC's socket (.lxc): a forwarded sched_getaffinity (x86-64's, of a caller whose view is not in place; "
          "i386's) is left to the kernel (CONTINUE), not answered ENOSYS as a call that is not ours (uname)")
    def _():
        answers = lxc_answers(d, {"sched_getaffinity": (204, X86_64), "i386 sched_getaffinity": (242, I386),
                                  "uname": (63, X86_64)})
        diag("answers (error, flags): %s" % answers)
        check_equal(answers, {"sched_getaffinity": (0, 1), "i386 sched_getaffinity": (0, 1),
                              "uname": (-errno.ENOSYS, 0)}, "the answers (error, flags)")

    @test("runc update of the container's quota (0.5 to 2 CPUs and back, as docker update --cpus) is followed "
          "by the next call: the first sched_getaffinity that starts after the update has returned gets 2 CPUs "
          "(the kernel's mask), then 1")
    def _():
        with Container(lab, "exec affinity-probe watch", edit=notify(d)) as c:
            c.start_detached()

            def seen():
                with open(os.path.join(c.bundle, "stdout")) as f:
                    return [[int(x) for x in line.split()] for line in f.read().splitlines() if len(line.split()) == 2]

            def first_after(t):
                check(cgtest.wait_until(lambda: any(at > t + 100000 for at, _ in seen()), timeout=10),
                      "no call made 100 ms after the update", seen()[-3:])
                return next(cpus for at, cpus in seen() if at > t)

            check(cgtest.wait_until(lambda: seen(), timeout=10), "the container made no calls")
            got = [seen()[0][1]]
            for quota in (200000, test_containers.QUOTA):
                cgtest.check_ran(cgtest.run(c.runtime.argv("update", "--cpu-quota", str(quota), c.id)), "runc update")
                got.append(first_after(time.monotonic_ns() // 1000))
            diag("CPUs answered: at the start, after 2 CPUs, after 0.5 CPU: %s" % got)
            check_equal(got, [n, len(state["kernel"]["self"][2]), n], "the CPUs answered")

    @test("a container calling sched_getaffinity every 10 ms when its daemon is SIGKILLed and none comes within "
          "--keeper-wait (1 s): no call fails (the keeper lets them through to the kernel: its mask), and the "
          "keeper goes once the container is gone")
    def _():
        own = cgtest.Daemon(args=["--keeper-wait=1"])
        try:
            own.start()
            with Container(lab, "exec affinity-probe loop", mountpoint=own.mnt, edit=notify(own)) as c:
                c.start_detached()
                check(cgtest.wait_until(lambda: calls(c)[0] >= 100, timeout=20), "the container made no calls")
                check_equal(calls(c)[1:], [0, n], "failed calls, and the CPUs answered, before the kill")
                keepers = cgtest.keepers_of(own.mnt, wait=True)
                check_equal(len(keepers), 1, "keepers of the daemon")
                # Killed with no call in its hands (one taken is the next
                # test's case). The container is frozen meanwhile, its calls
                # answered first.
                cgtest.check_ran(cgtest.run(c.runtime.argv("pause", c.id)), "runc pause")
                time.sleep(0.5)
                own.process.send_signal(signal.SIGKILL)
                own.process.wait()
                cgtest.check_ran(cgtest.run(c.runtime.argv("resume", c.id)), "runc resume")
                seen = calls(c)[0]
                check(cgtest.wait_until(lambda: calls(c)[0] >= seen + 300, timeout=30),
                      "the calls stopped after the daemon's keeper gave up", calls(c), own.log())
                diag("calls, failed, CPUs of the last answer: %s" % calls(c))
                check_equal(calls(c)[1:], [0, len(state["kernel"]["self"][2])],
                            "failed calls, and the CPUs answered (the kernel's), past the keeper's wait")
            check(cgtest.wait_until(lambda: not cgtest.keepers_of(own.mnt), timeout=10),
                  "the keeper still runs 10 s after the container is gone", cgtest.keepers_of(own.mnt))
        finally:
            own._stopped = True  # killed on purpose
            cgtest.force_unmount(own.mnt)
            if not cgtest.mounts_under(own.mnt):
                shutil.rmtree(own.mnt, ignore_errors=True)

    def killed_in_hand(fault, said):
        """A daemon that SIGKILLs itself at fault (CGPROCFS_FAULT) with a
        looping container's call in hand; the next daemon, taking over
        from the keeper, must say said, and the calls go on."""
        dead = cgtest.Daemon(prefix=["env", "CGPROCFS_FAULT=daemon:" + fault])
        new = None
        try:
            dead.start()
            dead.wait_published()
            with Container(lab, "exec affinity-probe loop", mountpoint=dead.mnt, edit=notify(dead)) as c:
                c.start_detached()
                check_equal(dead.process.wait(30), -signal.SIGKILL, "the daemon's end at %s" % fault)
                time.sleep(1)
                stalled = calls(c)[0]
                time.sleep(0.5)
                check_equal(calls(c)[0], stalled, "the container's calls while the one in hand waits")
                new = cgtest.Daemon(mountpoint=dead.mnt)
                new.start()
                check(cgtest.wait_until(lambda: calls(c)[0] >= stalled + 100, timeout=20),
                      "the container's calls did not go on under the next daemon", calls(c), new.log())
                check_equal(calls(c)[1:], [0, n], "failed calls, and the CPUs answered")
            check(said in new.log(), "the next daemon did not say it let the call in hand go on", new.log())
            cgtest.stop_check(new)
        finally:
            dead._stopped = True  # killed on purpose
            if new:
                new.stop()
            cgtest.force_unmount(dead.mnt)
            if not cgtest.mounts_under(dead.mnt):
                shutil.rmtree(dead.mnt, ignore_errors=True)

    @test("a daemon SIGKILLed with a container's sched_getaffinity taken and not answered (CGPROCFS_FAULT): the "
          "next daemon, taking over from the keeper, answers that call (the kernel gives a call taken to no other "
          "listener) and says so; the container's calls go on, none failed, N CPUs")
    def _():
        killed_in_hand("call-taken", "answered 1 sysinfo(2) or sched_getaffinity(2) call(s) a daemon that died had "
                       "taken")

    @test("a daemon SIGKILLed as its ioctl hands it a container's sched_getaffinity, before it notes the call "
          "(CGPROCFS_FAULT): the next daemon finds it by the id it expected and lets it through to the kernel, "
          "and says so; the container's calls go on, none failed")
    def _():
        killed_in_hand("call-received", "let 1 call(s) through to the kernel that a daemon that died was taking")

    def calls(c):
        """The last "calls failed cpus" line of a looping container."""
        with open(os.path.join(c.bundle, "stdout")) as f:
            last = (f.read().splitlines() or ["0 0 0"])[-1]
        return [int(x) for x in last.split()]

    @test("the daemon logged no error")
    def _():
        check("error" not in d.log(), "the daemon logged an error", d.log())

    return t


if __name__ == "__main__":
    test_containers.run_in_lab(make_tests)
