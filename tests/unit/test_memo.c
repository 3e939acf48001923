/* The memo's policy, driven by an injected clock, walker and signals. */
#include "memo.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SEC G_USEC_PER_SEC

static struct fake {
	GMutex lock;          /* guards the fields below */
	gint64 now;
	gint64 cpu;           /* the fake CPU clock every thread reads */
	gint64 walk_cost_us;  /* CPU time a walk takes */
	gint64 walk_sleep_us; /* real time a walk takes (single flight) */
	GHashTable *walks;    /* pid -> walks of it */
	GHashTable *gone;     /* pids whose process is gone */
	uint64_t minflt;      /* the signal every process shows */
	uint64_t image;       /* the start of every process's code: an exec moves it */
	int execs_in_walks;   /* walks still to come during which a process execs */
	int wakes;
	pid_t stuck_below;    /* walks of pids under this (from 1000) hang until released */
	GCond released;       /* zeroed by setup: a GCond needs no init */
} fake;

static void setup(void)
{
	memset(&fake, 0, sizeof(fake));
	g_mutex_init(&fake.lock);
	fake.now = 1000 * SEC;
	fake.walks = g_hash_table_new(g_direct_hash, g_direct_equal);
	fake.gone = g_hash_table_new(g_direct_hash, g_direct_equal);
}

static void teardown(void)
{
	g_hash_table_unref(fake.walks);
	g_hash_table_unref(fake.gone);
}

TestSuite(memo, .init = setup, .fini = teardown);

static int fake_walk(void *data, const struct memo_key *key, GBytes **ret)
{
	if (fake.walk_sleep_us)
		g_usleep((gulong)fake.walk_sleep_us);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	while (key->pid >= 1000 && key->pid < fake.stuck_below)
		g_cond_wait(&fake.released, &fake.lock);
	if (g_hash_table_contains(fake.gone, GINT_TO_POINTER(key->pid)))
		return -ENOENT;
	guint n = GPOINTER_TO_UINT(g_hash_table_lookup(fake.walks, GINT_TO_POINTER(key->pid))) + 1;
	if (fake.execs_in_walks > 0) {
		fake.execs_in_walks--;
		fake.image++;
	}
	g_hash_table_insert(fake.walks, GINT_TO_POINTER(key->pid), GUINT_TO_POINTER(n));
	fake.cpu += fake.walk_cost_us;
	char *text = g_strdup_printf("pid %d start %" G_GUINT64_FORMAT " walk %u", (int)key->pid,
				     key->start_time, n);
	*ret = g_bytes_new_take(text, strlen(text));
	return 0;
}

static int fake_probe(void *data, const struct memo_key *key, struct memo_signals *ret)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	if (g_hash_table_contains(fake.gone, GINT_TO_POINTER(key->pid)))
		return -ENOENT;
	*ret = (struct memo_signals){ .minflt = fake.minflt, .rss = 100, .image = { .start_code = fake.image } };
	return 0;
}

static gint64 fake_now(void *data)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	return fake.now;
}

static gint64 fake_cpu(void *data)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	return fake.cpu;
}

static void fake_wake(void *data)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	fake.wakes++;
}

static void advance(gint64 us)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	fake.now += us;
}

static guint walks_of(pid_t pid)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	return GPOINTER_TO_UINT(g_hash_table_lookup(fake.walks, GINT_TO_POINTER(pid)));
}

static const struct memo_ops ops = { fake_walk, fake_probe, fake_now, fake_cpu, fake_wake, NULL };

static struct memo *make(unsigned max_entries, double budget)
{
	const struct memo_config cfg = {
		.max_age_us = 5 * SEC,
		.max_age_idle_us = 60 * SEC,
		.forget_after_us = 120 * SEC,
		.max_entries = max_entries,
		.budget = budget,
	};
	return memo_new(&cfg, &ops);
}

static char *get_in(struct memo *m, uint64_t ns, pid_t pid, uint64_t start, uint64_t pidfd_ino)
{
	struct memo_key k = { ns, pid, start, pidfd_ino };
	g_autoptr(GBytes) b = NULL;
	int r = memo_get(m, &k, &b);
	if (r < 0)
		return g_strdup_printf("error %d", -r);
	return g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b));
}

static char *get_id(struct memo *m, pid_t pid, uint64_t start, uint64_t pidfd_ino)
{
	return get_in(m, 1, pid, start, pidfd_ino);
}

static char *get(struct memo *m, pid_t pid, uint64_t start)
{
	return get_id(m, pid, start, 0);
}

static struct memo_stats stats(struct memo *m)
{
	struct memo_stats s;
	memo_get_stats(m, &s);
	return s;
}

/* Run the refresher until it has nothing to do. */
static int refresh_all(struct memo *m)
{
	int steps = 0;
	gint64 wait;
	while (memo_refresh_step(m, &wait) && steps < 1000)
		steps++;
	return steps;
}

Test(memo, a_fresh_entry_is_served_without_a_walk)
{
	struct memo *m = make(100, 1.0);
	g_autofree char *a = get(m, 10, 1);
	advance(4 * SEC);
	g_autofree char *b = get(m, 10, 1);
	cr_assert_str_eq(a, "pid 10 start 1 walk 1");
	cr_assert_str_eq(b, a);
	cr_assert_eq(walks_of(10), 1);
	cr_assert_eq(stats(m).misses, 1);
	cr_assert_eq(stats(m).hits, 1);
	memo_free(m);
}

Test(memo, a_stale_entry_is_served_and_refreshed_in_the_background)
{
	struct memo *m = make(100, 1.0);
	g_autofree char *a = get(m, 10, 1);
	fake.minflt++; /* the process moved */
	advance(6 * SEC);
	g_autofree char *b = get(m, 10, 1);
	cr_assert_str_eq(b, a, "served at once, not walked on the reader's time");
	cr_assert_eq(stats(m).stale_serves, 1);
	cr_assert_eq(fake.wakes, 1, "the refresher is told");
	cr_assert_eq(walks_of(10), 1);
	cr_assert_gt(refresh_all(m), 0);
	g_autofree char *c = get(m, 10, 1);
	cr_assert_str_eq(c, "pid 10 start 1 walk 2");
	memo_free(m);
}

Test(memo, entries_being_read_are_refreshed_before_they_go_stale)
{
	struct memo *m = make(100, 1.0);
	g_free(get(m, 10, 1));
	gint64 wait = 0;
	cr_assert_not(memo_refresh_step(m, &wait));
	cr_assert(wait > 0 && wait < 5 * SEC, "due before max age: %" G_GINT64_FORMAT, wait);
	fake.minflt++;
	advance(wait);
	g_free(get(m, 10, 1)); /* still read */
	cr_assert(memo_refresh_step(m, &wait));
	g_autofree char *c = get(m, 10, 1);
	cr_assert_str_eq(c, "pid 10 start 1 walk 2");
	cr_assert_eq(stats(m).stale_serves, 0);
	memo_free(m);
}

struct racer {
	struct memo *m;
	char *got;
};

static gpointer race(gpointer p)
{
	struct racer *r = p;
	r->got = get(r->m, 42, 7);
	return NULL;
}

Test(memo, concurrent_readers_of_a_missing_entry_share_one_walk)
{
	struct memo *m = make(100, 1.0);
	struct racer r[16];
	GThread *t[16];
	fake.walk_sleep_us = 50000;
	for (int i = 0; i < 16; i++) {
		r[i] = (struct racer){ m, NULL };
		t[i] = g_thread_new("reader", race, &r[i]);
	}
	for (int i = 0; i < 16; i++) {
		g_thread_join(t[i]);
		cr_assert_str_eq(r[i].got, "pid 42 start 7 walk 1");
		g_free(r[i].got);
	}
	cr_assert_eq(walks_of(42), 1);
	cr_assert_eq(stats(m).misses, 1);
	memo_free(m);
}

Test(memo, a_recycled_pid_never_gets_the_old_text)
{
	struct memo *m = make(100, 1.0);
	g_autofree char *old = get(m, 10, 1);
	g_autofree char *recycled = get(m, 10, 2);
	cr_assert_str_eq(old, "pid 10 start 1 walk 1");
	cr_assert_str_eq(recycled, "pid 10 start 2 walk 2");
	memo_free(m);
}

Test(memo, a_pid_recycled_within_one_tick_is_told_apart_by_its_pidfd)
{
	struct memo *m = make(100, 1.0);
	g_autofree char *old = get_id(m, 10, 1, 501);
	g_autofree char *recycled = get_id(m, 10, 1, 502);
	cr_assert_str_eq(old, "pid 10 start 1 walk 1");
	cr_assert_str_eq(recycled, "pid 10 start 1 walk 2");
	memo_free(m);
}

Test(memo, entries_of_dead_processes_are_dropped)
{
	struct memo *m = make(100, 1.0);
	g_free(get(m, 10, 1));
	g_hash_table_add(fake.gone, GINT_TO_POINTER(10));
	advance(5 * SEC);
	get(m, 10, 1); /* a reader keeps it wanted */
	refresh_all(m);
	cr_assert_eq(stats(m).entries, 0);
	cr_assert_eq(stats(m).evictions, 1);
	g_autofree char *b = get(m, 10, 1);
	cr_assert_str_eq(b, "error 2", "ENOENT once the process is gone");
	memo_free(m);
}

Test(memo, the_table_is_bounded)
{
	struct memo *m = make(3, 1.0);
	for (pid_t pid = 1; pid <= 5; pid++) {
		g_free(get(m, pid, 1));
		advance(1000);
	}
	cr_assert_leq(stats(m).entries, 3);
	cr_assert_geq(stats(m).evictions, 2);
	memo_free(m);
}

/* A container (namespace 2) reading every process it has cannot push the
 * host's (1, unshared) or another container's (3) entries out: past its
 * share it pushes out its own. */
Test(memo, one_namespace_cannot_push_the_others_out)
{
	const struct memo_config cfg = {
		.max_age_us = 5 * SEC, .max_age_idle_us = 60 * SEC, .forget_after_us = 120 * SEC,
		.max_entries = 8, .max_entries_per_ns = 3, .unshared_ns = 1, .budget = 1.0,
	};
	struct memo *m = memo_new(&cfg, &ops);
	for (pid_t pid = 1; pid <= 4; pid++) {
		g_free(get_in(m, 1, pid, 1, 0));
		advance(1000);
	}
	g_free(get_in(m, 3, 100, 1, 0));
	advance(1000);
	for (int round = 0; round < 3; round++) {
		for (pid_t pid = 21; pid <= 40; pid++) {
			g_free(get_in(m, 2, pid, 1, 0));
			advance(1000);
		}
	}
	cr_assert_leq(stats(m).entries, 8);
	/* Still there, never walked again: the unshared namespace's four
	 * (more than a share) and the other container's. */
	for (pid_t pid = 1; pid <= 4; pid++) {
		char want[64];
		g_autofree char *t = get_in(m, 1, pid, 1, 0);
		snprintf(want, sizeof(want), "pid %d start 1 walk 1", (int)pid);
		cr_assert_str_eq(t, want);
	}
	g_autofree char *other = get_in(m, 3, 100, 1, 0);
	cr_assert_str_eq(other, "pid 100 start 1 walk 1");
	memo_free(m);
}

Test(memo, unchanged_signals_skip_the_walk_until_the_idle_maximum)
{
	struct memo *m = make(100, 1.0);
	g_free(get(m, 10, 1));
	for (int i = 0; i < 11; i++) { /* 55 s of polling, nothing moves */
		advance(5 * SEC);
		g_free(get(m, 10, 1));
		refresh_all(m);
	}
	cr_assert_eq(walks_of(10), 1);
	cr_assert_geq(stats(m).walks_skipped, 10);
	advance(6 * SEC); /* past 60 s since the walk: PSS may have moved */
	g_free(get(m, 10, 1));
	refresh_all(m);
	cr_assert_eq(walks_of(10), 2);
	memo_free(m);
}

static void exec_now(void)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	fake.image++;
}

Test(memo, a_walk_during_which_the_process_execs_is_made_again)
{
	struct memo *m = make(100, 1.0);
	fake.execs_in_walks = 1;
	g_autofree char *t = get(m, 10, 1);
	cr_assert_str_eq(t, "pid 10 start 1 walk 2", "the text of the program after the exec");
	cr_assert_eq(stats(m).exec_rewalks, 1);
	cr_assert_eq(stats(m).walks, 2);
	memo_free(m);
}

Test(memo, an_image_that_keeps_moving_is_walked_three_times_then_checked_again_at_the_next_read)
{
	struct memo *m = make(100, 1.0);
	fake.execs_in_walks = 3;
	g_autofree char *a = get(m, 10, 1);
	cr_assert_str_eq(a, "pid 10 start 1 walk 3", "a text is served, however busy the process");
	advance(SEC / 10);
	g_autofree char *b = get(m, 10, 1);
	cr_assert_str_eq(b, "pid 10 start 1 walk 4", "the last walk raced an exec: walked again");
	advance(SEC / 10);
	g_autofree char *c = get(m, 10, 1);
	cr_assert_str_eq(c, b, "the image is still: served");
	memo_free(m);
}

Test(memo, a_process_that_execs_after_its_walk_is_walked_again_when_read_in_its_entrys_first_second)
{
	struct memo *m = make(100, 1.0);
	g_autofree char *a = get(m, 10, 1);
	cr_assert_str_eq(a, "pid 10 start 1 walk 1");
	exec_now(); /* a vfork child walked before its exec */
	advance(SEC / 2);
	g_autofree char *b = get(m, 10, 1);
	cr_assert_str_eq(b, "pid 10 start 1 walk 2");
	cr_assert_eq(stats(m).exec_rewalks, 1);
	/* Past the entry's first second, reads are not checked: the
	 * refresher's probe sees the exec. */
	advance(SEC);
	exec_now();
	g_autofree char *c = get(m, 10, 1);
	cr_assert_str_eq(c, b);
	advance(5 * SEC);
	g_free(get(m, 10, 1));
	refresh_all(m);
	cr_assert_eq(walks_of(10), 3, "the refresher saw the new image and walked");
	memo_free(m);
}

Test(memo, the_refresher_keeps_to_its_cpu_budget)
{
	struct memo *m = make(100, 0.05);
	fake.walk_cost_us = 100000; /* 100 ms of CPU per walk */
	for (pid_t pid = 1; pid <= 10; pid++)
		g_free(get(m, pid, 1));
	fake.minflt++;
	advance(6 * SEC);
	for (pid_t pid = 1; pid <= 10; pid++)
		g_free(get(m, pid, 1)); /* all stale and wanted */
	gint64 cpu_before = fake.cpu, wait = 0;
	int walked = 0;
	while (memo_refresh_step(m, &wait))
		walked++;
	/* the 200 ms burst allows about 3 walks; then it must wait */
	cr_assert_leq(walked, 4);
	cr_assert_lt(walked, 10);
	cr_assert_gt(wait, 0);
	cr_assert_geq(stats(m).budget_overruns, 1, "said in the stats");
	/* after that, it earns 5% of wall time */
	advance(10 * SEC);
	int more = 0;
	while (memo_refresh_step(m, &wait))
		more++;
	cr_assert_leq((fake.cpu - cpu_before), (gint64)(0.2 * SEC + 0.05 * 10 * SEC) + 100000);
	cr_assert_gt(more, 0);
	memo_free(m);
}

Test(memo, entries_nobody_reads_are_dropped)
{
	struct memo *m = make(100, 1.0);
	g_free(get(m, 10, 1));
	advance(121 * SEC);
	refresh_all(m);
	cr_assert_eq(stats(m).entries, 0);
	cr_assert_eq(walks_of(10), 1, "not refreshed for nobody");
	memo_free(m);
}

struct churn {
	struct memo *m;
	gint *stop; /* atomic */
	guint reads;
	char *wrong; /* the first text that named another process */
};

static gpointer read_churn(gpointer data)
{
	struct churn *c = data;
	for (guint i = 0; !g_atomic_int_get(c->stop); i++) {
		pid_t pid = (pid_t)(i % 40);
		g_autofree char *got = get(c->m, pid, 7);
		g_autofree char *want = g_strdup_printf("pid %d start 7 walk", (int)pid);
		if (!g_str_has_prefix(got, want) && !c->wrong)
			c->wrong = g_steal_pointer(&got);
		c->reads++;
		if (i % 16 == 0)
			advance(SEC / 2); /* entries go stale: the refresher has work */
	}
	return NULL;
}

static gpointer refresh_churn(gpointer data)
{
	struct churn *c = data;
	gint64 wait;
	while (!g_atomic_int_get(c->stop))
		if (!memo_refresh_step(c->m, &wait))
			g_thread_yield();
	return NULL;
}

/* Readers and the refresher at once, on a table too small for all: every
 * read gets its own process's text (a run under TSan checks the locking). */
Test(memo, readers_and_the_refresher_at_once)
{
	struct memo *m = make(30, 1.0);
	gint stop = 0;
	struct churn c[4];
	GThread *t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct churn){ m, &stop, 0, NULL };
		t[i] = g_thread_new("churn", i == 0 ? refresh_churn : read_churn, &c[i]);
	}
	g_usleep(300 * 1000);
	g_atomic_int_set(&stop, 1);
	for (int i = 0; i < 4; i++) {
		g_thread_join(t[i]);
		cr_expect_null(c[i].wrong, "read %s", c[i].wrong);
		g_free(c[i].wrong);
	}
	cr_expect_gt(c[1].reads, 0);
	cr_expect_leq(stats(m).entries, 30 + 3, "bounded, but for readers racing to insert");
	memo_free(m);
}

static void release_stuck(void)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) l = g_mutex_locker_new(&fake.lock);
	fake.stuck_below = 0;
	g_cond_broadcast(&fake.released);
}

static gint64 ms_since(gint64 t)
{
	return (g_get_monotonic_time() - t) / 1000;
}

static struct memo *stuck_memo; /* for stuck_reader */

static gpointer stuck_reader(gpointer pid)
{
	return get(stuck_memo, GPOINTER_TO_INT(pid), 1);
}

Test(memo, a_walk_that_hangs_holds_its_readers_two_seconds_then_they_get_eagain_and_others_walk_on)
{
	struct memo *m = stuck_memo = make(100, 1.0);
	fake.stuck_below = 1001; /* pid 1000 hangs */
	gint64 t = g_get_monotonic_time();
	g_autofree char *first = get(m, 1000, 1);
	gint64 waited = ms_since(t);
	cr_assert_str_eq(first, "error 11", "a reader of the hung walk: %s", first);
	cr_assert(waited >= 1900 && waited < 3000, "it waited %" G_GINT64_FORMAT " ms", waited);
	t = g_get_monotonic_time();
	g_autofree char *later = get(m, 1000, 1);
	cr_assert_str_eq(later, "error 11");
	cr_assert_lt(ms_since(t), 100, "a later reader waited for a walk known to be slow");
	g_autofree char *other = get(m, 7, 1);
	cr_assert_str_eq(other, "pid 7 start 1 walk 1", "another process is walked meanwhile");
	cr_assert_geq(stats(m).slow_walks, 2);
	release_stuck();
	g_usleep(100 * 1000);
	g_autofree char *after = get(m, 1000, 1);
	cr_assert_str_eq(after, "pid 1000 start 1 walk 1", "the walk ended: its text is served");
	memo_free(m);
}

Test(memo, eight_hung_walks_of_a_namespace_stop_its_new_walks_not_others_nor_the_refresher)
{
	struct memo *m = stuck_memo = make(100, 1.0);
	g_free(get(m, 7, 1));
	fake.stuck_below = 1008; /* pids 1000 to 1007 hang */
	GThread *readers[8];
	for (int i = 0; i < 8; i++)
		readers[i] = g_thread_new("reader", stuck_reader, GINT_TO_POINTER(1000 + i));
	for (int i = 0; i < 8; i++)
		g_free(g_thread_join(readers[i]));
	gint64 t = g_get_monotonic_time();
	g_autofree char *refused = get(m, 20, 1);
	cr_assert_str_eq(refused, "error 11", "a new walk of a namespace with 8 hung: %s", refused);
	cr_assert_lt(ms_since(t), 100);
	g_autofree char *elsewhere = get_in(m, 2, 20, 1, 0);
	cr_assert_str_eq(elsewhere, "pid 20 start 1 walk 1", "another namespace walks on");
	/* The refresher skips the namespace whose walks hang, and ends. */
	fake.minflt++;
	advance(6 * SEC);
	g_free(get_in(m, 2, 20, 1, 0));
	t = g_get_monotonic_time();
	refresh_all(m);
	cr_assert_lt(ms_since(t), 500, "the refresher waited for hung walks");
	cr_assert_eq(walks_of(20), 2, "the other namespace's entry was refreshed");
	release_stuck();
	g_usleep(200 * 1000);
	g_autofree char *again = get(m, 21, 1);
	cr_assert_str_eq(again, "pid 21 start 1 walk 1", "its walks run again once they ended");
	memo_free(m);
}
