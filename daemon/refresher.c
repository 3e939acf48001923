/* The background thread that keeps the smaps_rollup memo fresh and
 * samples the cgroups' load averages. */
#include "daemon.h"

/* Shared by its thread, the readers that wake it (refresher_wake) and its
 * owner (daemon/lifecycle), which stops the thread (refresher_stop) when
 * the daemon stops, and frees it (refresher_free) only once no reader can
 * wake it any more: never while a session may still be served. */
struct refresher {
	struct smaps *smaps; /* borrowed: outlives the thread */
	struct cputimes *cputimes; /* borrowed, likewise: its loadavg sampler */
	GMutex lock; /* guards stop and woken */
	GCond cond;  /* stop or woken was set; with lock */
	gboolean stop;
	gboolean woken; /* a reader found a stale entry */
	GThread *thread;
};

void refresher_wake(void *data)
{
	struct refresher *r = data;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&r->lock);
	r->woken = TRUE;
	g_cond_signal(&r->cond);
}

static gboolean stopped(struct refresher *r)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&r->lock);
	return r->stop;
}

static gpointer refresher_thread(gpointer data)
{
	struct refresher *r = data;

	while (!stopped(r)) {
		gint64 wait_us, sample_wait_us;
		cputimes_sample_due(r->cputimes, &sample_wait_us);
		if (smaps_refresh_step(r->smaps, &wait_us))
			continue;
		wait_us = MIN(wait_us, sample_wait_us);
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&r->lock);
		gint64 until = g_get_monotonic_time() + wait_us;
		while (!r->stop && !r->woken)
			if (!g_cond_wait_until(&r->cond, &r->lock, until))
				break;
		r->woken = FALSE;
	}
	return NULL;
}

struct refresher *refresher_new(void)
{
	struct refresher *r = g_new0(struct refresher, 1);
	g_mutex_init(&r->lock);
	g_cond_init(&r->cond);
	return r;
}

void refresher_start(struct refresher *r, struct smaps *smaps, struct cputimes *cputimes)
{
	r->smaps = smaps;
	r->cputimes = cputimes;
	r->thread = g_thread_new("refresher", refresher_thread, r);
}

void refresher_stop(struct refresher *r)
{
	if (!r || !r->thread)
		return;
	g_mutex_lock(&r->lock);
	r->stop = TRUE;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
	g_thread_join(g_steal_pointer(&r->thread));
}

void refresher_free(struct refresher *r)
{
	if (!r)
		return;
	refresher_stop(r);
	g_mutex_clear(&r->lock);
	g_cond_clear(&r->cond);
	g_free(r);
}
