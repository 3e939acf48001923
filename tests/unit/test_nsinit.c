/* The init of a caller's pid namespace (fs/nsinit.h), whose start is the
 * epoch of the caller's uptime: found from a process forked in the
 * namespace (among its parents), and from one that joined it with setns
 * (whose parent is outside it: the search of /proc). Root only. */
#include "nsinit.h"

#include "cleanup.h"
#include "pidns.h"
#include "procfile.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first child of pid, as this namespace numbers it (waited for). */
static pid_t child_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int i = 0; i < 500; i++) {
		g_autofree char *text = NULL;
		if (g_file_get_contents(path, &text, NULL, NULL) && g_ascii_isdigit(text[0]))
			return (pid_t)g_ascii_strtoll(text, NULL, 10);
		g_usleep(10000);
	}
	cr_assert_fail("process %d made no child", (int)pid);
	return 0;
}

/* A process that forks a child and waits; it ends with the test's (and
 * its child, of the namespace, with the namespace's init). */
static void fork_and_wait(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	waitpid(c, NULL, 0);
	_exit(0);
}

/* pid 1 of a new pid namespace, which forks a child: (init, child) as
 * this namespace numbers them. */
static pid_t start_namespace(pid_t *ret_child)
{
	if (geteuid() != 0)
		cr_skip_test("making a pid namespace needs root");
	pid_t init = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	if (init == 0)
		fork_and_wait();
	cr_assert(init > 0, "clone(CLONE_NEWPID): %s", g_strerror(errno));
	*ret_child = child_of(init);
	return init;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What nsinits_of says of tid is init's namespace and start. */
static void check_init_of(pid_t tid, pid_t init)
{
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct nsinits *n = nsinits_new(proc_fd);
	struct pid_stat st;
	uint64_t ns = 0, start = 0;
	cr_assert_eq(procfile_pid_stat(proc_fd, init, &st), 0);
	cr_assert(nsinits_of(n, tid, &ns, &start), "no init found for %d", (int)tid);
	cr_expect_eq(ns, pidns_of(proc_fd, init), "the namespace of %d", (int)tid);
	cr_expect_eq(start, st.start_time, "the init of %d started at %" G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT,
		     (int)tid, st.start_time, start);
	/* Kept: asked again, the same. */
	cr_assert(nsinits_of(n, tid, &ns, &start));
	cr_expect_eq(start, st.start_time);
	nsinits_free(n);
}

Test(nsinit, a_process_forked_in_the_namespace_and_its_init)
{
	pid_t child;
	pid_t init = start_namespace(&child);
	check_init_of(child, init);
	check_init_of(init, init);
	end(init);
}

/* A process that joined with setns (nsenter -p's child): its parent is not
 * of the namespace, so the init is found by the search of /proc. */
Test(nsinit, a_process_that_joined_the_namespace)
{
	pid_t child;
	pid_t init = start_namespace(&child);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init);
	_cleanup_close_ int ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(ns_fd >= 0);
	pid_t joiner = fork();
	if (joiner == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setns(ns_fd, CLONE_NEWPID) < 0)
			_exit(1);
		fork_and_wait();
	}
	pid_t joined = child_of(joiner);
	check_init_of(joined, init);
	end(init);
	end(joiner);
}

Test(nsinit, a_process_of_the_daemons_namespace_has_none)
{
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct nsinits *n = nsinits_new(proc_fd);
	uint64_t ns, start;
	cr_assert_not(nsinits_of(n, getpid(), &ns, &start));
	nsinits_free(n);
}
