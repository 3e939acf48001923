/* The handover protocol: a new daemon takes the sessions, the host's and
 * every container's, from the daemon serving them (cgprocfs --replace) or
 * from the keeper of one that died, and serves them on without a remount,
 * so nothing bound to them notices. The giving side is handle_handover
 * (containers.c) or the keeper (keeper.c), with the senders here. The
 * messages are control.h's. */
#include "cleanup.h"
#include "control.h"
#include "faults.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

/* How long a giver waits for a taker it SIGKILLed to be gone. */
#define STOP_TAKER_WAIT_MS 10000

/* One message of the handover, into h: 1 while more are to come, 0 after
 * the last, or -errno with *error. */
static int take_one(struct handover *h, int conn, GError **error)
{
	struct control_msg m;

	int r = control_receive(conn,
				CONTROL_WORD(CONTROL_SESSION) | CONTROL_WORD(CONTROL_WATCH) | CONTROL_WORD(CONTROL_LISTENER) |
					CONTROL_WORD(CONTROL_NOTIFY) | CONTROL_WORD(CONTROL_INFLIGHT) | CONTROL_WORD(CONTROL_END) |
					CONTROL_WORD(CONTROL_ERROR),
				&m, error);
	if (r < 0) {
		g_prefix_error(error, "the handover broke off: ");
		return r;
	}
	if (m.word == CONTROL_ERROR)
		return log_set_message(error, "the running daemon refused to hand over: %s", m.reason);
	if (m.word == CONTROL_END && h->sessions->len > 0)
		return 0;
	/* the host's session first, alone; then containers', with their pid namespace */
	if (m.word == CONTROL_SESSION && m.args[0] > 0 && m.n_fds == (h->sessions->len == 0 ? 1u : 2u)) {
		const struct handover_session s = { m.fds[0], m.n_fds == 2 ? m.fds[1] : -1, m.args[0] };
		g_array_append_val(h->sessions, s);
		return 1;
	}
	if (m.word == CONTROL_WATCH && m.args[0] < h->sessions->len && m.args[1] > 0) {
		const struct handover_watch w = { m.args[0], (pid_t)m.args[1], m.fds[0] };
		g_array_append_val(h->watches, w);
		return 1;
	}
	if (m.word == CONTROL_NOTIFY && h->sessions->len > 0) {
		g_array_append_val(h->notify, m.fds[0]);
		return 1;
	}
	if (m.word == CONTROL_INFLIGHT && h->inflight < 0 && h->sessions->len > 0) {
		h->inflight = m.fds[0];
		return 1;
	}
	if (m.word == CONTROL_LISTENER && h->listener < 0 && h->sessions->len > 0) {
		h->listener = m.fds[0];
		h->seccomp_listeners[0] = m.n_fds == 3 ? m.fds[1] : -1;
		h->seccomp_listeners[1] = m.n_fds == 3 ? m.fds[2] : -1;
		if (m.n_fds == 2) /* the seccomp listeners come both or not at all */
			close(m.fds[1]);
		return 1;
	}
	control_close_fds(&m);
	return log_set_message(error, "the running daemon's answer made no sense (\"%s\" out of place)",
			       control_word_text(m.word));
}

int handover_take(int given_conn, struct handover *ret, GError **error)
{
	struct handover h = { .conn = -1, .listener = -1, .seccomp_listeners = { -1, -1 }, .inflight = -1 };
	int r;

	_cleanup_close_ int conn = given_conn;
	fault_point("take-asked");
	h.sessions = g_array_new(FALSE, FALSE, sizeof(struct handover_session));
	h.watches = g_array_new(FALSE, FALSE, sizeof(struct handover_watch));
	h.notify = g_array_new(FALSE, FALSE, sizeof(int));
	while ((r = take_one(&h, conn, error)) > 0)
		;
	if (r == 0) {
		fault_point("take-received");
		h.conn = steal_fd(&conn);
		*ret = h;
		return 0;
	}
	handover_clear(&h);
	return r;
}

void handover_done(struct handover *h)
{
	(void)!control_send_word(h->conn, CONTROL_SERVING, NULL);
}

void handover_clear(struct handover *h)
{
	for (guint i = 0; h->sessions && i < h->sessions->len; i++) {
		const struct handover_session *s = &g_array_index(h->sessions, struct handover_session, i);
		if (s->fuse_fd >= 0)
			close(s->fuse_fd);
		if (s->ns_fd >= 0)
			close(s->ns_fd);
	}
	for (guint i = 0; h->watches && i < h->watches->len; i++) {
		int pidfd = g_array_index(h->watches, struct handover_watch, i).pidfd;
		if (pidfd >= 0)
			close(pidfd);
	}
	for (guint i = 0; h->notify && i < h->notify->len; i++)
		if (g_array_index(h->notify, int, i) >= 0)
			close(g_array_index(h->notify, int, i));
	g_clear_pointer(&h->notify, g_array_unref);
	g_clear_pointer(&h->sessions, g_array_unref);
	g_clear_pointer(&h->watches, g_array_unref);
	if (h->conn >= 0)
		close(h->conn);
	if (h->listener >= 0)
		close(h->listener);
	if (h->inflight >= 0)
		close(h->inflight);
	for (int i = 0; i < 2; i++)
		if (h->seccomp_listeners[i] >= 0)
			close(h->seccomp_listeners[i]);
	h->conn = h->listener = h->seccomp_listeners[0] = h->seccomp_listeners[1] = h->inflight = -1;
}

int handover_send_session(int conn, unsigned proto_minor, int fuse_fd, int ns_fd, GError **error)
{
	const struct control_msg m = {
		.word = CONTROL_SESSION,
		.args = { proto_minor },
		.fds = { fuse_fd, ns_fd },
		.n_fds = ns_fd >= 0 ? 2 : 1,
	};
	return control_send(conn, &m, error);
}

int handover_send_watch(int conn, unsigned session, pid_t pid, int pidfd, GError **error)
{
	const struct control_msg m = {
		.word = CONTROL_WATCH,
		.args = { session, (unsigned)pid },
		.fds = { pidfd },
		.n_fds = 1,
	};
	return control_send(conn, &m, error);
}

int handover_send_listener(int conn, int listen_fd, const int seccomp_fds[2], GError **error)
{
	const struct control_msg m = {
		.word = CONTROL_LISTENER,
		.fds = { listen_fd, seccomp_fds[0], seccomp_fds[1] },
		.n_fds = seccomp_fds[0] >= 0 && seccomp_fds[1] >= 0 ? 3 : 1,
	};
	return control_send(conn, &m, error);
}

int handover_send_inflight(int conn, int inflight_fd, GError **error)
{
	const struct control_msg m = { .word = CONTROL_INFLIGHT, .fds = { inflight_fd }, .n_fds = 1 };
	return control_send(conn, &m, error);
}

int handover_send_notify(int conn, int notify_fd, GError **error)
{
	const struct control_msg m = { .word = CONTROL_NOTIFY, .fds = { notify_fd }, .n_fds = 1 };
	return control_send(conn, &m, error);
}

/* Whether the peer of conn has closed it (or is gone). */
static gboolean peer_gone(int conn)
{
	struct pollfd p = { .fd = conn, .events = POLLRDHUP };
	return poll(&p, 1, 0) != 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL));
}

void handover_stop_taker(int conn)
{
	struct ucred peer;
	socklen_t len = sizeof(peer);

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || peer.pid <= 0)
		return;
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, peer.pid, 0);
	/* Opened before it is seen connected: then the pid is still the
	 * taker's, not a number reused after it died. */
	if (pidfd < 0 || peer_gone(conn))
		return;
	g_warning("stopping the new daemon (pid %d), which did not take over", (int)peer.pid);
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
		return;
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	(void)!poll(&p, 1, STOP_TAKER_WAIT_MS);
}

int handover_finish(int conn, GError **error)
{
	struct timeval timeout = { .tv_sec = CONTROL_TIMEOUT_S };
	struct control_msg answer;

	if (setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0)
		return log_set_error(error, -errno, "cannot wait for the new daemon");
	int r = control_send_word(conn, CONTROL_END, error);
	fault_point("give-end");
	if (r == 0)
		r = control_receive(conn, CONTROL_WORD(CONTROL_SERVING), &answer, error);
	if (r < 0)
		g_prefix_error(error, "the new daemon did not say it serves: ");
	return r;
}
