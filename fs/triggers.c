/* PSI triggers set through the view, and the thread that wakes their
 * pollers (triggers.h). */
#include "triggers.h"

#include "cleanup.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

struct trigger {
	struct triggers *owner;
	uint64_t id; /* its key in by_id, and its epoll data */
	int fd;
	uint64_t tenant;
	struct trigger_record *record; /* this fd's kept record, or NULL */
	struct fuse_pollhandle *ph;    /* to wake at the next firing, or NULL */
	gboolean fired;                /* since the last poll */
	gboolean gone;                 /* the kernel file said EPOLLERR (its cgroup is gone) */
};

struct triggers {
	GMutex lock;          /* guards all below, and the records' contents */
	GCond woken;          /* waking went to 0 */
	unsigned waking;      /* poll handles being woken outside the lock */
	GHashTable *by_id;    /* id -> struct trigger *, owned */
	GHashTable *tenants;  /* tenant -> triggers it holds */
	uint64_t host_tenant;
	unsigned held_by_others; /* triggers of tenants but the host's */
	uint64_t serial;
	struct trigger_record *records;
	unsigned n_records;
	int epfd, stop_fd;    /* stop_fd's epoll data is 0 */
	GThread *thread;
	gint told_minute;     /* when a limit was last told */
};

#define KEY(n) ((gpointer)(uintptr_t)(n))
G_STATIC_ASSERT(sizeof(gpointer) >= sizeof(uint64_t));

static void trigger_free(struct trigger *tr)
{
	close(tr->fd);
	if (tr->ph)
		fuse_pollhandle_destroy(tr->ph);
	g_free(tr);
}

/* One firing (or the file's end) of tr: its poll handle, if any, taken
 * to be woken. Under t->lock. */
static struct fuse_pollhandle *fired(struct triggers *t, struct trigger *tr, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP)) {
		tr->gone = TRUE; /* and no more events from it */
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, tr->fd, NULL);
	} else {
		tr->fired = TRUE;
	}
	struct fuse_pollhandle *ph = tr->ph;
	tr->ph = NULL;
	return ph;
}

/* Wake the pollers of each trigger that fires, outside the lock (the
 * notification goes through the notifier, which may wait). */
static gpointer watch(gpointer data)
{
	struct triggers *t = data;
	struct epoll_event ev[32];

	for (;;) {
		int n = epoll_wait(t->epfd, ev, G_N_ELEMENTS(ev), -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		struct fuse_pollhandle *wake[G_N_ELEMENTS(ev)];
		unsigned woken = 0;
		gboolean stop = FALSE;
		g_mutex_lock(&t->lock);
		for (int i = 0; i < n; i++) {
			struct trigger *tr = g_hash_table_lookup(t->by_id, KEY(ev[i].data.u64));
			stop |= ev[i].data.u64 == 0;
			struct fuse_pollhandle *ph = tr ? fired(t, tr, ev[i].events) : NULL;
			if (ph)
				wake[woken++] = ph;
		}
		t->waking = woken;
		g_mutex_unlock(&t->lock);
		for (unsigned i = 0; i < woken; i++) {
			fuse_lowlevel_notify_poll(wake[i]);
			fuse_pollhandle_destroy(wake[i]);
		}
		g_mutex_lock(&t->lock);
		t->waking = 0;
		g_cond_broadcast(&t->woken);
		g_mutex_unlock(&t->lock);
		if (stop)
			return NULL;
	}
}

struct triggers *triggers_new(struct trigger_record *records, unsigned n, uint64_t host_tenant)
{
	_cleanup_close_ int epfd = epoll_create1(EPOLL_CLOEXEC);
	_cleanup_close_ int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	if (epfd < 0 || stop_fd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, stop_fd, &ev) < 0) {
		g_warning("cannot watch PSI triggers (%s): trigger writes to proc/pressure fail with ENOSYS",
			  g_strerror(errno));
		return NULL;
	}
	struct triggers *t = g_new0(struct triggers, 1);
	g_mutex_init(&t->lock);
	g_cond_init(&t->woken);
	t->by_id = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)trigger_free);
	t->tenants = g_hash_table_new(g_direct_hash, g_direct_equal);
	t->host_tenant = host_tenant;
	t->records = records;
	t->n_records = records ? n : 0;
	t->epfd = steal_fd(&epfd);
	t->stop_fd = steal_fd(&stop_fd);
	t->told_minute = -1;
	t->thread = g_thread_new("triggers", watch, t);
	return t;
}

void triggers_free(struct triggers *t)
{
	if (!t)
		return;
	(void)!eventfd_write(t->stop_fd, 1);
	g_thread_join(t->thread);
	g_hash_table_unref(t->by_id);
	g_hash_table_unref(t->tenants);
	close(t->epfd);
	close(t->stop_fd);
	g_cond_clear(&t->woken);
	g_mutex_clear(&t->lock);
	g_free(t);
}

/* The record of (key, fh), or NULL. Under t->lock. */
static struct trigger_record *record_of(struct triggers *t, uint64_t key, uint64_t fh)
{
	for (unsigned i = 0; i < t->n_records; i++)
		if (__atomic_load_n(&t->records[i].fh, __ATOMIC_ACQUIRE) == fh && t->records[i].key == key)
			return &t->records[i];
	return NULL;
}

/* A free record filled with r's contents (fh published last), or NULL
 * if every one is in use. Under t->lock. */
static struct trigger_record *record_put(struct triggers *t, const struct trigger_record *r)
{
	struct trigger_record *free_one = NULL;
	for (unsigned i = 0; !free_one && i < t->n_records; i++)
		if (__atomic_load_n(&t->records[i].fh, __ATOMIC_ACQUIRE) == 0)
			free_one = &t->records[i];
	if (!free_one)
		return NULL;
	free_one->key = r->key;
	free_one->kh = r->kh;
	free_one->ino = r->ino;
	memcpy(free_one->text, r->text, sizeof(free_one->text));
	free_one->text[TRIGGER_TEXT_MAX - 1] = '\0';
	__atomic_store_n(&free_one->fh, r->fh, __ATOMIC_RELEASE);
	return free_one;
}

void triggers_inherit(struct triggers *t, const struct trigger_record *from, unsigned n)
{
	if (!t)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	for (unsigned i = 0; i < n; i++)
		if (from[i].fh && !record_of(t, from[i].key, from[i].fh))
			record_put(t, &from[i]);
}

void triggers_each_polled(struct triggers *t, uint64_t key, void (*fn)(void *data, uint64_t kh), void *data)
{
	g_autoptr(GArray) khs = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	if (!t)
		return;
	g_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->n_records; i++)
		if (t->records[i].fh && t->records[i].key == key && t->records[i].kh)
			g_array_append_val(khs, t->records[i].kh);
	g_mutex_unlock(&t->lock);
	for (guint i = 0; i < khs->len; i++)
		fn(data, g_array_index(khs, uint64_t, i));
}

int triggers_kept(struct triggers *t, uint64_t key, uint64_t fh, char ret_text[TRIGGER_TEXT_MAX])
{
	if (!t || !fh)
		return -ENOENT;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	const struct trigger_record *r = record_of(t, key, fh);
	if (!r)
		return -ENOENT;
	memcpy(ret_text, r->text, TRIGGER_TEXT_MAX);
	return 0;
}

static guint count_of(struct triggers *t, uint64_t tenant)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(t->tenants, KEY(tenant)));
}

static void count_add(struct triggers *t, uint64_t tenant, int n)
{
	guint now = count_of(t, tenant) + (guint)n;
	if (tenant != t->host_tenant)
		t->held_by_others += (unsigned)n;
	if (now)
		g_hash_table_insert(t->tenants, KEY(tenant), GUINT_TO_POINTER(now));
	else
		g_hash_table_remove(t->tenants, KEY(tenant));
}

/* ENOSPC past a limit, said at most once a minute. Under t->lock. */
static int over_limit(struct triggers *t, uint64_t tenant)
{
	gboolean full = g_hash_table_size(t->by_id) >= TRIGGERS_MAX;
	gboolean others_full = tenant != t->host_tenant && t->held_by_others >= TRIGGERS_MAX - TRIGGERS_TENANT_MAX;
	if (!full && !others_full && count_of(t, tenant) < TRIGGERS_TENANT_MAX)
		return 0;
	gint minute = (gint)(g_get_monotonic_time() / (60 * G_USEC_PER_SEC));
	if (t->told_minute != minute && (full || others_full))
		g_warning("the views' callers hold %u PSI triggers, %u of them the containers' (at most %d: %d are "
			  "kept for the host's): %s trigger writes fail with ENOSPC until some are closed",
			  g_hash_table_size(t->by_id), t->held_by_others, TRIGGERS_MAX - TRIGGERS_TENANT_MAX,
			  TRIGGERS_TENANT_MAX, full ? "every" : "the containers'");
	else if (t->told_minute != minute)
		g_warning("a tenant's callers (a container: its pid namespace and those below it) hold %d PSI "
			  "triggers: their trigger writes fail with ENOSPC until they close some; others' work on",
			  TRIGGERS_TENANT_MAX);
	t->told_minute = minute;
	return -ENOSPC;
}

int triggers_admit(struct triggers *t, uint64_t tenant)
{
	if (!t)
		return -ENOSYS;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	return over_limit(t, tenant);
}

int triggers_add(struct triggers *t, int fd, uint64_t tenant, uint64_t key, uint64_t fh, uint64_t ino,
		 const char *text, struct trigger **ret)
{
	_cleanup_close_ int owned = fd;
	if (!t)
		return -ENOSYS;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	int r = over_limit(t, tenant);
	if (r < 0)
		return r;
	struct trigger *tr = g_new0(struct trigger, 1);
	tr->owner = t;
	tr->id = ++t->serial;
	struct epoll_event ev = { .events = EPOLLPRI, .data.u64 = tr->id };
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, owned, &ev) < 0) {
		g_free(tr);
		return -errno;
	}
	tr->fd = steal_fd(&owned);
	tr->tenant = tenant;
	struct trigger_record rec = { .fh = fh, .key = key, .ino = ino };
	g_strlcpy(rec.text, text, sizeof(rec.text));
	tr->record = record_of(t, key, fh);
	if (tr->record) /* kept from the daemon before: the same trigger */
		memcpy(tr->record->text, rec.text, sizeof(rec.text));
	else
		tr->record = record_put(t, &rec);
	g_hash_table_insert(t->by_id, KEY(tr->id), tr);
	count_add(t, tenant, 1);
	*ret = tr;
	return 0;
}

void triggers_remove(struct trigger *tr)
{
	if (!tr)
		return;
	struct triggers *t = tr->owner;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	count_add(t, tr->tenant, -1);
	if (!tr->gone)
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, tr->fd, NULL);
	g_hash_table_remove(t->by_id, KEY(tr->id)); /* frees tr */
	/* Its handle may be being woken: that goes through its session,
	 * which its caller may free next. */
	while (t->waking)
		g_cond_wait(&t->woken, &t->lock);
}

void triggers_released(struct triggers *t, uint64_t key, uint64_t fh)
{
	if (!t || !fh)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
	struct trigger_record *r = record_of(t, key, fh);
	if (r)
		__atomic_store_n(&r->fh, 0, __ATOMIC_RELEASE);
}

unsigned triggers_poll(struct triggers *t, struct trigger *tr, struct fuse_pollhandle *ph, uint64_t kh)
{
	struct fuse_pollhandle *old = ph;
	unsigned events;
	{
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&t->lock);
		if (tr->record && kh)
			tr->record->kh = kh;
		events = tr->gone ? TRIGGERS_NONE_EVENTS : TRIGGERS_FILE_EVENTS | (tr->fired ? POLLPRI : 0);
		tr->fired = FALSE;
		if (!tr->gone) {
			old = tr->ph;
			tr->ph = ph;
		}
	}
	if (old)
		fuse_pollhandle_destroy(old);
	return events;
}
