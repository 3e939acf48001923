/* What a caller thread was found to be (its CPU map, its memory cgroup),
 * kept half a second, so that the LOOKUP and the OPEN of one read, which two
 * FUSE worker threads may take, do not both read /proc/<tid>/cgroup. The
 * table is split in shards by tid, each with its own lock: two callers
 * rarely wait on each other. A shard lets go of what has expired once a
 * lifetime, when a finding is put in it. */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* How long a caller's finding is reused: a process moved to another
 * cgroup sees its new view within this time. */
#define TIDCACHE_LIFETIME_US (G_USEC_PER_SEC / 2)

#define TIDCACHE_SHARDS 16

struct tidcache_shard {
	GMutex lock;
	GHashTable *entries; /* tid -> struct entry (tidcache.c) */
	gint64 swept_at; /* when its expired entries were last let go */
};

/* One kind of finding, of one owner (a CPU view, the memory groups). */
struct tidcache {
	gint generation; /* bumped (atomically) by tidcache_forget */
	gint64 lifetime_us; /* TIDCACHE_LIFETIME_US, unless its owner sets it after init */
	gpointer (*ref)(gpointer obj);
	GDestroyNotify unref;
	struct tidcache_shard shards[TIDCACHE_SHARDS];
};

void tidcache_init(struct tidcache *c, gpointer (*ref)(gpointer obj), GDestroyNotify unref);
/* Drops every finding kept (their references). */
void tidcache_clear(struct tidcache *c);

/* A reference of what tid was found to be within the lifetime, or NULL. */
gpointer tidcache_get(struct tidcache *c, pid_t tid);
/* Keep obj (a reference of it) as what tid is. */
void tidcache_put(struct tidcache *c, pid_t tid, gpointer obj);
/* A caller moved: nothing kept before is answered any more. */
void tidcache_forget(struct tidcache *c);
/* How many findings are kept, answerable or not yet let go. */
guint tidcache_size(struct tidcache *c);
