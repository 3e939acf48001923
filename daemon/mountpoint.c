/* The mountpoint: checks before mounting. */
#include "daemon.h"
#include "log.h"
#include "mountinfo.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* realpath of the parent and the last component as given: works on a
 * stale FUSE mount, where stat of the mountpoint itself fails. */
char *mountpoint_canonical(const char *dir)
{
	g_autofree char *copy1 = g_strdup(dir);
	g_autofree char *copy2 = g_strdup(dir);
	g_autofree char *parent = realpath(dirname(copy1), NULL);
	const char *base = basename(copy2);

	if (!parent)
		return NULL;
	if (strcmp(base, "/") == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return realpath(dir, NULL);
	return g_build_filename(parent, base, NULL);
}

/* A FUSE mount whose daemon is gone answers every request with ENOTCONN;
 * statfs is never answered from the kernel's caches. It waits while the
 * mount's last holder lives (a keeper of a daemon killed before it
 * published the keeper holds the views until it sees that and exits),
 * and fails with ECONNABORTED if that holder goes meanwhile: dead too. */
static gboolean mount_is_dead(const char *path)
{
	struct statfs sfs;
	return statfs(path, &sfs) < 0 && (errno == ENOTCONN || errno == ECONNABORTED);
}

/* The type of the filesystem mounted at path, NULL if none. */
static char *top_fstype(const char *path)
{
	struct mount_entry top = { 0 };
	if (!mountinfo_find(path, &top))
		return NULL;
	char *fstype = g_strdup(top.fstype);
	mountinfo_entry_clear(&top);
	return fstype;
}

/* A cgprocfs mount at path, whatever answers it (statfs is not asked: a
 * mount a keeper holds for a dead daemon would not answer). */
static gboolean has_cgprocfs(const char *path)
{
	g_autofree char *fstype = top_fstype(path);
	return fstype && strcmp(fstype, "fuse.cgprocfs") == 0;
}

/* Is path free to mount on? FALSE with *error set if not. A dead cgprocfs
 * mount is removed, so a restart after a crash works. */
static gboolean mountpoint_free(const char *path, GError **error)
{
	struct mount_entry top = { 0 };

	if (!mountinfo_find(path, &top))
		return TRUE;
	/* A directory bound there (a container's volume: not a filesystem's
	 * root) is a directory to mount on, as it is on the host. */
	gboolean bound_dir = strcmp(top.root, "/") != 0;
	g_autofree char *fstype = g_strdup(top.fstype);
	mountinfo_entry_clear(&top);
	if (strcmp(fstype, "fuse.cgprocfs") != 0 && bound_dir)
		return TRUE;
	if (strcmp(fstype, "fuse.cgprocfs") != 0) {
		log_set_message(error, "mountpoint %s is busy: a %s filesystem is mounted there; "
			       "unmount it or choose another directory", path, fstype);
		return FALSE;
	}
	if (!mount_is_dead(path)) {
		log_set_message(error, "%s is already served by a running cgprocfs; stop it first, "
			       "or take it over with --replace", path);
		return FALSE;
	}
	if (umount2(path, MNT_DETACH) < 0) {
		int err = errno;
		g_set_error(error, CGPROCFS_ERROR, err, "%s holds a dead cgprocfs mount and unmounting it failed: %s; "
			    "run: umount -l %s", path, g_strerror(err), path);
		return FALSE;
	}
	g_message("removed the dead cgprocfs mount at %s", path);
	return TRUE;
}

/* The one to take over, by mode (not MOUNTPOINT_NEW). FALSE with *error set. */
static gboolean check_takeover(const char *path, enum mountpoint_mode mode, GError **error)
{
	if (mode == MOUNTPOINT_RECOVER && !has_cgprocfs(path)) {
		log_set_message(error, "a keeper holds views of %s, but nothing is mounted there", path);
		return FALSE;
	}
	/* Not statfs: it would wait while the daemon to take over from is
	 * dead and its keeper holds the views (the handover then asks the
	 * keeper). A dead mount with neither fails at the handover. */
	if (mode == MOUNTPOINT_REPLACE && !has_cgprocfs(path)) {
		log_set_message(error, "nothing to take over at %s: no running cgprocfs serves it", path);
		return FALSE;
	}
	return TRUE;
}

/* A directory to mount on at path, made if missing. FALSE with *error set. */
static gboolean make_mountpoint(const char *path, GError **error)
{
	struct stat st;

	if (!mountpoint_free(path, error))
		return FALSE;
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		log_set_error(error, -errno, "cannot create mountpoint %s", path);
		return FALSE;
	}
	if (stat(path, &st) < 0) {
		log_set_error(error, -errno, "cannot use mountpoint %s", path);
		return FALSE;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_set_message(error, "mountpoint %s is not a directory", path);
		return FALSE;
	}
	return TRUE;
}

gboolean mountpoint_prepare(const char *dir, enum mountpoint_mode mode, char **ret_path, GError **error)
{
	g_autofree char *parent = g_path_get_dirname(dir);

	if (g_mkdir_with_parents(parent, 0755) < 0) {
		log_set_error(error, -errno, "cannot create %s", parent);
		return FALSE;
	}
	g_autofree char *path = mountpoint_canonical(dir);
	if (!path) {
		log_set_error(error, -errno, "cannot resolve mountpoint %s", dir);
		return FALSE;
	}
	if (mode == MOUNTPOINT_NEW ? !make_mountpoint(path, error) : !check_takeover(path, mode, error))
		return FALSE;
	*ret_path = g_steal_pointer(&path);
	return TRUE;
}
