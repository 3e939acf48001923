#include "pidwatch.h"

#include "cleanup.h"

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct pidwatch {
	pidwatch_exit_fn on_exit;
	void *data;
	int epoll_fd;
	int stop_fd; /* eventfd: readable once pidwatch_stop was called */
	GMutex lock; /* guards by_pid */
	GHashTable *by_pid; /* pid -> pidfd, both as pointers */
};

/* epoll data: the pid and its fd, so a stale event can be told apart. */
static uint64_t event_key(pid_t pid, int fd)
{
	return (uint64_t)(uint32_t)fd << 32 | (uint32_t)pid;
}

int pidwatch_new(pidwatch_exit_fn on_exit, void *data, struct pidwatch **ret)
{
	_cleanup_close_ int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0)
		return -errno;
	_cleanup_close_ int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UINT64_MAX };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &ev) < 0)
		return -errno;

	struct pidwatch *w = g_new0(struct pidwatch, 1);
	w->on_exit = on_exit;
	w->data = data;
	w->epoll_fd = steal_fd(&epoll_fd);
	w->stop_fd = steal_fd(&stop_fd);
	g_mutex_init(&w->lock);
	w->by_pid = g_hash_table_new(g_direct_hash, g_direct_equal);
	*ret = w;
	return 0;
}

static void close_pidfd(gpointer key, gpointer value, gpointer data)
{
	close(GPOINTER_TO_INT(value));
}

void pidwatch_free(struct pidwatch *w)
{
	if (!w)
		return;
	g_hash_table_foreach(w->by_pid, close_pidfd, NULL);
	g_hash_table_unref(w->by_pid);
	g_mutex_clear(&w->lock);
	close(w->epoll_fd);
	close(w->stop_fd);
	g_free(w);
}

static gboolean pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}

void pidwatch_adopt(struct pidwatch *w, pid_t pid, int pidfd)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	gpointer old;

	if (g_hash_table_lookup_extended(w->by_pid, GINT_TO_POINTER(pid), NULL, &old)) {
		if (!pidfd_exited(GPOINTER_TO_INT(old))) {
			close(pidfd);
			return;
		}
		close(GPOINTER_TO_INT(old)); /* also leaves the epoll set */
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = event_key(pid, pidfd) };
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		int err = errno;
		close(pidfd);
		g_hash_table_remove(w->by_pid, GINT_TO_POINTER(pid));
		g_debug("cannot watch pid %d: %s", (int)pid, g_strerror(err));
		/* Unwatched: drop the entry now rather than keep it stale. */
		g_clear_pointer(&locker, g_mutex_locker_free);
		w->on_exit(w->data, pid);
		return;
	}
	g_hash_table_insert(w->by_pid, GINT_TO_POINTER(pid), GINT_TO_POINTER(pidfd));
}

/* Forget the watch behind an event; FALSE if the event is stale. */
static gboolean forget(struct pidwatch *w, uint64_t key)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	pid_t pid = (pid_t)(uint32_t)key;
	int fd = (int)(key >> 32);
	gpointer cur;

	if (!g_hash_table_lookup_extended(w->by_pid, GINT_TO_POINTER(pid), NULL, &cur) ||
	    GPOINTER_TO_INT(cur) != fd)
		return FALSE;
	g_hash_table_remove(w->by_pid, GINT_TO_POINTER(pid));
	close(fd);
	return TRUE;
}

int pidwatch_run(struct pidwatch *w)
{
	struct epoll_event events[64];

	for (;;) {
		int n = epoll_wait(w->epoll_fd, events, G_N_ELEMENTS(events), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (events[i].data.u64 == UINT64_MAX)
				return 0;
			if (forget(w, events[i].data.u64))
				w->on_exit(w->data, (pid_t)(uint32_t)events[i].data.u64);
		}
	}
}

void pidwatch_stop(struct pidwatch *w)
{
	uint64_t one = 1;
	/* An eventfd write fails only when the counter would overflow. */
	(void)!write(w->stop_fd, &one, sizeof(one));
}
