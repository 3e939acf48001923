#include "cputime.h"

#include "classhash.h"
#include "ino.h"
#include "procfile.h"
#include "scope.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cputimes {
	struct cputimes_config cfg;
	struct deciders keys;         /* by the classes of their uptime, stat and loadavg texts */
	struct loadavgs *loads;       /* NULL: --no-loadavg */
	struct reports reports;       /* files that could not be used */
	struct cpu_counters *counters; /* stat's, never going back */
	gint64 swept_at;              /* when counters last forgot the gone */
	long ticks_per_s;
};

/* How often the counters of cgroups gone are forgotten. */
#define SWEEP_US (60 * G_USEC_PER_SEC)

gpointer cputime_key_ref(gpointer key)
{
	return g_atomic_rc_box_acquire(key);
}

static void key_clear(gpointer key)
{
	struct cputime_key *k = key;
	cpu_map_unref(k->map);
}

void cputime_key_unref(gpointer key)
{
	if (key)
		g_atomic_rc_box_release_full(key, key_clear);
}

static uint64_t hash_key(const char *what, const uint64_t *head, size_t n, const char *group)
{
	return classhash(what, head, n * sizeof(head[0]), group, strlen(group));
}

/* uptime: the namespace's epoch, the CPUs and the CPU time of the cgroup. */
uint64_t cputime_uptime_class(gconstpointer p)
{
	const struct cputime_key *k = p;
	const uint64_t head[] = { k->ns, k->init_start, k->map->count };
	return hash_key("uptime:", head, G_N_ELEMENTS(head), k->group);
}

/* stat: the CPUs, and the CPU time of the cgroup since it was made. */
uint64_t cputime_stat_class(gconstpointer p)
{
	const struct cputime_key *k = p;
	const uint64_t head[] = { cpu_map_class(k->map), (uint64_t)k->epoch_us };
	return hash_key("stat:", head, G_N_ELEMENTS(head), k->group);
}

/* loadavg: the threads of the cgroup. */
uint64_t cputime_loadavg_class(gconstpointer p)
{
	const struct cputime_key *k = p;
	return hash_key("loadavg:", NULL, 0, k->group);
}

/* The hierarchy that counts CPU time: v2's cpu, v1's cpuacct. */
static const struct cgroup_hierarchy *usage_hierarchy(const struct cputimes *t)
{
	return t->cfg.cgroups.cpu.version == CGROUP_V2 ? &t->cfg.cgroups.cpu : &t->cfg.cgroups.cpuacct;
}

/* tid's cgroup in it, as /proc/<tid>/cgroup names it, or NULL; NULL too
 * for the hierarchy's top, whose time is every process's (a caller limited
 * by cpu and cpuset cgroups only, with no cpuacct one of its own). -EIO
 * where tid's scope cannot be found (scope.h). */
static int usage_group(const struct cputimes *t, pid_t tid, char **ret)
{
	struct scope_found found = { 0 };
	char *group = NULL;

	if (scope_find(t->cfg.scope, tid, &found) < 0)
		return -EIO;
	if (!found.host)
		group = g_strdup(t->cfg.cgroups.cpu.version == CGROUP_V2 ? found.paths.cpu : found.paths.cpuacct);
	scope_found_clear(&found);
	g_autofree char *dir = group ? cgroup_relative_dir(usage_hierarchy(t), group) : NULL;
	if (!dir || strcmp(dir, ".") == 0)
		g_clear_pointer(&group, g_free);
	*ret = group;
	return 0;
}

/* When the cgroup was made: its directory's change time, which neither a
 * process joining nor a child cgroup moves. 0 if unknown. */
static gint64 made_at(const struct cputimes *t, const char *group)
{
	const struct cgroup_hierarchy *h = usage_hierarchy(t);
	g_autofree char *dir = h->version != CGROUP_NONE ? cgroup_relative_dir(h, group) : NULL;
	struct stat st;
	if (!dir || fstatat(h->root_fd, dir, &st, 0) < 0)
		return 0;
	return (gint64)st.st_ctim.tv_sec * G_USEC_PER_SEC + st.st_ctim.tv_nsec / 1000;
}

static int find_key(void *data, pid_t tid, gpointer *ret)
{
	struct cputimes *t = data;
	uint64_t ns = 0, start = 0;
	gboolean foreign = nsinits_of(t->cfg.nsinits, tid, &ns, &start);
	/* Now, not as this thread kept it: a key kept half a second on a map
	 * kept half a second would let stat lag cpuinfo by a second. */
	g_autoptr(cpu_map) map = NULL;
	int r = cpuview_map_fresh(t->cfg.cpuview, tid, &map);
	/* Under the container rule the scope says who gets the host's time;
	 * otherwise a caller whose CPUs are the host's does. */
	gboolean own = r == 0 && (scope_decides_host(t->cfg.scope) || foreign || !map->is_host);
	g_autofree char *group = NULL;
	if (r == 0 && own)
		r = usage_group(t, tid, &group);
	if (r < 0)
		return r;
	struct cputime_key *k = g_atomic_rc_box_alloc0(sizeof(*k) + (group ? strlen(group) : 0) + 1);
	k->map = g_steal_pointer(&map);
	k->ns = foreign ? ns : 0;
	k->init_start = start;
	k->epoch_us = group ? made_at(t, group) : 0;
	strcpy(k->group, group ? group : "");
	*ret = k;
	return 0;
}

struct cputimes *cputimes_new(const struct cputimes_config *cfg)
{
	struct cputimes *t = g_new0(struct cputimes, 1);
	t->cfg = *cfg;
	t->ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	static const deciders_class_fn classes[] = { cputime_uptime_class, cputime_stat_class, cputime_loadavg_class,
						     NULL };
	deciders_init(&t->keys, find_key, classes, cputime_key_ref, cputime_key_unref, t);
	reports_init(&t->reports, cfg->report, cfg->report_data);
	t->counters = cpu_counters_new(cfg->counters_path);
	t->swept_at = g_get_monotonic_time();
	if (cfg->loadavg)
		t->loads = loadavgs_new(cfg->proc_fd, usage_hierarchy(t));
	return t;
}

void cputimes_free(struct cputimes *t)
{
	if (!t)
		return;
	deciders_clear(&t->keys);
	loadavgs_free(t->loads);
	cpu_counters_free(t->counters);
	reports_clear(&t->reports);
	g_free(t);
}

struct deciders *cputimes_deciders(struct cputimes *t)
{
	return &t->keys;
}

gboolean cputimes_serves_loadavg(const struct cputimes *t)
{
	return t->loads != NULL;
}

static gboolean group_gone(const char *group, gint64 epoch, void *data)
{
	return made_at(data, group) != epoch;
}

void cputimes_hand_over(struct cputimes *t)
{
	cpu_counters_flush(t->counters);
}

void cputimes_take_over(struct cputimes *t)
{
	cpu_counters_reload(t->counters);
}

void cputimes_unkeep(struct cputimes *t)
{
	cpu_counters_unkeep(t->counters);
}

void cputimes_sample_due(struct cputimes *t, gint64 *ret_wait_us)
{
	gint64 now = g_get_monotonic_time();
	cpu_counters_flush(t->counters);
	if (now - t->swept_at >= SWEEP_US) {
		cpu_counters_sweep(t->counters, group_gone, t);
		t->swept_at = now;
	}
	gint64 wait_us = G_MAXINT64;
	if (t->loads)
		loadavgs_sample_due(t->loads, &wait_us);
	*ret_wait_us = MIN(wait_us, t->swept_at + SWEEP_US - now);
}

/* The CPU time the key's cgroup used: 0, -ENOENT (none counted), or
 * -EINVAL (garbage, told once). */
static int cgroup_used(struct cputimes *t, const struct cputime_key *key, struct cgroup_cpu_time *ret)
{
	struct cgroup_paths paths = { 0 };
	if (!*key->group)
		return -ENOENT;
	if (t->cfg.cgroups.cpu.version == CGROUP_V2)
		paths.cpu = (char *)key->group;
	else
		paths.cpuacct = (char *)key->group;
	g_autofree char *culprit = NULL;
	int r = cgroup_read_cpu_usage(&t->cfg.cgroups, &paths, ret, &culprit);
	if (r == -EINVAL)
		reports_once(&t->reports, culprit ? culprit : key->group, EINVAL);
	return r;
}

/* The two numbers of an uptime text. */
static gboolean parse_uptime(const char *text, double *up, double *idle)
{
	char *end;
	*up = g_ascii_strtod(text, &end);
	if (end == text || *end != ' ' || *up < 0)
		return FALSE;
	const char *second = end + 1;
	*idle = g_ascii_strtod(second, &end);
	return end != second && *idle >= 0 && (*end == '\n' || *end == '\0');
}

int cputime_render_uptime(const char *host, double init_start_s, unsigned cpus, double used_s, GString **ret)
{
	double host_up, host_idle;
	if (!parse_uptime(host, &host_up, &host_idle))
		return -EINVAL;
	double up = CLAMP(host_up - init_start_s, 0, host_up);
	double idle = CLAMP(cpus * up - used_s, 0, host_idle);
	*ret = g_string_new(NULL);
	g_string_append_printf(*ret, "%.2f %.2f\n", up, idle);
	return 0;
}

/* The caller's own text made from the host's, or NULL: the host's. */
typedef GString *(*own_fn)(struct cputimes *t, const struct cputime_key *key, const char *host);

/* proc/<name> for key: own's text (0), or the host's file as it is
 * (SERVED_HOST). */
static int render_from_host(struct cputimes *t, const char *name, const struct cputime_key *key, own_fn own,
			    GBytes **ret)
{
	g_autofree char *host = NULL;
	int r = procfile_read_text_at(t->cfg.proc_fd, name, &host);
	if (r < 0)
		return r;
	GString *out = own(t, key, host);
	if (out) {
		*ret = g_string_free_to_bytes(out);
		return 0;
	}
	size_t len = strlen(host);
	*ret = g_bytes_new_take(g_steal_pointer(&host), len);
	return SERVED_HOST;
}

static GString *own_uptime(struct cputimes *t, const struct cputime_key *key, const char *host)
{
	struct cgroup_cpu_time used = { 0, 0 };
	GString *out = NULL;
	/* The host's namespace, or garbage: the host's file. No hierarchy
	 * counts the cgroup's time: none used. */
	if (!key->ns || cgroup_used(t, key, &used) == -EINVAL)
		return NULL;
	double used_s = (double)(used.user_ns + used.system_ns) / 1e9;
	if (cputime_render_uptime(host, (double)key->init_start / (double)t->ticks_per_s, key->map->count, used_s,
				  &out) < 0)
		return NULL;
	return out;
}

int cputimes_render_uptime(struct cputimes *t, const struct cputime_key *key, GBytes **ret)
{
	return render_from_host(t, "uptime", key, own_uptime, ret);
}

/* text's "key N" line, N now value. */
static void set_stat_line(GString *text, const char *key, unsigned value)
{
	g_autofree char *head = g_strconcat("\n", key, " ", NULL);
	const char *at = strstr(text->str, head);
	if (!at)
		return;
	gsize from = (gsize)(at - text->str) + strlen(head);
	gsize to = from + strcspn(text->str + from, "\n");
	g_autofree char *number = g_strdup_printf("%u", value);
	g_string_erase(text, (gssize)from, (gssize)(to - from));
	g_string_insert(text, (gssize)from, number);
}

/* The view's CPUs (the CPU view), and the cgroup's CPU time in them. */
static GString *own_stat(struct cputimes *t, const struct cputime_key *key, const char *host)
{
	g_autoptr(GString) view = NULL;
	if (cpuview_render_stat(host, key->map, &view) < 0)
		return NULL; /* not understood: the host's */
	struct cgroup_cpu_time used;
	GString *own = NULL;
	uint64_t ns_per_tick = UINT64_C(1000000000) / (uint64_t)t->ticks_per_s;
	gint64 elapsed_us = g_get_real_time() - key->epoch_us;
	unsigned n = key->map->count;
	if (!key->epoch_us || cgroup_used(t, key, &used) < 0)
		return g_steal_pointer(&view);
	g_autofree cpu_ticks *rows = g_new(cpu_ticks, n + 1);
	cpu_counters_follow(t->counters, key->group, key->epoch_us, used.user_ns / ns_per_tick,
			    used.system_ns / ns_per_tick, elapsed_us > 0 ? (uint64_t)elapsed_us * 1000 / ns_per_tick : 0,
			    n, key->map->host, rows);
	if (cpuview_render_stat_usage(view->str, n, rows, &own) < 0)
		return g_steal_pointer(&view);
	/* the cgroup's threads, as the load sampler last counted them */
	unsigned running, blocked;
	if (t->loads && loadavgs_counts(t->loads, key->group, &running, &blocked)) {
		set_stat_line(own, "procs_running", running);
		set_stat_line(own, "procs_blocked", blocked);
	}
	return own;
}

int cputimes_render_stat(struct cputimes *t, const struct cputime_key *key, GBytes **ret)
{
	return render_from_host(t, "stat", key, own_stat, ret);
}

static GString *own_loadavg(struct cputimes *t, const struct cputime_key *key, const char *host)
{
	GString *own = NULL;
	if (!*key->group || !t->loads || loadavgs_render(t->loads, key->group, host, key->ns != 0, &own) < 0)
		return NULL;
	return own;
}

int cputimes_render_loadavg(struct cputimes *t, const struct cputime_key *key, GBytes **ret)
{
	return render_from_host(t, "loadavg", key, own_loadavg, ret);
}
