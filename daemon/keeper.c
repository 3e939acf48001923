/* The keeper: a small process, forked at start, that holds a copy of every
 * session's /dev/fuse fd while the daemon runs (moved to --keeper-cgroup,
 * it outlives the daemon's container). If the daemon dies (a
 * crash, SIGKILL), the views then wait instead of failing with ENOTCONN:
 * a new daemon started on the same mountpoint takes the sessions over from
 * the keeper (the handover protocol, control.h) and has the kernel
 * resend the requests the dead one had taken. The keeper gives up after
 * --keeper-wait seconds without a new daemon; a daemon that stops cleanly tells
 * it to go first, so that its views end as they always did. */
#include "cleanup.h"
#include "daemon.h"
#include "faults.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>


/* The daemon's end. Used by the main thread and by containers' session
 * threads (keeper_drop), which may outlive keeper_quit: freed by
 * keeper_free only once none of them can call in. */
struct keeper {
	GMutex lock; /* guards sock */
	int sock;    /* to the keeper process; -1 after keeper_quit */
};

/* In the keeper process: one session it holds. */
struct kept {
	int fuse_fd;
	int ns_fd;      /* -1 for the host view */
	unsigned minor; /* the FUSE protocol minor version the kernel spoke to it */
};

static void kept_free(gpointer p)
{
	struct kept *k = p;
	close(k->fuse_fd);
	if (k->ns_fd >= 0)
		close(k->ns_fd);
	g_free(k);
}

/* Give the sessions to a new daemon on conn: the host's (id 0) first. 0
 * once it serves them, or -errno. */
static int hand_over(int conn, GHashTable *kept)
{
	GHashTableIter it;
	gpointer id, value;

	struct kept *host = g_hash_table_lookup(kept, GUINT_TO_POINTER(0));
	if (!host || host->minor == 0)
		return -ENOENT;
	int r = handover_send_session(conn, host->minor, host->fuse_fd, -1, NULL);
	g_hash_table_iter_init(&it, kept);
	while (r == 0 && g_hash_table_iter_next(&it, &id, &value)) {
		const struct kept *k = value;
		if (GPOINTER_TO_UINT(id) != 0)
			r = handover_send_session(conn, k->minor, k->fuse_fd, k->ns_fd, NULL);
	}
	if (r == 0)
		fault_point("give-sent");
	return r < 0 ? r : handover_finish(conn, NULL);
}

/* A message from the daemon (control.h): keep, with the session's fd (and
 * a container's pid namespace) and the FUSE protocol version the kernel
 * spoke to it, drop, quit. FALSE once the daemon is
 * gone (EOF) or said quit (*ret_quit). */
static gboolean from_daemon(int sock, GHashTable *kept, gboolean *ret_quit)
{
	g_autoptr(GError) err = NULL;
	struct control_msg m;

	int r = control_receive(sock, CONTROL_WORD(CONTROL_KEEP) | CONTROL_WORD(CONTROL_DROP) | CONTROL_WORD(CONTROL_QUIT),
				&m, &err);
	if (r == -EPROTO) {
		g_warning("the keeper ignored a message from its daemon: %s", err->message);
		return TRUE;
	}
	if (r < 0)
		return FALSE;
	if (m.word == CONTROL_QUIT) {
		*ret_quit = TRUE;
		return FALSE;
	}
	if (m.word == CONTROL_DROP) {
		g_hash_table_remove(kept, GUINT_TO_POINTER(m.args[0]));
		return TRUE;
	}
	struct kept *k = g_new(struct kept, 1);
	*k = (struct kept){ m.fds[0], m.n_fds >= 2 ? m.fds[1] : -1, m.args[1] };
	g_hash_table_replace(kept, GUINT_TO_POINTER(m.args[0]), k);
	return TRUE;
}

/* A new daemon asks on conn: the sessions, once the daemon is gone. */
static void answer(int conn, GHashTable *kept, gboolean daemon_alive)
{
	struct control_msg m;

	if (control_receive(conn, CONTROL_WORD(CONTROL_HANDOVER), &m, NULL) < 0)
		return;
	if (daemon_alive) {
		(void)!control_send_error(conn, NULL, "its daemon is alive");
		return;
	}
	if (control_send_word(conn, CONTROL_OK, NULL) == 0 && hand_over(conn, kept) == 0)
		_exit(0);
}

/* Remove path if it still is the keeper's socket (ino), not a newer
 * keeper's (after a --replace). */
static void unlink_own(const char *path, ino_t ino)
{
	struct stat st;
	if (stat(path, &st) == 0 && st.st_ino == ino)
		unlink(path);
}

static void keeper_main(int sock, int listen_fd, int wait_s, const char *path, ino_t ino)
{
	g_autoptr(GHashTable) kept = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, kept_free);
	gboolean quit = FALSE, daemon_alive = TRUE;
	gint64 deadline = 0;

	prctl(PR_SET_NAME, "cgprocfs-keeper");
	fault_set_role("keeper");
	/* The daemon's signals are not the keeper's: it goes when told, or
	 * when nobody came for the views in time. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	for (;;) {
		struct pollfd p[2] = { { .fd = daemon_alive ? sock : -1, .events = POLLIN },
				       { .fd = listen_fd, .events = POLLIN } };
		int timeout = -1;
		if (!daemon_alive) {
			gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
			if (left_ms <= 0) {
				unlink_own(path, ino);
				_exit(1); /* nobody came: the views end */
			}
			timeout = (int)MIN(left_ms, G_MAXINT);
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			_exit(1);
		if (p[0].revents && !from_daemon(sock, kept, &quit)) {
			if (quit || g_hash_table_size(kept) == 0) {
				unlink_own(path, ino);
				_exit(0);
			}
			daemon_alive = FALSE; /* it died: wait for a new one */
			deadline = g_get_monotonic_time() + (gint64)wait_s * G_USEC_PER_SEC;
		}
		if (p[1].revents & POLLIN) {
			_cleanup_close_ int conn = control_accept(listen_fd, "only root may take the views over");
			if (conn >= 0)
				answer(conn, kept, daemon_alive);
		}
	}
}

int keeper_connect(const char *path)
{
	int conn = control_ask_handover(path, NULL);
	return conn >= 0 ? conn : -1;
}

int keeper_start(const char *path, int wait_s, const char *cgroup, struct keeper **ret)
{
	struct stat st;

	_cleanup_close_ int listen_fd = control_listen(path, 4);
	if (listen_fd < 0)
		return listen_fd;
	if (stat(path, &st) < 0)
		return -errno;
	int sock;
	pid_t pid = fdmsg_fork(&sock);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		keeper_main(sock, listen_fd, wait_s, path, st.st_ino);
		_exit(0);
	}
	g_autoptr(GError) err = NULL;
	if (cgroup && cgroups_move(pid, cgroup, &err))
		g_message("the keeper (pid %d) is in the cgroup %s: it outlives this daemon's cgroup", (int)pid,
			  cgroup);
	else if (cgroup)
		log_warning_consequence(g_steal_pointer(&err), "the keeper ends with this daemon's cgroup");
	struct keeper *k = g_new0(struct keeper, 1);
	g_mutex_init(&k->lock);
	k->sock = sock;
	*ret = k;
	return 0;
}

void keeper_keep(struct keeper *k, unsigned id, unsigned proto_minor, int fuse_fd, int ns_fd)
{
	g_autoptr(GError) err = NULL;
	const struct control_msg m = {
		.word = CONTROL_KEEP,
		.args = { id, proto_minor },
		.fds = { fuse_fd, ns_fd },
		.n_fds = ns_fd >= 0 ? 2 : 1,
	};
	if (!k)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->sock >= 0 && control_send(k->sock, &m, &err) < 0)
		log_warning_consequence(g_steal_pointer(&err), "the keeper cannot hold that view");
}

void keeper_drop(struct keeper *k, unsigned id)
{
	const struct control_msg m = { .word = CONTROL_DROP, .args = { id } };
	if (!k)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->sock >= 0)
		(void)!control_send(k->sock, &m, NULL);
}

void keeper_quit(struct keeper *k)
{
	if (!k)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&k->lock);
	if (k->sock < 0)
		return;
	(void)!control_send_word(k->sock, CONTROL_QUIT, NULL);
	close(k->sock);
	k->sock = -1;
}

void keeper_free(struct keeper *k)
{
	if (!k)
		return;
	keeper_quit(k);
	g_mutex_clear(&k->lock);
	g_free(k);
}
