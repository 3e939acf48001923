/* Containers: one FUSE session per container, and one view per pid
 * namespace; and the control socket they are attached through.
 *
 * The hook connects to the control socket and sends "attach <pid>"; the
 * daemon mounts a procfs of that process's pid namespace for itself (once
 * per namespace) and answers with a detached mount of a new FUSE session,
 * which the hook moves over the container's /proc. The server's workers
 * serve the session (no thread of its own), and it is dropped when the
 * container's mount goes away. A new daemon (--replace) sends "handover"
 * and gets every session, the host view's included, and the control
 * socket itself (handle_handover). */
#include "cleanup.h"
#include "daemon.h"
#include "faults.h"
#include "log.h"
#include "metrics.h"
#include "mountinfo.h"
#include "pidns.h"
#include "session.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* The view of one pid namespace, shared by its containers' sessions;
 * freed by ns_view_release when the last of them ends. */
struct ns_view {
	uint64_t ns;
	int ns_fd;   /* the pid namespace */
	int proc_fd; /* the daemon's procfs of it */
	struct view *view;
	unsigned sessions;
};

/* Freed once stopped with no container view left (containers_free):
 * container sessions may outlive containers_stop (they end with the
 * process). */
struct containers {
	struct containers_config cfg;
	int listen_fd;
	struct acceptor *acceptor; /* from containers_ready on */
	GMutex lock;           /* guards by_ns, every ns_view in it, served, last_id and the counters */
	GHashTable *by_ns;     /* ns -> struct ns_view* */
	GPtrArray *served;     /* struct container*: every container view served */
	gboolean handed_over;  /* the socket is the new daemon's now: set by the acceptor, read once it is stopped */
	unsigned last_id;      /* of a session, for the keeper (the host's is 0) */
	char *scopes_path;     /* the containers' cgroups, kept for the next daemon;
	                        * NULL once the views end (under lock) */
	char *inherited;       /* what the daemon before recorded there, until containers_ready */
	guint64 attaches, attach_failures;
};

/* A container's session and the namespace view it serves, freed with it
 * when the session ends (container_ended); in cs->served until then. */
struct container {
	struct containers *cs;
	struct session *session;
	struct ns_view *nsv;
	unsigned id;          /* the keeper's (the host view's is 0) */
	GThread *recovering;  /* taken from a dead daemon's keeper: see recover.c */
};

/* One session of nsv fewer; handed_over: the namespace's containers are
 * the new daemon's now, and so is the record of their cgroups. */
static void ns_view_release(struct containers *cs, struct ns_view *nsv, gboolean handed_over)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	if (--nsv->sessions > 0)
		return;
	if (!handed_over)
		scopes_ended(cs->cfg.scope, cs->scopes_path, nsv->ns);
	g_hash_table_remove(cs->by_ns, &nsv->ns);
	smaps_remove_namespace(cs->cfg.smaps, nsv->ns);
	view_free(nsv->view);
	close(nsv->proc_fd);
	close(nsv->ns_fd);
	g_free(nsv);
}

/* A new view of the pid namespace ns (of ns_fd), its procfs made here.
 * Under cs->lock. */
static int ns_view_new(struct containers *cs, int ns_fd, uint64_t ns, struct ns_view **ret)
{
	struct statfs sfs;
	_cleanup_close_ int proc_fd = -1;
	_cleanup_close_ int own_ns_fd = fcntl(ns_fd, F_DUPFD_CLOEXEC, 3);

	if (own_ns_fd < 0)
		return -errno;
	int r = nsprocfs_make(cs->cfg.host_proc_fd, own_ns_fd, NULL, &proc_fd);
	/* With the options of the container's own /proc (its init's, pid 1
	 * there) that hide processes: the view asks as the caller then. */
	g_autofree char *hides = r == 0 ? nsprocfs_restrictions(proc_fd, 1) : NULL;
	if (hides) {
		close(steal_fd(&proc_fd));
		r = nsprocfs_make(cs->cfg.host_proc_fd, own_ns_fd, hides, &proc_fd);
	}
	if (r < 0)
		return r;
	/* A procfs, and of that namespace (its init is pid 1 there). */
	if (fstatfs(proc_fd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC ||
	    pidns_of(proc_fd, 1) != ns)
		return -EINVAL;
	const struct view_config vcfg = {
		.hidepid = mountinfo_hides_processes(hides),
		.proc_fd = proc_fd,
		.sys_cpu_fd = cs->cfg.sys_cpu_fd,
		.cpuview = cs->cfg.cpuview,
		.memgroups = cs->cfg.memgroups,
		.cputimes = cs->cfg.cputimes,
		.iogroups = cs->cfg.iogroups,
		.smaps = cs->cfg.smaps,
		.pid_ns_fd = own_ns_fd,
		.pid_ns = ns,
	};
	g_autofree struct ns_view *nsv = g_new0(struct ns_view, 1);
	r = view_new(&vcfg, &nsv->view);
	if (r < 0)
		return r;
	nsv->ns = ns;
	nsv->ns_fd = steal_fd(&own_ns_fd);
	nsv->proc_fd = steal_fd(&proc_fd);
	smaps_add_namespace(cs->cfg.smaps, ns, nsv->proc_fd, nsv->ns_fd);
	g_hash_table_insert(cs->by_ns, &nsv->ns, nsv);
	*ret = g_steal_pointer(&nsv);
	return 0;
}

/* The view of the pid namespace of ns_fd, made if there is none; one more
 * session of it. */
static int ns_view_get(struct containers *cs, int ns_fd, struct ns_view **ret)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	struct stat ns_st;

	if (fstat(ns_fd, &ns_st) < 0)
		return -errno;
	struct ns_view *nsv = g_hash_table_lookup(cs->by_ns, &(uint64_t){ ns_st.st_ino });
	if (!nsv) {
		int r = ns_view_new(cs, ns_fd, ns_st.st_ino, &nsv);
		if (r < 0)
			return r;
	}
	nsv->sessions++;
	*ret = nsv;
	return 0;
}

static gpointer recover_thread(gpointer data)
{
	struct container *c = data;
	recover_entries(c->session, c->nsv->proc_fd);
	return NULL;
}

/* A container's session ended (error: -ECANCELED when drained for a
 * handover): both go. Called by the worker that saw the end. */
static void container_ended(void *data, int error)
{
	struct container *c = data;
	struct containers *cs = c->cs;
	gboolean handed_over = error == -ECANCELED;

	if (c->recovering)
		g_thread_join(c->recovering);
	g_mutex_lock(&cs->lock);
	/* Under the lock: containers_keep_all keeps it again only before. */
	if (!handed_over)
		keeper_drop(cs->cfg.keeper, c->id);
	g_ptr_array_remove_fast(cs->served, c);
	g_mutex_unlock(&cs->lock);
	if (!handed_over)
		g_message("container view of pid namespace %" G_GUINT64_FORMAT " ended", c->nsv->ns);
	session_free(c->session);
	ns_view_release(cs, c->nsv, handed_over);
	g_free(c);
}

/* Give the keeper a copy of c's session. A new session's INIT comes later:
 * the kernel speaks the host's version. */
static void container_keep(struct containers *cs, struct container *c)
{
	if (!cs->cfg.keeper)
		return;
	unsigned minor = session_proto_minor(c->session);
	keeper_keep(cs->cfg.keeper, c->id, minor ? minor : session_proto_minor(cs->cfg.host),
		    session_fuse_fd(c->session), c->nsv->ns_fd);
}

void containers_keep_all(struct containers *cs)
{
	if (!cs)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	for (guint i = 0; i < cs->served->len; i++)
		container_keep(cs, g_ptr_array_index(cs->served, i));
	keeper_keep_listener(cs->cfg.keeper, cs->listen_fd, sysinfo_listener_fds(cs->cfg.sysinfo));
}

/* Serve the view of the pid namespace of ns_fd on *fuse_fd (taken, and
 * set to -1, once the session has it: also if it fails to start then)
 * with the server's workers. A session that another daemon served until a
 * handover is taken up with its protocol minor version (0 for a new one)
 * and the process watches it had (taken); recover: that daemon died (see
 * recover.c). 0 with *ret_ns set to the namespace, or -errno with *error
 * set. */
static int start_session(struct containers *cs, int ns_fd, int *fuse_fd, unsigned resume_minor, gboolean recover,
			 struct handover *h, unsigned index, uint64_t *ret_ns, GError **error)
{
	g_autofree struct container *c = g_new0(struct container, 1);
	c->cs = cs;
	int r = ns_view_get(cs, ns_fd, &c->nsv);
	if (r < 0)
		return log_set_error(error, r, "cannot mount a procfs of the container's pid namespace");
	c->session = session_new(cs->cfg.server, c->nsv->view, cs->cfg.watch, cs->cfg.host_proc_fd, NULL);
	r = c->session ? session_take_up(c->session, *fuse_fd, resume_minor, recover) : -EINVAL;
	if (r < 0) {
		session_free(c->session);
		ns_view_release(cs, c->nsv, FALSE);
		return log_set_error(error, r, "cannot start a FUSE session on that fd");
	}
	*fuse_fd = -1; /* the session's */
	/* Before it serves: a session that ends at once forgets them. */
	session_adopt_watches(c->session, h, index);
	g_mutex_lock(&cs->lock);
	g_ptr_array_add(cs->served, c);
	c->id = ++cs->last_id;
	container_keep(cs, c);
	g_mutex_unlock(&cs->lock);
	*ret_ns = c->nsv->ns;
	/* While the session is served: dropping an entry waits for the
	 * lookups in its directory, which the workers answer. Joined as the
	 * session ends. */
	if (recover)
		c->recovering = g_thread_new("recover", recover_thread, c);
	/* The session may end (c freed) at any time from here; the hook
	 * keeps its own copy of the fd. */
	struct container *started = g_steal_pointer(&c);
	r = session_start(started->session, container_ended, started);
	if (r < 0) {
		container_ended(started, r);
		return log_set_error(error, r, "cannot serve the FUSE session");
	}
	return 0;
}

/* Start serving a view of the pid namespace of pid on *fuse_fd (taken as
 * by start_session). 0 or -errno with *error set. */
static int attach(struct containers *cs, pid_t pid, int *fuse_fd, GError **error)
{
	char path[48];
	uint64_t ns;

	snprintf(path, sizeof(path), "%d/ns/pid", (int)pid);
	_cleanup_close_ int ns_fd = openat(cs->cfg.host_proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (ns_fd < 0)
		return log_set_message(error, "no such process"), -ESRCH;
	gint64 started = g_get_monotonic_time();
	int r = start_session(cs, ns_fd, fuse_fd, 0, FALSE, NULL, 0, &ns, error);
	if (r < 0)
		return r;
	scopes_attached(cs->cfg.scope, cs->scopes_path, cs->cfg.host_proc_fd, pid, ns);
	g_message("serving the view of pid namespace %" G_GUINT64_FORMAT " (container init %d), set up in %.1f ms",
		  ns, (int)pid, (double)(g_get_monotonic_time() - started) / 1000);
	return 0;
}

int containers_resume(struct containers *cs, struct handover *h, unsigned index, gboolean resend)
{
	g_autoptr(GError) error = NULL;
	struct handover_session *s = &g_array_index(h->sessions, struct handover_session, index);
	uint64_t ns;
	int r = start_session(cs, s->ns_fd, &s->fuse_fd, s->proto_minor, resend, h, index, &ns, &error);
	if (r < 0)
		g_warning("cannot resume a container's view: %s", error->message);
	else if (cs->cfg.scope)
		scope_add_from(cs->cfg.scope, cs->inherited, ns);
	return r;
}

/* A detached FUSE mount on fuse_fd, made here so that the FUSE connection
 * numbers callers in the daemon's pid namespace (it takes the mounter's). */
static int mount_detached(int fuse_fd)
{
	char fd_text[16];
	_cleanup_close_ int fs = fsopen("fuse", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	snprintf(fd_text, sizeof(fd_text), "%d", fuse_fd);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "cgprocfs", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "subtype", "cgprocfs", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "fd", fd_text, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "rootmode", "40000", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "user_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "group_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "allow_other", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	/* Not read-only: PSI triggers are written to pressure files. */
	int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOATIME);
	return mnt < 0 ? -errno : mnt;
}

/* "attach <pid>", from a hook: the answer is "ok" with a detached mount
 * of the container's view, for the hook to move into place, or
 * "error: ...". */
static void handle_attach(struct containers *cs, int conn, pid_t pid)
{
	g_autoptr(GError) error = NULL;
	_cleanup_close_ int fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	_cleanup_close_ int mnt = fuse_fd < 0 ? -errno : mount_detached(fuse_fd);
	int r = mnt;
	if (r < 0) {
		log_set_error(&error, r, "cannot make a FUSE mount");
	} else {
		r = attach(cs, pid, &fuse_fd, &error);
	}
	g_mutex_lock(&cs->lock);
	if (r == 0)
		cs->attaches++;
	else
		cs->attach_failures++;
	g_mutex_unlock(&cs->lock);
	if (r == 0) {
		const struct control_msg ok = { .word = CONTROL_OK, .fds = { mnt }, .n_fds = 1 };
		(void)!control_send(conn, &ok, NULL);
		return;
	}
	g_warning("refused to attach a container (pid %d): %s", (int)pid, error->message);
	(void)!control_send_error(conn, NULL, "%s", error->message);
}

/* A handover under way: its connection, and the first failure. */
struct handover_send {
	int conn;
	GHashTable *index; /* struct ops_state* -> session number + 1 */
	GError *error;
};

static void send_watch(void *owner, pid_t pid, int pidfd, void *data)
{
	struct handover_send *hs = data;
	guint i = GPOINTER_TO_UINT(g_hash_table_lookup(hs->index, owner));
	if (i > 0 && !hs->error)
		(void)!handover_send_watch(hs->conn, i - 1, pid, pidfd, &hs->error);
}

/* A handover failed: the new daemon is stopped if it still runs, and
 * this one serves on, with what the new one took and did not answer sent
 * again, and its own keeper at the keeper's path again (the new one's
 * may have taken it; if this one's is gone, the main thread starts
 * another within seconds). The kernel resends every request taken and
 * not answered: asked before the workers serve again, those are only the
 * new daemon's (paused, this one's workers have none in hand), never one
 * a worker here has just taken, which would be answered twice. */
static void serve_on(struct containers *cs, int conn, GError *error)
{
	handover_stop_taker(conn);
	keeper_hold(cs->cfg.keeper, FALSE);
	session_resend(cs->cfg.host);
	g_mutex_lock(&cs->lock);
	for (guint i = 0; i < cs->served->len; i++)
		session_resend(((struct container *)g_ptr_array_index(cs->served, i))->session);
	g_mutex_unlock(&cs->lock);
	server_resume(cs->cfg.server);
	sysinfo_listener_resume(cs->cfg.sysinfo);
	g_autoptr(GError) unpublished = NULL;
	if (keeper_publish(cs->cfg.keeper, &unpublished) < 0)
		log_warning_consequence(g_steal_pointer(&unpublished), "trying again within seconds");
	g_prefix_error(&error, "a handover to a new daemon failed: ");
	log_warning_consequence(error, "this one serves on");
}

/* "handover", from a new daemon (cgprocfs --replace): send it every
 * session, the host's first, each with the protocol version its kernel
 * spoke, then the process watches, the control socket, then "end". Once
 * it answers that it serves them all, stop: TRUE. The workers pause
 * first: a lookup answered after the watches were sent would leave the
 * kernel an entry that no daemon drops when its process exits. If the
 * handover fails, this daemon serves on (serve_on). */
static gboolean handle_handover(struct containers *cs, int conn)
{
	struct handover_send hs = { conn, g_hash_table_new(g_direct_hash, g_direct_equal), NULL };

	G_GNUC_UNUSED g_autoptr(GHashTable) index = hs.index;
	struct session *host = cs->cfg.host;
	if (!server_pause(cs->cfg.server)) {
		server_resume(cs->cfg.server);
		(void)!control_send_error(conn, NULL, "a request has been answered for 10 s; try again");
		g_warning("a handover to a new daemon was refused: a request has been answered for 10 s");
		return FALSE;
	}
	fault_point("give-paused");
	/* Until it is over: a keeper of this daemon's started and published
	 * meanwhile could take the keeper's path from the new daemon's. */
	keeper_hold(cs->cfg.keeper, TRUE);
	if (cs->cfg.cputimes)
		cputimes_hand_over(cs->cfg.cputimes);
	cpuview_keep_placements(cs->cfg.cpuview);
	if (control_send_word(conn, CONTROL_OK, &hs.error) == 0)
		(void)!handover_send_session(conn, session_proto_minor(host), session_fuse_fd(host), -1, &hs.error);
	g_hash_table_insert(hs.index, session_ops(host), GUINT_TO_POINTER(1));
	g_mutex_lock(&cs->lock);
	for (guint i = 0; i < cs->served->len && !hs.error; i++) {
		struct session *s = ((struct container *)g_ptr_array_index(cs->served, i))->session;
		(void)!handover_send_session(conn, session_proto_minor(s), session_fuse_fd(s), session_ns_fd(s),
					     &hs.error);
		g_hash_table_insert(hs.index, session_ops(s), GUINT_TO_POINTER(i + 2));
	}
	/* Under cs->lock: no session ends, so no owner is freed, meanwhile. */
	pidwatch_foreach(cs->cfg.watch, send_watch, &hs);
	guint sessions = cs->served->len;
	g_mutex_unlock(&cs->lock);
	if (!hs.error && cs->cfg.sysinfo)
		(void)!sysinfo_listener_hand_over(cs->cfg.sysinfo, conn, &hs.error);
	/* Its PSI triggers' records (none of its requests is in hand). */
	if (!hs.error && server_inflight_fd(cs->cfg.server) >= 0)
		(void)!handover_send_inflight(conn, server_inflight_fd(cs->cfg.server), &hs.error);
	if (!hs.error)
		(void)!handover_send_listener(conn, cs->listen_fd, sysinfo_listener_fds(cs->cfg.sysinfo), &hs.error);
	fault_point("give-sent");
	/* Meanwhile no container can attach: handover_finish gives up on a
	 * silent new daemon. */
	if (hs.error || handover_finish(conn, &hs.error) < 0) {
		serve_on(cs, conn, g_steal_pointer(&hs.error));
		return FALSE;
	}
	fault_point("give-served");
	g_message("handed %u container view(s) and the host's over to a new daemon", sessions);
	cs->handed_over = TRUE;
	cs->cfg.handed_over(cs->cfg.handed_over_data);
	return TRUE;
}

/* One request on the control socket (from root: see acceptor.c),
 * readable now.
 * TRUE: stop taking requests (handed over). */
static gboolean handle(void *data, int conn)
{
	struct containers *cs = data;
	const unsigned requests = CONTROL_WORD(CONTROL_ATTACH) | CONTROL_WORD(CONTROL_HANDOVER);
	g_autoptr(GError) err = NULL;
	struct control_msg m;

	if (control_receive(conn, requests, &m, &err) < 0) {
		(void)!control_send_error(conn, NULL, "bad request (%s)", err->message);
		return FALSE;
	}
	if (m.word == CONTROL_HANDOVER)
		return handle_handover(cs, conn);
	if (m.args[0] == 0)
		(void)!control_send_error(conn, NULL, "bad request (pid 0)");
	else
		handle_attach(cs, conn, (pid_t)m.args[0]);
	return FALSE;
}

int containers_start(const struct containers_config *cfg, int listen_fd, struct containers **ret)
{
	int fd = listen_fd >= 0 ? listen_fd : control_listen(cfg->socket_path, 16);
	if (fd < 0)
		return fd;
	struct containers *cs = g_new0(struct containers, 1);
	cs->cfg = *cfg;
	cs->cfg.socket_path = g_strdup(cfg->socket_path);
	cs->listen_fd = fd;
	g_mutex_init(&cs->lock);
	cs->by_ns = g_hash_table_new(g_int64_hash, g_int64_equal);
	cs->served = g_ptr_array_new();
	cs->scopes_path = g_strconcat(cfg->socket_path, ".scopes", NULL);
	cs->inherited = scopes_inherited(cs->scopes_path);
	*ret = cs;
	return 0;
}

void containers_ready(struct containers *cs)
{
	if (cs) { /* what was taken over is recorded again, and only that */
		g_clear_pointer(&cs->inherited, g_free);
		scopes_save(cs->cfg.scope, cs->scopes_path);
	}
	int r = cs ? acceptor_start(cs->listen_fd, "only root may attach containers", handle, cs, &cs->acceptor) : 0;
	if (r < 0)
		g_warning("cannot accept on %s (%s): containers cannot attach", cs->cfg.socket_path, g_strerror(-r));
}

gboolean containers_stop_accepting(struct containers *cs)
{
	if (!cs)
		return FALSE;
	acceptor_stop(g_steal_pointer(&cs->acceptor));
	return cs->handed_over;
}

int containers_listen_fd(struct containers *cs)
{
	return cs ? cs->listen_fd : -1;
}

gboolean containers_stop(struct containers *cs)
{
	if (!cs)
		return FALSE;
	/* Containers' sessions live on until the process exits: their views
	 * then fail with ENOTCONN, as a view does whose daemon is gone. A
	 * socket handed over is the new daemon's: only this copy closes. */
	containers_stop_accepting(cs);
	close(cs->listen_fd);
	if (!cs->handed_over)
		unlink(cs->cfg.socket_path);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	return g_hash_table_size(cs->by_ns) > 0;
}

void containers_views_end(struct containers *cs)
{
	if (!cs)
		return;
	/* A view ending from now on (its container exiting while this
	 * process lives) writes no record again: there is none to keep. */
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	unlink(cs->scopes_path);
	g_clear_pointer(&cs->scopes_path, g_free);
}

void containers_free(struct containers *cs)
{
	if (!cs)
		return;
	g_hash_table_unref(cs->by_ns);
	g_ptr_array_unref(cs->served);
	g_mutex_clear(&cs->lock);
	g_free((char *)cs->cfg.socket_path);
	g_free(cs->scopes_path);
	g_free(cs->inherited);
	g_free(cs);
}

void containers_render_stats(struct containers *cs, GString *out)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	metrics_u64(out, "cgprocfs_container_views", "gauge", "Pid namespaces with a view.",
		    g_hash_table_size(cs->by_ns));
	metrics_u64(out, "cgprocfs_container_sessions", "gauge", "Containers' FUSE sessions served.",
		    cs->served->len);
	metrics_u64(out, "cgprocfs_container_attaches_total", "counter", "Containers attached by their hook.",
		    cs->attaches);
	metrics_u64(out, "cgprocfs_container_attach_failures_total", "counter", "Attach requests refused or failed.",
		    cs->attach_failures);
}
