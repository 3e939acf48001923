#include "pidwatch.h"

#include "cleanup.h"
#include "pidns.h"

#include <errno.h>
#include <glib.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

/* One process watched for one owner. Owned by the tables of struct
 * pidwatch: created by pidwatch_adopt, freed by drop() under its lock. */
struct watch {
	void *owner;
	pid_t pid;
	int pidfd; /* -1 for a process that could not be watched (pending) */
	/* The pidfd's inode: which process, where pidfds live in pidfs (Linux
	 * 6.9 on); elsewhere every pidfd has the same, and tells nothing. */
	uint64_t process;
};

/* Shared by the threads that adopt and forget (view sessions, daemon/)
 * and the one in pidwatch_run; freed by pidwatch_free once that thread
 * has returned and nobody adopts any more. */
struct pidwatch {
	pidwatch_exit_fn on_exit;
	int epoll_fd;
	int stop_fd;        /* eventfd: readable once pidwatch_stop was called */
	int pending_fd;     /* eventfd: readable when pending has something */
	/* Lock order: dispatch, then lock. */
	GMutex lock;        /* guards by_fd, by_key, pending and the watches in them */
	GMutex dispatch;    /* held from taking an exit to the end of on_exit, so
	                     * that pidwatch_forget_owner waits for a running one */
	GHashTable *by_fd;  /* pidfd -> struct watch* (the epoll data is the pidfd) */
	GHashTable *by_key; /* struct watch* as (owner, pid, process) -> the same watch */
	GPtrArray *pending; /* struct watch* that could not be watched: reported by
	                     * pidwatch_run as if exited, like any exit */
};

/* epoll data of the eventfds; pidfds are >= 0. */
#define STOP_EVENT (-1)
#define PENDING_EVENT (-2)

static guint key_hash(gconstpointer p)
{
	const struct watch *k = p;
	return g_direct_hash(k->owner) ^ (guint)k->pid ^ (guint)k->process;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct watch *x = a, *y = b;
	return x->owner == y->owner && x->pid == y->pid && x->process == y->process;
}

static int add_eventfd(int epoll_fd, int data, int *ret_fd)
{
	_cleanup_close_ int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = data };
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	*ret_fd = steal_fd(&fd);
	return 0;
}

int pidwatch_new(pidwatch_exit_fn on_exit, struct pidwatch **ret)
{
	_cleanup_close_ int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0)
		return -errno;
	_cleanup_close_ int stop_fd = -1;
	_cleanup_close_ int pending_fd = -1;
	int r = add_eventfd(epoll_fd, STOP_EVENT, &stop_fd);
	if (r == 0)
		r = add_eventfd(epoll_fd, PENDING_EVENT, &pending_fd);
	if (r < 0)
		return r;

	struct pidwatch *w = g_new0(struct pidwatch, 1);
	w->on_exit = on_exit;
	w->epoll_fd = steal_fd(&epoll_fd);
	w->stop_fd = steal_fd(&stop_fd);
	w->pending_fd = steal_fd(&pending_fd);
	g_mutex_init(&w->lock);
	g_mutex_init(&w->dispatch);
	w->by_fd = g_hash_table_new(g_direct_hash, g_direct_equal);
	w->by_key = g_hash_table_new(key_hash, key_equal);
	w->pending = g_ptr_array_new_with_free_func(g_free);
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
	for (guint i = w->pending->len; i-- > 0;)
		if (!owner || ((struct watch *)w->pending->pdata[i])->owner == owner)
			g_ptr_array_remove_index_fast(w->pending, i);
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
	g_ptr_array_unref(w->pending);
	g_mutex_clear(&w->lock);
	g_mutex_clear(&w->dispatch);
	close(w->epoll_fd);
	close(w->stop_fd);
	close(w->pending_fd);
	g_free(w);
}

/* Have pid's entry of owner dropped by pidwatch_run, as for an exit
 * (this thread must not wait for dispatch: on_exit may wait for
 * requests). Under w->lock. */
static void report_now(struct pidwatch *w, void *owner, pid_t pid)
{
	struct watch *x = g_new0(struct watch, 1);
	*x = (struct watch){ owner, pid, -1, 0 };
	g_ptr_array_add(w->pending, x);
	uint64_t one = 1;
	/* An eventfd write fails only when the counter would overflow. */
	(void)!write(w->pending_fd, &one, sizeof(one));
}

void pidwatch_adopt(struct pidwatch *w, void *owner, pid_t pid, int pidfd)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	struct stat st;
	const struct watch probe = { owner, pid, -1, fstat(pidfd, &st) == 0 ? (uint64_t)st.st_ino : 0 };
	struct watch *old = g_hash_table_lookup(w->by_key, &probe);

	if (old) {
		if (!pidns_pidfd_exited(old->pidfd)) {
			/* The same process, watched already; unless this one has
			 * exited, and the pid is another's now (where pidfds
			 * cannot tell processes apart): its entry, just given to
			 * the kernel, must go. */
			if (pidns_pidfd_exited(pidfd))
				report_now(w, owner, pid);
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
		/* Unwatched: have the entry dropped now rather than kept stale. */
		report_now(w, owner, pid);
		return;
	}
	struct watch *x = g_new(struct watch, 1);
	*x = probe;
	x->pidfd = pidfd;
	g_hash_table_insert(w->by_fd, GINT_TO_POINTER(pidfd), x);
	g_hash_table_add(w->by_key, x);
}

/* Take the watch of an exited process; FALSE if the event is stale (the
 * fd was closed, or reused for a process that is still running). */
static gboolean take_exit(struct pidwatch *w, int pidfd, void **ret_owner, pid_t *ret_pid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	struct watch *x = g_hash_table_lookup(w->by_fd, GINT_TO_POINTER(pidfd));
	if (!x || !pidns_pidfd_exited(pidfd))
		return FALSE;
	*ret_owner = x->owner;
	*ret_pid = x->pid;
	drop(w, x);
	return TRUE;
}

/* Take a watch that could not be made; FALSE if none is left. */
static gboolean take_pending(struct pidwatch *w, void **ret_owner, pid_t *ret_pid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&w->lock);
	if (w->pending->len == 0)
		return FALSE;
	const struct watch *x = w->pending->pdata[w->pending->len - 1];
	*ret_owner = x->owner;
	*ret_pid = x->pid;
	g_ptr_array_remove_index(w->pending, w->pending->len - 1);
	return TRUE;
}

/* Report one event: the exit of the process of pidfd, or every pending
 * watch. Under dispatch, so that forgetting an owner waits for it. */
static void dispatch_event(struct pidwatch *w, int fd)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) dispatching = g_mutex_locker_new(&w->dispatch);
	void *owner;
	pid_t pid;
	if (fd >= 0) {
		if (take_exit(w, fd, &owner, &pid))
			w->on_exit(owner, pid);
		return;
	}
	uint64_t n;
	(void)!read(w->pending_fd, &n, sizeof(n)); /* EAGAIN: drained already */
	while (take_pending(w, &owner, &pid))
		w->on_exit(owner, pid);
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
			if (events[i].data.fd == STOP_EVENT)
				return 0;
			dispatch_event(w, events[i].data.fd);
		}
	}
}

void pidwatch_stop(struct pidwatch *w)
{
	uint64_t one = 1;
	/* An eventfd write fails only when the counter would overflow. */
	(void)!write(w->stop_fd, &one, sizeof(one));
}
