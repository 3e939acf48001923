#include "tidcache.h"

/* Past this many entries a shard starts over. */
#define SHARD_MAX 1024
/* A shard smaller than this is not swept: it holds little. */
#define SWEEP_MIN 16

struct entry {
	gint generation; /* the owner's, when it was put */
	gint64 expires;
	gpointer obj;
};

static struct tidcache_shard *shard_of(struct tidcache *c, pid_t tid)
{
	return &c->shards[(guint)tid % TIDCACHE_SHARDS];
}

void tidcache_init(struct tidcache *c, gpointer (*ref)(gpointer obj), GDestroyNotify unref)
{
	c->generation = 0;
	c->lifetime_us = TIDCACHE_LIFETIME_US;
	c->ref = ref;
	c->unref = unref;
	for (size_t i = 0; i < TIDCACHE_SHARDS; i++) {
		g_mutex_init(&c->shards[i].lock);
		c->shards[i].entries = g_hash_table_new_full(NULL, NULL, NULL, g_free);
		c->shards[i].swept_at = g_get_monotonic_time();
	}
}

static void unref_all(struct tidcache *c, GHashTable *entries)
{
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, entries);
	while (g_hash_table_iter_next(&it, NULL, &value))
		c->unref(((struct entry *)value)->obj);
}

void tidcache_clear(struct tidcache *c)
{
	for (size_t i = 0; i < TIDCACHE_SHARDS; i++) {
		unref_all(c, c->shards[i].entries);
		g_hash_table_unref(c->shards[i].entries);
		g_mutex_clear(&c->shards[i].lock);
	}
}

gpointer tidcache_get(struct tidcache *c, pid_t tid)
{
	struct tidcache_shard *s = shard_of(c, tid);
	gpointer obj = NULL;
	g_mutex_lock(&s->lock);
	const struct entry *e = g_hash_table_lookup(s->entries, GINT_TO_POINTER(tid));
	if (e && e->generation == g_atomic_int_get(&c->generation) && e->expires > g_get_monotonic_time())
		obj = c->ref(e->obj);
	g_mutex_unlock(&s->lock);
	return obj;
}

struct sweep {
	gint generation;
	gint64 now;
	GPtrArray *objs; /* of the entries taken out, released out of the lock */
};

static gboolean take_expired(gpointer key, gpointer value, gpointer data)
{
	const struct entry *e = value;
	struct sweep *sw = data;
	(void)key;
	if (e->generation == sw->generation && e->expires > sw->now)
		return FALSE;
	g_ptr_array_add(sw->objs, e->obj);
	return TRUE;
}

/* Once a lifetime, the shard lets go of what it can no longer answer (a
 * thread seen once, a process gone, what a move made stale): it then holds
 * the threads of the last two lifetimes, not every tid since it last
 * started over. Under the shard's lock. */
static void sweep_locked(struct tidcache *c, struct tidcache_shard *s, gint64 now, struct sweep *sw)
{
	if (now - s->swept_at < c->lifetime_us || g_hash_table_size(s->entries) < SWEEP_MIN)
		return;
	s->swept_at = now;
	*sw = (struct sweep){ g_atomic_int_get(&c->generation), now, g_ptr_array_new_with_free_func(c->unref) };
	g_hash_table_foreach_remove(s->entries, take_expired, sw);
}

void tidcache_put(struct tidcache *c, pid_t tid, gpointer obj)
{
	struct tidcache_shard *s = shard_of(c, tid);
	gint64 now = g_get_monotonic_time();
	struct entry *e = g_new(struct entry, 1);
	*e = (struct entry){ g_atomic_int_get(&c->generation), now + c->lifetime_us, c->ref(obj) };
	gpointer old_obj = NULL;
	GHashTable *dropped = NULL;
	struct sweep swept = { 0 };
	g_mutex_lock(&s->lock);
	sweep_locked(c, s, now, &swept);
	struct entry *old = g_hash_table_lookup(s->entries, GINT_TO_POINTER(tid));
	if (old) {
		old_obj = old->obj;
	} else if (g_hash_table_size(s->entries) >= SHARD_MAX) {
		dropped = s->entries; /* released below, out of the lock */
		s->entries = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	}
	g_hash_table_insert(s->entries, GINT_TO_POINTER(tid), e);
	g_mutex_unlock(&s->lock);
	if (old_obj)
		c->unref(old_obj);
	if (swept.objs)
		g_ptr_array_unref(swept.objs);
	if (dropped) {
		unref_all(c, dropped);
		g_hash_table_unref(dropped);
	}
}

guint tidcache_size(struct tidcache *c)
{
	guint n = 0;
	for (size_t i = 0; i < TIDCACHE_SHARDS; i++) {
		g_mutex_lock(&c->shards[i].lock);
		n += g_hash_table_size(c->shards[i].entries);
		g_mutex_unlock(&c->shards[i].lock);
	}
	return n;
}

void tidcache_forget(struct tidcache *c)
{
	g_atomic_int_inc(&c->generation);
}
