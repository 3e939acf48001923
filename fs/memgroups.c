#include "memgroups.h"

#include "deciders.h"
#include "classhash.h"
#include "ino.h"
#include "procfile.h"
#include "reports.h"
#include "scope.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct memgroups {
	struct memgroups_config cfg;
	struct deciders groups; /* callers' groups (strings) */
	struct reports reports;  /* files that could not be used */
};

static gpointer dup_group(gpointer group)
{
	return g_strdup(group);
}

static int find_group(void *data, pid_t tid, gpointer *ret);

struct memgroups *memgroups_new(const struct memgroups_config *cfg)
{
	struct memgroups *m = g_new0(struct memgroups, 1);
	m->cfg = *cfg;
	static const deciders_class_fn classes[] = { memgroups_class, NULL };
	deciders_init(&m->groups, find_group, classes, dup_group, g_free, m);
	reports_init(&m->reports, cfg->report, cfg->report_data);
	return m;
}

void memgroups_free(struct memgroups *m)
{
	if (!m)
		return;
	deciders_clear(&m->groups);
	reports_clear(&m->reports);
	g_free(m);
}


uint64_t memgroups_class(gconstpointer group)
{
	return classhash("memory:", NULL, 0, group, strlen(group));
}

static int find_group(void *data, pid_t tid, gpointer *ret)
{
	struct memgroups *m = data;
	if (m->cfg.memory.version != CGROUP_NONE)
		return scope_dir(m->cfg.scope, tid, &m->cfg.memory, (char **)ret);
	*ret = g_strdup("");
	return 0;
}

struct deciders *memgroups_deciders(struct memgroups *m)
{
	return &m->groups;
}

/* host, the host's proc/<name>, for a cgroup with a memory limit (f):
 * *ret NULL when the host's text is what it gets. */
static void render_limited(struct memgroups *m, const char *name, const char *host, const struct mem_figures *f,
			   GString **ret)
{
	g_autofree char *meminfo = NULL;
	int r = 0;

	*ret = NULL;
	if (strcmp(name, "meminfo") == 0)
		r = memview_render_meminfo(host, f, m->cfg.swap_view, ret);
	else if (strcmp(name, "vmstat") == 0)
		r = memview_render_vmstat(host, f, ret);
	else if (m->cfg.swap_view && (r = procfile_read_text_at(m->cfg.proc_fd, "meminfo", &meminfo)) == 0)
		r = memview_render_swaps(host, meminfo, f, ret);
	if (r == -EINVAL)
		reports_once(&m->reports, name, EINVAL); /* the host's text, not understood */
}

int memgroups_render(struct memgroups *m, const char *group, const char *name, GBytes **ret)
{
	g_autofree char *host = NULL, *culprit = NULL;
	struct mem_figures f = { 0 };
	gboolean limited = FALSE;
	GString *out = NULL;

	int r = procfile_read_text_at(m->cfg.proc_fd, name, &host);
	if (r < 0)
		return r;
	if (*group && (r = cgroup_read_memory(&m->cfg.memory, group, &f, &limited, &culprit)) < 0)
		reports_once(&m->reports, culprit ? culprit : group, -r);
	if (limited)
		render_limited(m, name, host, &f, &out);
	mem_figures_clear(&f);
	if (out) {
		*ret = g_string_free_to_bytes(out);
		return 0;
	}
	size_t len = strlen(host);
	*ret = g_bytes_new_take(g_steal_pointer(&host), len);
	return SERVED_HOST;
}
