/* The memo's walks on walker threads, and its refresher (memo.h). */
#include "memo-internal.h"

#include <errno.h>
#include <string.h>

gint memo_walkers_base(void)
{
	return CLAMP((gint)g_get_num_processors() * 2, 4, 64);
}

/* Slow walks of ns. With ns_lock. */
static guint slow_of(struct memo *m, uint64_t ns)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(m->slow_per_ns, &ns));
}

gboolean memo_ns_walks_stuck(struct memo *m, uint64_t ns)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&m->ns_lock);
	return slow_of(m, ns) >= SLOW_PER_NS;
}

void memo_slow_add(struct memo *m, struct entry *e, int delta)
{
	e->slow = delta > 0;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&m->ns_lock);
	guint n = slow_of(m, e->key.ns) + (guint)delta;
	if (n == 0)
		g_hash_table_remove(m->slow_per_ns, &e->key.ns);
	else
		g_hash_table_insert(m->slow_per_ns, g_memdup2(&e->key.ns, sizeof(e->key.ns)), GUINT_TO_POINTER(n));
	m->slow += (guint)delta;
	g_thread_pool_set_max_threads(m->walkers, memo_walkers_base() + (gint)m->slow, NULL);
}

/* The refresher's next job, found under the shard locks one at a time. */
struct pick {
	struct memo_key key;
	gboolean found;
	gint64 rank;     /* the larger, the sooner it is refreshed */
	gint64 age;      /* how long since it was last known current */
	gint64 next_due; /* when the next entry becomes due, if none is */
	gboolean dropped;
};

static void scan_shard(struct memo *m, struct shard *s, gint64 now, struct pick *p)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, s->entries);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		struct entry *e = value;
		if (e->walking || !e->text)
			continue;
		if (now - e->read_at > m->cfg.forget_after_us) {
			memo_account(m, &e->key, -1);
			g_hash_table_iter_remove(&it);
			memo_count(&m->evictions, 1);
			p->dropped = TRUE;
			continue;
		}
		if ((!e->wanted && now - e->read_at > STILL_READ(m->cfg.max_age_us)) || memo_ns_walks_stuck(m, e->key.ns))
			continue;
		gint64 due = e->checked_at + REFRESH_AT(m->cfg.max_age_us);
		gint64 age = now - e->checked_at;
		if (due <= now || e->wanted) {
			/* most overdue first; wanted ones count as the oldest */
			gint64 rank = e->wanted ? G_MAXINT64 / 2 + age : age;
			if (!p->found || rank > p->rank) {
				p->found = TRUE;
				p->rank = rank;
				p->age = age;
				p->key = e->key;
			}
		} else if (due < p->next_due) {
			p->next_due = due;
		}
	}
}

static void refill_budget(struct memo *m, gint64 now)
{
	m->tokens_us = MIN(m->tokens_us + (double)(now - m->refilled_at) * m->cfg.budget, BUDGET_BURST_US);
	m->refilled_at = now;
}

/* Take the picked entry for refreshing; NULL if it changed meanwhile. A
 * claimed entry (walking) is freed by nobody but its claimer's job. */
static struct entry *claim(struct shard *s, const struct memo_key *key)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	struct entry *e = g_hash_table_lookup(s->entries, key);
	if (!e || e->walking)
		return NULL;
	e->walking = TRUE;
	return e;
}

/* Store the result of refreshing the claimed entry e. Under s->lock. */
static void memo_refresh_done(struct memo *m, struct shard *s, struct entry *e, int r, gboolean skip,
			 GBytes *text, const struct memo_signals *sig)
{
	gint64 done = m->ops.now(m->ops.data);
	e->walking = FALSE;
	e->wanted = FALSE;
	if (e->slow)
		memo_slow_add(m, e, -1);
	if (r < 0) {
		/* gone (or unreadable): readers walk afresh and get the error */
		memo_remove_locked(m, s, e);
		memo_count(&m->evictions, 1);
	} else if (skip) {
		e->checked_at = done;
		memo_count(&m->walks_skipped, 1);
	} else {
		g_bytes_unref(e->text);
		e->text = text;
		e->signals = *sig;
		e->walked_at = e->checked_at = done;
	}
}

/* A walk on a walker thread: the first of a new entry, or a refresh of a
 * claimed one (walking: freed by nobody meanwhile). Shared by its thread
 * and the one that runs it (refs); done, r and text with the shard lock. */
struct job {
	gint refs;
	struct memo *m;
	struct shard *s;
	struct entry *e;
	struct memo_key key;
	gboolean refresh;
	struct memo_signals then; /* a refresh's: the entry's as it was */
	gint64 walked_at, now;
	gboolean done;
	int r;
	GBytes *text; /* a first walk's, for its reader */
};

static void job_unref(struct job *j)
{
	if (!g_atomic_int_dec_and_test(&j->refs))
		return;
	if (j->text)
		g_bytes_unref(j->text);
	g_free(j);
}

void memo_job_run(gpointer data, gpointer memo)
{
	struct job *j = data;
	struct memo *m = memo;
	/* Handed over under ns_lock: the pool's own queue is glib's inside,
	 * which ThreadSanitizer does not see through. */
	g_mutex_lock(&m->ns_lock);
	g_mutex_unlock(&m->ns_lock);
	struct memo_signals sig;
	GBytes *text = NULL;
	gboolean skip = FALSE;
	int r;
	/* Without the lock: the probe and the walk are the costly part. */
	if (j->refresh) {
		gint64 cpu = m->ops.thread_cpu(m->ops.data);
		r = m->ops.probe(m->ops.data, &j->key, &sig);
		skip = r == 0 && memcmp(&sig, &j->then, sizeof(sig)) == 0 &&
		       j->now - j->walked_at < m->cfg.max_age_idle_us;
		if (r == 0 && !skip)
			r = memo_walk(m, &j->key, &text, &sig, TRUE);
		__atomic_fetch_add(&m->refresh_debt_us, MAX(m->ops.thread_cpu(m->ops.data) - cpu, 0),
				   __ATOMIC_RELAXED);
	} else {
		r = memo_walk(m, &j->key, &text, &sig, FALSE);
	}
	g_mutex_lock(&j->s->lock);
	if (j->refresh) {
		memo_refresh_done(m, j->s, j->e, r, skip, text, &sig);
	} else {
		j->text = r == 0 ? g_bytes_ref(text) : NULL;
		memo_first_walk_done(m, j->s, j->e, r, text, &sig);
	}
	j->done = TRUE;
	j->r = r;
	g_cond_broadcast(&j->s->walked);
	g_mutex_unlock(&j->s->lock);
	job_unref(j);
}

/* Walk e on a walker and wait for it, WALK_WAIT_US at most: its result
 * (and a first walk's text), or -EAGAIN, the walk slow from then on. */
int memo_run_job(struct memo *m, struct shard *s, struct entry *e, gboolean refresh, GBytes **ret_text)
{
	struct job *j = g_new0(struct job, 1);
	g_mutex_lock(&s->lock);
	*j = (struct job){ .refs = 2, .m = m, .s = s, .e = e, .key = e->key, .refresh = refresh,
			   .then = e->signals, .walked_at = e->walked_at, .now = m->ops.now(m->ops.data) };
	g_mutex_unlock(&s->lock);
	g_mutex_lock(&m->ns_lock);
	g_thread_pool_push(m->walkers, j, NULL);
	g_mutex_unlock(&m->ns_lock);
	gint64 deadline = g_get_monotonic_time() + WALK_WAIT_US;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	while (!j->done && g_cond_wait_until(&s->walked, &s->lock, deadline))
		;
	int r = j->done ? j->r : -EAGAIN;
	if (!j->done && !e->slow)
		memo_slow_add(m, e, 1); /* e is still being walked: alive */
	if (r == 0 && ret_text)
		*ret_text = g_bytes_ref(j->text);
	job_unref(j);
	return r;
}

gboolean memo_refresh_step(struct memo *m, gint64 *ret_wait_us)
{
	gint64 now = m->ops.now(m->ops.data);
	struct pick p = { .next_due = G_MAXINT64 };

	for (int i = 0; i < SHARDS; i++)
		scan_shard(m, &m->shards[i], now, &p);
	if (p.dropped)
		return TRUE;
	if (!p.found) {
		*ret_wait_us = p.next_due == G_MAXINT64 ? m->cfg.max_age_us : p.next_due - now;
		return FALSE;
	}
	refill_budget(m, now);
	m->tokens_us -= (double)__atomic_exchange_n(&m->refresh_debt_us, 0, __ATOMIC_RELAXED);
	if (m->tokens_us <= 0) {
		if (p.age > m->cfg.max_age_us)
			memo_count(&m->budget_overruns, 1);
		*ret_wait_us = MAX((gint64)(-m->tokens_us / m->cfg.budget), 1000);
		return FALSE;
	}

	struct shard *s = memo_shard_of(m, &p.key);
	struct entry *e = claim(s, &p.key);
	if (e) /* its walk pays for itself (refresh_debt_us) */
		memo_run_job(m, s, e, TRUE, NULL);
	return TRUE;
}

