/* Start-up, serving and teardown of one daemon. */
#include "cleanup.h"
#include "daemon.h"
#include "mountinfo.h"
#include "ops.h"
#include "pidwatch.h"
#include "view.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long teardown waits for the FUSE loop once the mount is gone. */
#define LOOP_EXIT_WAIT_US (2 * G_USEC_PER_SEC)

struct loop {
	struct fuse_session *session;
	GMutex lock; /* guards done */
	GCond cond;
	gboolean done;
};

static gpointer loop_thread(gpointer data)
{
	struct loop *l = data;
	int r = session_serve(l->session);
	if (r < 0 && r != -ECANCELED)
		g_warning("FUSE session ended: %s", g_strerror(-r));
	g_mutex_lock(&l->lock);
	l->done = TRUE;
	g_cond_signal(&l->cond);
	g_mutex_unlock(&l->lock);
	/* If the mount went away under us (umount by hand), wake main. */
	kill(getpid(), SIGTERM);
	return NULL;
}

static gboolean loop_wait_done(struct loop *l, gint64 timeout_us)
{
	gint64 deadline = g_get_monotonic_time() + timeout_us;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);

	while (!l->done)
		if (!g_cond_wait_until(&l->cond, &l->lock, deadline))
			return l->done;
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

/* One pidfd per cached process: allow as many fds as the system lets us. */
static void raise_fd_limit(void)
{
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
}

/* The options of the daemon's /proc that restrict what a reader sees
 * (hidepid, gid, subset), so proc/.real shows no more than /proc does. */
static char *real_proc_options(void)
{
	struct mount_entry e = { 0 };
	g_autoptr(GString) out = g_string_new(NULL);

	if (!mountinfo_find("/proc", &e))
		return NULL;
	g_auto(GStrv) opts = g_strsplit(e.super_options, ",", -1);
	mountinfo_entry_clear(&e);
	for (char **o = opts; *o; o++) {
		if (g_str_has_prefix(*o, "hidepid=") || g_str_has_prefix(*o, "gid=") ||
		    g_str_has_prefix(*o, "subset=")) {
			if (out->len)
				g_string_append_c(out, ',');
			g_string_append(out, *o);
		}
	}
	return out->len ? g_string_free(g_steal_pointer(&out), FALSE) : NULL;
}

/* Whether procfs options (as real_proc_options returns them) hide
 * processes from some readers. */
static gboolean hides_processes(const char *opts)
{
	g_auto(GStrv) list = g_strsplit(opts ? opts : "", ",", -1);
	for (char **o = list; *o; o++)
		if (g_str_has_prefix(*o, "hidepid=") && strcmp(*o, "hidepid=0") != 0 && strcmp(*o, "hidepid=off") != 0)
			return TRUE;
	return FALSE;
}

static void report_bad_cgroup(void *data, const char *file, int err)
{
	g_warning("cannot use %s (%s): callers in that cgroup see the host's CPUs", file, g_strerror(err));
}

static int wait_for_stop_signal(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(&set, &info);
		if (sig == SIGHUP) {
			g_message("SIGHUP: nothing to reload");
			continue;
		}
		if (sig > 0)
			return sig;
	}
}

static void announce(const char *mnt)
{
	g_message("serving %s/proc and %s/sys/devices/system/cpu\n"
		  "  bind it over /proc in one shell:\n"
		  "    unshare --mount --propagation private sh -c 'mount --rbind %s/proc /proc && "
		  "mount --bind %s/sys/devices/system/cpu /sys/devices/system/cpu && exec bash'\n"
		  "  or from psutil, with no bind: psutil.PROCFS_PATH = \"%s/proc\"\n"
		  "  containers: the OCI hook cgprocfs-oci-hook --mountpoint %s (see the README)\n"
		  "  stop with Ctrl-C or SIGTERM",
		  mnt, mnt, mnt, mnt, mnt, mnt);
}

/* The containers, once started: for .cgprocfs/stats (atomic). */
static struct containers *stats_containers;

/* .cgprocfs/stats beyond the memo's. */
static void more_stats(GString *out, void *data)
{
	serve_render_stats(out);
	struct containers *cs = g_atomic_pointer_get(&stats_containers);
	if (cs)
		containers_render_stats(cs, out);
}

/* Set once this daemon's sessions are another's (see containers.c). */
static gint handed_over;

static void on_handed_over(void *data)
{
	g_atomic_int_set(&handed_over, 1);
	kill(getpid(), SIGTERM); /* wakes the main thread */
}

/* Taking over from a running daemon (--replace) or a dead one's keeper. */
static gboolean taking_over(const struct daemon_config *cfg)
{
	return cfg->replace || cfg->recover_fd >= 0;
}

/* The host view's session: mounted, or taken up from the daemon (or the
 * keeper) that served it. 0 or -1 after saying why. */
static int mount_or_resume(const struct daemon_config *cfg, struct fuse_session *se, struct handover *ho)
{
	char dev[32];

	if (!taking_over(cfg)) {
		if (fuse_session_mount(se, cfg->mountpoint) == 0)
			return 0;
		g_printerr("cgprocfs: cannot mount on %s (see the fuse message above)\n", cfg->mountpoint);
		return -1;
	}
	struct handover_session *host = &g_array_index(ho->sessions, struct handover_session, 0);
	snprintf(dev, sizeof(dev), "/dev/fd/%d", host->fuse_fd);
	if (fuse_session_mount(se, dev) != 0) {
		g_printerr("cgprocfs: cannot take up the session of %s\n", cfg->mountpoint);
		return -1;
	}
	host->fuse_fd = -1; /* the session's now */
	session_resume(se, host->proto_minor);
	return 0;
}

/* With --replace, once the host view is served here: the containers'
 * views and the watches of cached processes, then the old daemon is told
 * to stop. */
static void resume_the_rest(struct containers *cs, struct pidwatch *watch, struct ops_state *host,
			    struct handover *ho, gboolean resend)
{
	g_autofree struct ops_state **owners = g_new0(struct ops_state *, ho->sessions->len);
	guint resumed = 0;

	owners[0] = host;
	for (guint i = 1; i < ho->sessions->len && cs; i++) {
		struct handover_session *s = &g_array_index(ho->sessions, struct handover_session, i);
		if (containers_resume(cs, s->fuse_fd, s->ns_fd, s->proto_minor, resend, &owners[i]) == 0) {
			s->fuse_fd = -1;
			resumed++;
		}
	}
	for (guint i = 0; i < ho->watches->len; i++) {
		struct handover_watch *w = &g_array_index(ho->watches, struct handover_watch, i);
		if (owners[w->session]) {
			pidwatch_adopt(watch, owners[w->session], w->pid, w->pidfd);
			w->pidfd = -1;
		}
	}
	if (resumed + 1 < ho->sessions->len)
		g_warning("%u container view(s) could not be taken over: they stop working now",
			  ho->sessions->len - 1 - resumed);
	if (resend) {
		session_resend(host->session);
		recover_entries(watch, host, host->proc_fd, -1);
	}
	handover_done(ho);
	g_message("took over the host view and %u container view(s) from %s", resumed,
		  resend ? "the keeper of a daemon that died" : "the running daemon");
}

int lifecycle_serve(const struct daemon_config *cfg)
{
	int status = 1;
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int sys_cpu_fd = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct view *view = NULL;
	struct cpuview *cpuview = NULL;
	struct smaps *smaps = NULL;
	struct refresher *refresher = refresher_new();
	struct keeper *keeper = NULL;
	struct containers *containers = NULL;
	struct daemon_cgroups cgroups = { 0 };
	struct pidwatch *watch = NULL;
	struct ops_state state = { .proc_fd = proc_fd };
	struct loop loop = { 0 };
	struct handover ho = { .conn = -1 };
	const char *why;
	GThread *loop_th = NULL, *watch_th = NULL;
	g_autofree char *real_path = g_build_filename(cfg->mountpoint, "proc", ".real", NULL);
	g_autofree char *real_opts = real_proc_options();
	/* Read-only: nothing in the view is written through FUSE (writes go to
	 * the real procfs behind the symlinks), and the kernel then keeps no
	 * access times to refresh with a GETATTR after each read. */
	g_autofree char *opts = g_strdup_printf("ro,allow_other,fsname=cgprocfs,subtype=cgprocfs%s%s",
						cfg->fuse_options ? "," : "",
						cfg->fuse_options ? cfg->fuse_options : "");
	gboolean real_mounted = FALSE, containers_live = FALSE;
	int r;

	if (proc_fd < 0 || sys_cpu_fd < 0) {
		g_printerr("cgprocfs: cannot open %s: %s\n", proc_fd < 0 ? "/proc" : "/sys/devices/system/cpu",
			   g_strerror(errno));
		return 1;
	}
	raise_fd_limit();
	/* Before any thread: the keeper is forked. */
	r = keeper_start(cfg->keeper_path, cfg->keeper_wait_s, &keeper);
	if (r < 0)
		g_warning("cannot start the keeper at %s (%s): the views end if this daemon dies",
			  cfg->keeper_path, g_strerror(-r));
	cgroups_discover(&cgroups);
	cgroups_log(&cgroups);
	const struct cpuview_config ccfg = {
		.proc_fd = proc_fd,
		.sys_cpu_fd = sys_cpu_fd,
		.cgroups = cgroups.config,
		.use_quota = cfg->cpu_quota,
		.report = report_bad_cgroup,
	};
	r = cpuview_new(&ccfg, &cpuview);
	if (r < 0) {
		g_printerr("cgprocfs: cannot set up the CPU view: %s\n", g_strerror(-r));
		goto out;
	}
	struct stat pidns;
	const struct smaps_config scfg = {
		.proc_fd = proc_fd,
		.ns = fstatat(proc_fd, "self/ns/pid", &pidns, 0) == 0 ? pidns.st_ino : 0,
		.memo = cfg->smaps,
		.wake_refresher = refresher_wake,
		.wake_data = refresher,
	};
	smaps = smaps_new(&scfg);
	const struct view_config vcfg = {
		.proc_fd = proc_fd, .sys_cpu_fd = sys_cpu_fd, .cpuview = cpuview, .smaps = smaps,
		.pid_ns_fd = -1,
		.pid_ns = scfg.ns,
		.hidepid = hides_processes(real_opts),
		.more_stats = more_stats,
		.control_socket = cfg->control_socket,
	};
	r = view_new(&vcfg, &view);
	if (r < 0) {
		g_printerr("cgprocfs: cannot read /proc/self: %s\n", g_strerror(-r));
		goto out;
	}
	r = pidwatch_new(ops_forget_pid, &watch);
	if (r < 0) {
		g_printerr("cgprocfs: cannot watch processes: %s\n", g_strerror(-r));
		goto out;
	}
	state.view = view;
	state.watch = watch;
	if (taking_over(cfg) && handover_take(cfg->mountpoint, cfg->recover_fd, &ho, &why) < 0) {
		g_printerr("cgprocfs: cannot take over %s: %s\n", cfg->mountpoint, why);
		goto out;
	}

	char *argv[] = { "cgprocfs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	loop.session = fuse_session_new(&args, &ops_table, sizeof(ops_table), &state);
	if (!loop.session) {
		g_printerr("cgprocfs: cannot start the FUSE session (check the -o options)\n");
		goto out;
	}
	state.session = loop.session;
	if (mount_or_resume(cfg, loop.session, &ho) < 0)
		goto out_session;
	g_mutex_init(&loop.lock);
	g_cond_init(&loop.cond);
	watch_th = g_thread_new("pidwatch", pidwatch_thread, watch);
	refresher_start(refresher, smaps);
	loop_th = g_thread_new("fuse", loop_thread, &loop);

	/* The mount's own path walk is answered by the loop just started.
	 * Taken over, it is there already. */
	if (!taking_over(cfg) && mount("proc", real_path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, real_opts) < 0) {
		g_printerr("cgprocfs: cannot mount the real procfs at %s: %s\n", real_path, g_strerror(errno));
		goto out_unmount;
	}
	real_mounted = TRUE;
	const struct containers_config ccfg_containers = {
		.socket_path = cfg->control_socket,
		.host_proc_fd = proc_fd,
		.sys_cpu_fd = sys_cpu_fd,
		.cpuview = cpuview,
		.smaps = smaps,
		.watch = watch,
		.host = &state,
		.handed_over = on_handed_over,
		.keeper = keeper,
	};
	r = containers_start(&ccfg_containers, &containers);
	if (r < 0)
		g_warning("cannot listen on %s (%s): containers cannot attach", cfg->control_socket, g_strerror(-r));
	else
		g_atomic_pointer_set(&stats_containers, containers);
	if (taking_over(cfg))
		resume_the_rest(containers, watch, &state, &ho, cfg->recover_fd >= 0);
	/* INIT was answered by now (the .real mount, or the one before). */
	keeper_keep(keeper, 0, state.proto_minor, fuse_session_fd(loop.session), -1);
	handover_clear(&ho);
#ifdef HAVE_LIBSYSTEMD
	sd_notify(0, "READY=1");
#endif
	announce(cfg->mountpoint);

	int sig = wait_for_stop_signal();
	if (g_atomic_int_get(&handed_over)) {
		/* Every session is the new daemon's: answer what was taken,
		 * then leave with everything mounted. */
		keeper_quit(g_steal_pointer(&keeper));
		containers_stop(containers);
		refresher_free(g_steal_pointer(&refresher));
		if (!serve_drain())
			g_warning("requests still being answered after the handover: exiting anyway");
		g_message("handed over: exiting, %s stays served by the new daemon", cfg->mountpoint);
		return 0;
	}
	g_message("%s: unmounting %s", strsignal(sig), cfg->mountpoint);
#ifdef HAVE_LIBSYSTEMD
	sd_notify(0, "STOPPING=1");
#endif
	status = 0;

out_unmount:
	/* First: the containers' views end now, as the daemon stops. */
	keeper_quit(g_steal_pointer(&keeper));
	containers_live = containers_stop(containers);
	refresher_free(g_steal_pointer(&refresher));
	if (real_mounted && umount2(real_path, MNT_DETACH) < 0)
		g_warning("cannot unmount %s: %s", real_path, g_strerror(errno));
	fuse_session_exit(loop.session);
	fuse_session_unmount(loop.session);
	/* A session taken over was not mounted by libfuse: it leaves it. */
	if (taking_over(cfg) && umount2(cfg->mountpoint, MNT_DETACH) < 0)
		g_warning("cannot unmount %s: %s", cfg->mountpoint, g_strerror(errno));
	if (!loop_wait_done(&loop, LOOP_EXIT_WAIT_US)) {
		/* Binds of the view elsewhere keep the FUSE connection up; they
		 * fail with ENOTCONN once this process is gone. */
		g_message("the view is still bound elsewhere; those binds stop working now");
		pidwatch_stop(watch);
		g_thread_join(watch_th);
		return status;
	}
	g_thread_join(loop_th);
	pidwatch_stop(watch);
	g_thread_join(watch_th);
	g_mutex_clear(&loop.lock);
	g_cond_clear(&loop.cond);
out_session:
	fuse_session_destroy(loop.session);
out:
	keeper_quit(keeper);
	handover_clear(&ho);
	refresher_free(refresher);
	if (containers_live)
		return status; /* their sessions end with the process */
	pidwatch_free(watch);
	view_free(view);
	smaps_free(smaps);
	cpuview_free(cpuview);
	cgroups_clear(&cgroups);
	return status;
}
