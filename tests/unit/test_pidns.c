/* Pidfds by the numbers of another pid namespace: a child made pid 1 of a
 * new pid namespace (root only) is found there by that number. */
#include "pidns.h"

#include "cleanup.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The pid (in this namespace) a pidfd stands for, from its fdinfo. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64];
	g_autofree char *text = NULL;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	const char *line = strstr(text, "\nPid:");
	cr_assert_not_null(line, "no Pid: in %s", text);
	return (pid_t)g_ascii_strtoll(line + 5, NULL, 10);
}

/* A child that is pid 1 of a new pid namespace, and an fd of that namespace. */
static pid_t start_namespace(int *ret_ns_fd)
{
	char path[64];
	if (geteuid() != 0)
		cr_skip_test("making a pid namespace needs root");
	pid_t child = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert(child > 0, "clone(CLONE_NEWPID): %s", g_strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)child);
	*ret_ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(*ret_ns_fd >= 0);
	return child;
}

Test(pidns, own_namespace)
{
	_cleanup_close_ int fd = pidns_pidfd_open(-1, getpid(), 0);
	cr_assert(fd >= 0, "%s", g_strerror(-fd));
	cr_assert_eq(pidfd_pid(fd), getpid());
}

Test(pidns, another_namespace_by_its_numbers)
{
	int ns_fd;
	pid_t child = start_namespace(&ns_fd);
	int fd = pidns_pidfd_open(ns_fd, 1, 0);
	if (fd == -EOPNOTSUPP) {
		kill(child, SIGKILL);
		cr_skip_test("this kernel cannot translate pids between namespaces (Linux 6.9 can)");
	}
	cr_assert(fd >= 0, "pid 1 there: %s", g_strerror(-fd));
	cr_expect_eq(pidfd_pid(fd), child, "pid 1 there is %d here, not %d", (int)child, (int)pidfd_pid(fd));
	close(fd);
	/* Only pid 1 exists there; this process has no number there at all. */
	cr_expect_eq(pidns_pidfd_open(ns_fd, 2, 0), -ESRCH);
	cr_expect_eq(pidns_tgid_in(ns_fd, child), 1, "the child's number there");
	cr_expect_eq(pidns_tgid_in(ns_fd, getpid()), -ESRCH, "this process's number there");
	/* Once it has exited, its number names nothing. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_expect_eq(pidns_pidfd_open(ns_fd, 1, 0), -ESRCH);
	close(ns_fd);
}

Test(pidns, not_a_namespace)
{
	_cleanup_close_ int null_fd = open("/dev/null", O_RDONLY);
	cr_assert_eq(pidns_pidfd_open(null_fd, 1, 0), -EOPNOTSUPP);
}

Test(pidns, a_pidfd_says_when_its_process_exited)
{
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	_cleanup_close_ int pidfd = pidns_pidfd_open(-1, child, 0);
	cr_assert_geq(pidfd, 0);
	cr_expect_not(pidns_pidfd_exited(pidfd), "running");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_expect(pidns_pidfd_exited(pidfd), "killed");
	cr_expect_not(pidns_pidfd_exited(-1), "no pidfd: nothing to tell");
}
