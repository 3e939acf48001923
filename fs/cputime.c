#include "cputime.h"

#include "hash.h"
#include "ino.h"
#include "procfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cputimes {
	struct cputimes_config cfg;
	struct deciders keys;
	long ticks_per_s;
};

gpointer cputime_key_ref(gpointer key)
{
	return g_atomic_rc_box_acquire(key);
}

void cputime_key_unref(gpointer key)
{
	if (key)
		g_atomic_rc_box_release(key);
}

static uint64_t key_class(gconstpointer p)
{
	const struct cputime_key *k = p;
	const uint64_t head[3] = { k->ns, k->init_start, k->cpus };
	uint64_t h = hash_fnv(hash_fnv(HASH_FNV_START, "uptime:", 7), head, sizeof(head));
	h = hash_fnv(h, k->group, strlen(k->group)) & INO_SERVED_CLASS_MASK;
	return h ? h : 1;
}

/* The cgroup of tid that counts its CPU time: v2's cpu, v1's cpuacct. */
static char *usage_group(const struct cputimes *u, pid_t tid)
{
	char path[32];
	g_autofree char *text = NULL;
	struct cgroup_paths paths = { 0 };
	char *group = NULL;

	snprintf(path, sizeof(path), "%d/cgroup", (int)tid);
	if (procfile_read_text_at(u->cfg.proc_fd, path, &text) == 0 &&
	    cgroup_parse_membership(text, &u->cfg.cgroups, &paths) == 0)
		group = g_strdup(u->cfg.cgroups.cpu.version == CGROUP_V2 ? paths.cpu : paths.cpuacct);
	cgroup_paths_clear(&paths);
	return group ? group : g_strdup("");
}

static gpointer find_key(void *data, pid_t tid)
{
	struct cputimes *u = data;
	uint64_t ns = 0, start = 0;
	gboolean own = nsinits_of(u->cfg.nsinits, tid, &ns, &start);
	g_autofree char *group = own ? usage_group(u, tid) : g_strdup("");
	g_autoptr(cpu_map) map = own ? cpuview_map_for(u->cfg.cpuview, tid) : NULL;
	struct cputime_key *k = g_atomic_rc_box_alloc0(sizeof(*k) + strlen(group) + 1);
	k->ns = own ? ns : 0;
	k->init_start = start;
	k->cpus = map ? map->count : 0;
	strcpy(k->group, group);
	return k;
}

struct cputimes *cputimes_new(const struct cputimes_config *cfg)
{
	struct cputimes *u = g_new0(struct cputimes, 1);
	u->cfg = *cfg;
	u->ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	deciders_init(&u->keys, find_key, key_class, cputime_key_ref, cputime_key_unref, u);
	return u;
}

void cputimes_free(struct cputimes *u)
{
	if (!u)
		return;
	deciders_clear(&u->keys);
	g_free(u);
}

struct deciders *cputimes_uptime_deciders(struct cputimes *u)
{
	return &u->keys;
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

int cputimes_render_uptime(struct cputimes *u, const struct cputime_key *key, GBytes **ret)
{
	g_autofree char *host = NULL;
	int r = procfile_read_text_at(u->cfg.proc_fd, "uptime", &host);
	if (r < 0)
		return r;
	GString *out = NULL;
	if (key->ns) {
		struct cgroup_paths paths = { 0 };
		struct cgroup_cpu_usage usage = { { 0, 0 }, NULL };
		/* the one hierarchy usage_group named */
		if (u->cfg.cgroups.cpu.version == CGROUP_V2)
			paths.cpu = (char *)key->group;
		else
			paths.cpuacct = (char *)key->group;
		/* No hierarchy counts it: none used. Garbage: the host's file. */
		int counted = *key->group ? cgroup_read_cpu_usage(&u->cfg.cgroups, &paths, &usage, NULL) : -ENOENT;
		double used_s = counted == 0 ? (double)(usage.total.user_ns + usage.total.system_ns) / 1e9 : 0;
		cgroup_cpu_usage_clear(&usage);
		if (counted != -EINVAL &&
		    cputime_render_uptime(host, (double)key->init_start / (double)u->ticks_per_s, key->cpus, used_s, &out) < 0)
			out = NULL;
	}
	if (out) {
		*ret = g_string_free_to_bytes(out);
		return 0;
	}
	size_t len = strlen(host);
	*ret = g_bytes_new_take(g_steal_pointer(&host), len);
	return 0;
}
