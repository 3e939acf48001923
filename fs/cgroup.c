#include "cgroup.h"

#include "cgroup-internal.h"
#include "procfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cgroup_paths_clear(struct cgroup_paths *p)
{
	g_free(p->io);
	g_free(p->unified);
	g_clear_pointer(&p->cpu, g_free);
	g_clear_pointer(&p->cpuset, g_free);
	g_clear_pointer(&p->memory, g_free);
	g_clear_pointer(&p->cpuacct, g_free);
}

static gboolean names_controller(const char *list, const char *controller)
{
	g_auto(GStrv) names = g_strsplit(list, ",", -1);
	return g_strv_contains((const char *const *)names, controller);
}

int cgroup_parse_membership(const char *text, const struct cgroup_config *cfg,
			    struct cgroup_paths *ret)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	struct cgroup_paths p = { 0 };

	for (char **line = lines; *line; line++) {
		if (**line == '\0')
			continue;
		/* hierarchy-id:controller-list:path, path may hold ':' */
		g_auto(GStrv) f = g_strsplit(*line, ":", 3);
		if (g_strv_length(f) != 3 || f[2][0] != '/') {
			cgroup_paths_clear(&p);
			return -EINVAL;
		}
		gboolean v2 = strcmp(f[0], "0") == 0 && f[1][0] == '\0';
		struct {
			const struct cgroup_hierarchy *h;
			const char *controller;
			char **slot;
		} wants[] = { { &cfg->cpu, "cpu", &p.cpu },
			      { &cfg->cpuset, "cpuset", &p.cpuset },
			      { &cfg->memory, "memory", &p.memory },
			      { &cfg->cpuacct, "cpuacct", &p.cpuacct },
			      { &cfg->io, "blkio", &p.io }, /* v2: "io", on the 0:: line as all */
			      { &cfg->unified, "", &p.unified } };
		for (size_t i = 0; i < G_N_ELEMENTS(wants); i++) {
			gboolean match = wants[i].h->version == CGROUP_V2 ? v2
				       : wants[i].h->version == CGROUP_V1 && !v2 &&
					 names_controller(f[1], wants[i].controller);
			if (match && !*wants[i].slot)
				*wants[i].slot = g_strdup(f[2]);
		}
	}
	*ret = p;
	return 0;
}

/* The cgroup's directory relative to the hierarchy's mount: "." for the
 * mount's own cgroup. NULL if the cgroup is outside what is mounted,
 * which includes a path with "..": the kernel writes those for a cgroup
 * outside the reader's cgroup namespace, and they must not lead above
 * the mount. */
static char *relative_dir(const struct cgroup_hierarchy *h, const char *path)
{
	const char *root = h->mount_root ? h->mount_root : "/";
	size_t n = strlen(root);

	if (strcmp(root, "/") != 0) {
		if (strncmp(path, root, n) != 0 || (path[n] != '/' && path[n] != '\0'))
			return NULL;
		path += n;
	}
	while (*path == '/')
		path++;
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);
	for (char **p = parts; *p; p++)
		if (strcmp(*p, "..") == 0)
			return NULL;
	return g_strdup(*path ? path : ".");
}

/* The parent of a relative dir; FALSE at the top. */
static gboolean step_up(char *dir)
{
	if (strcmp(dir, ".") == 0)
		return FALSE;
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	return TRUE;
}

int cgroup_read_text(const struct cgroup_hierarchy *h, const char *dir, const char *name, char **ret)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	int r = procfile_read_text_at(h->root_fd, path, ret);
	if (r == 0)
		g_strstrip(*ret);
	return r;
}

int cgroup_bad(const char *dir, const char *name, char **ret_culprit)
{
	if (ret_culprit)
		*ret_culprit = g_build_filename(dir, name, NULL);
	return -EINVAL;
}

static gboolean parse_positive(const char *text, uint64_t *ret)
{
	guint64 v;
	if (!g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT64, &v, NULL))
		return FALSE;
	*ret = v;
	return TRUE;
}

__extension__ typedef unsigned __int128 u128;

/* Keep the smaller ratio quota/period of (q, p) and the limits so far. */
static void keep_smaller_quota(struct cgroup_limits *l, uint64_t q, uint64_t p)
{
	/* q/p < lq/lp  <=>  q*lp < lq*p, in 128 bits */
	if (!l->has_quota ||
	    (u128)q * l->period_us < (u128)l->quota_us * p) {
		l->has_quota = TRUE;
		l->quota_us = q;
		l->period_us = p;
	}
}

/* One level's quota and period: 0, -errno, or -EINVAL for garbage (then
 * *ret_culprit names the file). *ret_limited is FALSE for "no limit" (v1
 * quota -1, v2 "max", or no such file); *q and *p mean something only when
 * it is TRUE. */
static int level_quota(const struct cgroup_hierarchy *h, const char *dir, uint64_t *q, uint64_t *p,
		       gboolean *ret_limited, char **ret_culprit)
{
	g_autofree char *a = NULL, *b = NULL;
	int r;

	*ret_limited = FALSE;
	if (h->version == CGROUP_V2) {
		r = cgroup_read_text(h, dir, "cpu.max", &a);
		if (r == -ENOENT)
			return 0; /* the root cgroup has none */
		if (r < 0)
			return r == -EINVAL ? cgroup_bad(dir, "cpu.max", ret_culprit) : r;
		g_auto(GStrv) f = g_strsplit(a, " ", -1);
		if (g_strv_length(f) != 2 || !parse_positive(f[1], p))
			return cgroup_bad(dir, "cpu.max", ret_culprit);
		if (strcmp(f[0], "max") == 0)
			return 0;
		if (!parse_positive(f[0], q))
			return cgroup_bad(dir, "cpu.max", ret_culprit);
		*ret_limited = TRUE;
		return 0;
	}
	r = cgroup_read_text(h, dir, "cpu.cfs_quota_us", &a);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r == -EINVAL ? cgroup_bad(dir, "cpu.cfs_quota_us", ret_culprit) : r;
	if (strcmp(a, "-1") == 0)
		return 0;
	if (!parse_positive(a, q))
		return cgroup_bad(dir, "cpu.cfs_quota_us", ret_culprit);
	r = cgroup_read_text(h, dir, "cpu.cfs_period_us", &b);
	if (r < 0 || !parse_positive(b, p))
		return r < 0 && r != -EINVAL ? r : cgroup_bad(dir, "cpu.cfs_period_us", ret_culprit);
	*ret_limited = TRUE;
	return 0;
}

static int read_quota(const struct cgroup_hierarchy *h, const char *path, struct cgroup_limits *l,
		      char **ret_culprit)
{
	g_autofree char *dir = relative_dir(h, path);
	if (!dir)
		return -ENOENT;
	if (strcmp(dir, ".") != 0 && faccessat(h->root_fd, dir, F_OK, 0) < 0)
		return -ENOENT; /* the cgroup vanished */
	do {
		uint64_t q = 0, p = 0;
		gboolean limited;
		int r = level_quota(h, dir, &q, &p, &limited, ret_culprit);
		if (r < 0)
			return r;
		if (limited)
			keep_smaller_quota(l, q, p);
	} while (step_up(dir));
	return 0;
}

static int read_cpuset(const struct cgroup_hierarchy *h, const char *path, struct cgroup_limits *l,
		       char **ret_culprit)
{
	g_autofree char *dir = relative_dir(h, path);
	/* v2 and newer v1 kernels write the effective set; older v1 leave it
	 * to be found in cpuset.cpus, walking up while a level is empty. */
	const char *names[] = { h->version == CGROUP_V2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus",
				"cpuset.cpus" };
	if (!dir)
		return -ENOENT;
	if (strcmp(dir, ".") != 0 && faccessat(h->root_fd, dir, F_OK, 0) < 0)
		return -ENOENT;
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *walk = g_strdup(dir);
		do {
			g_autofree char *text = NULL;
			int r = cgroup_read_text(h, walk, names[i], &text);
			if (r == -ENOENT)
				continue;
			if (r < 0 || cpuset_parse_list(text, &l->cpuset) < 0)
				return r < 0 && r != -EINVAL ? r : cgroup_bad(walk, names[i], ret_culprit);
			if (cpuset_count(&l->cpuset) == 0)
				continue;
			l->has_cpuset = TRUE;
			return 0;
		} while (step_up(walk));
	}
	/* The controller is there but no level names a CPU: garbage. */
	return cgroup_bad(dir, names[0], ret_culprit);
}

int cgroup_read_limits(const struct cgroup_config *cfg, const struct cgroup_paths *p,
		       struct cgroup_limits *ret, char **ret_culprit)
{
	struct cgroup_limits l = { 0 };
	int r;

	if (cfg->cpuset.version != CGROUP_NONE && p->cpuset) {
		r = read_cpuset(&cfg->cpuset, p->cpuset, &l, ret_culprit);
		if (r < 0)
			return r;
	}
	if (cfg->cpu.version != CGROUP_NONE && p->cpu) {
		r = read_quota(&cfg->cpu, p->cpu, &l, ret_culprit);
		if (r < 0)
			return r;
	}
	*ret = l;
	return 0;
}

unsigned cgroup_quota_cpus(uint64_t quota_us, uint64_t period_us)
{
	uint64_t n = quota_us / period_us + (quota_us % period_us != 0);
	return n == 0 ? 1 : n > CPUSET_MAX ? CPUSET_MAX : (unsigned)n;
}

/* ------------------------------------------------------------- memory -- */

char *cgroup_relative_dir(const struct cgroup_hierarchy *h, const char *path)
{
	return relative_dir(h, path);
}

/* A v1 limit at or above this is "none": the kernel writes its page
 * counter's maximum (2^63 less a page), and no machine has 4 EiB. */
#define V1_UNLIMITED (UINT64_C(1) << 62)

/* One number in dir/name (bytes, nanoseconds): 0, -ENOENT, or -EINVAL
 * (culprit). For a limit, *ret_none says "no limit" (v2 "max", v1 its
 * maximum). */
static int read_bytes(const struct cgroup_hierarchy *h, const char *dir, const char *name, uint64_t *ret,
		      gboolean *ret_none, char **ret_culprit)
{
	g_autofree char *text = NULL;
	guint64 v = 0;
	int r = cgroup_read_text(h, dir, name, &text);
	if (r < 0)
		return r == -EINVAL ? cgroup_bad(dir, name, ret_culprit) : r;
	gboolean none = h->version == CGROUP_V2 && strcmp(text, "max") == 0;
	if (!none && !g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &v, NULL))
		return cgroup_bad(dir, name, ret_culprit);
	if (ret_none)
		*ret_none = none || (h->version == CGROUP_V1 && v >= V1_UNLIMITED);
	*ret = v;
	return 0;
}

/* The smallest limit in name over dir and its ancestors. *ret_limited
 * FALSE if no level has one; -ENOENT if dir itself has no such file. */
static int smallest_limit(const struct cgroup_hierarchy *h, const char *dir, const char *name, uint64_t *ret,
			  gboolean *ret_limited, char **ret_culprit)
{
	g_autofree char *walk = g_strdup(dir);
	*ret_limited = FALSE;
	do {
		uint64_t v;
		gboolean none;
		int r = read_bytes(h, walk, name, &v, &none, ret_culprit);
		if (r == -ENOENT && strcmp(walk, dir) != 0)
			continue; /* a level above without the file: v2's root */
		if (r < 0)
			return r;
		if (!none && (!*ret_limited || v < *ret)) {
			*ret = v;
			*ret_limited = TRUE;
		}
	} while (step_up(walk));
	return 0;
}

int cgroup_charged_level(const struct cgroup_hierarchy *h, const char *dir, const char *file, char **ret)
{
	if (strcmp(dir, ".") != 0 && faccessat(h->root_fd, dir, F_OK, 0) < 0)
		return -ENOENT; /* the cgroup vanished */
	g_autofree char *walk = g_strdup(dir);
	while (step_up(walk)) {
		g_autofree char *path = g_build_filename(walk, file, NULL);
		if (faccessat(h->root_fd, path, F_OK, 0) == 0)
			break;
	}
	*ret = g_steal_pointer(&walk);
	return 0;
}

/* The smallest memory limit (smallest_limit) over the level the memory of
 * the cgroup at dir is charged to and its ancestors; *ret_level that
 * level, dir unless its limit file is missing (NULL if the cgroup is
 * gone). */
static int memory_limit(const struct cgroup_hierarchy *h, const char *dir, uint64_t *ret, gboolean *ret_limited,
			char **ret_level, char **ret_culprit)
{
	const char *name = h->version == CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes";
	int r = smallest_limit(h, dir, name, ret, ret_limited, ret_culprit);
	if (r != -ENOENT) {
		*ret_level = g_strdup(dir);
		return r;
	}
	r = cgroup_charged_level(h, dir, name, ret_level);
	return r < 0 ? r : smallest_limit(h, *ret_level, name, ret, ret_limited, ret_culprit);
}

int cgroup_memory_limited(const struct cgroup_hierarchy *h, const char *dir, gboolean *ret)
{
	uint64_t v;
	g_autofree char *level = NULL;
	return memory_limit(h, dir, &v, ret, &level, NULL);
}

/* The lines of dir/name: 0, -errno, or -EINVAL (culprit) for a file the
 * kernel would not write. */
static int read_lines(const struct cgroup_hierarchy *h, const char *dir, const char *name, GStrv *ret,
		      char **ret_culprit)
{
	g_autofree char *text = NULL;
	int r = cgroup_read_text(h, dir, name, &text);
	if (r < 0)
		return r == -EINVAL ? cgroup_bad(dir, name, ret_culprit) : r;
	*ret = g_strsplit(text, "\n", -1);
	return 0;
}

/* v1 memory.stat names for v2's: the hierarchical totals. */
static const char *const v1_stat_names[][2] = {
	{ "total_cache", "file" },
	{ "total_rss", "anon" },
	{ "total_rss_huge", "anon_thp" },
	{ "total_shmem", "shmem" },
	{ "total_mapped_file", "file_mapped" },
	{ "total_dirty", "file_dirty" },
	{ "total_writeback", "file_writeback" },
	{ "total_swapcached", "swapcached" },
	{ "total_pgfault", "pgfault" },
	{ "total_pgmajfault", "pgmajfault" },
	{ "total_inactive_anon", "inactive_anon" },
	{ "total_active_anon", "active_anon" },
	{ "total_inactive_file", "inactive_file" },
	{ "total_active_file", "active_file" },
	{ "total_unevictable", "unevictable" },
	{ "total_workingset_refault_anon", "workingset_refault_anon" },
	{ "total_workingset_refault_file", "workingset_refault_file" },
};

/* The v2 name of a memory.stat key of h's version, or NULL: not used. */
static const char *stat_name(const struct cgroup_hierarchy *h, const char *key)
{
	if (h->version == CGROUP_V2)
		return key;
	for (size_t i = 0; i < G_N_ELEMENTS(v1_stat_names); i++)
		if (strcmp(v1_stat_names[i][0], key) == 0)
			return v1_stat_names[i][1];
	return NULL;
}

static int read_stat(const struct cgroup_hierarchy *h, const char *dir, GHashTable *stat, char **ret_culprit)
{
	g_auto(GStrv) lines = NULL;
	int r = read_lines(h, dir, "memory.stat", &lines, ret_culprit);
	if (r < 0)
		return r;
	for (char **line = lines; *line; line++) {
		if (**line == '\0')
			continue;
		g_auto(GStrv) f = g_strsplit(*line, " ", -1);
		guint64 v;
		if (g_strv_length(f) != 2 || !g_ascii_string_to_unsigned(f[1], 10, 0, G_MAXUINT64, &v, NULL))
			return cgroup_bad(dir, "memory.stat", ret_culprit);
		const char *name = stat_name(h, f[0]);
		if (name)
			g_hash_table_insert(stat, g_strdup(name), g_memdup2(&v, sizeof(v)));
	}
	return 0;
}

/* Swap: v2 memory.swap.*; v1 memsw (memory + swap) less memory. Absent
 * files: the kernel does not count the cgroup's swap. */
static int read_swap(const struct cgroup_hierarchy *h, const char *dir, struct mem_figures *f, char **ret_culprit)
{
	gboolean v2 = h->version == CGROUP_V2;
	uint64_t limit = 0, usage = 0;
	int r = smallest_limit(h, dir, v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes", &limit,
			       &f->swap_limited, ret_culprit);
	if (r == 0)
		r = read_bytes(h, dir, v2 ? "memory.swap.current" : "memory.memsw.usage_in_bytes", &usage, NULL,
			       ret_culprit);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	f->swap_accounted = TRUE;
	f->swap_limit = v2 ? limit : limit > f->limit ? limit - f->limit : 0;
	f->swap_usage = v2 ? usage : usage > f->usage ? usage - f->usage : 0;
	return 0;
}

int cgroup_read_memory(const struct cgroup_hierarchy *h, const char *dir, struct mem_figures *ret,
		       gboolean *ret_limited, char **ret_culprit)
{
	gboolean v2 = h->version == CGROUP_V2;
	struct mem_figures f = { 0 };
	g_autofree char *level = NULL;

	*ret_limited = FALSE;
	int r = memory_limit(h, dir, &f.limit, ret_limited, &level, ret_culprit);
	if (r == -ENOENT && g_strcmp0(level, ".") == 0)
		return 0; /* no level with the controller (v2's root): no limit, no files */
	if (r < 0 || !*ret_limited)
		return r;
	dir = level; /* its figures are that level's */
	f.stat = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	r = read_bytes(h, dir, v2 ? "memory.current" : "memory.usage_in_bytes", &f.usage, NULL, ret_culprit);
	if (r == 0)
		r = read_swap(h, dir, &f, ret_culprit);
	if (r == 0)
		r = read_stat(h, dir, f.stat, ret_culprit);
	if (r < 0) {
		mem_figures_clear(&f);
		*ret_limited = FALSE;
		return r;
	}
	*ret = f;
	return 0;
}

/* ---------------------------------------------------------- CPU usage -- */

/* The cgroup's directory in h, or NULL (-ENOENT) if it is not there. */
static char *existing_dir(const struct cgroup_hierarchy *h, const char *path)
{
	g_autofree char *dir = relative_dir(h, path);
	if (!dir || (strcmp(dir, ".") != 0 && faccessat(h->root_fd, dir, F_OK, 0) < 0))
		return NULL;
	return g_steal_pointer(&dir);
}

gboolean cgroup_parse_u64(const char *text, uint64_t *ret)
{
	guint64 v;
	if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &v, NULL))
		return FALSE;
	*ret = v;
	return TRUE;
}

/* The numbers of keys[0 .. n) in dir/name's "key N" lines (other keys
 * skipped): 0, -ENOENT, or -EINVAL (culprit) for a line of another shape
 * or a key missing. */
static int read_keyed(const struct cgroup_hierarchy *h, const char *dir, const char *name,
		      const char *const keys[], size_t n, uint64_t ret[], char **ret_culprit)
{
	g_auto(GStrv) lines = NULL;
	int r = read_lines(h, dir, name, &lines, ret_culprit);
	if (r < 0)
		return r;
	unsigned found = 0;
	for (char **line = lines; *line; line++) {
		g_auto(GStrv) f = g_strsplit(*line, " ", -1);
		uint64_t v;
		if (g_strv_length(f) != 2 || !cgroup_parse_u64(f[1], &v))
			return cgroup_bad(dir, name, ret_culprit);
		for (size_t i = 0; i < n; i++)
			if (strcmp(f[0], keys[i]) == 0)
				ret[i] = v, found |= 1u << i;
	}
	return found == (1u << n) - 1 ? 0 : cgroup_bad(dir, name, ret_culprit);
}

/* v1: the time from cpuacct.usage, to the nanosecond (the time the
 * scheduler ran its tasks), split into user and system as cpuacct.stat
 * splits its clock ticks. Not cpuacct.usage_all's user and system: each
 * tick charges its whole length to whoever runs then, and under a quota
 * they were seen 10 % over the time used, and 46 % over while the CPUs were
 * shared with other busy tasks. */
static int read_cpuacct(const struct cgroup_hierarchy *h, const char *dir, struct cgroup_cpu_time *t,
			char **ret_culprit)
{
	static const char *const keys[] = { "user", "system" };
	uint64_t ns, ticks[2];
	int r = read_bytes(h, dir, "cpuacct.usage", &ns, NULL, ret_culprit);
	if (r == 0)
		r = read_keyed(h, dir, "cpuacct.stat", keys, 2, ticks, ret_culprit);
	if (r < 0)
		return r;
	if (ticks[0] > UINT64_MAX / 2 || ticks[1] > UINT64_MAX / 2)
		return cgroup_bad(dir, "cpuacct.stat", ret_culprit);
	uint64_t sum = ticks[0] + ticks[1];
	__extension__ typedef unsigned __int128 wide; /* ns * ticks: up to 128 bits */
	t->user_ns = sum ? (uint64_t)((wide)ns * ticks[0] / sum) : ns;
	t->system_ns = ns - t->user_ns;
	return 0;
}

/* v2 cpu.stat: "user_usec N", "system_usec N" among others. */
static int read_cpu_stat(const struct cgroup_hierarchy *h, const char *dir, struct cgroup_cpu_time *t,
			 char **ret_culprit)
{
	static const char *const keys[] = { "user_usec", "system_usec" };
	uint64_t us[2];
	int r = read_keyed(h, dir, "cpu.stat", keys, 2, us, ret_culprit);
	if (r < 0)
		return r;
	if (us[0] > UINT64_MAX / 1000 || us[1] > UINT64_MAX / 1000)
		return cgroup_bad(dir, "cpu.stat", ret_culprit);
	t->user_ns = us[0] * 1000;
	t->system_ns = us[1] * 1000;
	return 0;
}

int cgroup_read_cpu_usage(const struct cgroup_config *cfg, const struct cgroup_paths *p,
			  struct cgroup_cpu_time *ret, char **ret_culprit)
{
	gboolean v2 = cfg->cpu.version == CGROUP_V2;
	const struct cgroup_hierarchy *h = v2 ? &cfg->cpu : &cfg->cpuacct;
	const char *path = v2 ? p->cpu : p->cpuacct;
	struct cgroup_cpu_time t = { 0, 0 };

	if (h->version == CGROUP_NONE || !path)
		return -ENOENT;
	g_autofree char *dir = existing_dir(h, path);
	if (!dir)
		return -ENOENT;
	int r = v2 ? read_cpu_stat(h, dir, &t, ret_culprit) : read_cpuacct(h, dir, &t, ret_culprit);
	if (r == 0)
		*ret = t;
	return r;
}
