#include "pidwatch.h"

#include "cleanup.h"

#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct watch {
	void *owner;
	pid_t pid;
	int pidfd;
};

struct pidwatch {
	pidwatch_exit_fn on_exit;
	int epoll_fd;
	int stop_fd;        /* eventfd: readable once pidwatch_stop was called */
	GMutex lock;        /* guards the tables */
	GMutex dispatch;    /* held from taking an exit to the end of on_exit */
	GHashTable *by_fd;  /* pidfd -> struct watch* (the epoll data is the pidfd) */
	GHashTable *by_key; /* struct watch* as (owner, pid) -> the same watch */
};

static guint key_hash(gconstpointer p)
{
	const struct watch *k = p;
	return g_direct_hash(k->owner) ^ (guint)k->pid;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct watch *x = a, *y = b;
	return x->owner == y->owner && x->pid == y->pid;
}

int pidwatch_new(pidwatch_exit_fn on_exit, struct pidwatch **ret)
{
	_cleanup_close_ int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0)
		return -errno;
	_cleanup_close_ int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = -1 };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &ev) < 0)
		return -errno;

	struct pidwatch *w = g_new0(struct pidwatch, 1);
	w->on_exit = on_exit;
	w->epoll_fd = steal_fd(&epoll_fd);
	w->stop_fd = steal_fd(&stop_fd);
	g_mutex_init(&w->lock);
	g_mutex_init(&w->dispatch);
	w->by_fd = g_hash_table_new(g_direct_hash, g_direct_equal);
	w->by_key = g_hash_table_new(key_hash, key_equal);
	*ret = w;
	return 0;
}

/* Under w->lock. Closing the pidfd also takes it out of the epoll set. */
static void drop(struct pidwatch *w, struct watch *x)
{
	g_hash_table_remove(w->by_key, x);
	g_hash_table_remove(w->by_fd, GINT_TO_POINTER(x->pidfd));
	close(x->pidfd);
	g_free(x);
}

/* Drop the watches of owner, or all of them for NULL. Under w->lock. */
static void drop_owner(struct pidwatch *w, void *owner)
{
	g_autoptr(GPtrArray) mine = g_ptr_array_new();
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, w->by_fd);
	while (g_hash_table_iter_next(&it, NULL, &value))
		if (!owner || ((struct watch *)value)->owner == owner)
			g_ptr_array_add(mine, value);
	for (guint i = 0; i < mine->len; i++)
		drop(w, mine->pdata[i]);
}

void pidwatch_forget_owner(struct pidwatch *w, void *owner)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) dispatching = g_mutex_locker_new(&w->dispatch);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	drop_owner(w, owner);
}

void pidwatch_foreach(struct pidwatch *w, void (*fn)(void *owner, pid_t pid, int pidfd, void *data),
		      void *data)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, w->by_fd);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		const struct watch *x = value;
		fn(x->owner, x->pid, x->pidfd, data);
	}
}

void pidwatch_free(struct pidwatch *w)
{
	if (!w)
		return;
	drop_owner(w, NULL);
	g_hash_table_unref(w->by_fd);
	g_hash_table_unref(w->by_key);
	g_mutex_clear(&w->lock);
	g_mutex_clear(&w->dispatch);
	close(w->epoll_fd);
	close(w->stop_fd);
	g_free(w);
}

static gboolean pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return poll(&p, 1, 0) != 0;
}

void pidwatch_adopt(struct pidwatch *w, void *owner, pid_t pid, int pidfd)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	const struct watch probe = { owner, pid, -1 };
	struct watch *old = g_hash_table_lookup(w->by_key, &probe);

	if (old) {
		if (!pidfd_exited(old->pidfd)) {
			close(pidfd);
			return;
		}
		drop(w, old);
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = pidfd };
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		int err = errno;
		close(pidfd);
		g_debug("cannot watch pid %d: %s", (int)pid, g_strerror(err));
		/* Unwatched: drop the entry now rather than keep it stale. */
		g_clear_pointer(&locker, g_mutex_locker_free);
		w->on_exit(owner, pid);
		return;
	}
	struct watch *x = g_new(struct watch, 1);
	*x = (struct watch){ owner, pid, pidfd };
	g_hash_table_insert(w->by_fd, GINT_TO_POINTER(pidfd), x);
	g_hash_table_add(w->by_key, x);
}

/* Take the watch of an exited process; FALSE if the event is stale (the
 * fd was closed, or reused for a process that is still running). */
static gboolean take_exit(struct pidwatch *w, int pidfd, void **ret_owner, pid_t *ret_pid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	struct watch *x = g_hash_table_lookup(w->by_fd, GINT_TO_POINTER(pidfd));
	if (!x || !pidfd_exited(pidfd))
		return FALSE;
	*ret_owner = x->owner;
	*ret_pid = x->pid;
	drop(w, x);
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
			void *owner;
			pid_t pid;
			if (events[i].data.fd < 0)
				return 0;
			g_mutex_lock(&w->dispatch);
			if (take_exit(w, events[i].data.fd, &owner, &pid))
				w->on_exit(owner, pid);
			g_mutex_unlock(&w->dispatch);
		}
	}
}

void pidwatch_stop(struct pidwatch *w)
{
	uint64_t one = 1;
	/* An eventfd write fails only when the counter would overflow. */
	(void)!write(w->stop_fd, &one, sizeof(one));
}
