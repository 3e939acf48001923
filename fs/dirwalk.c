#include "dirwalk.h"

#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int open_dir(int dirfd, const char *path, DIR **ret)
{
	int fd = procfile_openat(dirfd, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int err = errno;
		close(fd);
		return -err;
	}
	*ret = dir;
	return 0;
}

static gboolean is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

int dirwalk(int dirfd, const char *path, dirwalk_fn fn, void *data)
{
	g_autoptr(DIR) dir = NULL;
	int r = open_dir(dirfd, path, &dir);
	if (r < 0)
		return r;
	for (struct dirent *de; (de = readdir(dir));)
		if (!is_dot(de->d_name))
			fn(de, data);
	return 0;
}

static int by_name(gconstpointer a, gconstpointer b)
{
	const struct dirent *const *x = a, *const *y = b;
	return strcmp((*x)->d_name, (*y)->d_name);
}

/* readdir's entry may be shorter than struct dirent: copy field by field. */
static struct dirent *copy_dirent(const struct dirent *de)
{
	struct dirent *copy = g_new0(struct dirent, 1);
	copy->d_ino = de->d_ino;
	copy->d_type = de->d_type;
	g_strlcpy(copy->d_name, de->d_name, sizeof(copy->d_name));
	return copy;
}

int dirwalk_sorted(int dirfd, const char *path, dirwalk_fn fn, void *data)
{
	g_autoptr(DIR) dir = NULL;
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
	int r = open_dir(dirfd, path, &dir);
	if (r < 0)
		return r;
	for (struct dirent *de; (de = readdir(dir));)
		if (!is_dot(de->d_name))
			g_ptr_array_add(all, copy_dirent(de));
	g_ptr_array_sort(all, by_name);
	for (guint i = 0; i < all->len; i++)
		fn(g_ptr_array_index(all, i), data);
	return 0;
}
