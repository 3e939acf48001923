/* sys/devices/system/cpu: a read-only mirror of the host's directory, in
 * which cpu<N> is host CPU N as the caller sees it (a vcpu node): a CPU
 * it is shown with the files that name CPUs restricted to those it is
 * shown, the others as offlined CPUs (online "0", no topology). online,
 * possible, present and offline are rows of the static table (files.c). */
#include "view-internal.h"

#include "caller.h"
#include "cleanup.h"
#include "dirwalk.h"
#include "names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Files in a CPU's directory that name CPUs, cut to the CPUs shown. */
static const char *const cpu_mask_files[] = {
	"core_cpus", "thread_siblings", "core_siblings", "package_cpus", "die_cpus",
	"cluster_cpus", "book_siblings", "drawer_siblings", "shared_cpu_map", NULL,
};

/* The host path of a mirror node's names.h number (0: the directory). */
static const char *mirror_path(uint64_t id)
{
	return id == 0 ? "." : names_lookup(id);
}

/* name under the directory interned as parent (0: the top). */
static char *child_path(uint64_t parent, const char *name)
{
	return parent == 0 ? g_strdup(name) : g_strconcat(mirror_path(parent), "/", name, NULL);
}

static mode_t dtype_to_mode(unsigned char d_type)
{
	return d_type == DT_DIR ? S_IFDIR : d_type == DT_LNK ? S_IFLNK : S_IFREG;
}

/* "cpu<N>" as the kernel names CPU directories. */
static gboolean parse_cpu_dir(const char *name, unsigned *ret)
{
	guint64 n;
	if (!g_str_has_prefix(name, "cpu") || !g_ascii_isdigit(name[3]) || (name[3] == '0' && name[4]) ||
	    !g_ascii_string_to_unsigned(name + 3, 10, 0, INO_CPU_MAX, &n, NULL))
		return FALSE;
	*ret = (unsigned)n;
	return TRUE;
}

/* What a present CPU the caller is not shown lacks, as an offlined CPU of
 * a real machine does: the kernel removes these at hot-unplug
 * (drivers/base/topology.c, cacheinfo). */
static const char *const offline_hidden[] = { "topology", "cache", NULL };

/* Is cpu one the caller with map is shown? */
static gboolean vcpu_shown(const struct cpu_map *map, unsigned cpu)
{
	return map->is_host || cpu_map_view_cpu(map, cpu) >= 0;
}

/* The first component of a vcpu node's path below its cpu<N>. */
static gboolean sub_is(uint64_t sub, const char *const *names)
{
	const char *path = sub ? names_lookup(sub) : NULL;
	if (!path)
		return FALSE;
	size_t len = strcspn(path, "/");
	for (const char *const *n = names; *n; n++)
		if (strlen(*n) == len && strncmp(path, *n, len) == 0)
			return TRUE;
	return FALSE;
}

/* Is the node the "online" file of a CPU the caller is not shown (its
 * text "0", whether the host has the file or not: CPU 0 may have none)? */
static gboolean vcpu_offline_online(const struct cpu_map *map, uint64_t ino)
{
	const char *path = ino_sub(ino) ? names_lookup(ino_sub(ino)) : NULL;
	return !vcpu_shown(map, ino_cpu(ino)) && path && strcmp(path, "online") == 0;
}

static const char OFFLINE_ONLINE[] = "0\n";

/* Attributes of such a file: sysfs's, its times the CPU directory's. */
static int offline_online_attr(struct view *v, uint64_t ino, struct stat *ret)
{
	struct stat dir;
	char path[32];
	snprintf(path, sizeof(path), "cpu%u", ino_cpu(ino));
	if (fstatat(v->cfg.sys_cpu_fd, path, &dir, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	view_attr_fill(v, ret, ino, S_IFREG | 0644, ino_cpu_class(ino) ? (off_t)strlen(OFFLINE_ONLINE) : 0);
	ret->st_mtim = dir.st_mtim;
	ret->st_ctim = dir.st_ctim;
	return 0;
}

/* The host file behind a vcpu node, for a caller with map: "cpu<N>[/<path>]"
 * (host numbers: the node's); -ENOENT for what a CPU the caller is not
 * shown lacks. */
static int vcpu_map_path(const struct cpu_map *map, uint64_t ino, char **ret)
{
	unsigned cpu = ino_cpu(ino);
	uint64_t sub = ino_sub(ino);

	if (!vcpu_shown(map, cpu) && sub_is(sub, offline_hidden))
		return -ENOENT;
	*ret = sub ? g_strdup_printf("cpu%u/%s", cpu, names_lookup(sub)) : g_strdup_printf("cpu%u", cpu);
	return 0;
}

/* The vcpu directory cpu<cpu> for a caller with map: of map's class. */
static uint64_t vcpu_dir_ino(struct view *v, const struct cpu_map *map, unsigned cpu)
{
	return ino_cpu_make(NODE_SYS_VCPU, cpu, cpuview_short_class(v->cfg.cpuview, map), 0);
}

/* The map a vcpu node is rendered for. A node of a class (fs/ino.h) is
 * that class's: its files and their sizes are the same for every caller,
 * as a page cache wants them. any: the class's map, known from a caller of
 * it, will do; else only the caller's (an open: never another class's
 * text). A node of no class is the caller's. -ESTALE: the caller is not of
 * the node's class (it moved, or another caller's walk left the name) or
 * the class is not known here (another daemon's): the kernel looks the
 * name up again. */
static int vcpu_map(struct view *v, const struct caller *c, uint64_t ino, gboolean any, struct cpu_map **ret)
{
	uint32_t cls = ino_cpu_class(ino);
	g_autoptr(cpu_map) mine = NULL;
	int r = cpuview_map_for(v->cfg.cpuview, c->tid, &mine);
	if (r < 0)
		return r;
	if (cls == 0 || cpuview_short_class(v->cfg.cpuview, mine) == cls) {
		*ret = g_steal_pointer(&mine);
		return 0;
	}
	*ret = any ? cpuview_map_of_short(v->cfg.cpuview, cls) : NULL;
	return *ret ? 0 : -ESTALE;
}

static int vcpu_host_path(struct view *v, const struct caller *c, uint64_t ino, char **ret)
{
	g_autoptr(cpu_map) map = NULL;
	int r = vcpu_map(v, c, ino, TRUE, &map);
	return r < 0 ? r : vcpu_map_path(map, ino, ret);
}

/* A sysfs file as the caller could read it: a root-only file stays
 * root-only. Most are readable by all, and then opening them as the caller
 * would decide nothing: only the others are opened again with the caller's
 * credentials. */
static int read_as_caller(const struct caller *c, int dirfd, const char *path, GBytes **ret)
{
	struct stat st;
	_cleanup_close_ int fd = procfile_openat(dirfd, path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!(st.st_mode & S_IROTH)) {
		close(steal_fd(&fd));
		int r = caller_openat(c, 0, dirfd, path, O_RDONLY | O_NOFOLLOW, &fd);
		if (r < 0)
			return r;
	}
	return procfile_read_fd(fd, ret);
}

int files_rewrite_for(const struct cpu_map *map, GBytes *host_bytes, rewrite_fn rewrite, GBytes **ret)
{
	char *host = g_strndup(g_bytes_get_data(host_bytes, NULL), g_bytes_get_size(host_bytes));
	GString *out = NULL;
	int r = rewrite(host, map, &out);
	if (r < 0) {
		g_debug("host text not understood (%s): serving it unchanged", g_strerror(-r));
		*ret = g_bytes_new_take(host, strlen(host));
		return 0;
	}
	g_free(host);
	*ret = g_string_free_to_bytes(out);
	return 0;
}

/* The text of the host's sys cpu file at path as the caller reads it, in
 * map's numbers where it names CPUs (map NULL: the host's text). */
static int sys_text(struct view *v, const struct caller *c, const char *path, const struct cpu_map *map,
		    GBytes **ret)
{
	g_autoptr(GBytes) content = NULL;
	int r = read_as_caller(c, v->cfg.sys_cpu_fd, path, &content);
	if (r < 0)
		return r;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	rewrite_fn rewrite = !map ? NULL
			     : g_str_has_suffix(base, "_list") ? cpuview_render_list
			     : g_strv_contains((const char *const *)cpu_mask_files, base) ? cpuview_render_mask
			     : NULL;
	if (!rewrite) {
		*ret = g_steal_pointer(&content);
		return 0;
	}
	return files_rewrite_for(map, content, rewrite, ret);
}

/* online: the caller's CPUs (host numbers); offline: the host's offline
 * and its present CPUs the caller is not shown (they look offlined);
 * possible, present: the host's. */
int sys_render_cpu_set(struct view *v, gconstpointer cpus, const char *name, GBytes **ret)
{
	const struct cpu_map *map = cpus;
	if (map->is_host || strcmp(name, "possible") == 0 || strcmp(name, "present") == 0)
		return procfile_read_at(v->cfg.sys_cpu_fd, name, ret);
	if (strcmp(name, "online") == 0) {
		*ret = g_string_free_to_bytes(cpuview_render_online(map));
		return 0;
	}
	g_autofree char *present = NULL, *offline = NULL;
	GString *text = NULL;
	int r = procfile_read_text_at(v->cfg.sys_cpu_fd, "present", &present);
	if (r == 0)
		r = procfile_read_text_at(v->cfg.sys_cpu_fd, "offline", &offline);
	if (r == 0)
		r = cpuview_render_offline(present, offline, map, &text);
	if (r < 0)
		return r == -EINVAL ? -EIO : r;
	*ret = g_string_free_to_bytes(text);
	return 0;
}

/* How a regular file of the mirror is sized. */
enum file_size {
	/* Its text's length, as the caller would read it now (sysfs's 4096
	 * for a caller who may not read it). Not sysfs's 4096: sendfile and
	 * splice read through the page cache up to the size, and a size above
	 * the text gives them zeros after it whenever another caller's lookup
	 * restores it between a short READ and the end of the splice. The
	 * text is the same for every caller of the inode (the mirror's, or a
	 * vcpu node's of one class), so the page cache may hold it. */
	SIZE_TEXT,
	/* None: the text depends on the caller (a virtual CPU's of no class),
	 * and its inode is every caller's. With no size, no page of it is ever
	 * cached (nor spliced: sendfile reads nothing, never another caller's
	 * text). */
	SIZE_NONE,
};

/* Attributes of a node that stands for the host's sys cpu file at path,
 * as the caller sees it (map: see sys_text). */
static int mirror_attr_at(struct view *v, const struct caller *c, uint64_t ino, const char *path,
			  const struct cpu_map *map, enum file_size size, struct stat *ret)
{
	struct stat real;
	g_autoptr(GBytes) text = NULL;

	if (fstatat(v->cfg.sys_cpu_fd, path, &real, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(real.st_mode))
		view_attr_fill(v, ret, ino, S_IFDIR | (real.st_mode & 0555), 0);
	else if (S_ISLNK(real.st_mode))
		view_attr_fill(v, ret, ino, S_IFLNK | 0777, real.st_size);
	else if (size == SIZE_NONE) /* served read-only, through direct_io */
		view_attr_fill(v, ret, ino, S_IFREG | (real.st_mode & 0444), 0);
	else
		view_attr_fill(v, ret, ino, S_IFREG | (real.st_mode & 0444),
			       sys_text(v, c, path, map, &text) == 0 ? (off_t)g_bytes_get_size(text) : real.st_size);
	ret->st_uid = real.st_uid;
	ret->st_gid = real.st_gid;
	ret->st_mtim = real.st_mtim;
	ret->st_ctim = real.st_ctim;
	return 0;
}

struct sys_listing {
	struct view *v;
	GArray *entries;
	uint64_t parent;
	const struct cpu_map *map; /* in the mirror's root */
};

static gboolean mirror_valid(const struct view *v, uint64_t ino)
{
	return (ino_id(ino) == 0 || names_lookup(ino_id(ino)) != NULL);
}

static int mirror_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		       double *ret_timeout)
{
	int r = mirror_attr_at(v, c, ino, mirror_path(ino_id(ino)), NULL, SIZE_TEXT, ret);
	/* A file's text, and so its size, may change at any time. */
	*ret_timeout = r == 0 && S_ISREG(ret->st_mode) ? 0 : TIMEOUT_STABLE;
	return r;
}

static int lookup_mirror_entry(struct view *v, uint64_t parent, const char *name, struct view_entry *ret)
{
	g_autofree char *path = child_path(ino_id(parent), name);
	struct stat st;

	if (fstatat(v->cfg.sys_cpu_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	ret->ino = ino_named_make(NODE_SYS_MIRROR, names_intern(path));
	return 0;
}

static int mirror_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
			 struct view_entry *ret)
{
	if (ino_id(parent) != 0)
		return lookup_mirror_entry(v, parent, name, ret);
	enum row r = files_find_row(v, ROW_SYS_CPU, name);
	unsigned cpu;
	if (r != ROW_NONE)
		return files_row_ino_for(v, c, r, &ret->ino);
	if (!parse_cpu_dir(name, &cpu))
		return lookup_mirror_entry(v, parent, name, ret);
	/* Whether it exists for this caller is the attributes' answer. */
	g_autoptr(cpu_map) map = NULL;
	int err = cpuview_map_for(v->cfg.cpuview, c->tid, &map);
	if (err == 0)
		ret->ino = vcpu_dir_ino(v, map, cpu);
	return err;
}

static void list_mirror_entry(const struct dirent *de, void *data)
{
	struct sys_listing *l = data;
	unsigned cpu;

	if (ino_id(l->parent) == 0) {
		if (files_find_row(l->v, ROW_SYS_CPU, de->d_name) != ROW_NONE)
			return;
		if (parse_cpu_dir(de->d_name, &cpu)) {
			/* every host CPU directory: those not shown look offline */
			view_dirent_add(l->entries, de->d_name, vcpu_dir_ino(l->v, l->map, cpu), S_IFDIR);
			return;
		}
	}
	g_autofree char *path = child_path(ino_id(l->parent), de->d_name);
	view_dirent_add(l->entries, de->d_name, ino_named_make(NODE_SYS_MIRROR, names_intern(path)),
			dtype_to_mode(de->d_type));
}

static int list_cpu_dir(struct view *v, const struct caller *c, struct sys_listing *l)
{
	g_autoptr(cpu_map) map = NULL;
	int r = cpuview_map_for(v->cfg.cpuview, c->tid, &map);
	if (r == 0)
		r = files_list_rows(v, c, l->entries, ROW_SYS_CPU);
	if (r < 0)
		return r;
	l->map = map;
	return dirwalk(v->cfg.sys_cpu_fd, ".", list_mirror_entry, l);
}

static int mirror_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	struct sys_listing l = { v, entries, ino, NULL };
	if (ino_id(ino) == 0)
		return list_cpu_dir(v, c, &l);
	return dirwalk(v->cfg.sys_cpu_fd, mirror_path(ino_id(ino)), list_mirror_entry, &l);
}

static int mirror_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	return procfile_readlink_at(v->cfg.sys_cpu_fd, mirror_path(ino_id(ino)), ret_target);
}

static int mirror_open(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret,
		 int64_t *ret_version)
{
	*ret_version = VIEW_FRESH;
	return sys_text(v, c, mirror_path(ino_id(ino)), NULL, ret);
}

const struct kind_ops sys_mirror_ops = {
	.type = 0,
	.valid = mirror_valid,
	.attr = mirror_attr,
	.lookup = mirror_lookup,
	.readdir = mirror_readdir,
	.readlink = mirror_readlink,
	.open = mirror_open,
};

static gboolean vcpu_valid(const struct view *v, uint64_t ino)
{
	return ino_sub(ino) == 0 || names_lookup(ino_sub(ino)) != NULL;
}

static int vcpu_attr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret,
		     double *ret_timeout)
{
	g_autoptr(cpu_map) map = NULL;
	g_autofree char *path = NULL;
	int r = vcpu_map(v, c, ino, TRUE, &map);
	if (r == 0 && vcpu_offline_online(map, ino))
		r = offline_online_attr(v, ino, ret);
	else if (r == 0 && (r = vcpu_map_path(map, ino, &path)) == 0)
		r = mirror_attr_at(v, c, ino, path, map, ino_cpu_class(ino) ? SIZE_TEXT : SIZE_NONE, ret);
	/* Which class's cpu<N> a name is differs per caller: never cached;
	 * a file's size is asked again as the mirror's are; nor, in a node of
	 * no class (every caller's), what a CPU not shown lacks. */
	*ret_timeout = ino_sub(ino) == 0 || (r == 0 && S_ISREG(ret->st_mode)) ||
				       (ino_cpu_class(ino) == 0 && sub_is(ino_sub(ino), offline_hidden))
			       ? 0
			       : TIMEOUT_STABLE;
	return r;
}

static int vcpu_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
		       struct view_entry *ret)
{
	g_autoptr(cpu_map) map = NULL;
	g_autofree char *dir = NULL;
	struct stat st;
	int r = vcpu_map(v, c, parent, TRUE, &map);
	if (r < 0)
		return r;
	g_autofree char *path = child_path(ino_sub(parent), name);
	uint64_t ino = ino_cpu_make(NODE_SYS_VCPU, ino_cpu(parent), ino_cpu_class(parent), names_intern(path));
	if (!vcpu_offline_online(map, ino)) {
		if ((r = vcpu_map_path(map, ino, &dir)) < 0)
			return r;
		if (fstatat(v->cfg.sys_cpu_fd, dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	ret->ino = ino;
	return 0;
}

static void list_vcpu_entry(const struct dirent *de, void *data)
{
	struct sys_listing *l = data;
	g_autofree char *path = child_path(ino_sub(l->parent), de->d_name);
	uint64_t ino = ino_cpu_make(NODE_SYS_VCPU, ino_cpu(l->parent), ino_cpu_class(l->parent), names_intern(path));
	char *unused = NULL;
	if (vcpu_offline_online(l->map, ino) || vcpu_map_path(l->map, ino, &unused) < 0)
		return; /* listed after, or not there for the caller */
	g_free(unused);
	view_dirent_add(l->entries, de->d_name, ino, dtype_to_mode(de->d_type));
}

static int vcpu_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray *entries)
{
	g_autoptr(cpu_map) map = NULL;
	g_autofree char *host = NULL;
	int r = vcpu_map(v, c, ino, TRUE, &map);
	if (r == 0)
		r = vcpu_map_path(map, ino, &host);
	if (r < 0)
		return r;
	struct sys_listing l = { v, entries, ino, map };
	r = dirwalk(v->cfg.sys_cpu_fd, host, list_vcpu_entry, &l);
	if (r == 0 && ino_sub(ino) == 0 && !vcpu_shown(map, ino_cpu(ino)))
		view_dirent_add(entries, "online",
				ino_cpu_make(NODE_SYS_VCPU, ino_cpu(ino), ino_cpu_class(ino), names_intern("online")),
				S_IFREG);
	return r;
}

static int vcpu_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target)
{
	g_autofree char *path = NULL;
	int r = vcpu_host_path(v, c, ino, &path);
	return r < 0 ? r : procfile_readlink_at(v->cfg.sys_cpu_fd, path, ret_target);
}

static int vcpu_open(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret,
		 int64_t *ret_version)
{
	g_autoptr(cpu_map) map = NULL;
	g_autofree char *path = NULL;
	int r = vcpu_map(v, c, ino, FALSE, &map);
	if (r < 0)
		return r;
	*ret_version = ino_cpu_class(ino) ? VIEW_FRESH : 0;
	if (vcpu_offline_online(map, ino)) {
		*ret = g_bytes_new_static(OFFLINE_ONLINE, strlen(OFFLINE_ONLINE));
		return 0;
	}
	r = vcpu_map_path(map, ino, &path);
	return r < 0 ? r : sys_text(v, c, path, map, ret);
}

const struct kind_ops sys_vcpu_ops = {
	.type = 0,
	.valid = vcpu_valid,
	.attr = vcpu_attr,
	.lookup = vcpu_lookup,
	.readdir = vcpu_readdir,
	.readlink = vcpu_readlink,
	.open = vcpu_open,
};
