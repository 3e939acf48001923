/* cgprocfs: a container-scoped view of /proc, served with FUSE. */
#include "daemon.h"
#include "log.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The default control socket of the canonical mountpoint (NULL: none). */
static char *socket_for(const char *mountpoint)
{
	if (!mountpoint)
		return NULL;
	g_autofree char *escaped = g_strdelimit(g_strdup(mountpoint + 1), "/", '-');
	return g_strdup_printf("%s/%s.sock", DAEMON_CONTROL_DIR, escaped);
}

int main(int argc, char **argv)
{
	gboolean debug_enabled = FALSE, version = FALSE, foreground = FALSE, replace = FALSE;
	int keeper_wait = 60;
	g_autofree char *cpu_limit = NULL;
	double max_age = 5, max_age_idle = 60, budget_percent = 5;
	gint max_entries = 8192;
	g_autofree char *control_socket = NULL;
	g_auto(GStrv) fuse_opts = NULL;
	g_auto(GStrv) rest = NULL;
	GOptionEntry entries[] = {
		{ "debug", 'd', 0, G_OPTION_ARG_NONE, &debug_enabled, "Log every decision at debug level", NULL },
		{ "version", 'V', 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
		{ "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground,
		  "Stay in the foreground (always the case; accepted for compatibility)", NULL },
		{ "cpu-limit", 0, 0, G_OPTION_ARG_STRING, &cpu_limit,
		  "What limits the CPUs a caller sees: cpuset, or cpuset+quota (default)", "cpuset|cpuset+quota" },
		{ "smaps-max-age", 0, 0, G_OPTION_ARG_DOUBLE, &max_age,
		  "Keep smaps_rollup entries that are read at most this old (default 5)", "SECONDS" },
		{ "smaps-max-age-idle", 0, 0, G_OPTION_ARG_DOUBLE, &max_age_idle,
		  "... and at most this old when the process shows no change (default 60)", "SECONDS" },
		{ "refresh-budget", 0, 0, G_OPTION_ARG_DOUBLE, &budget_percent,
		  "CPU time the refresher may use, in percent of one core (default 5)", "PERCENT" },
		{ "smaps-max-entries", 0, 0, G_OPTION_ARG_INT, &max_entries,
		  "Processes the smaps_rollup memo keeps at most (default 8192)", "N" },
		{ "keeper-wait", 0, 0, G_OPTION_ARG_INT, &keeper_wait,
		  "How long the views wait for a new daemon if this one dies (default 60)", "SECONDS" },
		{ "replace", 0, 0, G_OPTION_ARG_NONE, &replace,
		  "Take over from the cgprocfs serving MOUNTPOINT: its views go on without a remount", NULL },
		{ "control-socket", 0, 0, G_OPTION_ARG_FILENAME, &control_socket,
		  "Where OCI hooks attach containers (default /run/cgprocfs/<mountpoint, / as ->.sock)", "PATH" },
		{ "options", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &fuse_opts,
		  "Extra FUSE mount options, comma-separated (e.g. max_read=65536)", "OPT[,OPT...]" },
		{ G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest, NULL, "[MOUNTPOINT]" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("[MOUNTPOINT]");
	g_autoptr(GError) error = NULL;

	log_setup(FALSE);
	g_option_context_set_summary(ctx,
		"Mount a container-scoped view of /proc and /sys/devices/system/cpu at MOUNTPOINT\n"
		"(default " DAEMON_DEFAULT_MOUNTPOINT ") and serve it in the foreground until SIGINT or SIGTERM.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "cgprocfs: %s (see cgprocfs --help)\n", error->message);
		return 2;
	}
	log_setup(debug_enabled);
	if (version) {
		printf("cgprocfs %s (libfuse %s)\n", CGPROCFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (cpu_limit && strcmp(cpu_limit, "cpuset") != 0 && strcmp(cpu_limit, "cpuset+quota") != 0) {
		fprintf(stderr, "cgprocfs: --cpu-limit takes cpuset or cpuset+quota, not '%s'\n", cpu_limit);
		return 2;
	}
	if (!(max_age > 0) || !(max_age_idle >= max_age) || !(budget_percent > 0 && budget_percent <= 100) ||
	    max_entries < 1) {
		fprintf(stderr, "cgprocfs: need --smaps-max-age > 0, --smaps-max-age-idle >= --smaps-max-age, "
			"0 < --refresh-budget <= 100 and --smaps-max-entries >= 1\n");
		return 2;
	}
	if (rest && rest[0] && rest[1]) {
		fprintf(stderr, "cgprocfs: one mountpoint only, got '%s' and '%s' (see cgprocfs --help)\n",
			rest[0], rest[1]);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "cgprocfs: must run as root: it mounts filesystems and serves every user\n");
		return 1;
	}
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "cgprocfs: cannot use /dev/fuse (%s): load the fuse module (modprobe fuse), "
			"or in a container pass the device (--device /dev/fuse)\n", g_strerror(errno));
		return 1;
	}

	/* Signals are taken by sigwait in the main thread only. */
	sigset_t signals;
	sigemptyset(&signals);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGHUP);
	sigaddset(&signals, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);

	/* One socket per mountpoint: /var/lib/cgprocfs -> /run/cgprocfs/var-lib-cgprocfs.sock,
	 * and its keeper's beside it. A keeper whose daemon died holds the
	 * views for the next daemon: this one, then. */
	const char *dir = rest && rest[0] ? rest[0] : DAEMON_DEFAULT_MOUNTPOINT;
	g_autofree char *canonical = mountpoint_canonical(dir);
	g_autofree char *socket_path = control_socket ? g_strdup(control_socket) : socket_for(canonical);
	g_autofree char *keeper_path = socket_path ? g_strconcat(socket_path, ".keeper", NULL) : NULL;
	int recover_fd = keeper_path ? keeper_connect(keeper_path) : -1; /* with --replace too */
	g_autofree char *mountpoint = NULL;
	if (!mountpoint_prepare(dir, recover_fd >= 0 ? MOUNTPOINT_RECOVER : replace ? MOUNTPOINT_REPLACE : MOUNTPOINT_NEW,
				&mountpoint))
		return 1;
	if (!socket_path) { /* the parent was created just now */
		socket_path = socket_for(mountpoint);
		keeper_path = g_strconcat(socket_path, ".keeper", NULL);
	}
	g_autofree char *joined = fuse_opts ? g_strjoinv(",", fuse_opts) : NULL;
	const struct daemon_config cfg = {
		.mountpoint = mountpoint,
		.fuse_options = joined,
		.control_socket = socket_path,
		.replace = replace,
		.recover_fd = recover_fd,
		.keeper_path = keeper_path,
		.keeper_wait_s = keeper_wait,
		.cpu_quota = !cpu_limit || strcmp(cpu_limit, "cpuset+quota") == 0,
		.smaps = {
			.max_age_us = (gint64)(max_age * G_USEC_PER_SEC),
			.max_age_idle_us = (gint64)(max_age_idle * G_USEC_PER_SEC),
			.forget_after_us = (gint64)(max_age_idle * G_USEC_PER_SEC),
			.max_entries = (unsigned)max_entries,
			.budget = budget_percent / 100,
		},
	};
	return lifecycle_serve(&cfg);
}
