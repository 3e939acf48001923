/* What a caller thread was found to be (its CPU map, its memory cgroup),
 * kept a second by each FUSE worker thread, so that the LOOKUP and the OPEN
 * of one read do not both read /proc/<tid>/cgroup. No lock on the hot
 * path: each worker thread has its own table. */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* How long a caller's finding is reused: a process moved to another
 * cgroup sees its new view within this time. */
#define TIDCACHE_LIFETIME_US G_USEC_PER_SEC

/* One kind of finding, of one owner (a CPU view, the memory groups). */
struct tidcache {
	guint64 id;          /* tells this owner's entries from another's */
	gint generation;     /* bumped (atomically) by tidcache_forget */
	gpointer (*ref)(gpointer obj);
	GDestroyNotify unref;
};

void tidcache_init(struct tidcache *c, gpointer (*ref)(gpointer obj), GDestroyNotify unref);

/* A reference of what this thread found tid to be within the lifetime,
 * or NULL. */
gpointer tidcache_get(struct tidcache *c, pid_t tid);
/* Keep obj (a reference of it) as what tid is, for this thread. */
void tidcache_put(struct tidcache *c, pid_t tid, gpointer obj);
/* A caller moved: no thread answers from what it kept before. */
void tidcache_forget(struct tidcache *c);
