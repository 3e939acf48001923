/* The key of a mountpoint's content classes (fs/classhash.h), in a file
 * beside its control socket: root's, mode 0600, made once per boot by
 * the first daemon, read by each that takes over. Views a daemon before
 * keys mounted have no key file: their daemons keep its unkeyed classes,
 * and the next views mounted anew get a key. */
#include "daemon.h"

#include "classhash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The key in path if it is one this daemon's user made for itself: 0, or
 * -errno. */
static int key_read(const char *path, uint8_t key[CLASS_KEY_BYTES])
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
		       st.st_size != CLASS_KEY_BYTES))
		r = -EPERM;
	if (r == 0 && read(fd, key, CLASS_KEY_BYTES) != CLASS_KEY_BYTES)
		r = -EIO;
	close(fd);
	return r;
}

static int key_write(const char *path, const uint8_t key[CLASS_KEY_BYTES])
{
	g_autofree char *tmp = g_strdup_printf("%s.%d", path, (int)getpid());
	g_autofree char *dir = g_path_get_dirname(path);
	if (g_mkdir_with_parents(dir, 0700) < 0)
		return -errno;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write(fd, key, CLASS_KEY_BYTES) == CLASS_KEY_BYTES ? 0 : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

void classkey_load(const char *path, gboolean views_exist)
{
	uint8_t key[CLASS_KEY_BYTES];
	int r = key_read(path, key);
	if (r == 0) {
		classhash_set_key(key);
		return;
	}
	if (r == -ENOENT && views_exist) {
		classhash_set_unkeyed();
		g_warning("the views were mounted by a daemon whose content classes were not keyed: they stay so, "
			  "and a tenant that names its cgroups could aim at another's figures, until the views are "
			  "mounted anew (stop the daemon with its views, then start it)");
		return;
	}
	if (r != -ENOENT)
		g_warning("%s is not a key this daemon made (%s): making a new one; files open before get new inodes",
			  path, g_strerror(-r));
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		/* Never: getrandom of 16 bytes does not fail once the pool is up. */
		g_warning("no random key for the content classes (%s): they are guessable", g_strerror(errno));
		return;
	}
	classhash_set_key(key);
	if ((r = key_write(path, key)) < 0)
		g_warning("cannot keep the content classes' key in %s (%s): a daemon after this one gives the "
			  "files new inodes", path, g_strerror(-r));
}

void classkey_forget(const char *control_socket)
{
	g_autofree char *path = control_socket ? g_strconcat(control_socket, ".key", NULL) : NULL;
	if (path)
		unlink(path);
}
