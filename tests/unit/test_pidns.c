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
#include <stdlib.h>
#include <sys/stat.h>
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

/* The inode of the file at path (a pid namespace's). */
static uint64_t ino_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, g_strerror(errno));
	return (uint64_t)st.st_ino;
}

/* A process two pid namespaces below this one: *ret_outer is pid 1 of a
 * new namespace, and the process returned (by its number here) is pid 1
 * of one made below that. Killing the outer one ends both. */
static pid_t start_nested(pid_t *ret_outer)
{
	char path[64];
	if (geteuid() != 0)
		cr_skip_test("making pid namespaces needs root");
	pid_t outer = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	if (outer == 0) {
		if (syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL) == 0)
			pause();
		pause();
		_exit(0);
	}
	cr_assert(outer > 0, "clone(CLONE_NEWPID): %s", g_strerror(errno));
	*ret_outer = outer;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)outer, (int)outer);
	for (int i = 0; i < 500; i++) {
		g_autofree char *text = NULL;
		pid_t inner = g_file_get_contents(path, &text, NULL, NULL) ? (pid_t)atoi(text) : 0;
		if (inner > 0)
			return inner;
		g_usleep(10000);
	}
	kill(outer, SIGKILL);
	cr_assert_fail("the nested process did not start");
	return -1;
}

Test(pidns, the_tenant_in_a_container_view_is_the_view_namespace_with_all_nested_below_it)
{
	pid_t outer;
	pid_t inner = start_nested(&outer);
	char path[64];
	_cleanup_close_ int proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)outer);
	uint64_t container = ino_of(path);
	_cleanup_close_ int view_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)inner);
	uint64_t below = ino_of(path);
	cr_assert_neq(below, container, "the inner process is not in a namespace of its own");

	cr_expect_eq(pidns_tenant(proc_fd, inner, view_fd), container, "a nested namespace's process in the "
		     "container's view: %" G_GUINT64_FORMAT ", not the container's %" G_GUINT64_FORMAT,
		     pidns_tenant(proc_fd, inner, view_fd), container);
	cr_expect_eq(pidns_tenant(proc_fd, outer, view_fd), container, "the container's init in its view");
	cr_expect_eq(pidns_tenant(proc_fd, inner, -1), container, "a nested namespace's process in the host's view");
	cr_expect_eq(pidns_tenant(proc_fd, getpid(), view_fd), ino_of("/proc/self/ns/pid"),
		     "a host process in the container's view: the host's tenant");
	cr_expect_eq(pidns_tenant(proc_fd, getpid(), -1), ino_of("/proc/self/ns/pid"), "a host process");
	kill(outer, SIGKILL);
	waitpid(outer, NULL, 0);
}

Test(pidns, the_tenant_is_picked_from_the_chain_of_namespaces)
{
	const uint64_t own = 1, view = 10;
	/* nested twice below the view, which is a child of the daemon's */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 12, 11, 10 }, 3, view, own), view);
	/* another container (a child of the daemon's), and one below it */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 20, 1 }, 2, view, own), 20);
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 21, 20, 1 }, 3, view, own), 20);
	/* the host's processes */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 1 }, 1, view, own), own);
	/* the host's view: the daemon's is the view's */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 31, 30, 1 }, 3, own, own), 30);
	/* a view nested in a container: its container's processes are that container's */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 40, 1 }, 2, 41, own), 40);
	/* a chain cut short (a namespace gone meanwhile): its top */
	cr_expect_eq(pidns_tenant_pick((uint64_t[]){ 51, 50 }, 2, view, own), 50);
	cr_expect_eq(pidns_tenant_pick(NULL, 0, view, own), 0);
}
