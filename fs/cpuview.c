#include "cpuview.h"

#include "classes.h"
#include "classhash.h"
#include "cpuplace.h"
#include "ino.h"
#include "procfile.h"
#include "reports.h"
#include "scope.h"
#include "tidcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How often the placed containers' cgroups are checked to be there. */
#define PLACE_SWEEP_US (10 * G_USEC_PER_SEC)
/* How often, at most, a request writes the placements for the next daemon
 * (a change is written by the next placement after that, or at a handover). */
#define PLACE_KEEP_US G_USEC_PER_SEC

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
	struct cpuplace *place; /* quota-limited containers' CPUs (its own lock) */
	gint sweeping;          /* atomic: a thread sweeps place; guards swept_us */
	gint64 swept_us;        /* when place's cgroups were last checked */
	/* guards kept_generation and kept_us, and is held while
	 * placement_path is written: one writer at a time, others leave it to
	 * that one. */
	GMutex keep_lock;
	guint64 kept_generation; /* place's generation last written */
	gint64 kept_us;          /* when it was last written */
};

/* ---------------------------------------------------------------- maps -- */

static uint64_t map_class(const struct cpu_map *m);

unsigned cpu_map_allowed(const struct cpuset *online, const struct cgroup_limits *limits, gboolean use_quota,
			 struct cpuset *ret)
{
	struct cpuset visible = *online;

	if (limits && limits->has_cpuset)
		cpuset_intersect(&visible, &limits->cpuset);
	if (cpuset_count(&visible) == 0) /* a cpuset of offline CPUs only */
		visible = *online;
	unsigned n = cpuset_count(&visible);
	if (use_quota && limits && limits->has_quota)
		n = MIN(n, cgroup_quota_cpus(limits->quota_us, limits->period_us));
	*ret = visible;
	return MAX(n, 1);
}

struct cpu_map *cpu_map_of(const struct cpuset *online, const unsigned *cpus, unsigned n)
{
	struct cpu_map *m = g_atomic_rc_box_alloc0(sizeof(*m) + MAX(n, 1) * sizeof(m->host[0]));
	memcpy(m->host, cpus, n * sizeof(m->host[0]));
	m->count = n;
	m->is_host = n == cpuset_count(online);
	m->class_id = map_class(m);
	return m;
}

struct cpu_map *cpu_map_new(const struct cpuset *online, const struct cgroup_limits *limits,
			    gboolean use_quota)
{
	struct cpuset allowed;
	unsigned n = cpu_map_allowed(online, limits, use_quota, &allowed);
	g_autofree unsigned *cpus = g_new(unsigned, n);
	n = cpuset_members(&allowed, cpus, n);
	return cpu_map_of(online, cpus, n);
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

/* ----------------------------------------------------------- placement -- */

static int read_online(struct cpuview *cv, struct cpuset *ret)
{
	g_autofree char *s = NULL;
	int r = procfile_read_text_at(cv->cfg.sys_cpu_fd, "online", &s);
	return r < 0 ? r : cpuset_parse_list(s, ret);
}

/* Each online CPU's core (the lowest of its thread siblings), for the
 * placement's ties; a CPU whose topology cannot be read is its own. */
static void read_cores(struct cpuview *cv, const struct cpuset *online)
{
	g_autofree unsigned *core = g_new(unsigned, CPUSET_MAX);
	for (unsigned c = 0; c < CPUSET_MAX; c++) {
		core[c] = c;
		if (!cpuset_has(online, c))
			continue;
		char path[64];
		g_autofree char *text = NULL;
		struct cpuset siblings;
		unsigned first;
		snprintf(path, sizeof(path), "cpu%u/topology/thread_siblings_list", c);
		if (procfile_read_text_at(cv->cfg.sys_cpu_fd, path, &text) == 0 &&
		    cpuset_parse_list(text, &siblings) == 0 && cpuset_members(&siblings, &first, 1) == 1)
			core[c] = first;
	}
	cpuplace_set_cores(cv->place, core, CPUSET_MAX);
}

/* Write the placements for the next daemon if they changed since last
 * written and (unless now) were last written PLACE_KEEP_US ago or more: a
 * tenant making cgroups in a loop has the file written once a second, not
 * at each. Under keep_lock. */
static void keep_placements_locked(struct cpuview *cv, gboolean now)
{
	guint64 generation = cpuplace_generation(cv->place);
	gint64 at = g_get_monotonic_time();
	if (generation == cv->kept_generation || (!now && at - cv->kept_us < PLACE_KEEP_US))
		return;
	g_autofree char *dump = cpuplace_dump(cv->place);
	g_autoptr(GError) error = NULL;
	if (g_file_set_contents_full(cv->cfg.placement_path, dump, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error))
		cv->kept_generation = generation;
	else
		g_debug("cannot keep the CPU placements: %s", error->message);
	cv->kept_us = at;
}

/* ... from a request: unless another thread writes them now. */
static void keep_placements(struct cpuview *cv)
{
	if (!cv->cfg.placement_path || !g_mutex_trylock(&cv->keep_lock))
		return;
	keep_placements_locked(cv, FALSE);
	g_mutex_unlock(&cv->keep_lock);
}

void cpuview_keep_placements(struct cpuview *cv)
{
	if (!cv || !cv->cfg.placement_path)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cv->keep_lock);
	keep_placements_locked(cv, TRUE);
}

void cpuview_reload_placements(struct cpuview *cv)
{
	g_autofree char *text = NULL;
	if (cv->cfg.placement_path && g_file_get_contents(cv->cfg.placement_path, &text, NULL, NULL) &&
	    cpuplace_load(cv->place, text) > 0)
		g_debug("%s: lines not understood, their containers are placed anew", cv->cfg.placement_path);
}

void cpuview_unkeep_placements(struct cpuview *cv)
{
	if (cv && cv->cfg.placement_path)
		unlink(cv->cfg.placement_path);
}

void cpuview_placement_counts(struct cpuview *cv, unsigned *ret_placed, guint64 *ret_full)
{
	cpuplace_counts(cv->place, ret_placed, ret_full);
}

/* A placement key's cgroup ("<inode> <dir>") is still there. */
static gboolean key_alive(struct cpuview *cv, const char *key)
{
	struct stat st;
	char *dir;
	guint64 ino = g_ascii_strtoull(key, &dir, 10);
	return *dir == ' ' && fstatat(cv->cfg.cgroups.cpu.root_fd, dir + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (guint64)st.st_ino == ino;
}

/* Let go of the containers whose cgroups are gone, at most once per
 * PLACE_SWEEP_US, by one thread, outside the table's lock. */
static void sweep_placements(struct cpuview *cv)
{
	if (!g_atomic_int_compare_and_exchange(&cv->sweeping, 0, 1))
		return; /* another thread checks them */
	if (g_get_monotonic_time() - cv->swept_us >= PLACE_SWEEP_US) {
		g_auto(GStrv) keys = cpuplace_keys(cv->place);
		for (char **k = keys; *k; k++)
			if (!key_alive(cv, *k))
				cpuplace_release(cv->place, *k);
		cv->swept_us = g_get_monotonic_time();
	}
	g_atomic_int_set(&cv->sweeping, 0);
}

/* The n CPUs of allowed placed for the container whose cpu cgroup is dir
 * (cgroup_relative_dir's) into cpus; the first n if it cannot be told. */
static void placed_cpus(struct cpuview *cv, const char *dir, const struct cpuset *allowed, unsigned n,
			unsigned *cpus)
{
	struct stat st;
	if (fstatat(cv->cfg.cgroups.cpu.root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		cpuset_members(allowed, cpus, n); /* gone: nothing to keep */
		return;
	}
	sweep_placements(cv);
	/* The inode too: a cgroup made again under the name is another
	 * container, and the sweep tells the old one is gone. */
	g_autofree char *key = g_strdup_printf("%" PRIu64 " %s", (uint64_t)st.st_ino, dir);
	(void)cpuplace_place(cv->place, key, allowed, n, cpus); /* -ENOSPC: the first n */
	keep_placements(cv);
}

/* ---------------------------------------------------------------- view -- */

int cpuview_new(const struct cpuview_config *cfg, struct cpuview **ret)
{
	struct cpuview *cv = g_new0(struct cpuview, 1);
	struct cpuset online;

	cv->cfg = *cfg;
	tidcache_init(&cv->maps, (gpointer(*)(gpointer))cpu_map_ref, (GDestroyNotify)cpu_map_unref);
	reports_init(&cv->reports, cfg->report, cfg->report_data);
	cv->classes = classes_new((classes_ref_fn)cpu_map_ref, (GDestroyNotify)cpu_map_unref);
	g_rw_lock_init(&cv->shorts_lock);
	cv->shorts = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	cv->place = cpuplace_new(CPUPLACE_MAX_ENTRIES);
	g_mutex_init(&cv->keep_lock);
	cv->swept_us = g_get_monotonic_time();
	if (read_online(cv, &online) == 0)
		read_cores(cv, &online);
	cpuview_reload_placements(cv);
	cv->kept_generation = cpuplace_generation(cv->place);
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
	cpuplace_free(cv->place);
	g_mutex_clear(&cv->keep_lock);
	g_free(cv);
}

/* The caller's limits: 1 and *ret, with *ret_dir its cpu cgroup
 * (cgroup_relative_dir's, or NULL); 0 (after reporting what was wrong)
 * when its cgroup files cannot be used, or it gets the host's; -EIO when
 * its scope cannot be found (its files are an error, not the host's). */
static int caller_limits(struct cpuview *cv, pid_t tid, struct cgroup_limits *ret, char **ret_dir)
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
	if (r == 0 && found.paths.cpu)
		*ret_dir = cgroup_relative_dir(&cv->cfg.cgroups.cpu, found.paths.cpu);
	scope_found_clear(&found);
	return r == 0;
}

static int compute_map(struct cpuview *cv, pid_t tid, struct cpu_map **ret)
{
	struct cpuset online, allowed;
	struct cgroup_limits limits;
	g_autofree char *dir = NULL;

	int limited = caller_limits(cv, tid, &limits, &dir);
	if (limited < 0)
		return limited;
	if (read_online(cv, &online) < 0) {
		reports_once(&cv->reports, "online", EINVAL);
		cpuset_clear(&online);
		cpuset_add(&online, 0);
	}
	unsigned n = cpu_map_allowed(&online, limited ? &limits : NULL, cv->cfg.use_quota, &allowed);
	g_autofree unsigned *cpus = g_new(unsigned, n);
	if (dir && n < cpuset_count(&allowed) && cv->cfg.placement == CPUVIEW_PLACE_SPREAD)
		placed_cpus(cv, dir, &allowed, n, cpus);
	else
		n = cpuset_members(&allowed, cpus, n);
	*ret = cpu_map_of(&online, cpus, n);
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
