/* A service manager's reload (the unit's ExecReload=cgprocfs --reload
 * $MAINPID): a new daemon, this binary with the options the running one
 * was started with, takes over from it (--replace, README "Upgrading
 * without a remount"), and this process waits until it has, or has
 * failed. The new daemon tells the service manager that it is the main
 * process now (takeover.c) before the old one hears "serving" and exits:
 * the unit stays active throughout, and a failed reload leaves the old
 * daemon serving. */
#include "daemon.h"
#include "log.h"

#include "cleanup.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the takeover may take: the daemon taken from gives the taker
 * 60 s to say "serving" before it stops it. */
#define RELOAD_WAIT_MS (90 * 1000)

/* The new daemon's command line: this binary, --replace, then the
 * running daemon's own options and mountpoint (from its cmdline). */
static GStrv new_argv(pid_t pid, GError **error)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/cmdline", (int)pid);
	g_autofree char *text = NULL;
	gsize len;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0) {
		log_set_message(error, "cannot tell this program's path: %s", g_strerror(errno));
		return NULL;
	}
	exe[n] = '\0';
	if (!g_file_get_contents(path, &text, &len, NULL) || len == 0) {
		log_set_message(error, "no process %d to take over from (give the daemon's pid)", (int)pid);
		return NULL;
	}
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(argv, g_strdup(exe));
	g_ptr_array_add(argv, g_strdup("--replace"));
	for (const char *arg = text + strlen(text) + 1; arg < text + len; arg += strlen(arg) + 1)
		if (strcmp(arg, "--replace") != 0)
			g_ptr_array_add(argv, g_strdup(arg));
	g_ptr_array_add(argv, NULL);
	return (GStrv)g_ptr_array_free(g_steal_pointer(&argv), FALSE);
}

/* Wait for whichever ends first: the old daemon (the takeover is done,
 * 0) or the new one (it failed: its status). */
static int wait_takeover(int old_fd, pid_t child)
{
	_cleanup_close_ int child_fd = (int)syscall(SYS_pidfd_open, child, 0);
	struct pollfd p[2] = { { .fd = old_fd, .events = POLLIN }, { .fd = child_fd, .events = POLLIN } };
	int status = 0;

	if (poll(p, 2, RELOAD_WAIT_MS) < 0)
		return -errno;
	if (p[1].revents || child_fd < 0) {
		if (waitpid(child, &status, 0) < 0)
			return -errno;
		return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
	}
	return p[0].revents ? 0 : -ETIMEDOUT;
}

int reload_run(pid_t pid)
{
	g_autoptr(GError) error = NULL;
	_cleanup_close_ int old_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	g_auto(GStrv) argv = old_fd < 0 ? NULL : new_argv(pid, &error);
	GPid child;

	if (old_fd < 0)
		log_set_message(&error, "no process %d to take over from (give the daemon's pid)", (int)pid);
	if (argv && !g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &child, &error))
		g_prefix_error(&error, "cannot start %s: ", argv[0]);
	if (error) {
		g_prefix_error(&error, "reload: ");
		log_failure(g_steal_pointer(&error));
		return 1;
	}
	int r = wait_takeover(old_fd, child);
	if (r == 0)
		g_message("reload: the new daemon (pid %d) took over from pid %d", (int)child, (int)pid);
	else if (r == -ETIMEDOUT)
		g_warning("reload: the new daemon (pid %d) did not take over within %d s", (int)child,
			  RELOAD_WAIT_MS / 1000);
	else
		g_warning("reload: the new daemon failed (%s): pid %d serves on", r < 0 ? g_strerror(-r) : "see above",
			  (int)pid);
	return r == 0 ? 0 : 1;
}
