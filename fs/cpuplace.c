#include "cpuplace.h"

#include <errno.h>
#include <string.h>

/* One container's CPUs, ascending. */
struct placed {
	unsigned n;
	unsigned cpus[];
};

struct cpuplace {
	unsigned max_entries;
	GMutex lock; /* guards every field below */
	GHashTable *entries; /* key -> struct placed */
	unsigned *core;      /* [CPUSET_MAX]: the core of each CPU */
	unsigned *use;       /* [CPUSET_MAX]: containers placed on each CPU */
	unsigned *core_use;  /* [CPUSET_MAX]: by core (indexed by core[cpu]) */
	guint64 full;        /* placements refused: the table was full */
	guint64 generation;  /* changed with every placement */
};

struct cpuplace *cpuplace_new(unsigned max_entries)
{
	struct cpuplace *p = g_new0(struct cpuplace, 1);
	p->max_entries = max_entries;
	g_mutex_init(&p->lock);
	p->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	p->core = g_new(unsigned, CPUSET_MAX);
	for (unsigned c = 0; c < CPUSET_MAX; c++)
		p->core[c] = c;
	p->use = g_new0(unsigned, CPUSET_MAX);
	p->core_use = g_new0(unsigned, CPUSET_MAX);
	return p;
}

void cpuplace_free(struct cpuplace *p)
{
	if (!p)
		return;
	g_hash_table_unref(p->entries);
	g_free(p->core);
	g_free(p->use);
	g_free(p->core_use);
	g_mutex_clear(&p->lock);
	g_free(p);
}

void cpuplace_set_cores(struct cpuplace *p, const unsigned *core, unsigned n)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	for (unsigned c = 0; c < MIN(n, CPUSET_MAX); c++)
		p->core[c] = core[c] < CPUSET_MAX ? core[c] : c;
}

/* One more (delta 1) or one fewer (-1) container on cpu. Under lock. */
static void hold(struct cpuplace *p, unsigned cpu, int delta)
{
	p->use[cpu] += (unsigned)delta;
	p->core_use[p->core[cpu]] += (unsigned)delta;
}

/* Is a less shared than b: fewer containers on it, then on its core,
 * then a lower number? Under lock. */
static gboolean less_shared(const struct cpuplace *p, unsigned a, unsigned b)
{
	if (p->use[a] != p->use[b])
		return p->use[a] < p->use[b];
	if (p->core_use[p->core[a]] != p->core_use[p->core[b]])
		return p->core_use[p->core[a]] < p->core_use[p->core[b]];
	return a < b;
}

/* Add to *held the least shared CPUs of allowed (members, count of them)
 * until it has n, each counted at once (so that the next goes to
 * another core if one is as free). Under lock. */
static void grow(struct cpuplace *p, struct cpuset *held, const unsigned *members, unsigned count, unsigned n)
{
	for (unsigned have = cpuset_count(held); have < n; have++) {
		int best = -1;
		for (unsigned i = 0; i < count; i++)
			if (!cpuset_has(held, members[i]) && (best < 0 || less_shared(p, members[i], (unsigned)best)))
				best = (int)members[i];
		if (best < 0)
			return; /* cannot be: n <= count */
		cpuset_add(held, (unsigned)best);
		hold(p, (unsigned)best, 1);
	}
}

/* Take out of *held its most shared CPUs until it has n. Under lock. */
static void shrink(struct cpuplace *p, struct cpuset *held, unsigned n)
{
	unsigned have = cpuset_count(held);
	if (have <= n)
		return;
	g_autofree unsigned *cpus = g_new(unsigned, have);
	for (; have > n; have--) {
		unsigned k = cpuset_members(held, cpus, have);
		unsigned worst = cpus[0];
		for (unsigned i = 1; i < k; i++)
			if (less_shared(p, worst, cpus[i]))
				worst = cpus[i];
		cpuset_remove(held, worst);
		hold(p, worst, -1);
	}
}

static struct placed *placed_of(const struct cpuset *held)
{
	unsigned n = cpuset_count(held);
	struct placed *e = g_malloc(sizeof(*e) + n * sizeof(e->cpus[0]));
	e->n = cpuset_members(held, e->cpus, n);
	return e;
}

/* What was held of allowed by e (the rest is let go), in *ret. Under lock. */
static void kept_of(struct cpuplace *p, const struct placed *e, const struct cpuset *allowed, struct cpuset *ret)
{
	cpuset_clear(ret);
	for (unsigned i = 0; i < e->n; i++) {
		if (cpuset_has(allowed, e->cpus[i]))
			cpuset_add(ret, e->cpus[i]);
		else
			hold(p, e->cpus[i], -1);
	}
}

static gboolean same_place(const struct placed *e, const struct cpuset *allowed, unsigned n)
{
	if (e->n != n)
		return FALSE;
	for (unsigned i = 0; i < n; i++)
		if (!cpuset_has(allowed, e->cpus[i]))
			return FALSE;
	return TRUE;
}

int cpuplace_place(struct cpuplace *p, const char *key, const struct cpuset *allowed, unsigned n,
		   unsigned *ret)
{
	unsigned count = cpuset_count(allowed);
	if (n == 0 || n > count)
		return -EINVAL;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	const struct placed *e = g_hash_table_lookup(p->entries, key);
	if (e && same_place(e, allowed, n)) {
		memcpy(ret, e->cpus, n * sizeof(ret[0]));
		return 0;
	}
	if (!e && g_hash_table_size(p->entries) >= p->max_entries) {
		p->full++;
		cpuset_members(allowed, ret, n);
		return -ENOSPC;
	}
	struct cpuset held;
	if (e)
		kept_of(p, e, allowed, &held);
	else
		cpuset_clear(&held);
	g_autofree unsigned *members = g_new(unsigned, count);
	cpuset_members(allowed, members, count);
	shrink(p, &held, n);
	grow(p, &held, members, count, n);
	struct placed *now = placed_of(&held);
	memcpy(ret, now->cpus, n * sizeof(ret[0]));
	g_hash_table_replace(p->entries, g_strdup(key), now);
	p->generation++;
	return 0;
}

void cpuplace_release(struct cpuplace *p, const char *key)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	const struct placed *e = g_hash_table_lookup(p->entries, key);
	if (!e)
		return;
	for (unsigned i = 0; i < e->n; i++)
		hold(p, e->cpus[i], -1);
	g_hash_table_remove(p->entries, key);
	p->generation++;
}

char **cpuplace_keys(struct cpuplace *p)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	GPtrArray *keys = g_ptr_array_new();
	GHashTableIter it;
	gpointer key;
	g_hash_table_iter_init(&it, p->entries);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_ptr_array_add(keys, g_strdup(key));
	g_ptr_array_add(keys, NULL);
	return (char **)g_ptr_array_free(keys, FALSE);
}

unsigned cpuplace_uses(struct cpuplace *p, unsigned cpu)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	return cpu < CPUSET_MAX ? p->use[cpu] : 0;
}

void cpuplace_counts(struct cpuplace *p, unsigned *ret_entries, guint64 *ret_full)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	*ret_entries = g_hash_table_size(p->entries);
	*ret_full = p->full;
}

guint64 cpuplace_generation(struct cpuplace *p)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	return p->generation;
}

char *cpuplace_dump(struct cpuplace *p)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	GString *out = g_string_new(NULL);
	GHashTableIter it;
	gpointer key, value;
	g_hash_table_iter_init(&it, p->entries);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		const struct placed *e = value;
		struct cpuset s;
		cpuset_clear(&s);
		for (unsigned i = 0; i < e->n; i++)
			cpuset_add(&s, e->cpus[i]);
		g_autofree char *list = cpuset_format_list(&s);
		g_autofree char *escaped = g_strescape(key, NULL);
		g_string_append_printf(out, "%s %s\n", list, escaped);
	}
	return g_string_free(out, FALSE);
}

/* One "cpu-list key" line into p: FALSE if it is not one. Under lock. */
static gboolean load_line(struct cpuplace *p, const char *line)
{
	const char *space = strchr(line, ' ');
	struct cpuset s;
	if (!space || space[1] == '\0')
		return FALSE;
	g_autofree char *list = g_strndup(line, (gsize)(space - line));
	if (cpuset_parse_list(list, &s) < 0 || cpuset_count(&s) == 0)
		return FALSE;
	g_autofree char *key = g_strcompress(space + 1);
	if (g_hash_table_contains(p->entries, key))
		return TRUE;
	if (g_hash_table_size(p->entries) >= p->max_entries)
		return FALSE;
	struct placed *e = placed_of(&s);
	for (unsigned i = 0; i < e->n; i++)
		hold(p, e->cpus[i], 1);
	g_hash_table_insert(p->entries, g_steal_pointer(&key), e);
	return TRUE;
}

unsigned cpuplace_load(struct cpuplace *p, const char *text)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&p->lock);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	unsigned bad = 0;
	for (char **l = lines; *l; l++)
		if (**l)
			bad += !load_line(p, *l);
	p->generation++;
	return bad;
}
