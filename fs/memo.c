#include "memo-internal.h"

#include <errno.h>
#include <string.h>

void memo_count(guint64 *counter, guint64 n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static guint key_hash(gconstpointer p)
{
	const struct memo_key *k = p;
	return (guint)(k->ns * 0x9e3779b97f4a7c15ULL ^ (uint64_t)k->pid * 0xff51afd7ed558ccdULL ^ k->start_time ^
		       k->pidfd_ino * 0xc4ceb9fe1a85ec53ULL);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct memo_key *x = a, *y = b;
	return x->ns == y->ns && x->pid == y->pid && x->start_time == y->start_time &&
	       x->pidfd_ino == y->pidfd_ino;
}

static void entry_free(gpointer p)
{
	struct entry *e = p;
	if (e->text)
		g_bytes_unref(e->text);
	g_free(e);
}

/* One entry of key's namespace more (delta 1) or fewer (-1). */
void memo_account(struct memo *m, const struct memo_key *key, int delta)
{
	g_atomic_int_add(&m->count, delta);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&m->ns_lock);
	guint n = GPOINTER_TO_UINT(g_hash_table_lookup(m->per_ns, &key->ns)) + (guint)delta;
	if (n == 0)
		g_hash_table_remove(m->per_ns, &key->ns);
	else
		g_hash_table_insert(m->per_ns, g_memdup2(&key->ns, sizeof(key->ns)), GUINT_TO_POINTER(n));
}

/* Whether a new entry of key's namespace would take it past its share. */
static gboolean over_share(struct memo *m, const struct memo_key *key)
{
	if (!m->cfg.max_entries_per_ns || key->ns == m->cfg.unshared_ns)
		return FALSE;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&m->ns_lock);
	return GPOINTER_TO_UINT(g_hash_table_lookup(m->per_ns, &key->ns)) >= m->cfg.max_entries_per_ns;
}

struct shard *memo_shard_of(struct memo *m, const struct memo_key *k)
{
	return &m->shards[key_hash(k) % SHARDS];
}

struct memo *memo_new(const struct memo_config *cfg, const struct memo_ops *ops)
{
	struct memo *m = g_new0(struct memo, 1);
	m->cfg = *cfg;
	m->ops = *ops;
	for (int i = 0; i < SHARDS; i++) {
		g_mutex_init(&m->shards[i].lock);
		g_cond_init(&m->shards[i].walked);
		m->shards[i].entries = g_hash_table_new_full(key_hash, key_equal, NULL, entry_free);
	}
	g_mutex_init(&m->ns_lock);
	m->per_ns = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	m->slow_per_ns = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	m->walkers = g_thread_pool_new(memo_job_run, m, memo_walkers_base(), FALSE, NULL);
	m->refilled_at = ops->now(ops->data);
	m->tokens_us = BUDGET_BURST_US;
	return m;
}

void memo_free(struct memo *m)
{
	if (!m)
		return;
	g_mutex_lock(&m->ns_lock);
	guint stuck = m->slow;
	g_mutex_unlock(&m->ns_lock);
	if (stuck) /* their threads still use it: left to the process's end */
		return;
	g_thread_pool_free(m->walkers, FALSE, TRUE);
	for (int i = 0; i < SHARDS; i++) {
		g_hash_table_unref(m->shards[i].entries);
		g_mutex_clear(&m->shards[i].lock);
		g_cond_clear(&m->shards[i].walked);
	}
	g_hash_table_unref(m->per_ns);
	g_hash_table_unref(m->slow_per_ns);
	g_mutex_clear(&m->ns_lock);
	g_free(m);
}

void memo_remove_locked(struct memo *m, struct shard *s, struct entry *e)
{
	memo_account(m, &e->key, -1);
	g_hash_table_remove(s->entries, &e->key);
}

/* Drop the least recently read entry of all, or of namespace *ns if set:
 * shards are locked one at a time, never two at once. */
static gboolean evict_oldest(struct memo *m, const uint64_t *ns)
{
	struct memo_key oldest;
	gint64 oldest_read = G_MAXINT64;
	int where = -1;

	for (int i = 0; i < SHARDS; i++) {
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&m->shards[i].lock);
		GHashTableIter it;
		gpointer value;
		g_hash_table_iter_init(&it, m->shards[i].entries);
		while (g_hash_table_iter_next(&it, NULL, &value)) {
			struct entry *e = value;
			if (!e->walking && e->read_at < oldest_read && (!ns || e->key.ns == *ns)) {
				oldest_read = e->read_at;
				oldest = e->key;
				where = i;
			}
		}
	}
	if (where < 0)
		return FALSE;
	struct shard *s = &m->shards[where];
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	struct entry *e = g_hash_table_lookup(s->entries, &oldest);
	if (!e || e->walking)
		return TRUE; /* someone else changed it: look again */
	memo_remove_locked(m, s, e);
	memo_count(&m->evictions, 1);
	return TRUE;
}

static gboolean same_image(const struct memo_image *a, const struct memo_image *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* The walk, timed on this thread's CPU clock, with the signals it saw
 * before it: probed here unless probed is set (*ret_signals holds them
 * then). Made again while the image moves across it (WALK_TRIES). */
int memo_walk(struct memo *m, const struct memo_key *key, GBytes **ret_text,
		struct memo_signals *ret_signals, gboolean probed)
{
	gint64 cpu = m->ops.thread_cpu(m->ops.data);
	int r = probed ? 0 : m->ops.probe(m->ops.data, key, ret_signals);
	for (int tries = 1; r == 0; tries++) {
		GBytes *text = NULL;
		struct memo_signals after;
		r = m->ops.walk(m->ops.data, key, &text);
		if (r == 0)
			r = m->ops.probe(m->ops.data, key, &after);
		if (r == 0)
			memo_count(&m->walks, 1);
		if (r == 0 && (same_image(&after.image, &ret_signals->image) || tries == WALK_TRIES)) {
			*ret_text = text;
			break;
		}
		if (text)
			g_bytes_unref(text);
		if (r == 0) {
			memo_count(&m->exec_rewalks, 1);
			*ret_signals = after;
		}
	}
	gint64 spent = m->ops.thread_cpu(m->ops.data) - cpu;
	memo_count(&m->walk_cpu_us, (guint64)MAX(spent, 0));
	return r;
}

/* What memo_get does once it has looked at the table. */
enum next_step {
	STEP_SERVED, /* *ret_text is set */
	STEP_VERIFY, /* *ret_text is set, of a young entry: check *ret_image first */
	STEP_EVICT,  /* the table is full: make room, then look again */
	STEP_EVICT_OWN, /* the key's namespace has its share: make room in it */
	STEP_WALK,   /* *ret_mine is a new entry this reader walks */
	STEP_BUSY,   /* its walk is slow, or its namespace's are: EAGAIN */
};

/* Look key up, waiting for another reader's first walk of it; under the
 * shard lock, released only while waiting. full: FALSE once nothing could
 * be evicted. */
static enum next_step look_up(struct memo *m, struct shard *s, const struct memo_key *key,
			      gboolean full, GBytes **ret_text, struct memo_image *ret_image, struct entry **ret_mine)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	struct entry *e;
	gint64 deadline = g_get_monotonic_time() + WALK_WAIT_US;
	/* Someone else's first walk: wait for it, then look again (if it
	 * failed, the entry is gone and this reader walks). */
	while ((e = g_hash_table_lookup(s->entries, key)) && !e->text)
		if (e->slow || !g_cond_wait_until(&s->walked, &s->lock, deadline))
			return STEP_BUSY;
	if (!e && memo_ns_walks_stuck(m, key->ns))
		return STEP_BUSY;
	gint64 now = m->ops.now(m->ops.data);
	if (!e && full && over_share(m, key))
		return STEP_EVICT_OWN;
	if (!e && full && (unsigned)g_atomic_int_get(&m->count) >= m->cfg.max_entries)
		return STEP_EVICT;
	if (!e) {
		/* First reader: walk, while later ones wait for it. */
		e = g_new0(struct entry, 1);
		e->key = *key;
		e->walking = TRUE;
		e->read_at = now;
		g_hash_table_insert(s->entries, &e->key, e);
		memo_account(m, key, 1);
		memo_count(&m->misses, 1);
		*ret_mine = e;
		return STEP_WALK;
	}
	e->read_at = now;
	if (now - e->checked_at <= m->cfg.max_age_us) {
		memo_count(&m->hits, 1);
	} else {
		memo_count(&m->stale_serves, 1);
		if (!e->wanted) {
			e->wanted = TRUE;
			m->ops.wake_refresher(m->ops.data);
		}
	}
	*ret_text = g_bytes_ref(e->text);
	if (now - e->made_at >= VERIFY_US)
		return STEP_SERVED;
	*ret_image = e->signals.image;
	return STEP_VERIFY;
}

/* The process of text (served from key's entry) has another image now:
 * drop the entry, unless it changed meanwhile. */
static void drop_other_image(struct memo *m, struct shard *s, const struct memo_key *key, GBytes *text)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	struct entry *e = g_hash_table_lookup(s->entries, key);
	if (e && !e->walking && e->text == text) {
		memo_remove_locked(m, s, e);
		memo_count(&m->exec_rewalks, 1);
	}
}

/* Store the result of the first walk of e (walking, so nobody else frees
 * it meanwhile) and wake the readers waiting for it. Under s->lock. */
void memo_first_walk_done(struct memo *m, struct shard *s, struct entry *e, int r, GBytes *text,
			    const struct memo_signals *sig)
{
	gint64 done = m->ops.now(m->ops.data);
	e->walking = FALSE;
	if (e->slow)
		memo_slow_add(m, e, -1);
	g_cond_broadcast(&s->walked);
	if (r < 0) {
		memo_remove_locked(m, s, e);
		return;
	}
	e->text = text;
	e->signals = *sig;
	e->made_at = e->walked_at = e->checked_at = done;
}

int memo_get(struct memo *m, const struct memo_key *key, GBytes **ret_text)
{
	struct shard *s = memo_shard_of(m, key);
	gboolean full = TRUE; /* FALSE once nothing could be evicted */

	for (;;) {
		struct entry *mine = NULL;
		GBytes *text = NULL;
		struct memo_image image;
		struct memo_signals sig;
		int r;
		switch (look_up(m, s, key, full, &text, &image, &mine)) {
		case STEP_SERVED:
			*ret_text = text;
			return 0;
		case STEP_VERIFY:
			/* Without the lock, as walks. A process gone meanwhile
			 * keeps its text until the refresher sees it gone. */
			if (m->ops.probe(m->ops.data, key, &sig) < 0 || same_image(&sig.image, &image)) {
				*ret_text = text;
				return 0;
			}
			drop_other_image(m, s, key, text);
			g_bytes_unref(text);
			break;
		case STEP_EVICT:
			full = evict_oldest(m, NULL);
			break;
		case STEP_EVICT_OWN:
			full = evict_oldest(m, &key->ns);
			break;
		case STEP_WALK:
			r = memo_run_job(m, s, mine, FALSE, ret_text);
			if (r == -EAGAIN)
				memo_count(&m->slow_walks, 1);
			return r;
		case STEP_BUSY:
			memo_count(&m->slow_walks, 1);
			return -EAGAIN;
		}
	}
}

void memo_get_stats(struct memo *m, struct memo_stats *ret)
{
	*ret = (struct memo_stats){
		.hits = __atomic_load_n(&m->hits, __ATOMIC_RELAXED),
		.misses = __atomic_load_n(&m->misses, __ATOMIC_RELAXED),
		.stale_serves = __atomic_load_n(&m->stale_serves, __ATOMIC_RELAXED),
		.walks = __atomic_load_n(&m->walks, __ATOMIC_RELAXED),
		.walks_skipped = __atomic_load_n(&m->walks_skipped, __ATOMIC_RELAXED),
		.evictions = __atomic_load_n(&m->evictions, __ATOMIC_RELAXED),
		.budget_overruns = __atomic_load_n(&m->budget_overruns, __ATOMIC_RELAXED),
		.walk_cpu_us = __atomic_load_n(&m->walk_cpu_us, __ATOMIC_RELAXED),
		.exec_rewalks = __atomic_load_n(&m->exec_rewalks, __ATOMIC_RELAXED),
		.slow_walks = __atomic_load_n(&m->slow_walks, __ATOMIC_RELAXED),
		.entries = (guint64)g_atomic_int_get(&m->count),
	};
}
