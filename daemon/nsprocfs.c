/* A procfs of a container's pid namespace, the daemon's own, with the
 * options of the container's /proc that restrict what a reader sees. */
#include "daemon.h"

#include "cleanup.h"
#include "control.h"
#include "mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPTIONS_MAX 4

/* The options to give a new procfs, as key and value: made before the
 * child that gives them, which may not allocate. */
struct proc_options {
	char *keys[OPTIONS_MAX], *values[OPTIONS_MAX];
	int n;
};

static void options_clear(struct proc_options *o)
{
	for (int i = 0; i < o->n; i++) {
		g_free(o->keys[i]);
		g_free(o->values[i]);
	}
	o->n = 0;
}

static void options_of(const char *restrictions, struct proc_options *ret)
{
	g_auto(GStrv) list = g_strsplit(restrictions ? restrictions : "", ",", -1);
	*ret = (struct proc_options){ .n = 0 };
	for (char **o = list; *o && ret->n < OPTIONS_MAX; o++) {
		const char *eq = strchr(*o, '=');
		if (!eq || g_str_has_prefix(*o, "subset="))
			continue; /* subset hides files, not processes: the view serves its own */
		ret->keys[ret->n] = g_strndup(*o, (gsize)(eq - *o));
		ret->values[ret->n++] = g_strdup(eq + 1);
	}
}

/* In a child sharing the daemon's memory (as vfork's): mount a procfs
 * (detached) with o and send its fd on sock. System calls only: no
 * allocation, no lock, nothing written but the stack and errno. */
static void send_new_procfs(int sock, const struct proc_options *o)
{
	int mnt = -1, ok = 1;
	int fs = fsopen("proc", FSOPEN_CLOEXEC);
	for (int i = 0; fs >= 0 && i < o->n; i++)
		ok = ok && fsconfig(fs, FSCONFIG_SET_STRING, o->keys[i], o->values[i], 0) == 0;
	if (fs >= 0 && ok && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		_exit(1);
	_exit(fdmsg_send(sock, "p", &mnt, 1) == 1 ? 0 : 1);
}

/* This thread makes the namespace its children's (setns CLONE_NEWPID
 * changes only that), starts one child, born in it, which mounts a procfs
 * there and sends it back, and takes its own namespace back for its
 * children. No mount of the container is used. The child shares the
 * daemon's memory and this thread waits until it has exited (vfork: no
 * atfork handler runs); copying the daemon's page tables took most of an
 * attach's time. */
int nsprocfs_make(int host_proc_fd, int ns, const char *restrictions, int *ret_fd)
{
	int sv[2];
	struct proc_options o;

	_cleanup_close_ int own = openat(host_proc_fd, "thread-self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	options_of(restrictions, &o);
	_cleanup_close_ int sock = sv[0];
	const int child_sock = sv[1]; /* not changed after vfork: closed by hand */
	pid_t child = setns(ns, CLONE_NEWPID) < 0 ? -1 : vfork();
	if (child == 0)
		send_new_procfs(child_sock, &o);
	int err = errno;
	close(child_sock);
	options_clear(&o);
	/* Harmless if it fails: this thread forks only here, after a setns. */
	if (setns(own, CLONE_NEWPID) < 0)
		g_warning("cannot take the daemon's pid namespace back for the control thread: %s",
			  g_strerror(errno));
	if (child < 0)
		return -err;
	char buf[4];
	int fd = -1;
	size_t n_fds = 1;
	int r = fdmsg_receive(sock, buf, sizeof(buf), &fd, &n_fds) > 0 && n_fds == 1 ? 0 : -EIO;
	int status;
	waitpid(child, &status, 0);
	if (r == 0)
		*ret_fd = fd;
	return r;
}

char *nsprocfs_restrictions(int host_proc_fd, pid_t pid)
{
	g_autoptr(GPtrArray) mounts = mountinfo_of(host_proc_fd, pid);
	const struct mount_entry *e = mounts ? mountinfo_container_proc(mounts) : NULL;
	return e ? mountinfo_proc_restrictions(e->super_options) : NULL;
}
