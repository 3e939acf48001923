/* cgprocfs: a container-scoped view of /proc, served with FUSE. */
#include "daemon.h"
#include "log.h"
#include "mountinfo.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The default control socket of the canonical mountpoint (NULL: none). */
static char *socket_for(const char *mountpoint)
{
	if (!mountpoint)
		return NULL;
	g_autofree char *escaped = g_strdelimit(g_strdup(mountpoint + 1), "/", '-');
	return g_strdup_printf("%s/%s.sock", DAEMON_CONTROL_DIR, escaped);
}

/* Does a daemon's view (its FUSE mount) sit at mountpoint already? */
static gboolean views_served(const char *mountpoint)
{
	struct mount_entry e = { 0 };
	gboolean served = mountinfo_find(mountpoint, &e) && strcmp(e.fstype, "fuse.cgprocfs") == 0;
	mountinfo_entry_clear(&e);
	return served;
}

/* What the command line says. */
struct options {
	gboolean debug_enabled, version, foreground, replace, no_memory_view, no_swap_view, no_loadavg,
		no_io_view, keep_views_on_stop, files_only, no_affinity;
	int keeper_wait, reload_pid;
	char *keeper_cgroup;
	char *cpu_limit;
	char *cpu_placement;
	char *scope;
	double max_age, max_age_idle, budget_percent;
	gint max_entries;
	char *control_socket;
	GStrv fuse_opts;
	GStrv rest;
};

static void options_clear(struct options *o)
{
	g_free(o->cpu_limit);
	g_free(o->cpu_placement);
	g_free(o->scope);
	g_free(o->keeper_cgroup);
	g_free(o->control_socket);
	g_strfreev(o->fuse_opts);
	g_strfreev(o->rest);
}

/* Parse the command line into o (defaults first). FALSE with *error set. */
static gboolean parse_options(int *argc, char ***argv, struct options *o, GError **error)
{
	*o = (struct options){ .keeper_wait = 60, .max_age = 5, .max_age_idle = 60, .budget_percent = 5,
			       .max_entries = 8192 };
	GOptionEntry entries[] = {
		{ "debug", 'd', 0, G_OPTION_ARG_NONE, &o->debug_enabled, "Log every decision at debug level", NULL },
		{ "version", 'V', 0, G_OPTION_ARG_NONE, &o->version, "Print the version and exit", NULL },
		{ "foreground", 'f', 0, G_OPTION_ARG_NONE, &o->foreground,
		  "Stay in the foreground (always the case; accepted for compatibility)", NULL },
		{ "cpu-limit", 0, 0, G_OPTION_ARG_STRING, &o->cpu_limit,
		  "What limits the CPUs a caller sees: cpuset, or cpuset+quota (default)", "cpuset|cpuset+quota" },
		{ "cpu-placement", 0, 0, G_OPTION_ARG_STRING, &o->cpu_placement,
		  "Which CPUs of its cpuset a container limited by a CPU quota is shown: the least shared, kept for "
		  "its life (spread, default), or the first ones (first)", "spread|first" },
		{ "scope", 0, 0, G_OPTION_ARG_STRING, &o->scope,
		  "Whose figures a caller sees: its container's cgroup, whichever cgroup below it the caller is in "
		  "(default), or the caller's own cgroup", "container|caller" },
		{ "no-memory-view", 0, 0, G_OPTION_ARG_NONE, &o->no_memory_view,
		  "Serve the host's meminfo, swaps and vmstat to every caller", NULL },
		{ "no-swap-view", 0, 0, G_OPTION_ARG_NONE, &o->no_swap_view,
		  "Keep the host's swap figures in the memory view", NULL },
		{ "no-loadavg", 0, 0, G_OPTION_ARG_NONE, &o->no_loadavg,
		  "Serve the host's loadavg to every caller (no per-cgroup sampling)", NULL },
		{ "no-io-view", 0, 0, G_OPTION_ARG_NONE, &o->no_io_view,
		  "Serve the host's diskstats and pressure files to every caller", NULL },
		{ "no-affinity", 0, 0, G_OPTION_ARG_NONE, &o->no_affinity,
		  "Leave every container's sched_getaffinity(2) to the kernel (the host's mask, not the view's CPUs)",
		  NULL },
		{ "files-only", 0, 0, G_OPTION_ARG_NONE, &o->files_only,
		  "proc/ holds only the served files (cpuinfo, meminfo, ...), no pid directories: LXCFS's layout, "
		  "for tools that bind every entry of MOUNTPOINT/proc (serve at /var/lib/lxcfs in its place)",
		  NULL },
		{ "smaps-max-age", 0, 0, G_OPTION_ARG_DOUBLE, &o->max_age,
		  "Keep smaps_rollup entries that are read at most this old (default 5)", "SECONDS" },
		{ "smaps-max-age-idle", 0, 0, G_OPTION_ARG_DOUBLE, &o->max_age_idle,
		  "... and at most this old when the process shows no change (default 60)", "SECONDS" },
		{ "refresh-budget", 0, 0, G_OPTION_ARG_DOUBLE, &o->budget_percent,
		  "CPU time the refresher may use, in percent of one core (default 5)", "PERCENT" },
		{ "smaps-max-entries", 0, 0, G_OPTION_ARG_INT, &o->max_entries,
		  "Processes the smaps_rollup memo keeps at most (default 8192)", "N" },
		{ "keeper-wait", 0, 0, G_OPTION_ARG_INT, &o->keeper_wait,
		  "How long the views wait for a new daemon if this one dies (default 60)", "SECONDS" },
		{ "keeper-cgroup", 0, 0, G_OPTION_ARG_FILENAME, &o->keeper_cgroup,
		  "Move the keeper to this cgroup (e.g. /) of every hierarchy: it outlives the daemon's container",
		  "PATH" },
		{ "keep-views-on-stop", 0, 0, G_OPTION_ARG_NONE, &o->keep_views_on_stop,
		  "On SIGTERM or SIGINT, leave the views to the keeper for the next daemon instead of ending them",
		  NULL },
		{ "replace", 0, 0, G_OPTION_ARG_NONE, &o->replace,
		  "Take over from the cgprocfs serving MOUNTPOINT: its views go on without a remount", NULL },
		{ "reload", 0, 0, G_OPTION_ARG_INT, &o->reload_pid,
		  "Start this binary with the other options and mountpoint given (or, with none, those of the "
		  "daemon PID) to take over from PID (--replace), and wait until it has: a service manager's reload "
		  "(the unit's ExecReload)", "PID" },
		{ "control-socket", 0, 0, G_OPTION_ARG_FILENAME, &o->control_socket,
		  "Where OCI hooks attach containers (default /run/cgprocfs/<mountpoint, / as ->.sock)", "PATH" },
		{ "options", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &o->fuse_opts,
		  "Extra FUSE mount options, comma-separated (e.g. max_read=65536)", "OPT[,OPT...]" },
		{ G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->rest, NULL, "[MOUNTPOINT]" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(NULL); /* [MOUNTPOINT]: the remaining argument's */
	g_autoptr(GError) local = NULL;

	g_option_context_set_summary(ctx,
		"Mount a container-scoped view of /proc and /sys/devices/system/cpu at MOUNTPOINT\n"
		"(default " DAEMON_DEFAULT_MOUNTPOINT ") and serve it in the foreground until SIGINT or SIGTERM.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, argc, argv, &local)) {
		log_set_message(error, "%s (see cgprocfs --help)", local->message);
		return FALSE;
	}
	return TRUE;
}

/* Options that do not fit together. FALSE with *error set. */
static gboolean check_options(const struct options *o, GError **error)
{
	if (o->cpu_limit && strcmp(o->cpu_limit, "cpuset") != 0 && strcmp(o->cpu_limit, "cpuset+quota") != 0) {
		log_set_message(error, "--cpu-limit takes cpuset or cpuset+quota, not '%s'", o->cpu_limit);
		return FALSE;
	}
	if (o->cpu_placement && strcmp(o->cpu_placement, "spread") != 0 && strcmp(o->cpu_placement, "first") != 0) {
		log_set_message(error, "--cpu-placement takes spread or first, not '%s'", o->cpu_placement);
		return FALSE;
	}
	if (o->scope && strcmp(o->scope, "container") != 0 && strcmp(o->scope, "caller") != 0) {
		log_set_message(error, "--scope takes container or caller, not '%s'", o->scope);
		return FALSE;
	}
	if (!(o->max_age > 0) || !(o->max_age_idle >= o->max_age) ||
	    !(o->budget_percent > 0 && o->budget_percent <= 100) || o->max_entries < 1) {
		log_set_message(error, "need --smaps-max-age > 0, --smaps-max-age-idle >= --smaps-max-age, "
			       "0 < --refresh-budget <= 100 and --smaps-max-entries >= 1");
		return FALSE;
	}
	if (o->keeper_cgroup && o->keeper_cgroup[0] != '/') {
		log_set_message(error, "--keeper-cgroup takes a cgroup as /proc/self/cgroup names it (e.g. /), "
			       "not '%s'", o->keeper_cgroup);
		return FALSE;
	}
	if (o->keeper_wait < 0) {
		log_set_message(error, "--keeper-wait takes seconds, 0 or more, not %d", o->keeper_wait);
		return FALSE;
	}
	if (o->rest && o->rest[0] && o->rest[1]) {
		log_set_message(error, "one mountpoint only, got '%s' and '%s' (see cgprocfs --help)", o->rest[0],
				o->rest[1]);
		return FALSE;
	}
	return TRUE;
}

/* What the daemon needs of the host. FALSE with *error set. */
static gboolean check_host(GError **error)
{
	if (geteuid() != 0) {
		log_set_message(error, "must run as root: it mounts filesystems and serves every user");
		return FALSE;
	}
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		int err = errno;
		g_set_error(error, CGPROCFS_ERROR, err,
			    "cannot use /dev/fuse (%s): load the fuse module (modprobe fuse), "
			    "or in a container pass the device (--device /dev/fuse)", g_strerror(err));
		return FALSE;
	}
	return TRUE;
}

/* Below it, the start says the limit of open files is low. */
#define FD_LIMIT_ADVISED 4096

/* One pidfd per cached process: allow as many fds as the system lets us. */
static void raise_fd_limit(void)
{
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		return;
	if (lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
	if (lim.rlim_cur < FD_LIMIT_ADVISED)
		g_warning("the open-files limit is %llu: with many processes or containers, requests will fail with "
			  "EMFILE; raise it to %d or more (LimitNOFILE= in the unit, ulimit -n)",
			  (unsigned long long)lim.rlim_cur, FD_LIMIT_ADVISED);
}

/* Mount and serve until stopped, as o says: the exit status. */
static int serve(const struct options *o)
{
	g_autoptr(GError) error = NULL;

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
	const char *dir = o->rest && o->rest[0] ? o->rest[0] : DAEMON_DEFAULT_MOUNTPOINT;
	g_autofree char *canonical = mountpoint_canonical(dir);
	g_autofree char *socket_path = o->control_socket ? g_strdup(o->control_socket) : socket_for(canonical);
	g_autofree char *keeper_path = socket_path ? g_strconcat(socket_path, ".keeper", NULL) : NULL;
	int recover_fd = keeper_path ? keeper_connect(keeper_path) : -1; /* with --replace too */
	g_autofree char *mountpoint = NULL;
	enum mountpoint_mode mode = recover_fd >= 0 ? MOUNTPOINT_RECOVER
				  : o->replace    ? MOUNTPOINT_REPLACE
						  : MOUNTPOINT_NEW;
	if (!mountpoint_prepare(dir, mode, &mountpoint, &error)) {
		log_failure(g_steal_pointer(&error));
		return 1;
	}
	if (!socket_path) { /* the parent was created just now */
		socket_path = socket_for(mountpoint);
		keeper_path = g_strconcat(socket_path, ".keeper", NULL);
	}
	g_autofree char *key_path = g_strconcat(socket_path, ".key", NULL); /* classkey_forget's */
	classkey_load(key_path, views_served(mountpoint));
	g_autofree char *joined = o->fuse_opts ? g_strjoinv(",", o->fuse_opts) : NULL;
	raise_fd_limit();
	const struct daemon_config cfg = {
		.mountpoint = mountpoint,
		.fuse_options = joined,
		.control_socket = socket_path,
		.replace = o->replace,
		.recover_fd = recover_fd,
		.keeper_path = keeper_path,
		.keeper_wait_s = o->keeper_wait,
		.keeper_cgroup = o->keeper_cgroup,
		.stop_keeps_views = o->keep_views_on_stop,
		.cpu_quota = !o->cpu_limit || strcmp(o->cpu_limit, "cpuset+quota") == 0,
		.cpu_placement = o->cpu_placement && strcmp(o->cpu_placement, "first") == 0 ? CPUVIEW_PLACE_FIRST
											     : CPUVIEW_PLACE_SPREAD,
		.memory_view = !o->no_memory_view,
		.scope = o->scope && strcmp(o->scope, "caller") == 0 ? SCOPE_CALLER : SCOPE_CONTAINER,
		.swap_view = !o->no_swap_view,
		.loadavg = !o->no_loadavg,
		.io_view = !o->no_io_view,
		.affinity = !o->no_affinity,
		.files_only = o->files_only,
		.smaps = {
			.max_age_us = (gint64)(o->max_age * G_USEC_PER_SEC),
			.max_age_idle_us = (gint64)(o->max_age_idle * G_USEC_PER_SEC),
			.forget_after_us = (gint64)(o->max_age_idle * G_USEC_PER_SEC),
			.max_entries = (unsigned)o->max_entries,
			.budget = o->budget_percent / 100,
		},
	};
	return lifecycle_serve(&cfg);
}

/* The arguments of cgprocfs --reload=PID ARGS... but --reload's: the new
 * daemon's options and mountpoint, or NULL (none: the running one's). */
static GStrv reload_args(char **argv)
{
	g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
	for (char **a = argv + 1; *a; a++)
		if (strcmp(*a, "--reload") == 0 && a[1])
			a++;
		else if (!g_str_has_prefix(*a, "--reload="))
			g_ptr_array_add(args, g_strdup(*a));
	if (args->len == 0)
		return NULL;
	g_ptr_array_add(args, NULL);
	return (GStrv)g_ptr_array_free(g_steal_pointer(&args), FALSE);
}

int main(int argc, char **argv)
{
	struct options o;
	GError *error = NULL;
	int status;
	g_auto(GStrv) given = g_strdupv(argv); /* before parsing takes the options out */

	/* The keeper, started by a daemon (keeper.c). */
	if (argc > 1 && strcmp(argv[1], KEEPER_ARG) == 0)
		return keeper_run(argc, argv);
	gboolean usable = parse_options(&argc, &argv, &o, &error) && check_options(&o, &error);
	/* Once only (glib takes one log writer), after parsing: --debug. */
	log_setup(o.debug_enabled);
	if (!usable) {
		log_failure(error); /* the usage is wrong */
		status = 2;
		goto out;
	}
	if (o.reload_pid > 0) {
		g_auto(GStrv) args = reload_args(given);
		status = reload_run(o.reload_pid, args);
		goto out;
	}
	if (o.version) {
		printf("cgprocfs %s (libfuse %s)\n", CGPROCFS_VERSION, fuse_pkgversion());
		status = 0;
		goto out;
	}
	if (!check_host(&error)) {
		log_failure(error);
		status = 1;
		goto out;
	}
	status = serve(&o);
out:
	options_clear(&o);
	return status;
}
