#include "loadavg.h"

#include "caller.h"

#include "dirwalk.h"
#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The kernel's: 1/exp(5s/1min), 1/exp(5s/5min), 1/exp(5s/15min) in fixed point. */
static const uint64_t exps[3] = { 1884, 2014, 2037 };
/* A group unread this long is no longer sampled. */
#define FORGET_US (15 * 60 * G_USEC_PER_SEC)
/* Between the two samples of a group's first read. */
#define FIRST_GAP_US (20 * G_TIME_SPAN_MILLISECOND)

void loadavg_step(uint64_t avenrun[3], unsigned active)
{
	uint64_t a = (uint64_t)active * LOADAVG_FIXED_1;
	for (int i = 0; i < 3; i++) {
		uint64_t load = avenrun[i] * exps[i] + a * (LOADAVG_FIXED_1 - exps[i]);
		if (a >= avenrun[i])
			load += LOADAVG_FIXED_1 - 1; /* rounds up while rising, as the kernel does */
		avenrun[i] = load / LOADAVG_FIXED_1;
	}
}

GString *loadavg_render(const uint64_t avenrun[3], unsigned running, unsigned total, const char *last_pid)
{
	GString *out = g_string_new(NULL);
	for (int i = 0; i < 3; i++) {
		uint64_t x = avenrun[i] + LOADAVG_FIXED_1 / 200; /* to the nearest hundredth */
		g_string_append_printf(out, "%" PRIu64 ".%02" PRIu64 " ", x >> LOADAVG_FSHIFT,
				       ((x & (LOADAVG_FIXED_1 - 1)) * 100) >> LOADAVG_FSHIFT);
	}
	g_string_append_printf(out, "%u/%u %s\n", running, total, last_pid);
	return out;
}

/* What a sample of a cgroup subtree counts. */
struct tally {
	unsigned running, active, total; /* threads R, R or D, all */
	/* The newest thread (the latest start), as its innermost pid
	 * namespace numbers it; 0 if none. */
	pid_t newest;
};

struct group_load {
	uint64_t avenrun[3];
	unsigned running, blocked, total; /* threads R, D, all */
	pid_t newest;   /* the tally's */
	gint64 read_us; /* last read (monotonic) */
};

struct loadavgs {
	int proc_fd;
	const struct cgroup_hierarchy *h;
	GMutex lock;          /* guards groups and sampled_us */
	GHashTable *groups;   /* group path -> struct group_load */
	gint64 sampled_us;    /* the last sample of all (monotonic) */
};

struct loadavgs *loadavgs_new(int proc_fd, const struct cgroup_hierarchy *h)
{
	struct loadavgs *l = g_new0(struct loadavgs, 1);
	l->proc_fd = proc_fd;
	l->h = h;
	g_mutex_init(&l->lock);
	l->groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	l->sampled_us = g_get_monotonic_time();
	return l;
}

void loadavgs_free(struct loadavgs *l)
{
	if (!l)
		return;
	g_hash_table_unref(l->groups);
	g_mutex_clear(&l->lock);
	g_free(l);
}

struct count {
	struct loadavgs *l;
	int dirfd;
	struct tally tally;
	pid_t asking;     /* caller_serving(): not counted as running or blocked */
	pid_t newest_tid; /* the newest thread, as the daemon numbers it */
	uint64_t newest_start;
	unsigned cgroups, threads; /* met so far, counted or not: the walk stops at the caps */
};

/* Whether the walk has met as much as it may. */
static gboolean walk_full(const struct count *c)
{
	return c->cgroups >= LOADAVG_WALK_CGROUPS_MAX || c->threads >= LOADAVG_WALK_THREADS_MAX;
}

/* The threads listed in dir (v2 cgroup.threads, v1 tasks), by state. */
static void count_threads(struct count *c, const char *dir)
{
	g_autofree char *path = g_build_filename(dir, c->l->h->version == CGROUP_V2 ? "cgroup.threads" : "tasks", NULL);
	g_autofree char *text = NULL;
	if (procfile_read_text_at(c->dirfd, path, &text) < 0)
		return;
	g_auto(GStrv) tids = g_strsplit(text, "\n", -1);
	for (char **t = tids; *t && c->threads < LOADAVG_WALK_THREADS_MAX; t++) {
		guint64 tid;
		struct pid_stat st;
		if (!g_ascii_string_to_unsigned(*t, 10, 1, G_MAXINT32, &tid, NULL))
			continue;
		c->threads++;
		if (procfile_pid_stat(c->l->proc_fd, (pid_t)tid, &st) < 0)
			continue;
		c->tally.total++;
		/* The reader this answers for waits for it (between queueing
		 * its request and sleeping it may still show R). */
		if ((pid_t)tid != c->asking) {
			c->tally.running += st.state == 'R';
			c->tally.active += st.state == 'R' || st.state == 'D';
		}
		if (st.start_time > c->newest_start || (st.start_time == c->newest_start && tid > (guint64)c->newest_tid)) {
			c->newest_start = st.start_time;
			c->newest_tid = (pid_t)tid;
		}
	}
}

struct subtree {
	struct count *c;
	const char *dir;
};

static void count_subtree(struct count *c, const char *dir);

static void count_child(const struct dirent *de, void *data)
{
	struct subtree *s = data;
	if (de->d_type != DT_DIR || walk_full(s->c))
		return;
	g_autofree char *child = g_build_filename(s->dir, de->d_name, NULL);
	count_subtree(s->c, child);
}

/* The walk's work is the tenant's to size: it stops at the caps (the
 * rest of a larger subtree is not counted), and runs under no lock. */
static void count_subtree(struct count *c, const char *dir)
{
	c->cgroups++;
	count_threads(c, dir);
	if (walk_full(c))
		return;
	struct subtree s = { c, dir };
	dirwalk(c->dirfd, dir, count_child, &s);
}

/* Count group's threads now, under no lock; FALSE if the cgroup is not
 * there. */
static gboolean sample(struct loadavgs *l, const char *group, struct tally *ret)
{
	g_autofree char *dir = cgroup_relative_dir(l->h, group);
	if (!dir || (strcmp(dir, ".") != 0 && faccessat(l->h->root_fd, dir, F_OK, 0) < 0))
		return FALSE;
	struct count c = { .l = l, .dirfd = l->h->root_fd, .asking = caller_serving() };
	count_subtree(&c, dir);
	guint levels;
	if (c.newest_tid && procfile_nspid(l->proc_fd, c.newest_tid, &levels, &c.tally.newest) < 0)
		c.tally.newest = 0;
	*ret = c.tally;
	return TRUE;
}

/* g's counts from a sample. */
static void take(struct group_load *g, const struct tally *t)
{
	g->running = t->running;
	g->blocked = t->active - t->running;
	g->total = t->total;
	g->newest = t->newest;
}

/* group's entry, read now (a copy in *ret): sampled at once if it was not
 * tracked (its averages then start from what runs now, not from 0: the
 * threads active in two samples FIRST_GAP_US apart, so that one caught
 * between two sleeps, a shell that has just forked, say, does not start
 * an idle group at 1). FALSE if the cgroup is not there. The samples are
 * taken without the lock, which every group's reader takes: two first
 * readers of one group may both sample it, and the first to finish is
 * kept. */
static gboolean group_read(struct loadavgs *l, const char *group, struct group_load *ret)
{
	g_mutex_lock(&l->lock);
	struct group_load *g = g_hash_table_lookup(l->groups, group);
	if (!g) {
		g_mutex_unlock(&l->lock);
		struct tally first, now;
		if (!sample(l, group, &first))
			return FALSE;
		g_usleep(FIRST_GAP_US);
		if (!sample(l, group, &now))
			return FALSE;
		g_mutex_lock(&l->lock);
		g = g_hash_table_lookup(l->groups, group);
		if (!g) {
			g = g_new0(struct group_load, 1);
			take(g, &now);
			for (int i = 0; i < 3; i++)
				g->avenrun[i] = (uint64_t)MIN(first.active, now.active) * LOADAVG_FIXED_1;
			g_hash_table_insert(l->groups, g_strdup(group), g);
		}
	}
	g->read_us = g_get_monotonic_time();
	*ret = *g;
	g_mutex_unlock(&l->lock);
	return TRUE;
}

int loadavgs_render(struct loadavgs *l, const char *group, const char *host, gboolean own_ns, GString **ret)
{
	g_autofree char *host_copy = g_strchomp(g_strdup(host));
	const char *host_last = strrchr(host_copy, ' ');
	struct group_load g;
	if (!group_read(l, group, &g))
		return -ENOENT;
	char newest[16];
	snprintf(newest, sizeof(newest), "%d", (int)g.newest);
	const char *last_pid = own_ns && g.newest ? newest : host_last ? host_last + 1 : "0";
	*ret = loadavg_render(g.avenrun, g.running, MAX(g.total, 1), last_pid);
	return 0;
}

gboolean loadavgs_counts(struct loadavgs *l, const char *group, unsigned *ret_running, unsigned *ret_blocked)
{
	struct group_load g;
	if (!group_read(l, group, &g))
		return FALSE;
	*ret_running = g.running;
	*ret_blocked = g.blocked;
	return TRUE;
}

void loadavgs_sample_due(struct loadavgs *l, gint64 *ret_wait_us)
{
	gint64 now = g_get_monotonic_time();
	g_mutex_lock(&l->lock);
	gint64 due = l->sampled_us + LOADAVG_PERIOD_US;
	if (now < due) {
		g_mutex_unlock(&l->lock);
		*ret_wait_us = due - now;
		return;
	}
	l->sampled_us = now;
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer key, value;
	g_hash_table_iter_init(&it, l->groups);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const struct group_load *g = value;
		if (now - g->read_us > FORGET_US)
			g_hash_table_iter_remove(&it);
		else
			g_ptr_array_add(names, g_strdup(key));
	}
	g_mutex_unlock(&l->lock);
	/* Counted without the lock: readers go on meanwhile. */
	for (guint i = 0; i < names->len; i++) {
		const char *group = g_ptr_array_index(names, i);
		struct tally counted;
		gboolean there = sample(l, group, &counted);
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
		struct group_load *g = g_hash_table_lookup(l->groups, group);
		if (!g)
			continue;
		if (!there) {
			g_hash_table_remove(l->groups, group);
			continue;
		}
		loadavg_step(g->avenrun, counted.active);
		take(g, &counted);
	}
	*ret_wait_us = LOADAVG_PERIOD_US;
}
