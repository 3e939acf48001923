/* The control socket's acceptor: one thread that accepts connections from
 * root on a listening socket and gives each, once its request has come,
 * to a handler (containers.c's). A peer that connects and says nothing is
 * answered and closed after 2 s, and holds no one else up. */
#include "cleanup.h"
#include "daemon.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

struct acceptor {
	int listen_fd; /* the caller's */
	const char *refusal;
	acceptor_handle_fn handle;
	void *data;
	GThread *thread;
	int stop_fd; /* eventfd, readable once acceptor_stop is called */
};

/* Connections accepted, whose request has not come yet: at most
 * WAITING_MAX at once (a new one pushes the oldest out), each for at most
 * REQUEST_WAIT_US. A peer that connects and says nothing, however often,
 * holds no one else up: a hook sends its request as it connects. */
#define WAITING_MAX 64
#define REQUEST_WAIT_US (2 * G_USEC_PER_SEC)

struct waiting {
	int conn;
	gint64 until; /* monotonic */
};

static void refuse(int conn, const char *why)
{
	(void)!control_send_error(conn, NULL, "%s", why);
	close(conn);
}

/* Accept one connection into waiting. FALSE: the socket was shut down. */
static gboolean take_connection(struct acceptor *a, GArray *waiting)
{
	int conn = control_accept(a->listen_fd, a->refusal);
	if (conn == -EINTR || conn == -ECONNABORTED || conn == -EPERM || conn == -EAGAIN)
		return TRUE;
	if (conn == -EMFILE || conn == -ENFILE || conn == -ENOBUFS || conn == -ENOMEM) {
		g_usleep(G_USEC_PER_SEC / 10); /* left in the backlog until fds are free */
		return TRUE;
	}
	if (conn < 0)
		return FALSE;
	if (waiting->len >= WAITING_MAX) {
		guint oldest = 0;
		for (guint i = 1; i < waiting->len; i++)
			if (g_array_index(waiting, struct waiting, i).until < g_array_index(waiting, struct waiting, oldest).until)
				oldest = i;
		refuse(g_array_index(waiting, struct waiting, oldest).conn,
		       "too many connections waiting to be served; try again");
		g_array_remove_index_fast(waiting, oldest);
	}
	struct waiting w = { conn, g_get_monotonic_time() + REQUEST_WAIT_US };
	g_array_append_val(waiting, w);
	return TRUE;
}

static gpointer acceptor_thread(gpointer data)
{
	struct acceptor *a = data;
	g_autoptr(GArray) waiting = g_array_new(FALSE, FALSE, sizeof(struct waiting));
	struct pollfd fds[2 + WAITING_MAX];
	gboolean stop = FALSE;

	while (!stop) {
		gint64 now = g_get_monotonic_time(), next = now + REQUEST_WAIT_US;
		fds[0] = (struct pollfd){ .fd = a->listen_fd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = a->stop_fd, .events = POLLIN };
		for (guint i = 0; i < waiting->len; i++) {
			const struct waiting *w = &g_array_index(waiting, struct waiting, i);
			fds[2 + i] = (struct pollfd){ .fd = w->conn, .events = POLLIN };
			next = MIN(next, w->until);
		}
		guint n = waiting->len;
		if (poll(fds, 2 + n, (int)MAX(0, (next - now + 999) / 1000)) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		now = g_get_monotonic_time();
		/* Back to front: removing an entry moves the last one into it. */
		for (guint i = n; i-- > 0 && !stop;) {
			struct waiting w = g_array_index(waiting, struct waiting, i);
			if (!fds[2 + i].revents && w.until > now)
				continue;
			g_array_remove_index_fast(waiting, i);
			if (!fds[2 + i].revents) {
				refuse(w.conn, "no request within 2 s");
				continue;
			}
			stop = a->handle(a->data, w.conn);
			close(w.conn);
		}
		if (!stop && fds[0].revents)
			stop = !take_connection(a, waiting);
	}
	for (guint i = 0; i < waiting->len; i++)
		refuse(g_array_index(waiting, struct waiting, i).conn, "the daemon is stopping");
	return NULL;
}

int acceptor_start(int listen_fd, const char *refusal, acceptor_handle_fn handle, void *data,
		   struct acceptor **ret)
{
	int stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0)
		return -errno;
	struct acceptor *a = g_new0(struct acceptor, 1);
	*a = (struct acceptor){ listen_fd, refusal, handle, data, NULL, stop_fd };
	a->thread = g_thread_new("control", acceptor_thread, a);
	*ret = a;
	return 0;
}

void acceptor_stop(struct acceptor *a)
{
	if (!a)
		return;
	(void)!eventfd_write(a->stop_fd, 1);
	g_thread_join(a->thread);
	close(a->stop_fd);
	g_free(a);
}
