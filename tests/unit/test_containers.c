/* Containers' sessions taken over from another daemon (daemon/containers.c). */
#include "daemon.h"
#include "pidwatch.h"
#include "session.h"
#include "smaps.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void no_exit(void *owner, pid_t pid)
{
}

static void count_watch(void *owner, pid_t pid, int pidfd, void *data)
{
	(*(int *)data)++;
}

static gboolean sessions_gauge_is(struct containers *cs, unsigned n)
{
	g_autoptr(GString) out = g_string_new(NULL);
	g_autofree char *line = g_strdup_printf("\ncgprocfs_container_sessions %u\n", n);
	containers_render_stats(cs, out);
	return strstr(out->str, line) != NULL;
}

/* The init of a new pid namespace (pid 1 there), sleeping. */
static pid_t start_pid_namespace(void)
{
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

/* Before the fix, the daemon adopted a taken-over container's process
 * watches after its session had started serving; a session that ended in
 * between (its container gone) left watches naming a freed owner, whose
 * exit callback then wrote to a destroyed FUSE session. Now the watches go
 * with the session: taken before it serves, forgotten when it ends. */
Test(containers, a_resumed_session_that_ends_at_once_leaves_no_watch)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip_test("needs root and /dev/fuse (it mounts a procfs and opens /dev/fuse)");
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int sys_cpu_fd = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct pidwatch *w;
	cr_assert_eq(pidwatch_new(no_exit, &w), 0);
	const struct smaps_config scfg = {
		.proc_fd = proc_fd,
		.memo = { .max_age_us = 5 * G_USEC_PER_SEC, .max_age_idle_us = 60 * G_USEC_PER_SEC,
			  .forget_after_us = 60 * G_USEC_PER_SEC, .max_entries = 16, .budget = 0.05 },
	};
	char dir[] = "/tmp/cgprocfs-test-XXXXXX";
	cr_assert(mkdtemp(dir));
	g_autofree char *sock = g_build_filename(dir, "control.sock", NULL);
	struct server *sv = server_new(NULL);
	const struct containers_config cfg = {
		.socket_path = sock, .host_proc_fd = proc_fd, .sys_cpu_fd = sys_cpu_fd,
		.smaps = smaps_new(&scfg), .watch = w, .server = sv,
	};
	struct containers *cs;
	cr_assert_eq(containers_start(&cfg, -1, &cs), 0);

	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	/* A handover of the host's session (0) and one container's (1), with
	 * a watch of the container's. */
	struct handover ho = {
		.conn = -1,
		.listener = -1,
		.sessions = g_array_new(FALSE, FALSE, sizeof(struct handover_session)),
		.watches = g_array_new(FALSE, FALSE, sizeof(struct handover_watch)),
	};
	const struct handover_watch hw = { 1, child, (int)syscall(SYS_pidfd_open, child, 0) };
	cr_assert_geq(hw.pidfd, 0);
	g_array_append_val(ho.watches, hw);
	/* A container's pid namespace: its init is the watched child's sibling. */
	pid_t init = start_pid_namespace();
	g_autofree char *ns_path = g_strdup_printf("/proc/%d/ns/pid", (int)init);
	/* Never mounted: the session's first read fails, and it ends at once. */
	const struct handover_session sessions[2] = {
		{ -1, -1, 31 },
		{ open("/dev/fuse", O_RDWR | O_CLOEXEC), open(ns_path, O_RDONLY | O_CLOEXEC), 31 },
	};
	cr_assert_geq(sessions[1].ns_fd, 0);
	g_array_append_vals(ho.sessions, sessions, 2);
	cr_assert_eq(containers_resume(cs, &ho, 1, FALSE), 0);
	cr_assert_eq(g_array_index(ho.watches, struct handover_watch, 0).pidfd, -1, "the watch was not taken");

	for (int i = 0; i < 500 && !sessions_gauge_is(cs, 0); i++)
		g_usleep(10 * 1000);
	cr_assert(sessions_gauge_is(cs, 0), "the session did not end");
	/* The gauge drops as the session's thread lets it go, before it
	 * frees the session (and forgets its watches): wait for that too. */
	int left = 0;
	for (int i = 0; i < 500; i++, g_usleep(10 * 1000)) {
		left = 0;
		pidwatch_foreach(w, count_watch, &left);
		if (left == 0)
			break;
	}
	cr_assert_eq(left, 0, "%d watch(es) outlived their session", left);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	kill(init, SIGKILL);
	waitpid(init, NULL, 0);
	cr_assert_not(containers_stop(cs), "a namespace view outlived its session");
	handover_clear(&ho);
	rmdir(dir);
}
