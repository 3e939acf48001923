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

/* What every open of diskstats reads besides its group's own counters,
 * read at most once a tick for all: on v2 the host's lines (only their
 * names and fields are shown), on v1 the devices counted. A group's own
 * counters are read at each open, and on v1 the host's lines too, whose
 * counts it shows for the devices it does not count: a reader that wrote
 * sees it either way. Shared (g_atomic_rc_box), never changed once made. */
#define DISK_INPUTS_MAX_AGE_US (G_USEC_PER_SEC / 100)

/* The host's diskstats as read once. */
struct host_disks {
	int error;    /* of its read: -errno, or -EINVAL */
	GBytes *text; /* NULL: error */
	struct diskview_host *lines; /* NULL: not understood, or not parsed */
};

struct disk_inputs {
	gint64 read_at;
	struct host_disks host; /* v2 */
	GArray *counted;        /* v1: struct cgroup_io_device, the top cgroup's */
	int counted_error;      /* of their read: the next open reads them itself */
};
typedef struct disk_inputs disk_inputs;
typedef struct host_disks host_disks;

struct iogroups {
	struct iogroups_config cfg;
	GMutex disk_lock;
	struct disk_inputs *disk_inputs; /* the last read (NULL: none yet) */
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

/* tid's directory in h (used: present); "" for the root cgroup or one
 * whose directory in h cannot be told, or with h not used: the host's
 * files. scope_dir's -EIO where tid's scope cannot be found. */
static int group_of(struct iogroups *g, pid_t tid, const struct cgroup_hierarchy *h, gboolean used, gpointer *ret)
{
	g_autofree char *dir = NULL;
	int r = used ? scope_dir(g->cfg.scope, tid, h, &dir) : 0;
	if (r < 0)
		return r;
	*ret = !dir || strcmp(dir, ".") == 0 ? g_strdup("") : g_steal_pointer(&dir);
	return 0;
}

static int find_disk_group(void *data, pid_t tid, gpointer *ret)
{
	struct iogroups *g = data;
	return group_of(g, tid, &g->cfg.io, g->cfg.io.version != CGROUP_NONE, ret);
}

static int find_pressure_group(void *data, pid_t tid, gpointer *ret)
{
	struct iogroups *g = data;
	return group_of(g, tid, &g->cfg.pressure, g->cfg.pressure.version == CGROUP_V2, ret);
}

struct iogroups *iogroups_new(const struct iogroups_config *cfg)
{
	struct iogroups *g = g_new0(struct iogroups, 1);
	g->cfg = *cfg;
	g_mutex_init(&g->disk_lock);
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

static void host_disks_clear(struct host_disks *h)
{
	if (h->text)
		g_bytes_unref(h->text);
	diskview_host_free(h->lines);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(host_disks, host_disks_clear)

static void disk_inputs_clear(gpointer data)
{
	struct disk_inputs *in = data;
	host_disks_clear(&in->host);
	if (in->counted)
		g_array_unref(in->counted);
}

void iogroups_free(struct iogroups *g)
{
	if (!g)
		return;
	deciders_clear(&g->disks);
	deciders_clear(&g->pressure);
	if (g->disk_inputs)
		g_atomic_rc_box_release_full(g->disk_inputs, disk_inputs_clear);
	g_mutex_clear(&g->disk_lock);
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

static void take_text(char **text, GBytes **ret)
{
	size_t len = strlen(*text);
	*ret = g_bytes_new_take(g_steal_pointer(text), len);
}

/* The host's diskstats into h, and its lines parsed if parse (for a
 * reader with a group of its own). */
static void host_disks_read(struct iogroups *g, struct host_disks *h, gboolean parse)
{
	g_autofree char *text = NULL;
	h->error = procfile_read_text_at(g->cfg.proc_fd, "diskstats", &text);
	if (h->error < 0)
		return;
	if (parse && diskview_host_parse(text, &h->lines) < 0) {
		reports_once(&g->reports, "diskstats", EINVAL); /* the host's text, not understood */
		h->error = -EINVAL;
	}
	take_text(&text, &h->text);
}

/* The inputs as they are now, read again if older than a tick: a
 * reference, for disk_inputs_unref. */
static struct disk_inputs *disk_inputs_now(struct iogroups *g)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&g->disk_lock);
	struct disk_inputs *in = g->disk_inputs;
	gint64 now = g_get_monotonic_time();
	gboolean v1 = g->cfg.io.version == CGROUP_V1;
	if (!in || (!v1 && !in->host.text) || now - in->read_at >= DISK_INPUTS_MAX_AGE_US) { /* an error is not kept */
		if (in)
			g_atomic_rc_box_release_full(in, disk_inputs_clear);
		in = g->disk_inputs = g_atomic_rc_box_new0(struct disk_inputs);
		in->read_at = now;
		if (v1) {
			in->counted = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
			in->counted_error = cgroup_read_io(&g->cfg.io, ".", in->counted, NULL);
		} else {
			host_disks_read(g, &in->host, TRUE);
		}
	}
	return g_atomic_rc_box_acquire(in);
}

static void disk_inputs_unref(struct disk_inputs *in)
{
	g_atomic_rc_box_release_full(in, disk_inputs_clear);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(disk_inputs, disk_inputs_unref)

/* On v1 the throttle files of recent kernels count a device's I/O only
 * once a throttle rule was set on it, in any cgroup, and it stays so after
 * the rule is gone: the devices the top cgroup's files list (at 0 until
 * I/O), counted. devs (the group's) becomes one entry per device so
 * counted, the group's counters or 0s. */
static void v1_counted(const GArray *counted, GArray *devs)
{
	g_autoptr(GArray) own = g_array_copy(devs);
	g_array_set_size(devs, 0);
	for (guint i = 0; i < counted->len; i++) {
		const struct cgroup_io_device *d = &g_array_index(counted, struct cgroup_io_device, i);
		const struct cgroup_io_device *o = cgroup_io_device_find(own, d->major, d->minor);
		struct cgroup_io_device mine = { .major = d->major, .minor = d->minor };
		if (o)
			mine = *o;
		g_array_append_val(devs, mine);
	}
}

/* The devices counted on v1 for devs, the group's devices: in's list,
 * unless devs names one it lacks (a rule set since, maybe: the top
 * cgroup's list is read again, now). 0 or -errno and *ret_culprit. */
static int v1_counted_for(struct iogroups *g, const struct disk_inputs *in, GArray *devs, char **ret_culprit)
{
	gboolean known = TRUE;
	for (guint i = 0; i < devs->len && known; i++) {
		const struct cgroup_io_device *d = &g_array_index(devs, struct cgroup_io_device, i);
		known = cgroup_io_device_find(in->counted, d->major, d->minor) != NULL;
	}
	if (known && in->counted_error == 0) {
		v1_counted(in->counted, devs);
		return 0;
	}
	g_autoptr(GArray) now = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	int r = cgroup_read_io(&g->cfg.io, ".", now, ret_culprit);
	if (r == 0)
		v1_counted(now, devs);
	return r;
}

/* The host's lines for the group at dir (v1: with in's counted devices):
 * NULL if the group's files cannot be used (told once), or if it has none. */
static GString *render_disks(struct iogroups *g, const struct diskview_host *host, const struct disk_inputs *in,
			     const char *dir)
{
	g_autoptr(GArray) devs = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	g_autofree char *culprit = NULL;
	gboolean v1 = g->cfg.io.version == CGROUP_V1;

	int r = cgroup_read_io(&g->cfg.io, dir, devs, &culprit);
	if (r == 0 && v1)
		r = v1_counted_for(g, in, devs, &culprit);
	if (r == -EINVAL)
		reports_once(&g->reports, culprit, EINVAL);
	else if (r < 0 && r != -ENOENT)
		reports_once(&g->reports, dir, -r);
	if (r < 0)
		return NULL;
	return diskview_render_host(host, devs, v1 ? DISKVIEW_OTHERS_HOST : DISKVIEW_OTHERS_ZERO);
}

int iogroups_render_diskstats(struct iogroups *g, const char *group, GBytes **ret)
{
	g_autoptr(disk_inputs) in = disk_inputs_now(g);
	g_auto(host_disks) fresh = { 0 }; /* v1: the host's lines of this open */
	const struct host_disks *host = &in->host;
	if (g->cfg.io.version == CGROUP_V1) {
		host_disks_read(g, &fresh, *group != '\0');
		host = &fresh;
	}
	if (!host->text)
		return host->error;
	GString *out = *group && host->lines ? render_disks(g, host->lines, in, group) : NULL;
	if (out) {
		*ret = g_string_free_to_bytes(out);
		return 0;
	}
	*ret = g_bytes_ref(host->text);
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
		int r = group_of(g, c->tid, &g->cfg.pressure, TRUE, (gpointer *)&group);
		if (r < 0)
			return r;
	} else {
		/* No v2 cgroups: the host's file, to a caller of the top cgroup only. */
		g_autofree char *io = NULL;
		int r = group_of(g, c->tid, &g->cfg.io, g->cfg.io.version != CGROUP_NONE, (gpointer *)&io);
		if (r < 0)
			return r;
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
