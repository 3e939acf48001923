/* Start-up, serving and teardown of one daemon. */
#include "cleanup.h"
#include "lifecycle.h"

#include "faults.h"
#include "log.h"
#include "metrics.h"
#include "caller.h"
#include "mountinfo.h"
#include "pidns.h"
#include "pidwatch.h"
#include "view.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* How long teardown waits for the host session's workers once the mount is gone. */
#define LOOP_EXIT_WAIT_US (2 * G_USEC_PER_SEC)

/* Serves the host view until it ends. */
static gpointer loop_thread(gpointer data)
{
	struct daemon *d = data;
	int r = session_serve(d->host);
	if (r < 0 && r != -ECANCELED)
		g_warning("FUSE session ended: %s", g_strerror(-r));
	g_mutex_lock(&d->loop_lock);
	d->loop_done = TRUE;
	g_cond_signal(&d->loop_cond);
	g_mutex_unlock(&d->loop_lock);
	/* If the mount went away under us (umount by hand), wake main. */
	kill(getpid(), SIGTERM);
	return NULL;
}

static gboolean loop_wait_done(struct daemon *d, gint64 timeout_us)
{
	gint64 deadline = g_get_monotonic_time() + timeout_us;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&d->loop_lock);

	while (!d->loop_done)
		if (!g_cond_wait_until(&d->loop_cond, &d->loop_lock, deadline))
			return d->loop_done;
	return TRUE;
}

static gpointer pidwatch_thread(gpointer data)
{
	int r = pidwatch_run(data);
	if (r < 0)
		g_warning("watching processes failed (%s): exited processes stay listed until looked up again",
			  g_strerror(-r));
	return NULL;
}

/* The options of the daemon's /proc that restrict what a reader sees, so
 * proc/.real shows no more than /proc does. */
static char *real_proc_options(void)
{
	struct mount_entry e = { 0 };
	if (!mountinfo_find("/proc", &e))
		return NULL;
	char *opts = mountinfo_proc_restrictions(e.super_options);
	mountinfo_entry_clear(&e);
	return opts;
}

/* data: what callers in that cgroup get of the host's instead. */
static void report_bad_cgroup(void *data, const char *file, int err)
{
	g_warning("cannot use %s (%s): callers in that cgroup see the host's %s", file, g_strerror(err),
		  (const char *)data);
}

/* How often the main thread checks that the real procfs is still mounted
 * under the view. */
#define REAL_CHECK_S 2

static int mount_real(const struct daemon *d)
{
	return mount("proc", d->real_path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, d->real_opts) < 0 ? -errno : 0;
}

/* proc/.real unmounted under the view (by hand, or a tool that cleans up
 * mounts): every delegated path fails with ENOENT until it is back. Mount
 * it again, and say so. */
static void keep_real_mounted(struct daemon *d)
{
	struct statfs sfs;
	if (statfs(d->real_path, &sfs) < 0 || sfs.f_type == PROC_SUPER_MAGIC)
		return;
	int r = mount_real(d);
	if (r < 0)
		g_warning("the real procfs at %s was unmounted, and cannot be mounted again (%s): /proc/self and "
			  "every delegated path fail with ENOENT; restart the daemon",
			  d->real_path, g_strerror(-r));
	else
		g_warning("the real procfs at %s was unmounted: mounted it again", d->real_path);
}

/* The root's attributes stay in the kernel's cache (for a day each time
 * they are asked), so that a stat of the mountpoint is answered while no
 * daemon serves it: a container runtime stats the source of a bind (the
 * DaemonSet's state directory) before it starts the next daemon's
 * container, and would wait for that daemon. */
static void keep_root_cached(struct daemon *d)
{
	struct stat st;
	(void)!stat(d->cfg->mountpoint, &st);
}

static int wait_for_stop_signal(struct daemon *d)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		siginfo_t info;
		const struct timespec wait = { REAL_CHECK_S, 0 };
		int sig = sigtimedwait(&set, &info, &wait);
		if (sig < 0 && errno == EAGAIN && !g_atomic_int_get(&d->handed_over)) {
			keep_real_mounted(d);
			keep_root_cached(d);
			daemon_mind_keeper(d);
		}
		if (sig == SIGHUP) {
			g_message("SIGHUP: nothing to reload");
			continue;
		}
		if (sig > 0)
			return sig;
	}
}

static void announce(const char *mnt, gboolean files_only)
{
	if (files_only) {
		g_message("serving the files of %s/proc and %s/sys/devices/system/cpu (--files-only)\n"
			  "  bind them one by one, as LXCFS's are bound, e.g.:\n"
			  "    mount --bind %s/proc/meminfo /proc/meminfo\n"
			  "  LXC: lxc.hook.mount = .../cgprocfs-lxc-hook %s (see the README)\n"
			  "  stop with Ctrl-C or SIGTERM",
			  mnt, mnt, mnt, mnt);
		return;
	}
	g_message("serving %s/proc and %s/sys/devices/system/cpu\n"
		  "  bind it over /proc in one shell:\n"
		  "    unshare --mount --propagation private sh -c 'mount --rbind %s/proc /proc && "
		  "mount --bind %s/sys/devices/system/cpu /sys/devices/system/cpu && exec bash'\n"
		  "  or from psutil, with no bind: psutil.PROCFS_PATH = \"%s/proc\"\n"
		  "  containers: the OCI hook cgprocfs-oci-hook --mountpoint %s (see the README)\n"
		  "  stop with Ctrl-C or SIGTERM",
		  mnt, mnt, mnt, mnt, mnt, mnt);
}

/* .cgprocfs/stats beyond the memo's. */
static void more_stats(GString *out, void *data)
{
	struct daemon *d = data;
	server_render_stats(d->server, out);
	metrics_u64(out, "cgprocfs_caller_restore_failures_total", "counter",
		    "Times a thread could not take the daemon's credentials back after acting as a caller.",
		    caller_restore_failures());
	unsigned placed;
	guint64 full;
	cpuview_placement_counts(d->cpuview, &placed, &full);
	metrics_u64(out, "cgprocfs_cpu_placed", "gauge",
		    "Containers limited by a CPU quota placed on CPUs of their own (--cpu-placement=spread).", placed);
	metrics_u64(out, "cgprocfs_cpu_placement_full_total", "counter",
		    "Containers shown the first CPUs of their cpuset: the placement table was full.", full);
	struct containers *cs = g_atomic_pointer_get(&d->containers);
	if (cs)
		containers_render_stats(cs, out);
	struct sysinfo_listener *l = g_atomic_pointer_get(&d->sysinfo);
	if (l)
		sysinfo_listener_render_stats(l, out);
}

static void on_handed_over(void *data)
{
	struct daemon *d = data;
	/* The new daemon watches the processes and notifies now; a
	 * notification of this one's waiting in the kernel for a request
	 * that only a serving daemon answers would keep it from exiting. */
	notifier_silence(d->notifier);
	g_atomic_int_set(&d->handed_over, 1);
	kill(getpid(), SIGTERM); /* wakes the main thread */
}

/* What the served files read of the cgroups, but the CPU view: memory,
 * I/O, CPU time (with the pid namespaces' inits it needs). */
static void make_groups(struct daemon *d)
{
	const struct memgroups_config mcfg = {
		.proc_fd = d->proc_fd,
		.scope = d->scope,
		.memory = d->cgroups.config.memory,
		.swap_view = d->cfg->swap_view,
		.report = report_bad_cgroup,
		.report_data = (void *)"memory files",
	};
	if (d->cfg->memory_view)
		d->memgroups = memgroups_new(&mcfg);
	/* Pressure files are v2's: the io hierarchy's on v2, the unified one's
	 * on a hybrid host. */
	const struct cgroup_config *cg = &d->cgroups.config;
	const struct iogroups_config icfg = {
		.proc_fd = d->proc_fd,
		.scope = d->scope,
		.io = cg->io,
		.pressure = cg->io.version == CGROUP_V2 ? cg->io : cg->unified,
		.report = report_bad_cgroup,
		.report_data = (void *)"I/O files",
	};
	if (d->cfg->io_view)
		d->iogroups = iogroups_new(&icfg);
	d->nsinits = nsinits_new(d->proc_fd);
	/* beside the control socket, as the keeper's is: one per mountpoint */
	d->counters_path = g_strconcat(d->cfg->control_socket, ".cputime", NULL);
	const struct cputimes_config tcfg = {
		.proc_fd = d->proc_fd,
		.scope = d->scope,
		.cgroups = d->cgroups.config,
		.cpuview = d->cpuview,
		.nsinits = d->nsinits,
		.loadavg = d->cfg->loadavg,
		.counters_path = d->counters_path,
		.report = report_bad_cgroup,
		.report_data = (void *)"CPU time",
	};
	d->cputimes = cputimes_new(&tcfg);
}

/* The CPU view, the cgroups' readers, the memo, the host's view and the
 * process watch. */
static gboolean make_views(struct daemon *d, GError **error)
{
	int r;

	cgroups_discover(&d->cgroups);
	cgroups_log(&d->cgroups);
	const struct scope_config pcfg = {
		.proc_fd = d->proc_fd,
		.sys_cpu_fd = d->sys_cpu_fd,
		.cgroups = d->cgroups.config,
		.rule = d->cfg->scope,
	};
	d->scope = scope_new(&pcfg);
	/* beside the control socket, as the CPU counters' are */
	d->placement_path = g_strconcat(d->cfg->control_socket, ".placement", NULL);
	const struct cpuview_config ccfg = {
		.proc_fd = d->proc_fd,
		.scope = d->scope,
		.sys_cpu_fd = d->sys_cpu_fd,
		.cgroups = d->cgroups.config,
		.use_quota = d->cfg->cpu_quota,
		.placement = d->cfg->cpu_placement,
		.placement_path = d->placement_path,
		.report = report_bad_cgroup,
		.report_data = (void *)"CPUs",
	};
	r = cpuview_new(&ccfg, &d->cpuview);
	if (r < 0)
		return log_set_error(error, r, "cannot set up the CPU view"), FALSE;
	make_groups(d);
	uint64_t own_ns = pidns_of(d->proc_fd, getpid());
	struct memo_config memo = d->cfg->smaps;
	/* Half the memo at most for a container; the host view's callers,
	 * who see every process, may use all of it. */
	memo.max_entries_per_ns = MAX(memo.max_entries / 2, 1);
	memo.unshared_ns = own_ns;
	const struct smaps_config scfg = {
		.proc_fd = d->proc_fd,
		.ns = own_ns,
		.memo = memo,
		.wake_refresher = refresher_wake,
		.wake_data = d->refresher,
	};
	d->smaps = smaps_new(&scfg);
	const struct view_config vcfg = {
		.proc_fd = d->proc_fd, .sys_cpu_fd = d->sys_cpu_fd, .cpuview = d->cpuview, .smaps = d->smaps,
		.memgroups = d->memgroups,
		.cputimes = d->cputimes,
		.iogroups = d->iogroups,
		.pid_ns_fd = -1,
		.pid_ns = scfg.ns,
		.hidepid = mountinfo_hides_processes(d->real_opts),
		.files_only = d->cfg->files_only,
		.more_stats = more_stats,
		.more_stats_data = d,
		.control_socket = d->cfg->control_socket,
	};
	r = view_new(&vcfg, &d->view);
	if (r < 0)
		return log_set_error(error, r, "cannot read the process directories of /proc"), FALSE;
	r = pidwatch_new(ops_forget_pid, &d->watch);
	if (r < 0)
		return log_set_error(error, r, "cannot watch processes"), FALSE;
	return TRUE;
}

/* The host view's session, mounted or taken up from the daemon (or the
 * keeper) that served it. */
static gboolean make_host_session(struct daemon *d, GError **error)
{
	const struct daemon_config *cfg = d->cfg;
	/* Writable only for PSI triggers on pressure files (every other write
	 * is refused by the daemon; writes to the real procfs go behind the
	 * symlinks); noatime: no access times to refresh after each read. */
	g_autofree char *opts = g_strdup_printf("noatime,allow_other,fsname=cgprocfs,subtype=cgprocfs%s%s",
						cfg->fuse_options ? "," : "",
						cfg->fuse_options ? cfg->fuse_options : "");

	if (taking_over(cfg) && !takeover_take(d, error))
		return FALSE;
	if (taking_over(cfg) && d->cputimes)
		cputimes_take_over(d->cputimes);
	if (taking_over(cfg)) /* what the daemon before placed since this one started */
		cpuview_reload_placements(d->cpuview);
	d->host = session_new(d->server, d->view, d->watch, d->proc_fd, opts);
	if (!d->host)
		return log_set_message(error, "cannot start the FUSE session (check the -o options)"), FALSE;
	if (!taking_over(cfg)) {
		if (session_mount(d->host, cfg->mountpoint) == 0)
			return TRUE;
		return log_set_message(error, "cannot mount on %s (see the fuse message above)", cfg->mountpoint),
		       FALSE;
	}
	struct handover_session *taken = &g_array_index(d->ho.sessions, struct handover_session, 0);
	if (session_take_up(d->host, taken->fuse_fd, taken->proto_minor, d->from_keeper) < 0)
		return log_set_message(error, "cannot take up the session of %s", cfg->mountpoint), FALSE;
	taken->fuse_fd = -1; /* the session's now */
	return TRUE;
}

/* Serve the host view, with its procfs at proc/.real, and the containers. */
static gboolean start_serving(struct daemon *d, GError **error)
{
	const struct daemon_config *cfg = d->cfg;
	int r;

	if (taking_over(cfg))
		session_adopt_watches(d->host, &d->ho, 0);
	d->watch_th = g_thread_new("pidwatch", pidwatch_thread, d->watch);
	refresher_start(d->refresher, d->smaps, d->cputimes);
	d->loop_th = g_thread_new("fuse", loop_thread, d);
	if (taking_over(cfg))
		fault_point("take-host");
	/* The mount's own path walk is answered by the loop just started.
	 * Taken over, it is there already. */
	if (!taking_over(cfg) && (r = mount_real(d)) < 0)
		return log_set_error(error, r, "cannot mount the real procfs at %s", d->real_path), FALSE;
	d->real_mounted = TRUE;
	g_atomic_pointer_set(&d->sysinfo, sysinfo_listener_for(d));
	const struct containers_config ccfg = {
		.socket_path = cfg->control_socket,
		.host_proc_fd = d->proc_fd,
		.sys_cpu_fd = d->sys_cpu_fd,
		.cpuview = d->cpuview,
		.memgroups = d->memgroups,
		.cputimes = d->cputimes,
		.iogroups = d->iogroups,
		.smaps = d->smaps,
		.watch = d->watch,
		.server = d->server,
		.host = d->host,
		.handed_over = on_handed_over,
		.handed_over_data = d,
		.keeper = d->keeper,
		.scope = d->scope,
		.sysinfo = d->sysinfo,
	};
	struct containers *cs = NULL;
	r = containers_start(&ccfg, d->ho.listener, &cs);
	if (r < 0)
		g_warning("cannot listen on %s (%s): containers cannot attach", cfg->control_socket, g_strerror(-r));
	else
		g_atomic_pointer_set(&d->containers, cs);
	if (r == 0)
		d->ho.listener = -1; /* the containers' now */
	if (taking_over(cfg))
		takeover_resume(d);
	/* Before the one taken from may go: a keeper holds all, and is found. */
	if (!daemon_keep_all(d) && taking_over(cfg))
		takeover_abandon(d);
	if (taking_over(cfg))
		takeover_done(d);
	containers_ready(cs);
	handover_clear(&d->ho);
	return TRUE;
}

/* Every session is the new daemon's: answer what was taken, then leave
 * with everything mounted (and d in use until the process exits). */
static int exit_handed_over(struct daemon *d)
{
	keeper_leave(d->keeper);
	containers_stop(d->containers);
	refresher_stop(d->refresher);
	if (!server_drain(d->server))
		g_warning("requests still being answered after the handover: exiting anyway");
	g_message("handed over: exiting, %s stays served by the new daemon", d->cfg->mountpoint);
	return 0;
}

/* --keep-views-on-stop: leave every view to the keeper, as a crash would,
 * but with no request taken and left unanswered, and the counters the
 * next daemon starts from written; exit with everything mounted. */
static int exit_leaving_views(struct daemon *d, int sig)
{
	if (!server_pause(d->server))
		g_warning("a request is still being answered: the next daemon has the kernel send it again");
	sysinfo_listener_pause(g_atomic_pointer_get(&d->sysinfo));
	if (d->cputimes)
		cputimes_hand_over(d->cputimes);
	cpuview_keep_placements(d->cpuview);
	g_message("%s: leaving the views to the keeper; a cgprocfs started on %s within %d s takes them over, "
		  "or they end", strsignal(sig), d->cfg->mountpoint, d->cfg->keeper_wait_s);
	return 0;
}

/* Unmount and stop what start_serving started. FALSE if the host session's
 * workers are still serving binds of the view elsewhere: then nothing
 * they use may be freed. */
static gboolean stop_serving(struct daemon *d, gboolean *ret_containers_live)
{
	/* First what notifies the kernel, while every session is served: a
	 * notification about a process waits for the lookups in its view's
	 * directory, which only a served session answers. */
	pidwatch_stop(d->watch);
	g_thread_join(d->watch_th);
	/* Then the containers' views end, as the daemon stops. */
	keeper_quit(d->keeper);
	*ret_containers_live = containers_stop(d->containers);
	containers_views_end(d->containers);
	refresher_stop(d->refresher);
	if (d->real_mounted && umount2(d->real_path, MNT_DETACH) < 0)
		g_warning("cannot unmount %s: %s", d->real_path, g_strerror(errno));
	session_exit(d->host);
	/* A session taken over was not mounted by libfuse: it leaves it. */
	if (taking_over(d->cfg) && umount2(d->cfg->mountpoint, MNT_DETACH) < 0)
		g_warning("cannot unmount %s: %s", d->cfg->mountpoint, g_strerror(errno));
	gboolean done = loop_wait_done(d, LOOP_EXIT_WAIT_US);
	/* No daemon goes on from these counters: the views end here. */
	if (d->cputimes)
		cputimes_unkeep(d->cputimes);
	cpuview_unkeep_placements(d->cpuview);
	if (done)
		g_thread_join(d->loop_th);
	else /* binds elsewhere keep the connection up: ENOTCONN once this process is gone */
		g_message("the view is still bound elsewhere; those binds stop working now");
	return done;
}

/* Free d, or, while containers' sessions are still served (they end with
 * the process), only what they do not use. */
static void free_daemon(struct daemon *d, gboolean containers_live)
{
	handover_clear(&d->ho);
	sysinfo_listener_stop(d->sysinfo);
	if (containers_live)
		return;
	containers_free(d->containers);
	keeper_free(d->keeper);
	refresher_free(d->refresher);
	session_free(d->host);
	pidwatch_free(d->watch);
	view_free(d->view);
	smaps_free(d->smaps);
	cpuview_free(d->cpuview);
	memgroups_free(d->memgroups);
	iogroups_free(d->iogroups);
	cputimes_free(d->cputimes);
	nsinits_free(d->nsinits);
	scope_free(d->scope);
	cgroups_clear(&d->cgroups);
	server_free(d->server);
	notifier_free(d->notifier);
	g_mutex_clear(&d->loop_lock);
	g_cond_clear(&d->loop_cond);
	g_free(d->real_path);
	g_free(d->real_opts);
	g_free(d->counters_path);
	g_free(d->placement_path);
	if (d->proc_fd >= 0)
		close(d->proc_fd);
	if (d->sys_cpu_fd >= 0)
		close(d->sys_cpu_fd);
	g_free(d);
}

/* Open the roots and start the keeper. */
static gboolean open_roots(struct daemon *d, GError **error)
{
	d->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->proc_fd < 0)
		return log_set_error(error, -errno, "cannot open /proc"), FALSE;
	d->sys_cpu_fd = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->sys_cpu_fd < 0)
		return log_set_error(error, -errno, "cannot open /sys/devices/system/cpu"), FALSE;
	const struct keeper_config kcfg = {
		.path = d->cfg->keeper_path,
		.mountpoint = d->cfg->mountpoint,
		.wait_s = d->cfg->keeper_wait_s,
		.cgroup = d->cfg->keeper_cgroup,
	};
	d->keeper = keeper_start(&kcfg);
	return TRUE;
}

/* How the daemon ends once a stop signal came (or its views were handed
 * over): the exit status, or -1 to unmount and end the views. */
static int end_of_serving(struct daemon *d, int sig)
{
	/* A handover under way ends first: the views may be another's then. */
	if (containers_stop_accepting(d->containers) || g_atomic_int_get(&d->handed_over))
		return exit_handed_over(d);
	if (d->cfg->stop_keeps_views) {
		/* Everything given again and published, answered: a keeper
		 * killed a moment ago (its socket not closed yet) does not
		 * answer, and another is started and given everything. */
		if (daemon_keep_all(d))
			return exit_leaving_views(d, sig);
		g_warning("%s: no keeper holds the views, so they end with this daemon", strsignal(sig));
	}
	return -1;
}

int lifecycle_serve(const struct daemon_config *cfg)
{
	g_autoptr(GError) error = NULL;
	gboolean containers_live = FALSE;
	int status = 1;
	struct daemon *d = g_new0(struct daemon, 1);
	struct notifier *notifier = NULL;

	/* First: it forks, and must hold nothing of the daemon's (as the keeper). */
	int r = notifier_start(&notifier);
	if (r < 0)
		g_warning("cannot start the notifier process (%s): if this daemon is killed while a notification "
			  "waits in the kernel, it exits only once a new daemon has answered what that one waits for",
			  g_strerror(-r));
	*d = (struct daemon){
		.cfg = cfg,
		.proc_fd = -1,
		.sys_cpu_fd = -1,
		.ho = { .conn = -1, .listener = -1, .seccomp_listeners = { -1, -1 }, .inflight = -1 },
		.real_path = g_build_filename(cfg->mountpoint, "proc", ".real", NULL),
		.real_opts = real_proc_options(),
		.notifier = notifier,
		.server = server_new(notifier),
		.refresher = refresher_new(),
	};
	g_mutex_init(&d->loop_lock);
	g_cond_init(&d->loop_cond);
	if (!open_roots(d, &error) || !make_views(d, &error) || !make_host_session(d, &error)) {
		log_failure(g_steal_pointer(&error));
		free_daemon(d, FALSE);
		return 1;
	}
	if (start_serving(d, &error)) {
#ifdef HAVE_LIBSYSTEMD
		sd_notify(0, "READY=1");
#endif
		keep_root_cached(d);
		announce(cfg->mountpoint, cfg->files_only);
		int sig = wait_for_stop_signal(d);
		int ended = end_of_serving(d, sig);
		if (ended >= 0)
			return ended;
		g_message("%s: unmounting %s", strsignal(sig), cfg->mountpoint);
		classkey_forget(cfg->control_socket); /* no inode outlives the views */
#ifdef HAVE_LIBSYSTEMD
		sd_notify(0, "STOPPING=1");
#endif
		status = 0;
	} else {
		log_failure(g_steal_pointer(&error));
	}
	if (stop_serving(d, &containers_live))
		free_daemon(d, containers_live);
	return status;
}
