/* Containers: one FUSE session per container, on the /dev/fuse fd its OCI
 * hook mounted over the container's /proc, and one view per pid namespace.
 *
 * The hook connects to the control socket and sends "attach <pid>"; the
 * daemon mounts a procfs of that process's pid namespace for itself (once
 * per namespace) and answers with a detached mount of a new FUSE session,
 * which the hook moves over the container's /proc. The daemon checks both, serves the session from its own
 * thread, and drops it when the container's mount goes away. */
#include "cleanup.h"
#include "daemon.h"
#include "ops.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROC_SUPER_MAGIC 0x9fa0

struct ns_view {
	uint64_t ns;
	int ns_fd;   /* the pid namespace */
	int proc_fd; /* the daemon's procfs of it */
	struct view *view;
	unsigned sessions;
};

struct containers {
	struct containers_config cfg;
	char *socket_path;
	int listen_fd;
	GThread *acceptor;
	GMutex lock;       /* guards by_ns and every ns_view in it */
	GHashTable *by_ns; /* ns -> struct ns_view* */
};

struct session {
	struct containers *owner;
	struct ns_view *nsv;
	struct ops_state state;
	struct fuse_session *se;
};

static void ns_view_release(struct containers *cs, struct ns_view *nsv)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	if (--nsv->sessions > 0)
		return;
	g_hash_table_remove(cs->by_ns, &nsv->ns);
	smaps_remove_namespace(cs->cfg.smaps, nsv->ns);
	view_free(nsv->view);
	close(nsv->proc_fd);
	close(nsv->ns_fd);
	g_free(nsv);
}

/* Receive a message and at most one fd. */
static ssize_t receive(int conn, char *buf, size_t size, int *ret_fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, size - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	*ret_fd = -1;
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Send text with one fd. Async-signal-safe (the forked child uses it). */
static ssize_t send_fd(int conn, const char *text, int fd)
{
	char control[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { (void *)text, strlen(text) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(conn, &msg, 0);
}

/* In a child: mount a procfs (detached) and send its fd on sock. Only
 * async-signal-safe calls: the daemon that forked it has threads. */
static void send_new_procfs(int sock)
{
	int mnt = -1;
	int fs = fsopen("proc", FSOPEN_CLOEXEC);
	if (fs >= 0 && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		_exit(1);
	_exit(send_fd(sock, "p", mnt) == 1 ? 0 : 1);
}

/* A procfs of the pid namespace ns, the daemon's own: this thread makes
 * the namespace its children's (setns CLONE_NEWPID changes only that),
 * forks one child, born in it, which mounts a procfs there and sends it
 * back, and takes its own namespace back for its children. No mount of
 * the container is used. 0 or -errno. */
static int procfs_of_pid_ns(int host_proc_fd, int ns, int *ret_fd)
{
	int sv[2];

	_cleanup_close_ int own = openat(host_proc_fd, "thread-self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	_cleanup_close_ int sock = sv[0];
	_cleanup_close_ int child_sock = sv[1];
	if (setns(ns, CLONE_NEWPID) < 0)
		return -errno;
	pid_t child = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (child == 0)
		send_new_procfs(child_sock);
	int err = errno;
	if (setns(own, CLONE_NEWPID) < 0)
		g_error("cannot take the daemon's pid namespace back: %s", g_strerror(errno));
	if (child < 0)
		return -err;
	close(steal_fd(&child_sock));
	char buf[4];
	int fd;
	int r = receive(sock, buf, sizeof(buf), &fd) > 0 && fd >= 0 ? 0 : -EIO;
	int status;
	waitpid(child, &status, 0);
	if (r == 0)
		*ret_fd = fd;
	return r;
}

/* The view of namespace ns of host process pid, made if there is none. */
static int ns_view_get(struct containers *cs, uint64_t ns, pid_t pid, struct ns_view **ret)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	struct ns_view *nsv = g_hash_table_lookup(cs->by_ns, &ns);
	struct stat init_ns, ns_st;
	struct statfs sfs;
	char path[48];
	_cleanup_close_ int proc_fd = -1;
	int r;

	if (!nsv) {
		snprintf(path, sizeof(path), "%d/ns/pid", (int)pid);
		_cleanup_close_ int ns_fd = openat(cs->cfg.host_proc_fd, path, O_RDONLY | O_CLOEXEC);
		if (ns_fd < 0 || fstat(ns_fd, &ns_st) < 0)
			return -errno;
		if (ns_st.st_ino != ns)
			return -ESRCH; /* pid went to another process */
		r = procfs_of_pid_ns(cs->cfg.host_proc_fd, ns_fd, &proc_fd);
		if (r < 0)
			return r;
		/* A procfs, and of that namespace (its init is pid 1 there). */
		if (fstatfs(proc_fd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC ||
		    fstatat(proc_fd, "1/ns/pid", &init_ns, 0) < 0 || init_ns.st_ino != ns)
			return -EINVAL;
		const struct view_config vcfg = {
			.proc_fd = proc_fd,
			.sys_cpu_fd = cs->cfg.sys_cpu_fd,
			.cpuview = cs->cfg.cpuview,
			.smaps = cs->cfg.smaps,
			.pid_ns_fd = ns_fd,
			.pid_ns = ns,
		};
		g_autofree struct ns_view *made = g_new0(struct ns_view, 1);
		r = view_new(&vcfg, &made->view);
		if (r < 0)
			return r;
		nsv = g_steal_pointer(&made);
		nsv->ns = ns;
		nsv->ns_fd = steal_fd(&ns_fd);
		nsv->proc_fd = steal_fd(&proc_fd);
		smaps_add_namespace(cs->cfg.smaps, ns, nsv->proc_fd, nsv->ns_fd);
		g_hash_table_insert(cs->by_ns, &nsv->ns, nsv);
	}
	nsv->sessions++;
	*ret = nsv;
	return 0;
}

static gpointer session_thread(gpointer data)
{
	struct session *s = data;

	session_serve(s->se);
	pidwatch_forget_owner(s->owner->cfg.watch, &s->state);
	g_message("container view of pid namespace %" G_GUINT64_FORMAT " ended", s->nsv->ns);
	fuse_session_destroy(s->se);
	ns_view_release(s->owner, s->nsv);
	g_free(s);
	return NULL;
}

/* Start serving a view of the pid namespace of pid on fuse_fd (taken on
 * success). 0 or -errno with *ret_why. */
static int attach(struct containers *cs, pid_t pid, int fuse_fd, const char **ret_why)
{
	char path[48];
	struct stat ns_st;

	snprintf(path, sizeof(path), "%d/ns/pid", (int)pid);
	if (fstatat(cs->cfg.host_proc_fd, path, &ns_st, 0) < 0) {
		*ret_why = "no such process";
		return -ESRCH;
	}
	gint64 started = g_get_monotonic_time();
	struct session *s = g_new0(struct session, 1);
	s->owner = cs;
	int r = ns_view_get(cs, ns_st.st_ino, pid, &s->nsv);
	if (r < 0) {
		g_free(s);
		*ret_why = "cannot mount a procfs of the container's pid namespace";
		return r;
	}
	s->state = (struct ops_state){ .view = s->nsv->view, .watch = cs->cfg.watch, .proc_fd = cs->cfg.host_proc_fd };
	char *argv[] = { "cgprocfs", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	s->se = fuse_session_new(&args, &ops_table, sizeof(ops_table), &s->state);
	fuse_opt_free_args(&args);
	char dev[32];
	snprintf(dev, sizeof(dev), "/dev/fd/%d", fuse_fd);
	if (!s->se || fuse_session_mount(s->se, dev) != 0) {
		if (s->se)
			fuse_session_destroy(s->se);
		ns_view_release(cs, s->nsv);
		g_free(s);
		*ret_why = "cannot start a FUSE session on that fd";
		return -EINVAL;
	}
	s->state.session = s->se;
	/* The session owns fuse_fd from here; the hook keeps its own copy. */
	g_thread_unref(g_thread_new("container", session_thread, s));
	g_message("serving the view of pid namespace %" G_GUINT64_FORMAT " (container init %d), set up in %.1f ms",
		  (uint64_t)ns_st.st_ino, (int)pid, (double)(g_get_monotonic_time() - started) / 1000);
	return 0;
}


/* A detached FUSE mount on fuse_fd, made here so that the FUSE connection
 * numbers callers in the daemon's pid namespace (it takes the mounter's). */
static int mount_detached(int fuse_fd)
{
	char fd_text[16];
	_cleanup_close_ int fs = fsopen("fuse", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	snprintf(fd_text, sizeof(fd_text), "%d", fuse_fd);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "cgprocfs", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "subtype", "cgprocfs", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "fd", fd_text, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "rootmode", "40000", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "user_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "group_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "allow_other", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_RDONLY);
	return mnt < 0 ? -errno : mnt;
}

/* One request from a hook: "attach <pid>". The answer is "ok" with a
 * detached mount of the container's view, for the hook to move into place,
 * or "error: ...". */
static void handle(struct containers *cs, int conn)
{
	char buf[64];
	struct ucred peer;
	socklen_t len = sizeof(peer);
	const char *why = "bad request";
	pid_t pid = 0;
	int proc_fd = -1;

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || peer.uid != 0) {
		(void)!write(conn, "error: only root may attach containers", 38);
		return;
	}
	if (receive(conn, buf, sizeof(buf), &proc_fd) <= 0 || sscanf(buf, "attach %d", &pid) != 1 || pid <= 0) {
		if (proc_fd >= 0)
			close(proc_fd);
		(void)!write(conn, "error: bad request", 18);
		return;
	}
	if (proc_fd >= 0)
		close(proc_fd); /* the daemon mounts its own */
	_cleanup_close_ int fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	_cleanup_close_ int mnt = fuse_fd < 0 ? -errno : mount_detached(fuse_fd);
	int r = mnt;
	if (r < 0) {
		why = "cannot make a FUSE mount";
	} else {
		r = attach(cs, pid, fuse_fd, &why);
		if (r == 0)
			fuse_fd = -1; /* the session's now */
	}
	if (r == 0) {
		(void)!send_fd(conn, "ok", mnt);
		return;
	}
	g_autofree char *reply = g_strdup_printf("error: %s", why);
	g_warning("refused to attach a container (pid %d): %s", (int)pid, why);
	(void)!write(conn, reply, strlen(reply));
}

static gpointer acceptor_thread(gpointer data)
{
	struct containers *cs = data;
	for (;;) {
		int conn = accept4(cs->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL; /* shut down */
		}
		handle(cs, conn);
		close(conn);
	}
}

int containers_start(const struct containers_config *cfg, struct containers **ret)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	g_autofree char *dir = g_path_get_dirname(cfg->socket_path);

	if (strlen(cfg->socket_path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	if (g_mkdir_with_parents(dir, 0700) < 0)
		return -errno;
	strcpy(addr.sun_path, cfg->socket_path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(cfg->socket_path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(cfg->socket_path, 0600) < 0 ||
	    listen(fd, 16) < 0)
		return -errno;
	struct containers *cs = g_new0(struct containers, 1);
	cs->cfg = *cfg;
	cs->socket_path = g_strdup(cfg->socket_path);
	cs->cfg.socket_path = cs->socket_path;
	cs->listen_fd = steal_fd(&fd);
	g_mutex_init(&cs->lock);
	cs->by_ns = g_hash_table_new(g_int64_hash, g_int64_equal);
	cs->acceptor = g_thread_new("control", acceptor_thread, cs);
	*ret = cs;
	return 0;
}

gboolean containers_stop(struct containers *cs)
{
	if (!cs)
		return FALSE;
	/* Containers' sessions live on until the process exits: their views
	 * then fail with ENOTCONN, as a view does whose daemon is gone. */
	shutdown(cs->listen_fd, SHUT_RDWR);
	g_thread_join(cs->acceptor);
	close(cs->listen_fd);
	unlink(cs->socket_path);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&cs->lock);
	return g_hash_table_size(cs->by_ns) > 0;
}
