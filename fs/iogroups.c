#include "iogroups.h"

#include "caller.h"
#include "classhash.h"
#include "cleanup.h"
#include "diskview.h"
#include "ino.h"
#include "procfile.h"
#include "scope.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The files under /proc/pressure a cgroup has as <name>.pressure. */
static const char *const pressure_names[] = { "cpu", "memory", "io", "irq" };

struct iogroups {
	struct iogroups_config cfg;
	struct deciders disks;    /* callers' io cgroups (strings) */
	struct deciders pressure; /* callers' cgroups in the v2 hierarchy (strings) */
	struct reports reports;   /* files that could not be used */
	guint host_pressure;      /* bit i: the host has pressure_names[i] */
	mode_t pressure_modes[G_N_ELEMENTS(pressure_names)]; /* their permissions */
};

static gpointer dup_group(gpointer group)
{
	return g_strdup(group);
}

/* tid's directory in h; "" for the root cgroup or one that cannot be
 * told: the host's files. */
static char *group_of(struct iogroups *g, pid_t tid, const struct cgroup_hierarchy *h)
{
	g_autofree char *dir = scope_dir(g->cfg.scope, tid, h);
	return strcmp(dir, ".") == 0 ? g_strdup("") : g_steal_pointer(&dir);
}

static gpointer find_disk_group(void *data, pid_t tid)
{
	struct iogroups *g = data;
	return g->cfg.io.version != CGROUP_NONE ? group_of(g, tid, &g->cfg.io) : g_strdup("");
}

static gpointer find_pressure_group(void *data, pid_t tid)
{
	struct iogroups *g = data;
	return g->cfg.pressure.version == CGROUP_V2 ? group_of(g, tid, &g->cfg.pressure) : g_strdup("");
}

struct iogroups *iogroups_new(const struct iogroups_config *cfg)
{
	struct iogroups *g = g_new0(struct iogroups, 1);
	g->cfg = *cfg;
	static const deciders_class_fn disk_classes[] = { iogroups_disk_class, NULL };
	static const deciders_class_fn pressure_classes[] = { iogroups_pressure_class, NULL };
	deciders_init(&g->disks, find_disk_group, disk_classes, dup_group, g_free, g);
	deciders_init(&g->pressure, find_pressure_group, pressure_classes, dup_group, g_free, g);
	reports_init(&g->reports, cfg->report, cfg->report_data);
	for (guint i = 0; i < G_N_ELEMENTS(pressure_names); i++) {
		g_autofree char *path = g_strconcat("pressure/", pressure_names[i], NULL);
		struct stat st;
		if (faccessat(cfg->proc_fd, path, R_OK, 0) == 0)
			g->host_pressure |= 1u << i;
		g->pressure_modes[i] = fstatat(cfg->proc_fd, path, &st, 0) == 0 ? st.st_mode & 0666 : 0444;
	}
	return g;
}

void iogroups_free(struct iogroups *g)
{
	if (!g)
		return;
	deciders_clear(&g->disks);
	deciders_clear(&g->pressure);
	reports_clear(&g->reports);
	g_free(g);
}

struct deciders *iogroups_disk_deciders(struct iogroups *g)
{
	return &g->disks;
}

struct deciders *iogroups_pressure_deciders(struct iogroups *g)
{
	return &g->pressure;
}

static uint64_t class_of(const char *prefix, const char *group)
{
	return classhash(prefix, NULL, 0, group, strlen(group));
}

uint64_t iogroups_disk_class(gconstpointer group)
{
	return class_of("diskstats:", group);
}

uint64_t iogroups_pressure_class(gconstpointer group)
{
	return class_of("pressure:", group);
}

gboolean iogroups_has_pressure(const struct iogroups *g, const char *name)
{
	for (guint i = 0; i < G_N_ELEMENTS(pressure_names); i++)
		if ((g->host_pressure & (1u << i)) && (!name || strcmp(name, pressure_names[i]) == 0))
			return TRUE;
	return FALSE;
}

mode_t iogroups_pressure_mode(const struct iogroups *g, const char *name)
{
	for (guint i = 0; i < G_N_ELEMENTS(pressure_names); i++)
		if (strcmp(name, pressure_names[i]) == 0)
			return g->pressure_modes[i];
	return 0444;
}

int iogroups_may_trigger(struct iogroups *g, const struct caller *c, const char *name)
{
	g_autofree char *host = g_strconcat("pressure/", name, NULL);
	int fd;
	int r = caller_openat(c, 0, g->cfg.proc_fd, host, O_WRONLY, &fd);
	if (r == 0)
		close(fd);
	return r;
}

/* On v1 the throttle files of recent kernels count a device's I/O only
 * once a throttle rule was set on it, in any cgroup, and it stays so after
 * the rule is gone: the devices the top cgroup's files list (at 0 until
 * I/O). devs becomes one entry per device so counted, the group's counters
 * or 0s. */
static int v1_counted(struct iogroups *g, GArray *devs, char **ret_culprit)
{
	g_autoptr(GArray) all = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	int r = cgroup_read_io(&g->cfg.io, ".", all, ret_culprit);
	if (r < 0)
		return r;
	g_autoptr(GArray) own = g_array_copy(devs);
	g_array_set_size(devs, 0);
	for (guint i = 0; i < all->len; i++) {
		struct cgroup_io_device d = g_array_index(all, struct cgroup_io_device, i);
		struct cgroup_io_device mine = { .major = d.major, .minor = d.minor };
		for (guint j = 0; j < own->len; j++) {
			const struct cgroup_io_device *o = &g_array_index(own, struct cgroup_io_device, j);
			if (o->major == d.major && o->minor == d.minor)
				mine = *o;
		}
		g_array_append_val(devs, mine);
	}
	return 0;
}

/* host's diskstats for the group at dir: NULL if the group's files cannot
 * be used (told once), or if it has none. */
static GString *render_disks(struct iogroups *g, const char *dir, const char *host)
{
	g_autoptr(GArray) devs = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	g_autofree char *culprit = NULL;
	gboolean v1 = g->cfg.io.version == CGROUP_V1;
	GString *out = NULL;

	int r = cgroup_read_io(&g->cfg.io, dir, devs, &culprit);
	if (r == 0 && v1)
		r = v1_counted(g, devs, &culprit);
	if (r == -EINVAL)
		reports_once(&g->reports, culprit, EINVAL);
	else if (r < 0 && r != -ENOENT)
		reports_once(&g->reports, dir, -r);
	if (r == 0 && diskview_render(host, devs, v1 ? DISKVIEW_OTHERS_HOST : DISKVIEW_OTHERS_ZERO, &out) == -EINVAL)
		reports_once(&g->reports, "diskstats", EINVAL); /* the host's text, not understood */
	return out;
}

static void take_text(char **text, GBytes **ret)
{
	size_t len = strlen(*text);
	*ret = g_bytes_new_take(g_steal_pointer(text), len);
}

int iogroups_render_diskstats(struct iogroups *g, const char *group, GBytes **ret)
{
	g_autofree char *host = NULL;
	int r = procfile_read_text_at(g->cfg.proc_fd, "diskstats", &host);
	if (r < 0)
		return r;
	GString *out = *group ? render_disks(g, group, host) : NULL;
	if (out) {
		*ret = g_string_free_to_bytes(out);
		return 0;
	}
	take_text(&host, ret);
	return SERVED_HOST;
}

/* A pressure file as the kernel writes it: lines "some ..." and "full
 * ..." of key=value pairs. */
static gboolean pressure_valid(const char *text)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	guint n = 0;
	for (char **l = lines; *l; l++) {
		if (!**l)
			continue;
		if (!g_str_has_prefix(*l, "some ") && !g_str_has_prefix(*l, "full "))
			return FALSE;
		g_auto(GStrv) pairs = g_strsplit(*l + 5, " ", -1);
		for (char **p = pairs; *p; p++)
			if (!strchr(*p, '='))
				return FALSE;
		n++;
	}
	return n > 0 && g_str_has_suffix(text, "\n");
}

int iogroups_render_pressure(struct iogroups *g, const char *group, const char *name, GBytes **ret)
{
	g_autofree char *text = NULL;
	if (*group) {
		g_autofree char *file = g_strconcat(group, "/", name, ".pressure", NULL);
		int r = procfile_read_text_at(g->cfg.pressure.root_fd, file, &text);
		if (r == 0 && pressure_valid(text)) {
			take_text(&text, ret);
			return 0;
		}
		if (r != -ENOENT && r != -EOPNOTSUPP)
			reports_once(&g->reports, file, r < 0 ? -r : EINVAL);
		g_clear_pointer(&text, g_free);
	}
	g_autofree char *host = g_strconcat("pressure/", name, NULL);
	int r = procfile_read_text_at(g->cfg.proc_fd, host, &text);
	if (r < 0)
		return r;
	take_text(&text, ret);
	return SERVED_HOST;
}

/* The kernel file a trigger of c's on pressure/<name> goes to, opened for
 * it: the host's (as c: the kernel decides), or c's cgroup's, opened as
 * the daemon with c's CAP_SYS_RESOURCE or without (the kernel gives an
 * opener without it 2 s windows only). */
static int trigger_file(struct iogroups *g, const struct caller *c, const char *name, int *ret_fd)
{
	g_autofree char *group = NULL;
	if (g->cfg.pressure.version == CGROUP_V2) {
		group = group_of(g, c->tid, &g->cfg.pressure);
	} else {
		/* No v2 cgroups: the host's file, to a caller of the top cgroup only. */
		g_autofree char *io = g->cfg.io.version != CGROUP_NONE ? group_of(g, c->tid, &g->cfg.io) : g_strdup("");
		if (*io)
			return -EOPNOTSUPP;
		group = g_strdup("");
	}
	if (!*group) {
		g_autofree char *host = g_strconcat("pressure/", name, NULL);
		return caller_openat(c, 0, g->cfg.proc_fd, host, O_RDWR, ret_fd);
	}
	g_autofree char *file = g_strconcat(group, "/", name, ".pressure", NULL);
	int r = caller_open_capable(c, CAP_SYS_RESOURCE, g->cfg.pressure.root_fd, file, O_RDWR, ret_fd);
	return r == -ENOENT ? -EOPNOTSUPP : r; /* never the host's pressure for a container */
}

int iogroups_trigger(struct iogroups *g, const struct caller *c, const char *name, const char *text, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	int r = trigger_file(g, c, name, &fd);
	if (r < 0)
		return r;
	/* With its NUL: the kernel's /proc file takes the last byte for one. */
	if (write(fd, text, strlen(text) + 1) < 0)
		return -errno;
	*ret_fd = steal_fd(&fd);
	return 0;
}
