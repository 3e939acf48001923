/* The concurrency scenarios of fs/, without Criterion: Criterion cannot run
 * under ThreadSanitizer (its inheritable arena and TSan's shadow memory
 * collide), so this plain driver is what a -Db_sanitize=thread build runs
 * (contrib/scripts/tsan.sh). Exits 0, or aborts on a wrong result; TSan
 * reports races on its own (exit status 66). */
#include "classes.h"
#include "cpuplace.h"
#include "memo.h"
#include "pidwatch.h"
#include "tidcache.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- memo -- */

static gint walks;          /* atomic */
static gint64 fake_now_us;  /* atomic: the memo's clock */

static int walk(void *data, const struct memo_key *key, GBytes **ret)
{
	if (data)
		g_usleep(20 * 1000); /* long enough for readers to pile up */
	g_atomic_int_inc(&walks);
	char *text = g_strdup_printf("pid %d", (int)key->pid);
	*ret = g_bytes_new_take(text, strlen(text));
	return 0;
}

static int probe(void *data, const struct memo_key *key, struct memo_signals *ret)
{
	*ret = (struct memo_signals){ .rss = (uint64_t)key->pid };
	return 0;
}

static gint64 now(void *data)
{
	return __atomic_load_n(&fake_now_us, __ATOMIC_RELAXED);
}

static gint64 cpu(void *data)
{
	return 0;
}

static void wake(void *data)
{
}

static struct memo *memo_make(unsigned max_entries, gboolean slow)
{
	const struct memo_config cfg = { .max_age_us = 5 * G_USEC_PER_SEC, .max_age_idle_us = 60 * G_USEC_PER_SEC,
					 .forget_after_us = 120 * G_USEC_PER_SEC, .max_entries = max_entries,
					 .budget = 1.0 };
	const struct memo_ops ops = { walk, probe, now, cpu, wake, slow ? &walks : NULL };
	return memo_new(&cfg, &ops);
}

static char *read_text(struct memo *m, pid_t pid)
{
	const struct memo_key key = { 1, pid, 7, 0 };
	g_autoptr(GBytes) text = NULL;
	g_assert_cmpint(memo_get(m, &key, &text), ==, 0);
	return g_strndup(g_bytes_get_data(text, NULL), g_bytes_get_size(text));
}

static gpointer read_42(gpointer m)
{
	g_autofree char *text = read_text(m, 42);
	g_assert_cmpstr(text, ==, "pid 42");
	return NULL;
}

static void memo_single_flight(void)
{
	struct memo *m = memo_make(100, TRUE);
	GThread *t[8];
	g_atomic_int_set(&walks, 0);
	for (int i = 0; i < 8; i++)
		t[i] = g_thread_new("reader", read_42, m);
	for (int i = 0; i < 8; i++)
		g_thread_join(t[i]);
	g_assert_cmpint(g_atomic_int_get(&walks), ==, 1);
	memo_free(m);
}

static gint stop; /* atomic */

static gpointer read_many(gpointer m)
{
	for (guint i = 0; !g_atomic_int_get(&stop); i++) {
		pid_t pid = (pid_t)(i % 40);
		g_autofree char *text = read_text(m, pid);
		g_autofree char *want = g_strdup_printf("pid %d", (int)pid);
		g_assert_cmpstr(text, ==, want);
		if (i % 16 == 0) /* entries go stale: the refresher has work */
			__atomic_fetch_add(&fake_now_us, G_USEC_PER_SEC / 2, __ATOMIC_RELAXED);
	}
	return NULL;
}

static gpointer refresh(gpointer m)
{
	gint64 wait;
	while (!g_atomic_int_get(&stop))
		if (!memo_refresh_step(m, &wait))
			g_thread_yield();
	return NULL;
}

static void memo_readers_and_refresher(void)
{
	struct memo *m = memo_make(30, FALSE); /* too small: evictions too */
	GThread *t[4];
	g_atomic_int_set(&stop, 0);
	for (int i = 0; i < 4; i++)
		t[i] = g_thread_new("churn", i == 0 ? refresh : read_many, m);
	g_usleep(500 * 1000);
	g_atomic_int_set(&stop, 1);
	for (int i = 0; i < 4; i++)
		g_thread_join(t[i]);
	memo_free(m);
}

/* --------------------------------------------------------- pidwatch -- */

/* A view session as pidwatch sees it: on_exit must never run for one that
 * was forgotten. */
struct owner {
	gint forgotten; /* atomic */
	gint told;      /* atomic */
	int slow;       /* on_exit takes a while: set before it is watched */
};

static void exited(void *owner, pid_t pid)
{
	struct owner *o = owner;
	if (o->slow)
		g_usleep(50 * 1000);
	g_assert_cmpint(g_atomic_int_get(&o->forgotten), ==, 0);
	g_atomic_int_inc(&o->told);
}

static gpointer run_watch(gpointer w)
{
	g_assert_cmpint(pidwatch_run(w), ==, 0);
	return NULL;
}

struct adopter {
	struct pidwatch *w;
	struct owner *owner;
	pid_t child;
};

static gpointer adopt(gpointer data)
{
	struct adopter *a = data;
	/* One that cannot be watched (epoll refuses a regular file), one that
	 * can and whose process exits. */
	pidwatch_adopt(a->w, a->owner, 4242, open("/dev/null", O_RDONLY | O_CLOEXEC));
	pidwatch_adopt(a->w, a->owner, a->child, (int)syscall(SYS_pidfd_open, a->child, 0));
	return NULL;
}

static void pidwatch_forget_while_adopting(void)
{
	struct pidwatch *w;
	g_assert_cmpint(pidwatch_new(exited, &w), ==, 0);
	GThread *runner = g_thread_new("pidwatch", run_watch, w);
	for (int i = 0; i < 50; i++) {
		struct owner *o = g_new0(struct owner, 1);
		pid_t child = fork();
		g_assert_cmpint(child, >=, 0);
		if (child == 0)
			_exit(0);
		struct adopter a = { w, o, child };
		GThread *t = g_thread_new("adopt", adopt, &a);
		g_usleep((gulong)(i % 5) * 200);
		g_thread_join(t); /* the session's requests are done */
		waitpid(child, NULL, 0);
		pidwatch_forget_owner(w, o);
		g_atomic_int_set(&o->forgotten, 1);
		g_free(o); /* as a session ending is freed */
	}
	pidwatch_stop(w);
	g_thread_join(runner);
	pidwatch_free(w);
}

static gpointer adopt_unwatchable(gpointer data)
{
	struct adopter *a = data;
	pidwatch_adopt(a->w, a->owner, 4242, open("/dev/null", O_RDONLY | O_CLOEXEC));
	return NULL;
}

/* A session ends while the report of a watch that failed is under way: it
 * is freed once forgetting returns, so no report may still touch it. */
static void pidwatch_forget_during_a_report(void)
{
	struct pidwatch *w;
	g_assert_cmpint(pidwatch_new(exited, &w), ==, 0);
	GThread *runner = g_thread_new("pidwatch", run_watch, w);
	for (int i = 0; i < 5; i++) {
		struct owner *o = g_new0(struct owner, 1);
		o->slow = 1;
		struct adopter a = { w, o, 0 };
		GThread *t = g_thread_new("adopt", adopt_unwatchable, &a);
		g_usleep(10 * 1000); /* the report has begun */
		pidwatch_forget_owner(w, o);
		g_atomic_int_set(&o->forgotten, 1);
		g_free(o);
		g_thread_join(t);
	}
	pidwatch_stop(w);
	g_thread_join(runner);
	pidwatch_free(w);
}

/* --------------------------------------------- classes and tidcache -- */

static gpointer dup_string(gpointer s)
{
	return g_strdup(s);
}

struct class_run {
	struct classes *classes;
	struct tidcache *cache;
	unsigned seed;
};

/* What a caller of class n is, as the class table and the tid cache keep
 * it: past the table's bound it starts over while others read it. */
static gpointer classes_and_callers(gpointer data)
{
	struct class_run *r = data;
	for (unsigned i = 0; i < 20000; i++) {
		unsigned n = (i * 7919u + r->seed) % 5000u;
		char name[16];
		g_snprintf(name, sizeof(name), "group%u", n);
		classes_put(r->classes, n + 1, name);
		char *got = classes_get(r->classes, n + 1);
		g_assert(!got || strcmp(got, name) == 0);
		g_free(got);
		tidcache_put(r->cache, (pid_t)n, name);
		got = tidcache_get(r->cache, (pid_t)n); /* NULL after another's forget */
		g_assert(!got || strcmp(got, name) == 0);
		g_free(got);
		if (i % 1000 == 0)
			tidcache_forget(r->cache);
	}
	return NULL;
}

static void classes_and_tidcache(void)
{
	struct classes *classes = classes_new(dup_string, g_free);
	struct tidcache cache;
	tidcache_init(&cache, dup_string, g_free);
	struct class_run runs[4];
	GThread *threads[G_N_ELEMENTS(runs)];
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
		runs[i] = (struct class_run){ classes, &cache, (unsigned)i * 13u };
		threads[i] = g_thread_new("classes", classes_and_callers, &runs[i]);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(runs); i++)
		g_thread_join(threads[i]);
	tidcache_clear(&cache);
	classes_free(classes);
}

/* ------------------------------------------------------- cpuplace -- */

static gint placing; /* atomic: threads still placing */

/* Containers placed, resized, moved to another cpuset and let go, from
 * several threads at once. */
static gpointer place_many(gpointer data)
{
	struct cpuplace *p = data;
	struct cpuset eight, four;
	g_assert(cpuset_parse_list("0-7", &eight) == 0 && cpuset_parse_list("2-5", &four) == 0);
	for (unsigned i = 0; i < 20000; i++) {
		char key[16];
		unsigned cpus[4];
		g_snprintf(key, sizeof(key), "k%u", (i * 7919u + GPOINTER_TO_UINT(g_thread_self())) % 300u);
		unsigned n = 1 + i % 3;
		const struct cpuset *allowed = i % 5 ? &eight : &four;
		int r = cpuplace_place(p, key, allowed, n, cpus);
		g_assert(r == 0 || r == -ENOSPC);
		for (unsigned k = 0; k < n; k++)
			g_assert(cpuset_has(allowed, cpus[k]) && (k == 0 || cpus[k - 1] < cpus[k]));
		if (i % 7 == 0)
			cpuplace_release(p, key);
	}
	g_atomic_int_add(&placing, -1);
	return NULL;
}

/* What the daemon's sweep and its file do meanwhile. */
static gpointer dump_and_sweep(gpointer data)
{
	struct cpuplace *p = data;
	while (g_atomic_int_get(&placing) > 0) {
		g_free(cpuplace_dump(p));
		g_auto(GStrv) keys = cpuplace_keys(p);
		if (keys[0])
			cpuplace_release(p, keys[0]);
	}
	return NULL;
}

static void cpuplace_from_many_threads(void)
{
	struct cpuplace *p = cpuplace_new(256);
	GThread *threads[5];
	g_atomic_int_set(&placing, 4);
	for (size_t i = 0; i < 4; i++)
		threads[i] = g_thread_new("place", place_many, p);
	threads[4] = g_thread_new("sweep", dump_and_sweep, p);
	for (size_t i = 0; i < G_N_ELEMENTS(threads); i++)
		g_thread_join(threads[i]);
	g_auto(GStrv) keys = cpuplace_keys(p);
	for (char **k = keys; *k; k++)
		cpuplace_release(p, *k);
	for (unsigned cpu = 0; cpu < 8; cpu++)
		g_assert(cpuplace_uses(p, cpu) == 0); /* every hold let go */
	cpuplace_free(p);
}

int main(void)
{
	const struct {
		const char *name;
		void (*run)(void);
	} scenarios[] = {
		{ "memo: single flight", memo_single_flight },
		{ "memo: readers and the refresher", memo_readers_and_refresher },
		{ "pidwatch: forgetting while adopting", pidwatch_forget_while_adopting },
		{ "pidwatch: forgetting during a report", pidwatch_forget_during_a_report },
		{ "classes and tidcache: puts, gets and forgets from many threads", classes_and_tidcache },
		{ "cpuplace: placements, releases, dumps and sweeps from many threads", cpuplace_from_many_threads },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(scenarios); i++) {
		gint64 start = g_get_monotonic_time();
		scenarios[i].run();
		g_print("ok %zu - %s (%.2f s)\n", i + 1, scenarios[i].name,
			(double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC);
	}
	return 0;
}
