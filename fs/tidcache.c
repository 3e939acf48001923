#include "tidcache.h"

/* Past this many entries a thread's table starts over. */
#define TIDCACHE_MAX 4096

struct entry {
	gint generation; /* the owner's, when it was put */
	gint64 expires;
	gpointer obj;
	GDestroyNotify unref;
};

static void entry_free(gpointer p)
{
	struct entry *e = p;
	e->unref(e->obj);
	g_free(e);
}

static void table_free(gpointer table)
{
	g_hash_table_unref(table);
}

/* Each worker thread's table, freed when the thread exits; the objects in
 * it hold references of their own. Keys: owner id << 32 | tid. */
static GPrivate tables = G_PRIVATE_INIT(table_free);

static GHashTable *my_table(void)
{
	GHashTable *t = g_private_get(&tables);
	if (!t) {
		t = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, entry_free);
		g_private_set(&tables, t);
	}
	return t;
}

static gint64 key_of(const struct tidcache *c, pid_t tid)
{
	return (gint64)(c->id << 32 | (guint32)tid);
}

void tidcache_init(struct tidcache *c, gpointer (*ref)(gpointer obj), GDestroyNotify unref)
{
	static guint64 next_id = 1; /* atomic: owners are made on any thread */
	*c = (struct tidcache){ __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED), 0, ref, unref };
}

gpointer tidcache_get(struct tidcache *c, pid_t tid)
{
	gint64 key = key_of(c, tid);
	struct entry *e = g_hash_table_lookup(my_table(), &key);
	if (!e || e->generation != g_atomic_int_get(&c->generation) || e->expires <= g_get_monotonic_time())
		return NULL;
	return c->ref(e->obj);
}

void tidcache_put(struct tidcache *c, pid_t tid, gpointer obj)
{
	GHashTable *t = my_table();
	if (g_hash_table_size(t) >= TIDCACHE_MAX)
		g_hash_table_remove_all(t);
	struct entry *e = g_new(struct entry, 1);
	*e = (struct entry){ g_atomic_int_get(&c->generation), g_get_monotonic_time() + TIDCACHE_LIFETIME_US,
			     c->ref(obj), c->unref };
	gint64 key = key_of(c, tid);
	g_hash_table_replace(t, g_memdup2(&key, sizeof(key)), e);
}

void tidcache_forget(struct tidcache *c)
{
	g_atomic_int_inc(&c->generation);
}
