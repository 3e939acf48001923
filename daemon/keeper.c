/* The keeper: a small process that holds a copy of every session's
 * /dev/fuse fd, and of the control socket's listening socket, while its
 * daemon runs (moved to --keeper-cgroup, it outlives the daemon's
 * container). If the daemon dies (a crash, SIGKILL), the views then wait
 * instead of failing with ENOTCONN: a new daemon started on the same
 * mountpoint takes them over from the keeper (the handover protocol,
 * control.h) and has the kernel resend the requests the dead one had
 * taken. The keeper gives up after --keeper-wait seconds without a new
 * daemon; a daemon that stops cleanly tells it to go first, so that its
 * views end as they always did.
 *
 * A keeper is found at its path only once its daemon has said "publish",
 * which it does once the keeper holds every view: a daemon taking over
 * publishes its keeper before it tells the one it took from that it
 * serves, so that a keeper holding every view stands at the path at every
 * moment. A keeper whose daemon died while it was not (or no longer) at
 * its path goes at once: nobody can find it. Only a clean stop removes the
 * path: a keeper that goes for any other reason leaves it, as a newer
 * keeper may have just been renamed there.
 *
 * It runs the daemon's own executable (/proc/self/exe, KEEPER_ARG), so
 * that a daemon can start one at any time, also once it runs threads: a
 * keeper that died is replaced by its daemon (keeper_needs_everything). */
#include "cleanup.h"
#include "daemon.h"
#include "faults.h"
#include "keeper-held.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* The keeper's end of the socket to its daemon. */
#define KEEPER_SOCK_FD 3
/* How long a daemon waits for its keeper to answer "publish". */
#define PUBLISH_TIMEOUT_S 5
/* How often a keeper whose daemon died checks it is still at its path. */
#define ORPHAN_CHECK_MS 1000
/* How long the keeper waits for a new daemon's request once it connected. */
#define REQUEST_TIMEOUT_S 2

/* ------------------------------------------------- the keeper process -- */

/* Listen at path: a socket bound beside it and renamed over it, so that
 * path always names a keeper. 0, or -errno. */
static int publish(struct held *h)
{
	g_autofree char *tmp = g_strdup_printf("%s.%d", h->path, (int)getpid());
	struct stat st;

	int fd = control_listen(tmp, 4);
	if (fd < 0)
		return fd;
	if (stat(tmp, &st) < 0 || rename(tmp, h->path) < 0) {
		int r = -errno;
		unlink(tmp);
		close(fd);
		return r;
	}
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	h->listen_fd = fd;
	h->ino = st.st_ino;
	return 0;
}

/* Whether path still names this keeper. */
static gboolean published(const struct held *h)
{
	struct stat st;
	return h->listen_fd >= 0 && stat(h->path, &st) == 0 && st.st_ino == h->ino;
}

/* A clean stop: the path goes too (no other keeper is coming). */
static void unlink_own(const struct held *h)
{
	if (published(h))
		unlink(h->path);
}

/* Give the sessions to a new daemon on conn: the host's (id 0) first,
 * then the listener. 0 once it serves them, or -errno. */
static int hand_over(int conn, const struct held *h)
{
	GHashTableIter it;
	gpointer id, value;

	struct kept *host = g_hash_table_lookup(h->sessions, GUINT_TO_POINTER(0));
	if (!host || host->minor == 0)
		return -ENOENT;
	int r = handover_send_session(conn, host->minor, host->fuse_fd, -1, NULL);
	g_hash_table_iter_init(&it, h->sessions);
	while (r == 0 && g_hash_table_iter_next(&it, &id, &value)) {
		const struct kept *k = value;
		if (GPOINTER_TO_UINT(id) != 0)
			r = handover_send_session(conn, k->minor, k->fuse_fd, k->ns_fd, NULL);
	}
	for (guint i = 0; r == 0 && i < h->notify->len; i++)
		r = handover_send_notify(conn, g_array_index(h->notify, int, i), NULL);
	if (r == 0 && h->inflight >= 0)
		r = handover_send_inflight(conn, h->inflight, NULL);
	if (r == 0 && h->listener >= 0)
		r = handover_send_listener(conn, h->listener, h->seccomp_listeners, NULL);
	if (r == 0)
		fault_point("give-sent");
	return r < 0 ? r : handover_finish(conn, NULL);
}

/* Keep a container's seccomp notification fd, once (a daemon gives it
 * again with everything), and let go of those whose container is gone
 * (every process of the filter: the fd hangs up). */
static void keep_notify(struct held *h, int fd)
{
	gboolean held = FALSE;
	for (guint i = h->notify->len; i-- > 0;) {
		struct pollfd p = { .fd = g_array_index(h->notify, int, i) };
		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) {
			close(p.fd);
			g_array_remove_index_fast(h->notify, i);
		} else {
			held = held || control_same_file(p.fd, fd);
		}
	}
	if (held)
		close(fd);
	else
		g_array_append_val(h->notify, fd);
}

/* "publish", answered on sock. */
static void answer_publish(int sock, struct held *h)
{
	int r = publish(h);
	if (r == 0)
		(void)!control_send_word(sock, CONTROL_OK, NULL);
	else
		(void)!control_send_error(sock, NULL, "cannot listen at %s: %s", h->path, g_strerror(-r));
}

/* A message from the daemon (control.h): keep, with the session's fd (and
 * a container's pid namespace) and the FUSE protocol version the kernel
 * spoke to it; drop; listener; publish; quit; leave. FALSE once the daemon
 * is gone (EOF) or said quit or leave (*ret_said). */
static gboolean from_daemon(int sock, struct held *h, enum control_word *ret_said)
{
	const unsigned words = CONTROL_WORD(CONTROL_KEEP) | CONTROL_WORD(CONTROL_DROP) | CONTROL_WORD(CONTROL_QUIT) |
			       CONTROL_WORD(CONTROL_LISTENER) | CONTROL_WORD(CONTROL_PUBLISH) |
			       CONTROL_WORD(CONTROL_LEAVE) | CONTROL_WORD(CONTROL_NOTIFY) | CONTROL_WORD(CONTROL_INFLIGHT);
	g_autoptr(GError) err = NULL;
	struct control_msg m;

	int r = control_receive(sock, words, &m, &err);
	if (r == -EPROTO || r == -EINTR) {
		if (r == -EPROTO)
			g_warning("the keeper ignored a message from its daemon: %s", err->message);
		return TRUE;
	}
	if (r < 0)
		return FALSE;
	switch (m.word) {
	case CONTROL_QUIT:
	case CONTROL_LEAVE:
		*ret_said = m.word;
		return FALSE;
	case CONTROL_DROP:
		g_hash_table_remove(h->sessions, GUINT_TO_POINTER(m.args[0]));
		return TRUE;
	case CONTROL_LISTENER:
		if (h->listener >= 0)
			close(h->listener);
		for (int i = 0; i < 2; i++) {
			if (h->seccomp_listeners[i] >= 0)
				close(h->seccomp_listeners[i]);
			h->seccomp_listeners[i] = m.n_fds == 3 ? m.fds[1 + i] : -1;
		}
		if (m.n_fds == 2) /* the seccomp listeners come both or not at all */
			close(m.fds[1]);
		h->listener = m.fds[0];
		return TRUE;
	case CONTROL_PUBLISH:
		answer_publish(sock, h);
		return TRUE;
	case CONTROL_NOTIFY:
		keep_notify(h, m.fds[0]);
		return TRUE;
	case CONTROL_INFLIGHT:
		if (h->inflight >= 0)
			close(h->inflight);
		h->inflight = m.fds[0];
		return TRUE;
	case CONTROL_KEEP: {
		struct kept *k = g_new(struct kept, 1);
		*k = (struct kept){ m.fds[0], m.n_fds >= 2 ? m.fds[1] : -1, m.args[1] };
		g_hash_table_replace(h->sessions, GUINT_TO_POINTER(m.args[0]), k);
		return TRUE;
	}
	case CONTROL_ATTACH:
	case CONTROL_HANDOVER:
	case CONTROL_OK:
	case CONTROL_ERROR:
	case CONTROL_SESSION:
	case CONTROL_WATCH:
	case CONTROL_END:
	case CONTROL_SERVING:
		break; /* not among words */
	}
	control_close_fds(&m);
	return TRUE;
}

/* A new daemon asks on conn: the sessions, once the daemon is gone. A
 * taker that failed half-way is stopped, so that it serves nothing the
 * next one is given. */
static void answer(int conn, const struct held *h, gboolean daemon_alive)
{
	struct control_msg m;

	const struct timeval timeout = { .tv_sec = REQUEST_TIMEOUT_S };
	g_autoptr(GError) error = NULL;

	if (setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0 ||
	    control_receive(conn, CONTROL_WORD(CONTROL_HANDOVER), &m, NULL) < 0)
		return;
	if (daemon_alive) {
		(void)!control_send_error(conn, NULL, "its daemon is alive");
		return;
	}
	int r = control_send_word(conn, CONTROL_OK, &error);
	if (r == 0 && (r = hand_over(conn, h)) == 0)
		_exit(0);
	g_warning("the keeper could not hand the views over to a new daemon (%s): it holds them on",
		  error ? error->message : g_strerror(-r));
	handover_stop_taker(conn);
}

/* Serve the daemon on sock until it quits, or dies and nobody comes for
 * the views. The exit status. */
static int keep(int sock, struct held *h, int wait_s)
{
	enum control_word said = CONTROL_END; /* neither quit nor leave */
	gboolean daemon_alive = TRUE;
	gint64 deadline = 0;

	for (;;) {
		struct pollfd p[2] = { { .fd = daemon_alive ? sock : -1, .events = POLLIN },
				       { .fd = h->listen_fd, .events = POLLIN } };
		int timeout = -1;
		if (!daemon_alive) {
			gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
			if (left_ms <= 0 && published(h))
				return keeper_let_calls_through(h, "no daemon came within --keeper-wait");
			if (left_ms <= 0 || !published(h))
				return left_ms <= 0; /* a newer keeper holds the views */
			timeout = (int)MIN(left_ms, ORPHAN_CHECK_MS);
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents && !from_daemon(sock, h, &said)) {
			if (said == CONTROL_QUIT) { /* the views end: the calls go to the kernel, not ENOSYS */
				unlink_own(h);
				keeper_let_calls_through(h, "the daemon stopped");
				return 0;
			}
			if (said != CONTROL_END || !published(h) || g_hash_table_size(h->sessions) == 0)
				return 0;
			daemon_alive = FALSE; /* it died: wait for a new one */
			deadline = g_get_monotonic_time() + (gint64)wait_s * G_USEC_PER_SEC;
		}
		if (p[1].revents & POLLIN) {
			_cleanup_close_ int conn = control_accept(h->listen_fd, "only root may take the views over");
			if (conn >= 0)
				answer(conn, h, daemon_alive);
		}
	}
}

int keeper_run(int argc, char **argv)
{
	guint64 wait_s;

	log_setup(FALSE);
	if (argc != 5 || strcmp(argv[1], KEEPER_ARG) != 0 ||
	    !g_ascii_string_to_unsigned(argv[3], 10, 0, G_MAXINT, &wait_s, NULL)) {
		g_printerr("cgprocfs-keeper: started by the cgprocfs daemon only\n");
		return 2;
	}
	prctl(PR_SET_NAME, "cgprocfs-keeper");
	fault_set_role("keeper");
	/* Never the one an OOM killer takes (the unit's MemoryMax, the
	 * node's): the daemon is, and the views wait here for the next. */
	_cleanup_close_ int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (oom < 0 || write(oom, "-1000", 5) != 5)
		g_message("the keeper may be taken by an OOM killer (oom_score_adj): %s", g_strerror(errno));
	/* The daemon's signals are not the keeper's: it goes when told, or
	 * when nobody came for the views in time. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	struct held h = {
		.sessions = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, kept_free),
		.listener = -1,
		.seccomp_listeners = { -1, -1 },
		.notify = g_array_new(FALSE, FALSE, sizeof(int)),
		.inflight = -1,
		.path = argv[2],
		.listen_fd = -1,
	};
	int status = keep(KEEPER_SOCK_FD, &h, (int)wait_s);
	g_hash_table_destroy(h.sessions);
	g_array_unref(h.notify); /* its fds close with the process */
	return status;
}

/* ------------------------------------------------- the daemon's side -- */

/* Used by the main thread, the acceptor (a handover) and containers'
 * session threads (keeper_drop), which may outlive keeper_quit: freed by
 * keeper_free only once none of them can call in. */
struct keeper {
	struct keeper_config cfg; /* its strings owned */
	GMutex lock;              /* guards everything below */
	int sock;                 /* to the keeper process; -1 if there is none */
	pid_t pid;
	gboolean published; /* it said it listens at its path */
	gboolean holding;   /* keeper_hold: a handover is under way */
	gboolean quit;      /* keeper_quit or keeper_leave: none is started again */
	gboolean warned;    /* that none could be started */
};

/* Start a keeper process, joined to k by a new k->sock. Under k->lock,
 * or before anyone else uses k. The child (vfork: it shares this memory
 * until it execs) runs system calls only, this process may run threads;
 * it leaves exec's error in exec_errno. */
static int spawn(struct keeper *k)
{
	char wait_text[16];
	int sv[2];
	volatile int exec_errno = 0;

	snprintf(wait_text, sizeof(wait_text), "%d", k->cfg.wait_s);
	char *const argv[] = { "cgprocfs-keeper", KEEPER_ARG, (char *)k->cfg.path, wait_text,
			       (char *)k->cfg.mountpoint, NULL };
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = vfork();
	if (pid == 0) {
		/* dup2 onto itself would keep close-on-exec: fcntl then */
		if ((sv[1] == KEEPER_SOCK_FD ? fcntl(sv[1], F_SETFD, 0) : dup2(sv[1], KEEPER_SOCK_FD)) >= 0) {
			close_range(KEEPER_SOCK_FD + 1, ~0u, 0);
			execve("/proc/self/exe", argv, environ);
		}
		exec_errno = errno;
		_exit(127);
	}
	int err = pid < 0 ? errno : exec_errno;
	close(sv[1]);
	if (pid > 0 && err)
		(void)!waitpid(pid, NULL, 0);
	if (pid < 0 || err) {
		close(sv[0]);
		return -err;
	}
	const struct timeval timeout = { .tv_sec = PUBLISH_TIMEOUT_S };
	(void)!setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	k->sock = sv[0];
	k->pid = pid;
	k->published = FALSE;
	g_autoptr(GError) error = NULL;
	if (k->cfg.cgroup && cgroups_move(pid, k->cfg.cgroup, &error))
		g_message("the keeper (pid %d) is in the cgroup %s: it outlives this daemon's cgroup", (int)pid,
			  k->cfg.cgroup);
	else if (k->cfg.cgroup)
		log_warning_consequence(g_steal_pointer(&error), "the keeper ends with this daemon's cgroup");
	return 0;
}

/* The keeper process misbehaved (no answer, or a late one): kill it, so
 * that another is started. Under k->lock. */
static void drop_process(struct keeper *k)
{
	if (k->sock < 0)
		return;
	close(k->sock);
	k->sock = -1;
	k->published = FALSE;
	kill(k->pid, SIGKILL);
	(void)!waitpid(k->pid, NULL, 0);
}

int keeper_connect(const char *path)
{
	return control_ask_handover(path, NULL);
}

struct keeper *keeper_start(const struct keeper_config *cfg)
{
	struct keeper *k = g_new0(struct keeper, 1);
	k->cfg = (struct keeper_config){ g_strdup(cfg->path), g_strdup(cfg->mountpoint), cfg->wait_s,
					 g_strdup(cfg->cgroup) };
	g_mutex_init(&k->lock);
	k->sock = -1;
	int r = spawn(k);
	if (r < 0) {
		g_warning("cannot start the keeper (%s): the views end if this daemon dies, until one is started",
			  g_strerror(-r));
		k->warned = TRUE;
	}
	return k;
}

/* Send m to the keeper, if there is one; what follows a failure is said. */
static void send_to_keeper(struct keeper *k, const struct control_msg *m, const char *consequence)
{
	g_autoptr(GError) err = NULL;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->sock >= 0 && control_send(k->sock, m, &err) < 0 && consequence)
		log_warning_consequence(g_steal_pointer(&err), "%s", consequence);
}

void keeper_keep(struct keeper *k, unsigned id, unsigned proto_minor, int fuse_fd, int ns_fd)
{
	const struct control_msg m = {
		.word = CONTROL_KEEP,
		.args = { id, proto_minor },
		.fds = { fuse_fd, ns_fd },
		.n_fds = ns_fd >= 0 ? 2 : 1,
	};
	if (k)
		send_to_keeper(k, &m, "the keeper cannot hold that view (until it is started again)");
}

void keeper_keep_listener(struct keeper *k, int listen_fd, const int seccomp_fds[2])
{
	const struct control_msg m = {
		.word = CONTROL_LISTENER,
		.fds = { listen_fd, seccomp_fds[0], seccomp_fds[1] },
		.n_fds = seccomp_fds[0] >= 0 && seccomp_fds[1] >= 0 ? 3 : 1,
	};
	if (k && listen_fd >= 0)
		send_to_keeper(k, &m, "the keeper cannot hold the control socket");
}

void keeper_keep_notify(struct keeper *k, int notify_fd)
{
	const struct control_msg m = { .word = CONTROL_NOTIFY, .fds = { notify_fd }, .n_fds = 1 };
	if (k)
		send_to_keeper(k, &m, "the keeper cannot hold a container's seccomp notifications: its sysinfo(2) "
					"fails if this daemon dies");
}

void keeper_keep_inflight(struct keeper *k, int inflight_fd)
{
	const struct control_msg m = { .word = CONTROL_INFLIGHT, .fds = { inflight_fd }, .n_fds = 1 };
	if (k && inflight_fd >= 0)
		send_to_keeper(k, &m, "the keeper cannot hold the requests in hand: if this daemon dies, on Linux "
					"before 6.9 they wait until their callers are killed");
}

void keeper_drop(struct keeper *k, unsigned id)
{
	const struct control_msg m = { .word = CONTROL_DROP, .args = { id } };
	if (k)
		send_to_keeper(k, &m, NULL);
}

int keeper_publish(struct keeper *k, GError **error)
{
	struct control_msg answer;

	if (!k)
		return log_set_message(error, "there is no keeper");
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->sock < 0)
		return log_set_message(error, "the keeper is gone (another is started within seconds)");
	int r = control_send_word(k->sock, CONTROL_PUBLISH, error);
	if (r == 0)
		r = control_receive(k->sock, CONTROL_WORD(CONTROL_OK) | CONTROL_WORD(CONTROL_ERROR), &answer, error);
	if (r < 0)
		drop_process(k); /* a late answer would be taken for the next one's */
	if (r == 0 && answer.word == CONTROL_ERROR)
		r = log_set_message(error, "%s", answer.reason);
	k->published = r == 0;
	if (r < 0)
		g_prefix_error(error, "the keeper cannot be found by a new daemon: ");
	return r;
}

void keeper_hold(struct keeper *k, gboolean holding)
{
	if (!k)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	k->holding = holding;
}

gboolean keeper_needs_everything(struct keeper *k)
{
	struct pollfd p;

	if (!k)
		return FALSE;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->quit || k->holding)
		return FALSE;
	if (k->sock >= 0) {
		p = (struct pollfd){ .fd = k->sock, .events = POLLIN };
		if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLHUP | POLLERR)))
			return !k->published;
		g_warning("the keeper (pid %d) is gone: starting another", (int)k->pid);
		drop_process(k);
	}
	int r = spawn(k);
	if (r < 0 && !k->warned)
		g_warning("cannot start a keeper (%s): the views end if this daemon dies; trying again", g_strerror(-r));
	k->warned = r < 0;
	return r == 0;
}

/* Tell the keeper word (quit or leave) and let go of it. */
static void let_go(struct keeper *k, enum control_word word)
{
	if (!k)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	k->quit = TRUE;
	if (k->sock < 0)
		return;
	(void)!control_send_word(k->sock, word, NULL);
	close(k->sock);
	k->sock = -1;
	k->published = FALSE;
}

void keeper_quit(struct keeper *k)
{
	let_go(k, CONTROL_QUIT);
}

void keeper_leave(struct keeper *k)
{
	let_go(k, CONTROL_LEAVE);
}

void keeper_free(struct keeper *k)
{
	if (!k)
		return;
	keeper_quit(k);
	g_mutex_clear(&k->lock);
	g_free((char *)k->cfg.path);
	g_free((char *)k->cfg.mountpoint);
	g_free((char *)k->cfg.cgroup);
	g_free(k);
}
