/* The memo's parts (memo.c: the table and its readers; memo-walk.c: the
 * walks on walker threads and the refresher): not for its users. */
#pragma once

#include "memo.h"

#define SHARDS 16
/* The refresher re-walks an entry once it is this share of max age old,
 * so that entries being read never get older than max age. */
#define REFRESH_AT(max_age) ((max_age) * 3 / 4)
/* Entries read within this many max ages count as still read: the
 * refresher keeps those fresh and lets the others age until forgotten. */
#define STILL_READ(max_age) ((max_age) * 4)
/* The refresher may spend this much CPU time in one burst. */
#define BUDGET_BURST_US (200 * 1000)
/* Walks of one text while the process's image keeps moving (an exec
 * under way); the last one's text is kept, with the image before it. */
#define WALK_TRIES 3
/* An entry this young has the process's image checked on every read. */
#define VERIFY_US G_USEC_PER_SEC
/* Walks run on threads of their own (a process can hold its memory map:
 * a fault it takes on a FUSE file whose server does not answer, from a
 * read of its own /proc/<pid>/mem, while another of its threads waits to
 * map). A reader waits this long (real time) for a walk, then gets
 * EAGAIN; the walk is slow from then on: later readers of its key get
 * EAGAIN at once, the refresher waits for it no more, and no new walk of
 * its pid namespace starts while SLOW_PER_NS of its walks are slow, so
 * that one tenant's stuck processes hold neither the FUSE workers nor
 * the refresher, nor more threads than that. */
#define WALK_WAIT_US (2 * G_USEC_PER_SEC)
#define SLOW_PER_NS 8

/* One process's text. Owned by its shard's table: freed (entry_free) by
 * whoever removes it, under the shard lock; an entry being walked
 * (walking) is removed by nobody but the thread walking it. */
struct entry {
	struct memo_key key;
	GBytes *text;          /* NULL until the first walk is done */
	gboolean walking;      /* a walk of this key is under way */
	gboolean slow;         /* ... and outlasted WALK_WAIT_US */
	gboolean wanted;       /* read while stale: refresh first */
	struct memo_signals signals; /* as of the last walk */
	gint64 made_at;        /* its first walk's end */
	gint64 walked_at;      /* last walk */
	gint64 checked_at;     /* last walk, or last probe that found no change */
	gint64 read_at;        /* last memo_get */
};

struct shard {
	GMutex lock;  /* guards entries and every field of every entry in it;
	               * never held during a walk or a probe, nor two at once */
	GCond walked; /* a first walk finished (single flight); with lock */
	GHashTable *entries; /* struct memo_key* -> struct entry* */
};

/* Shared by the readers (FUSE worker threads) and the refresher thread;
 * freed by memo_free, by its owner, once both have stopped. */
struct memo {
	struct memo_config cfg;
	struct memo_ops ops;
	struct shard shards[SHARDS];
	gint count; /* entries, all shards (atomic) */
	GMutex ns_lock;      /* guards per_ns; taken under a shard lock, never the reverse */
	GHashTable *per_ns;  /* pid namespace -> its entries (GUINT_TO_POINTER), those with any */
	GHashTable *slow_per_ns; /* pid namespace -> its slow walks, those with any; with ns_lock */
	guint slow;              /* slow walks in all; with ns_lock */
	GThreadPool *walkers;    /* runs struct job; grows by one per slow walk */
	gint64 refresh_debt_us;  /* CPU time of the refresher's walks not yet paid (atomic) */
	/* counters, atomic */
	guint64 hits, misses, stale_serves, walks, walks_skipped, evictions, budget_overruns, walk_cpu_us,
		exec_rewalks, slow_walks;
	/* touched by the refresher thread only */
	double tokens_us; /* CPU time the refresher may still spend */
	gint64 refilled_at;
};

void memo_count(guint64 *counter, guint64 n);
/* One entry of key's namespace more (delta 1) or fewer (-1). */
void memo_account(struct memo *m, const struct memo_key *key, int delta);
/* Under s->lock. */
void memo_remove_locked(struct memo *m, struct shard *s, struct entry *e);
struct shard *memo_shard_of(struct memo *m, const struct memo_key *k);
/* The walk, timed on this thread's CPU clock, with the signals it saw
 * before it: probed here unless probed is set (*ret_signals holds them
 * then). Made again while the image moves across it (WALK_TRIES). */
int memo_walk(struct memo *m, const struct memo_key *key, GBytes **ret_text, struct memo_signals *ret_signals,
	      gboolean probed);
/* Store the result of the first walk of e (walking, so nobody else frees
 * it meanwhile) and wake the readers waiting for it. Under s->lock. */
void memo_first_walk_done(struct memo *m, struct shard *s, struct entry *e, int r, GBytes *text,
			  const struct memo_signals *sig);

/* memo-walk.c. Walks at once, but for the slow ones. */
gint memo_walkers_base(void);
/* The walkers' function: a struct job of memo. */
void memo_job_run(gpointer data, gpointer memo);
/* e's walk is slow from now on (delta 1), or no more (-1): the walkers
 * get a thread more meanwhile. Under e's shard lock. */
void memo_slow_add(struct memo *m, struct entry *e, int delta);
/* Whether ns has SLOW_PER_NS slow walks. */
gboolean memo_ns_walks_stuck(struct memo *m, uint64_t ns);
/* Walk e on a walker (a first walk, or a refresh of a claimed entry) and
 * wait for it, WALK_WAIT_US at most: its result (and a first walk's
 * text), or -EAGAIN, the walk slow from then on. */
int memo_run_job(struct memo *m, struct shard *s, struct entry *e, gboolean refresh, GBytes **ret_text);
