/* A service manager's reload (the unit's ExecReload=cgprocfs --reload
 * $MAINPID $CGPROCFS_ARGS): a new daemon, this binary with the options
 * given (the unit's, which may have changed), or else those the running
 * one was started with, takes over from it (--replace, README "Upgrading
 * without a remount"), and this process waits until it has, or has
 * failed. The new daemon tells the service manager that it is the main
 * process now (takeover.c) before the old one hears "serving" and exits:
 * the unit stays active throughout, and a failed reload leaves the old
 * daemon serving. */
#include "daemon.h"
#include "log.h"

#include "cleanup.h"
#include "pidns.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the takeover may take: the daemon taken from gives the taker
 * 60 s to say "serving" before it stops it. */
#define RELOAD_WAIT_MS (90 * 1000)

/* The new daemon's command line: this binary, --replace, then args, or
 * else the running daemon's own options and mountpoint (its cmdline). */
static GStrv new_argv(pid_t pid, char **args, GError **error)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/cmdline", (int)pid);
	g_autofree char *text = NULL;
	gsize len = 0;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0) {
		log_set_message(error, "cannot tell this program's path: %s", g_strerror(errno));
		return NULL;
	}
	exe[n] = '\0';
	if (!args && (!g_file_get_contents(path, &text, &len, NULL) || len == 0)) {
		log_set_message(error, "cannot read the command line of process %d", (int)pid);
		return NULL;
	}
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(argv, g_strdup(exe));
	g_ptr_array_add(argv, g_strdup("--replace"));
	for (char **a = args; a && *a; a++)
		if (strcmp(*a, "--replace") != 0)
			g_ptr_array_add(argv, g_strdup(*a));
	for (const char *arg = text ? text + strlen(text) + 1 : NULL; arg && arg < text + len; arg += strlen(arg) + 1)
		if (strcmp(arg, "--replace") != 0)
			g_ptr_array_add(argv, g_strdup(arg));
	g_ptr_array_add(argv, NULL);
	return (GStrv)g_ptr_array_free(g_steal_pointer(&argv), FALSE);
}

/* Start argv as a grandchild, so that systemd, not this process, is its
 * parent when it says it is the main process (systemd warns that it may
 * not notice the exit of a main process that is not its child): its
 * pidfd, or -errno. This process runs no other thread: fork is safe. */
static int spawn_detached(char *const *argv)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid_t mid = fork();
	if (mid == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(127);
		}
		(void)!write(pipefd[1], &pid, sizeof(pid));
		_exit(0);
	}
	close(pipefd[1]);
	pid_t pid = -1;
	ssize_t n = mid < 0 ? -1 : read(pipefd[0], &pid, sizeof(pid));
	int err = errno;
	close(pipefd[0]);
	if (mid > 0)
		(void)waitpid(mid, NULL, 0);
	if (n != sizeof(pid) || pid < 0)
		return mid < 0 || n < 0 ? -err : -ECHILD;
	return pidns_pidfd_open(-1, pid, 0);
}

/* Wait for whichever ends first: the old daemon (the takeover is done,
 * 0) or the new one (it failed, -ECHILD). */
static int wait_takeover(int old_fd, int new_fd)
{
	struct pollfd p[2] = { { .fd = old_fd, .events = POLLIN }, { .fd = new_fd, .events = POLLIN } };

	if (poll(p, 2, RELOAD_WAIT_MS) < 0)
		return -errno;
	if (p[0].revents)
		return 0;
	return p[1].revents ? -ECHILD : -ETIMEDOUT;
}

int reload_run(pid_t pid, char **args)
{
	g_autoptr(GError) error = NULL;
	_cleanup_close_ int old_fd = pidns_pidfd_open(-1, pid, 0);
	g_auto(GStrv) argv = old_fd < 0 ? NULL : new_argv(pid, args, &error);
	_cleanup_close_ int new_fd = -1;

	if (old_fd < 0)
		log_set_message(&error, "no process %d to take over from (give the daemon's pid)", (int)pid);
	if (argv && (new_fd = spawn_detached(argv)) < 0)
		log_set_message(&error, "cannot start %s: %s", argv[0], g_strerror(-new_fd));
	if (error) {
		g_prefix_error(&error, "reload: ");
		log_failure(g_steal_pointer(&error));
		return 1;
	}
	int r = wait_takeover(old_fd, new_fd);
	if (r == 0)
		g_message("reload: a new daemon took over from pid %d", (int)pid);
	else if (r == -ETIMEDOUT)
		g_warning("reload: the new daemon did not take over within %d s", RELOAD_WAIT_MS / 1000);
	else
		g_warning("reload: the new daemon failed (%s): pid %d serves on",
			  r == -ECHILD ? "see above" : g_strerror(-r), (int)pid);
	return r == 0 ? 0 : 1;
}
