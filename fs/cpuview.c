#include "cpuview.h"

#include "classes.h"
#include "classhash.h"
#include "ino.h"
#include "procfile.h"
#include "reports.h"
#include "scope.h"
#include "tidcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shared by the request threads; freed by cpuview_free, by its owner, once
 * no request runs. Maps it handed out live on by their references. */
struct cpuview {
	struct cpuview_config cfg;
	struct tidcache maps; /* callers' maps, kept half a second */
	struct reports reports; /* files that could not be used */
	struct classes *classes; /* content class -> struct cpu_map */
	GRWLock shorts_lock;     /* guards shorts */
	/* short class -> content class, for the cpu layout (fs/ino.h). Never
	 * forgotten: a short class must not name another class while the
	 * kernel may keep pages of an inode of it. At most
	 * CPUVIEW_SHORTS_MAX: past it a new class has none. */
	GHashTable *shorts;
};

/* ---------------------------------------------------------------- maps -- */

static uint64_t map_class(const struct cpu_map *m);

struct cpu_map *cpu_map_new(const struct cpuset *online, const struct cgroup_limits *limits,
			    gboolean use_quota)
{
	struct cpuset visible = *online;

	if (limits && limits->has_cpuset)
		cpuset_intersect(&visible, &limits->cpuset);
	if (cpuset_count(&visible) == 0) /* a cpuset of offline CPUs only */
		visible = *online;
	unsigned n = cpuset_count(&visible);
	if (use_quota && limits && limits->has_quota)
		n = MIN(n, cgroup_quota_cpus(limits->quota_us, limits->period_us));
	n = MAX(n, 1);
	struct cpu_map *m = g_atomic_rc_box_alloc0(sizeof(*m) + n * sizeof(m->host[0]));
	m->count = cpuset_members(&visible, m->host, n);
	m->is_host = cpuset_equal(&visible, online) && m->count == cpuset_count(online);
	m->class_id = map_class(m);
	return m;
}

struct cpu_map *cpu_map_ref(struct cpu_map *m)
{
	return g_atomic_rc_box_acquire(m);
}

void cpu_map_unref(struct cpu_map *m)
{
	if (m)
		g_atomic_rc_box_release(m);
}

int cpuview_new(const struct cpuview_config *cfg, struct cpuview **ret)
{
	struct cpuview *cv = g_new0(struct cpuview, 1);

	cv->cfg = *cfg;
	tidcache_init(&cv->maps, (gpointer(*)(gpointer))cpu_map_ref, (GDestroyNotify)cpu_map_unref);
	reports_init(&cv->reports, cfg->report, cfg->report_data);
	cv->classes = classes_new((classes_ref_fn)cpu_map_ref, (GDestroyNotify)cpu_map_unref);
	g_rw_lock_init(&cv->shorts_lock);
	cv->shorts = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	*ret = cv;
	return 0;
}

void cpuview_free(struct cpuview *cv)
{
	if (!cv)
		return;
	reports_clear(&cv->reports);
	tidcache_clear(&cv->maps);
	classes_free(cv->classes);
	g_hash_table_unref(cv->shorts);
	g_rw_lock_clear(&cv->shorts_lock);
	g_free(cv);
}


static int read_online(struct cpuview *cv, struct cpuset *ret)
{
	g_autofree char *s = NULL;
	int r = procfile_read_text_at(cv->cfg.sys_cpu_fd, "online", &s);
	return r < 0 ? r : cpuset_parse_list(s, ret);
}

/* The caller's limits: 1 and *ret; 0 (after reporting what was wrong)
 * when its cgroup files cannot be used, or it gets the host's; -EIO when
 * its scope cannot be found (its files are an error, not the host's). */
static int caller_limits(struct cpuview *cv, pid_t tid, struct cgroup_limits *ret)
{
	char path[32];
	struct scope_found found;
	g_autofree char *culprit = NULL;

	snprintf(path, sizeof(path), "%d/cgroup", (int)tid);
	int r = scope_find(cv->cfg.scope, tid, &found);
	if (r == -EINVAL)
		reports_once(&cv->reports, path, EINVAL);
	if (r < 0)
		return -EIO; /* garbage, unreadable, or the caller is gone */
	r = found.host ? -ENOENT : cgroup_read_limits(&cv->cfg.cgroups, &found.paths, ret, &culprit);
	if (r == -EINVAL)
		reports_once(&cv->reports, culprit ? culprit : path, EINVAL);
	scope_found_clear(&found);
	return r == 0;
}

static int compute_map(struct cpuview *cv, pid_t tid, struct cpu_map **ret)
{
	struct cpuset online;
	struct cgroup_limits limits;

	int limited = caller_limits(cv, tid, &limits);
	if (limited < 0)
		return limited;
	if (read_online(cv, &online) < 0) {
		reports_once(&cv->reports, "online", EINVAL);
		cpuset_clear(&online);
		cpuset_add(&online, 0);
	}
	*ret = cpu_map_new(&online, limited ? &limits : NULL, cv->cfg.use_quota);
	return 0;
}

/* Compute tid's map, and keep it in this thread's cache (not an error). */
static int map_computed(struct cpuview *cv, pid_t tid, struct cpu_map **ret)
{
	struct cpu_map *map;
	int r = compute_map(cv, tid, &map);
	if (r < 0)
		return r;
	tidcache_put(&cv->maps, tid, map);
	classes_put(cv->classes, cpu_map_class(map), map);
	*ret = map;
	return 0;
}

int cpuview_map_for(struct cpuview *cv, pid_t tid, struct cpu_map **ret)
{
	struct cpu_map *map = tidcache_get(&cv->maps, tid);
	if (!map)
		return map_computed(cv, tid, ret);
	*ret = map;
	return 0;
}

int cpuview_map_fresh(struct cpuview *cv, pid_t tid, struct cpu_map **ret)
{
	return map_computed(cv, tid, ret);
}

void cpuview_forget_cached(struct cpuview *cv)
{
	tidcache_forget(&cv->maps);
}

struct cpu_map *cpuview_map_of_class(struct cpuview *cv, uint64_t class_id)
{
	return classes_get(cv->classes, class_id);
}

/* The short class m's class would have, if no other class had it. */
static uint32_t short_of(uint64_t class_id)
{
	return (uint32_t)(class_id % INO_CPU_CLASS_MAX) + 1;
}

/* The class short names, or 0. Under shorts_lock. */
static uint64_t class_of_short_locked(struct cpuview *cv, uint32_t short_class)
{
	const uint64_t *class_id = g_hash_table_lookup(cv->shorts, GUINT_TO_POINTER(short_class));
	return class_id ? *class_id : 0;
}

uint32_t cpuview_short_class(struct cpuview *cv, const struct cpu_map *m)
{
	uint64_t class_id = cpu_map_class(m);
	uint32_t s = short_of(class_id);
	g_rw_lock_reader_lock(&cv->shorts_lock);
	uint64_t owner = class_of_short_locked(cv, s);
	g_rw_lock_reader_unlock(&cv->shorts_lock);
	if (owner)
		return owner == class_id ? s : 0;
	G_GNUC_UNUSED g_autoptr(GRWLockWriterLocker) locker = g_rw_lock_writer_locker_new(&cv->shorts_lock);
	owner = class_of_short_locked(cv, s);
	if (!owner && g_hash_table_size(cv->shorts) >= CPUVIEW_SHORTS_MAX)
		return 0; /* full: rendered per open, as a class whose short another has */
	if (!owner)
		g_hash_table_insert(cv->shorts, GUINT_TO_POINTER(s), g_memdup2(&class_id, sizeof(class_id)));
	return !owner || owner == class_id ? s : 0;
}

struct cpu_map *cpuview_map_of_short(struct cpuview *cv, uint32_t short_class)
{
	g_rw_lock_reader_lock(&cv->shorts_lock);
	uint64_t class_id = class_of_short_locked(cv, short_class);
	g_rw_lock_reader_unlock(&cv->shorts_lock);
	return class_id ? classes_get(cv->classes, class_id) : NULL;
}

uint64_t cpu_map_class(const struct cpu_map *m)
{
	return m->class_id;
}

static uint64_t map_class(const struct cpu_map *m)
{
	/* What the map shows: the host's files, or these CPUs. */
	const unsigned head[2] = { m->is_host, m->count };
	return classhash("cpus:", head, sizeof(head), m->host, m->is_host ? 0 : m->count * sizeof(m->host[0]));
}

/* ----------------------------------------------------------- renderers -- */

int cpu_map_view_cpu(const struct cpu_map *m, unsigned host_cpu)
{
	unsigned lo = 0, hi = m->count; /* host[] ascends (cpuset_members) */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->host[mid] == host_cpu)
			return (int)mid;
		if (m->host[mid] < host_cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* "key<tabs>: value": is the key (blanks around it aside) key? Then also
 * where the value starts. */
static gboolean field_is(const char *line, const char *key, const char **ret_value)
{
	const char *colon = strchr(line, ':');
	if (!colon)
		return FALSE;
	const char *start = line, *end = colon;
	while (start < end && g_ascii_isspace(*start))
		start++;
	while (end > start && g_ascii_isspace(end[-1]))
		end--;
	size_t len = strlen(key);
	if ((size_t)(end - start) != len || memcmp(start, key, len) != 0)
		return FALSE;
	*ret_value = colon[1] == ' ' ? colon + 2 : colon + 1;
	return TRUE;
}

static const char *block_field(char **lines, const char *key)
{
	const char *value;
	for (char **l = lines; *l; l++)
		if (field_is(*l, key, &value))
			return value;
	return NULL;
}

struct cpuinfo_block {
	char **lines;
	const char *package; /* "physical id", NULL where the shape has none */
	const char *core;    /* "core id" */
};

/* The CPUs shown of one package, and their distinct cores. */
struct package_count {
	unsigned siblings;
	GHashTable *cores; /* core id strings */
};

static void package_count_free(gpointer p)
{
	struct package_count *c = p;
	g_hash_table_unref(c->cores);
	g_free(c);
}

static const char *package_key(const struct cpuinfo_block *b)
{
	return b->package ? b->package : "";
}

/* Counted once per render: a CPU's siblings and cores are those of its
 * package among the CPUs shown. NULL if a shown CPU has no block. */
static GHashTable *count_packages(const struct cpuinfo_block *by_view, unsigned count)
{
	GHashTable *packages = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, package_count_free);
	for (unsigned v = 0; v < count; v++) {
		if (!by_view[v].lines) {
			g_hash_table_unref(packages);
			return NULL;
		}
		struct package_count *c = g_hash_table_lookup(packages, package_key(&by_view[v]));
		if (!c) {
			c = g_new0(struct package_count, 1);
			c->cores = g_hash_table_new(g_str_hash, g_str_equal);
			g_hash_table_insert(packages, (gpointer)package_key(&by_view[v]), c);
		}
		c->siblings++;
		if (by_view[v].core)
			g_hash_table_add(c->cores, (gpointer)by_view[v].core);
	}
	return packages;
}

int cpuview_render_cpuinfo(const char *host, const struct cpu_map *m, GString **ret)
{
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	g_auto(GStrv) blocks = g_strsplit(host, "\n\n", -1);
	guint nblocks = g_strv_length(blocks);
	g_autofree struct cpuinfo_block *by_view = g_new0(struct cpuinfo_block, m->count);
	g_autoptr(GPtrArray) to_free = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	g_autoptr(GString) tail = g_string_new(NULL); /* blocks that are no CPU's */

	for (guint b = 0; b < nblocks; b++) {
		if (blocks[b][0] == '\0')
			continue;
		char **lines = g_strsplit(blocks[b], "\n", -1);
		g_ptr_array_add(to_free, lines);
		const char *proc = block_field(lines, "processor");
		guint64 cpu;
		if (!proc || !g_ascii_string_to_unsigned(proc, 10, 0, CPUSET_MAX - 1, &cpu, NULL)) {
			g_string_append_printf(tail, "%s\n\n", blocks[b]);
			continue;
		}
		int v = cpu_map_view_cpu(m, (unsigned)cpu);
		if (v >= 0)
			by_view[v] = (struct cpuinfo_block){ lines, block_field(lines, "physical id"),
							     block_field(lines, "core id") };
	}
	g_autoptr(GHashTable) packages = count_packages(by_view, m->count);
	if (!packages)
		return -EINVAL; /* a shown CPU without a block */
	g_autoptr(GString) out = g_string_new(NULL);
	for (unsigned v = 0; v < m->count; v++) {
		const struct package_count *c = g_hash_table_lookup(packages, package_key(&by_view[v]));
		for (char **l = by_view[v].lines; *l; l++) {
			const char *value;
			unsigned number;
			if (field_is(*l, "processor", &value))
				number = v;
			else if (field_is(*l, "siblings", &value))
				number = c->siblings;
			else if (field_is(*l, "cpu cores", &value))
				number = MAX(g_hash_table_size(c->cores), 1);
			else {
				g_string_append(out, *l);
				g_string_append_c(out, '\n');
				continue;
			}
			g_string_append_printf(out, "%.*s%u\n", (int)(value - *l), *l, number);
		}
		g_string_append_c(out, '\n');
	}
	g_string_append_len(out, tail->str, (gssize)tail->len);
	*ret = g_steal_pointer(&out);
	return 0;
}

/* "cpuN" at the start of a /proc/stat line: N, else -1 (-2 for "cpu "). */
static int stat_cpu_number(const char *line, const char **ret_rest)
{
	if (strncmp(line, "cpu", 3) != 0)
		return -1;
	if (line[3] == ' ') {
		*ret_rest = line + 3;
		return -2;
	}
	char *end;
	if (!g_ascii_isdigit(line[3]))
		return -1;
	unsigned long n = strtoul(line + 3, &end, 10);
	if (*end != ' ' || n >= CPUSET_MAX)
		return -1;
	*ret_rest = end;
	return (int)n;
}

int cpuview_render_stat(const char *host, const struct cpu_map *m, GString **ret)
{
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	g_auto(GStrv) lines = g_strsplit(host, "\n", -1);
	g_autofree const char **shown = g_new0(const char *, m->count); /* fields of view CPU i */
	guint64 sum[16] = { 0 };
	guint nfields = 0;

	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		int v = cpu >= 0 ? cpu_map_view_cpu(m, (unsigned)cpu) : -1;
		if (v >= 0)
			shown[v] = rest;
	}
	for (unsigned v = 0; v < m->count; v++) {
		if (!shown[v])
			return -EINVAL;
		g_autofree char *fields = g_strstrip(g_strdup(shown[v]));
		g_auto(GStrv) f = g_strsplit(fields, " ", -1);
		guint n = g_strv_length(f);
		if (n == 0 || n > G_N_ELEMENTS(sum) || (nfields && n != nfields))
			return -EINVAL;
		nfields = n;
		for (guint i = 0; i < n; i++) {
			guint64 x;
			if (!g_ascii_string_to_unsigned(f[i], 10, 0, G_MAXUINT64, &x, NULL))
				return -EINVAL;
			sum[i] += x;
		}
	}
	g_autoptr(GString) out = g_string_new(NULL);
	gboolean cpus_written = FALSE;
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_string_append(out, "cpu ");
			for (guint i = 0; i < nfields; i++)
				g_string_append_printf(out, " %" G_GUINT64_FORMAT, sum[i]);
		} else if (cpu >= 0) {
			if (cpus_written)
				continue;
			for (unsigned v = 0; v < m->count; v++)
				g_string_append_printf(out, "cpu%u%s%s", v, shown[v], v + 1 < m->count ? "\n" : "");
			cpus_written = TRUE;
		} else {
			g_string_append(out, *l);
		}
		if (l[1])
			g_string_append_c(out, '\n');
	}
	*ret = g_steal_pointer(&out);
	return 0;
}

/* The fields of a cpu line: user nice system idle, the rest 0. */
static void append_cpu_fields(GString *out, guint nfields, const cpu_ticks *row)
{
	const uint64_t head[] = { row->f[CPU_TICKS_USER], 0, row->f[CPU_TICKS_SYSTEM], row->f[CPU_TICKS_IDLE] };
	for (guint i = 0; i < nfields; i++)
		g_string_append_printf(out, " %" G_GUINT64_FORMAT, i < G_N_ELEMENTS(head) ? head[i] : 0);
}

int cpuview_render_stat_usage(const char *stat, unsigned n, const cpu_ticks *rows, GString **ret)
{
	g_auto(GStrv) lines = g_strsplit(stat, "\n", -1);
	guint nfields = 0;
	unsigned seen = 0;
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_autofree char *fields = g_strstrip(g_strdup(rest));
			g_auto(GStrv) f = g_strsplit(fields, " ", -1);
			nfields = g_strv_length(f);
		} else if (cpu >= 0 && (unsigned)cpu != seen++) {
			return -EINVAL;
		}
	}
	if (n == 0 || seen != n || nfields < 4)
		return -EINVAL;
	g_autoptr(GString) out = g_string_new(NULL);
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_string_append(out, "cpu ");
			append_cpu_fields(out, nfields, &rows[0]);
		} else if (cpu >= 0) {
			g_string_append_printf(out, "cpu%d", cpu);
			append_cpu_fields(out, nfields, &rows[1 + cpu]);
		} else {
			g_string_append(out, *l);
		}
		if (l[1])
			g_string_append_c(out, '\n');
	}
	*ret = g_steal_pointer(&out);
	return 0;
}

GString *cpuview_render_range(const struct cpu_map *m)
{
	GString *out = g_string_new("0");
	if (m->count > 1)
		g_string_append_printf(out, "-%u", m->count - 1);
	g_string_append_c(out, '\n');
	return out;
}

static int host_set(const char *host, gboolean mask, struct cpuset *ret)
{
	return mask ? cpuset_parse_mask(host, ret) : cpuset_parse_list(host, ret);
}

static int render_set(const char *host, const struct cpu_map *m, gboolean mask, GString **ret)
{
	struct cpuset in, out;
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	if (host_set(host, mask, &in) < 0)
		return -EINVAL;
	cpuset_clear(&out);
	for (unsigned v = 0; v < m->count; v++)
		if (cpuset_has(&in, m->host[v]))
			cpuset_add(&out, v);
	unsigned words = 1;
	for (const char *p = host; *p; p++)
		words += *p == ',';
	g_autofree char *text = mask ? cpuset_format_mask(&out, words) : cpuset_format_list(&out);
	*ret = g_string_new(text);
	g_string_append_c(*ret, '\n');
	return 0;
}

int cpuview_render_list(const char *host, const struct cpu_map *m, GString **ret)
{
	return render_set(host, m, FALSE, ret);
}

int cpuview_render_mask(const char *host, const struct cpu_map *m, GString **ret)
{
	return render_set(host, m, TRUE, ret);
}
