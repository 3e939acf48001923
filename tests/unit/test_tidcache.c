/* The per-thread findings: answered within their lifetime, and let go of
 * once expired, so that a node's churn of short-lived callers does not
 * keep a finding for every tid it ever had. */
#include "tidcache.h"

#include <criterion/criterion.h>
#include <glib.h>

static int live; /* findings referenced (one count per reference) */

static gpointer ref(gpointer obj)
{
	live++;
	return obj;
}

static void unref(gpointer obj)
{
	(void)obj;
	live--;
}

static struct tidcache cache;

static void setup(void)
{
	live = 0;
	tidcache_init(&cache, ref, unref);
}

static void teardown(void)
{
	tidcache_clear(&cache);
	cr_assert_eq(live, 0, "%d references left after the cache was cleared", live);
}

TestSuite(tidcache, .init = setup, .fini = teardown);

static int finding = 1;

static void put_range(pid_t first, int n)
{
	for (pid_t tid = first; tid < first + n; tid++)
		tidcache_put(&cache, tid, &finding);
}

Test(tidcache, answers_within_its_lifetime)
{
	put_range(1000, 400);
	cr_assert_eq(tidcache_size(&cache), 400);
	for (pid_t tid = 1000; tid < 1400; tid++) {
		gpointer got = tidcache_get(&cache, tid);
		cr_assert_eq(got, &finding, "tid %d not answered", tid);
		unref(got);
	}
	cr_assert_null(tidcache_get(&cache, 999));
}

Test(tidcache, lets_go_of_expired_findings)
{
	cache.lifetime_us = 2000;
	put_range(1000, 400);
	cr_assert_eq(live, 400);
	g_usleep(3 * cache.lifetime_us);
	/* One new thread in each shard: each sweeps what expired. */
	put_range(5000, TIDCACHE_SHARDS);
	cr_assert_eq(tidcache_size(&cache), TIDCACHE_SHARDS, "%u findings kept, %d of them expired",
		     tidcache_size(&cache), (int)tidcache_size(&cache) - TIDCACHE_SHARDS);
	cr_assert_eq(live, TIDCACHE_SHARDS, "%d references held", live);
	cr_assert_null(tidcache_get(&cache, 1000));
}

Test(tidcache, lets_go_of_what_a_move_made_stale)
{
	cache.lifetime_us = G_USEC_PER_SEC;
	put_range(1000, 400); /* not expired for a second */
	tidcache_forget(&cache);
	cache.lifetime_us = 2000; /* each shard's sweep due in 2 ms */
	g_usleep(3 * cache.lifetime_us);
	put_range(5000, TIDCACHE_SHARDS);
	cr_assert_eq(tidcache_size(&cache), TIDCACHE_SHARDS, "%u findings kept", tidcache_size(&cache));
	cr_assert_eq(live, TIDCACHE_SHARDS, "%d references held", live);
}
