/* A memo of per-process texts that are costly to make (smaps_rollup), kept
 * fresh by a refresher: the policy, with the clock, the reader and the
 * signals injected so tests can drive it.
 *
 * - a fresh entry is served from memory;
 * - a stale one is served and queued for refresh (stale-while-revalidate);
 * - a missing one is walked once, concurrent readers waiting for that walk
 *   (single flight);
 * - the refresher (memo_refresh_step, run by a daemon thread) re-walks
 *   entries that readers still read (within four max ages), most overdue first, within a CPU
 *   budget, skipping the walk while the process's cheap signals are
 *   unchanged but never beyond the idle maximum age; it drops entries of
 *   dead processes and entries nobody reads; the table has a size bound,
 *   and each pid namespace a share of it;
 * - walks run on walker threads: a reader waits 2 s for one at most,
 *   then gets EAGAIN, and a walk that slow is waited for no more (a
 *   process can hold its memory map, and so the walk, for as long as it
 *   likes); a pid namespace with 8 such walks starts no new one until one
 *   ends, and the refresher passes its entries by (memo-internal.h);
 * - a text is of one program: a walk during which the process's image
 *   moved (an exec) is made again, and in an entry's first second every
 *   read checks the image, so that a process walked before its exec (a
 *   vfork child, in its parent's memory) is walked again once it has. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* One process: a pid is only a process together with its start time, and
 * two processes can get one pid within one clock tick: the pidfd's inode
 * (unique per process since boot where pidfds live in pidfs) tells them
 * apart. */
struct memo_key {
	uint64_t ns; /* the pid namespace the pid is a number in */
	pid_t pid;
	uint64_t start_time;
	uint64_t pidfd_ino; /* 0 where pidfds have no inode of their own */
};

/* Where a program is mapped (its code and stack): only an exec moves it. */
struct memo_image {
	uint64_t start_code, end_code, start_stack;
};

/* What is cheap to read and moves when the memory does. */
struct memo_signals {
	uint64_t minflt, majflt, rss, vsize;
	struct memo_image image;
};

struct memo_ops {
	/* The costly text. 0, -ENOENT if the process is gone, or -errno. */
	int (*walk)(void *data, const struct memo_key *key, GBytes **ret_text);
	/* The cheap signals. 0, -ENOENT if the process is gone, or -errno. */
	int (*probe)(void *data, const struct memo_key *key, struct memo_signals *ret);
	gint64 (*now)(void *data);            /* monotonic µs */
	gint64 (*thread_cpu)(void *data);     /* this thread's CPU time, µs */
	void (*wake_refresher)(void *data);   /* a stale entry wants a refresh */
	void *data;
};

struct memo_config {
	gint64 max_age_us;      /* entries read are kept at most this old */
	gint64 max_age_idle_us; /* ... this old when their signals do not move */
	gint64 forget_after_us; /* entries nobody read for this long are dropped */
	unsigned max_entries;
	/* No pid namespace but unshared_ns holds more than this (0: no
	 * bound): past it, a new entry of it pushes out its own least
	 * recently read one, so that one container cannot push the others'
	 * entries out. */
	unsigned max_entries_per_ns;
	uint64_t unshared_ns;
	double budget;          /* refresher CPU time per wall time, e.g. 0.05 */
};

struct memo_stats {
	uint64_t hits, misses, stale_serves, walks, walks_skipped, evictions,
		 budget_overruns, entries, walk_cpu_us, exec_rewalks;
	uint64_t slow_walks; /* reads answered EAGAIN: a walk outlasted WALK_WAIT_US (memo.c) */
};

struct memo;

struct memo *memo_new(const struct memo_config *cfg, const struct memo_ops *ops);
void memo_free(struct memo *m);

/* The text for key. 0, the walk's -errno, or -EAGAIN: its walk outlasted the
 * wait (above). */
int memo_get(struct memo *m, const struct memo_key *key, GBytes **ret_text);

/* One step of refreshing. TRUE if it did something (walked, verified or
 * dropped an entry); otherwise *ret_wait_us says how long nothing is due. */
gboolean memo_refresh_step(struct memo *m, gint64 *ret_wait_us);

void memo_get_stats(struct memo *m, struct memo_stats *ret);
