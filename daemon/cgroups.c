/* Finding the cgroup hierarchies that hold the cpu, cpuset, memory, cpuacct and blkio/io
 * controllers: v1 per-controller mounts, the v2 unified mount, or both (hybrid); and the
 * unified mount itself, for its pressure files. */
#include "daemon.h"
#include "log.h"
#include "mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static gboolean has_word(const char *list, const char *sep, const char *word)
{
	g_auto(GStrv) words = g_strsplit_set(list, sep, -1);
	return g_strv_contains((const char *const *)words, word);
}

/* Does the v2 hierarchy at fd offer controller? */
static gboolean v2_offers(int fd, const char *controller)
{
	g_autofree char *text = NULL;
	g_autofree char *path = g_strdup_printf("/proc/self/fd/%d/cgroup.controllers", fd);
	return g_file_get_contents(path, &text, NULL, NULL) && has_word(g_strstrip(text), " ", controller);
}

static void take(struct cgroup_hierarchy *h, enum cgroup_version version, const struct mount_entry *e,
		 struct daemon_cgroups *out)
{
	int fd = open(e->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	g_ptr_array_add(out->roots, g_strdup(e->root));
	g_array_append_val(out->fds, fd);
	*h = (struct cgroup_hierarchy){ version, fd, g_ptr_array_index(out->roots, out->roots->len - 1) };
}

void cgroups_discover(struct daemon_cgroups *out)
{
	g_autoptr(GPtrArray) mounts = mountinfo_read();
	const struct mount_entry *v2 = NULL;

	out->roots = g_ptr_array_new_with_free_func(g_free);
	out->fds = g_array_new(FALSE, FALSE, sizeof(int));
	const struct cgroup_hierarchy none = { CGROUP_NONE, -1, NULL };
	out->config = (struct cgroup_config){ none, none, none, none, none, none };
	const struct {
		const char *name;    /* on v1 */
		const char *v2_name; /* on v2 */
		struct cgroup_hierarchy *h;
	} controllers[] = { { "cpu", "cpu", &out->config.cpu },
			    { "cpuset", "cpuset", &out->config.cpuset },
			    { "memory", "memory", &out->config.memory },
			    { "cpuacct", "cpuacct", &out->config.cpuacct },
			    { "blkio", "io", &out->config.io } };
	for (guint i = 0; i < mounts->len; i++) {
		const struct mount_entry *e = g_ptr_array_index(mounts, i);
		if (strcmp(e->fstype, "cgroup2") == 0 && !v2)
			v2 = e;
		if (strcmp(e->fstype, "cgroup") != 0)
			continue;
		for (size_t c = 0; c < G_N_ELEMENTS(controllers); c++)
			if (has_word(e->super_options, ",", controllers[c].name) &&
			    controllers[c].h->version == CGROUP_NONE)
				take(controllers[c].h, CGROUP_V1, e, out);
	}
	/* A controller not mounted on v1 may be on the unified hierarchy. */
	int fd = v2 ? open(v2->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	for (size_t c = 0; fd >= 0 && c < G_N_ELEMENTS(controllers); c++)
		if (controllers[c].h->version == CGROUP_NONE && v2_offers(fd, controllers[c].v2_name))
			take(controllers[c].h, CGROUP_V2, v2, out);
	if (fd >= 0) {
		take(&out->config.unified, CGROUP_V2, v2, out);
		close(fd);
	}
}

static const char *describe(const struct cgroup_hierarchy *h)
{
	return h->version == CGROUP_V1 ? "cgroup v1" : h->version == CGROUP_V2 ? "cgroup v2" : "not available";
}

void cgroups_log(const struct daemon_cgroups *c)
{
	g_message("CPU limits from: cpuset %s, quota %s; memory from %s; I/O from %s", describe(&c->config.cpuset),
		  describe(&c->config.cpu), describe(&c->config.memory), describe(&c->config.io));
}

/* Write pid to dir's cgroup.procs. 0 or -errno. */
static int join(const char *dir, pid_t pid)
{
	g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL);
	char text[16];
	int n = snprintf(text, sizeof(text), "%d", (int)pid);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, text, (size_t)n) == n ? 0 : -errno;
	close(fd);
	return r;
}

gboolean cgroups_move(pid_t pid, const char *path, GError **error)
{
	g_autoptr(GPtrArray) mounts = mountinfo_read();
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	guint moved = 0;

	/* Top mount first: one under it, hidden, is another view of the same
	 * hierarchy or none that counts. */
	for (guint i = mounts->len; i-- > 0;) {
		const struct mount_entry *e = g_ptr_array_index(mounts, i);
		gboolean v2 = strcmp(e->fstype, "cgroup2") == 0;
		if ((!v2 && strcmp(e->fstype, "cgroup") != 0) || !g_hash_table_add(seen, e->mountpoint))
			continue;
		const struct cgroup_hierarchy h = { v2 ? CGROUP_V2 : CGROUP_V1, -1, e->root };
		g_autofree char *rel = cgroup_relative_dir(&h, path);
		if (!rel) {
			log_set_message(error, "%s is outside the cgroups mounted at %s (which hold %s): run in the "
					"host's cgroup namespace, with the host's /sys/fs/cgroup", path,
					e->mountpoint, e->root);
			return FALSE;
		}
		g_autofree char *dir = g_build_filename(e->mountpoint, rel, NULL);
		int r = join(dir, pid);
		if (r < 0) {
			log_set_error(error, r, "cannot move to the cgroup %s", dir);
			return FALSE;
		}
		moved++;
	}
	if (moved == 0)
		log_set_message(error, "no cgroup hierarchy is mounted");
	return moved > 0;
}

void cgroups_clear(struct daemon_cgroups *c)
{
	for (guint i = 0; c->fds && i < c->fds->len; i++)
		close(g_array_index(c->fds, int, i));
	g_clear_pointer(&c->fds, g_array_unref);
	g_clear_pointer(&c->roots, g_ptr_array_unref);
}
