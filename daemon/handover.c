/* The handover protocol: a new daemon takes the sessions, the host's and
 * every container's, from the daemon serving them (cgprocfs --replace) or
 * from the keeper of one that died, and serves them on without a remount,
 * so nothing bound to them notices. The giving side is handle_handover
 * (containers.c) or the keeper (keeper.c), with the two senders here. */
#include "cleanup.h"
#include "daemon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>


/* The control socket of the daemon serving mountpoint: it says where. */
static char *control_socket_of(const char *mountpoint)
{
	g_autofree char *path = g_build_filename(mountpoint, ".cgprocfs", "control", NULL);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	return g_strdup(g_strstrip(text));
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* Connect to the daemon serving mountpoint and ask for its sessions. */
static int ask_daemon(const char *mountpoint, const char **ret_why)
{
	g_autofree char *socket_path = control_socket_of(mountpoint);
	char text[64];

	if (!socket_path) {
		*ret_why = "the running daemon names no control socket";
		return -ENOENT;
	}
	_cleanup_close_ int conn = fdmsg_ask(socket_path, HANDOVER_TIMEOUT_S, "handover", text, sizeof(text));
	if (conn == -EPROTO || (conn >= 0 && strcmp(text, "ok") != 0)) {
		*ret_why = "the running daemon did not hand over (too old for --replace?)";
		return -EPROTO;
	}
	if (conn < 0) {
		*ret_why = "cannot reach the running daemon's control socket";
		return conn;
	}
	return steal_fd(&conn);
}

int handover_take(const char *mountpoint, int given_conn, struct handover *ret, const char **ret_why)
{
	struct handover h = { .conn = -1 };
	char text[96];

	_cleanup_close_ int conn = given_conn >= 0 ? given_conn : ask_daemon(mountpoint, ret_why);
	if (conn < 0)
		return conn;
	h.sessions = g_array_new(FALSE, FALSE, sizeof(struct handover_session));
	h.watches = g_array_new(FALSE, FALSE, sizeof(struct handover_watch));
	for (;;) {
		int fds[FDMSG_MAX_FDS];
		size_t n = G_N_ELEMENTS(fds);
		unsigned minor, session;
		int pid;
		if (fdmsg_receive(conn, text, sizeof(text), fds, &n) <= 0) {
			*ret_why = "the handover broke off";
			break;
		}
		if (strcmp(text, "end") == 0 && n == 0 && h.sessions->len > 0) {
			h.conn = steal_fd(&conn);
			*ret = h;
			return 0;
		}
		if (sscanf(text, "session %u", &minor) == 1 && minor > 0 &&
		    ((h.sessions->len == 0 && n == 1) || (h.sessions->len > 0 && n == 2))) {
			const struct handover_session s = { fds[0], n == 2 ? fds[1] : -1, minor };
			g_array_append_val(h.sessions, s);
			continue;
		}
		if (sscanf(text, "watch %u %d", &session, &pid) == 2 && session < h.sessions->len && pid > 0 &&
		    n == 1) {
			const struct handover_watch w = { session, pid, fds[0] };
			g_array_append_val(h.watches, w);
			continue;
		}
		close_fds(fds, n);
		*ret_why = strncmp(text, "error", 5) == 0 ? "the running daemon refused to hand over"
							  : "the running daemon's answer made no sense";
		break;
	}
	handover_clear(&h);
	return -EPROTO;
}

void handover_done(struct handover *h)
{
	(void)!fdmsg_send(h->conn, "serving", NULL, 0);
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
	for (guint i = 0; h->watches && i < h->watches->len; i++)
		close(g_array_index(h->watches, struct handover_watch, i).pidfd);
	g_clear_pointer(&h->sessions, g_array_unref);
	g_clear_pointer(&h->watches, g_array_unref);
	if (h->conn >= 0)
		close(h->conn);
	h->conn = -1;
}

gboolean handover_send_session(int conn, unsigned proto_minor, int fuse_fd, int ns_fd)
{
	char text[32];
	const int fds[2] = { fuse_fd, ns_fd };
	snprintf(text, sizeof(text), "session %u", proto_minor);
	return fdmsg_send(conn, text, fds, ns_fd >= 0 ? 2 : 1) >= 0;
}

gboolean handover_finish(int conn)
{
	struct timeval timeout = { .tv_sec = HANDOVER_TIMEOUT_S };
	char answer[16];
	size_t no_fds = 0;
	return setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) == 0 &&
	       fdmsg_send(conn, "end", NULL, 0) >= 0 &&
	       fdmsg_receive(conn, answer, sizeof(answer), NULL, &no_fds) > 0 && strcmp(answer, "serving") == 0;
}
