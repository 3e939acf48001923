/* The seccomp listener (daemon.h): the socket an OCI runtime sends a
 * container's seccomp notification fd to, and the thread that answers each
 * sysinfo(2) the fd reports with the figures of the caller's view. */
#include "daemon.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "sysinfo.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define STATE_MAX (1 << 20) /* the runtime's JSON: a few kB */
#define FDS_MAX 8           /* fds one message may carry */
/* How long an answer serves the callers of one container and namespaces:
 * as long as the meminfo text it comes from (fs/files.c); its uptime is
 * moved on by the time since. */
#define ANSWER_MAX_AGE_US G_USEC_PER_SEC

/* A container's notification fd, and the last answer to its callers. */
struct notify {
	int fd;
	uint64_t ns[2];  /* the pid and cgroup namespaces it is for; 0: none */
	gint64 at_us;    /* when (monotonic) */
	double up;       /* its uptime then, s */
	struct sysinfo s;
};

struct sysinfo_listener {
	int listen_fd;
	int wake[2];      /* a byte on wake[1]: stop */
	GMutex lock;      /* guards notify's members: the thread changes them, others read */
	GArray *notify;   /* struct notify */
	struct keeper *keeper; /* holds a copy of each fd */
	gboolean reuse;   /* answers may serve other callers (the container rule) */
	struct view *view;
	int proc_fd;
	char *path;
	ino_t path_ino; /* the socket's at path: a newer daemon may bind there */
	GThread *thread;
	gint answered, continued; /* counters for .cgprocfs/stats */
};

/* The fd named "seccompFd" among fds, by the state's "fds" list; the rest
 * closed. -1 if there is none. */
static int seccomp_fd_of(const char *state, gsize len, GArray *fds)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	int found = -1;
	JsonNode *root = json_parser_load_from_data(parser, state, (gssize)len, NULL) ? json_parser_get_root(parser)
										       : NULL;
	if (root && JSON_NODE_HOLDS_OBJECT(root)) {
		JsonObject *o = json_node_get_object(root);
		JsonNode *list = json_object_get_member(o, "fds");
		JsonArray *names = list && JSON_NODE_HOLDS_ARRAY(list) ? json_node_get_array(list) : NULL;
		for (guint i = 0; names && i < json_array_get_length(names) && i < fds->len; i++) {
			JsonNode *n = json_array_get_element(names, i);
			if (found < 0 && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING &&
			    strcmp(json_node_get_string(n), "seccompFd") == 0)
				found = g_array_index(fds, int, i);
		}
	}
	for (guint i = 0; i < fds->len; i++)
		if (g_array_index(fds, int, i) != found)
			close(g_array_index(fds, int, i));
	return found;
}

/* Answer fd's notifications from now on; the keeper holds a copy. */
static void adopt(struct sysinfo_listener *l, int fd)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	g_array_append_val(l->notify, ((struct notify){ .fd = fd }));
	keeper_keep_notify(l->keeper, fd);
}

/* One runtime's connection: its JSON state and fds, read to EOF. */
static void take_connection(struct sysinfo_listener *l, int conn)
{
	struct ucred peer;
	socklen_t plen = sizeof(peer);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 || peer.uid != 0)
		return; /* as the control socket: root only */
	struct timeval limit = { .tv_sec = 1 };
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	g_autoptr(GString) state = g_string_new(NULL);
	g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
	for (;;) {
		char data[4096];
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int) * FDS_MAX)];
		} control;
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
				      .msg_controllen = sizeof(control) };
		ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				g_array_append_vals(fds, CMSG_DATA(c), (c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (n <= 0 || state->len + (gsize)n > STATE_MAX)
			break;
		g_string_append_len(state, data, n);
	}
	if (state->len == 0 && fds->len == 0)
		return; /* a probe: is anyone there (cgprocfs-runtime) */
	int fd = seccomp_fd_of(state->str, state->len, fds);
	if (fd >= 0)
		adopt(l, fd);
	else
		g_warning("seccomp listener: a runtime sent no seccompFd: its container's sysinfo stays the host's");
}

/* The namespaces an answer to tid holds for; FALSE if they cannot be told. */
static gboolean namespaces_of(int proc_fd, pid_t tid, uint64_t ret[2])
{
	const char *const names[] = { "pid", "cgroup" };
	for (int i = 0; i < 2; i++) {
		char path[48];
		struct stat st;
		snprintf(path, sizeof(path), "%d/ns/%s", (int)tid, names[i]);
		if (fstatat(proc_fd, path, &st, 0) < 0)
			return FALSE;
		ret[i] = st.st_ino;
	}
	return TRUE;
}

/* What the caller's view says in place of the kernel's answer. */
static int render_answer(struct sysinfo_listener *l, pid_t tid, struct sysinfo *ret, double *ret_up)
{
	struct caller c = { .tid = tid, .proc_fd = l->proc_fd, .pid_ns_fd = -1 };
	g_autoptr(GBytes) meminfo = NULL, uptime = NULL, loadavg = NULL;
	struct sysinfo host;
	int r;
	if (sysinfo(&host) < 0)
		return -errno;
	if ((r = view_proc_text(l->view, &c, "meminfo", &meminfo)) < 0 ||
	    (r = view_proc_text(l->view, &c, "uptime", &uptime)) < 0 ||
	    (r = view_proc_text(l->view, &c, "loadavg", &loadavg)) < 0)
		return r;
	g_autofree char *m = g_strndup(g_bytes_get_data(meminfo, NULL), g_bytes_get_size(meminfo));
	g_autofree char *u = g_strndup(g_bytes_get_data(uptime, NULL), g_bytes_get_size(uptime));
	g_autofree char *a = g_strndup(g_bytes_get_data(loadavg, NULL), g_bytes_get_size(loadavg));
	*ret_up = g_ascii_strtod(u, NULL);
	return sysinfo_from_texts(&host, m, u, a, ret);
}

/* The answer to tid, a caller of n: n's last if it is for tid's namespaces
 * and young enough (its uptime moved on), else a new one. */
static int answer_of(struct sysinfo_listener *l, struct notify *n, pid_t tid, struct sysinfo *ret)
{
	uint64_t ns[2] = { 0, 0 };
	gint64 now = g_get_monotonic_time();
	gboolean reusable = l->reuse && namespaces_of(l->proc_fd, tid, ns);
	if (reusable && ns[0] == n->ns[0] && ns[1] == n->ns[1] && now - n->at_us < ANSWER_MAX_AGE_US) {
		double up = n->up + (double)(now - n->at_us) / G_USEC_PER_SEC;
		*ret = n->s;
		ret->uptime = sysinfo_uptime(up);
		return 0;
	}
	double up = 0;
	int r = render_answer(l, tid, ret, &up);
	if (r == 0 && reusable)
		*n = (struct notify){ .fd = n->fd, .ns = { ns[0], ns[1] }, .at_us = now, .up = up, .s = *ret };
	return r;
}

/* Write the caller's answer into it: 0 if it is there, else -errno. The
 * caller's memory is opened before the request is checked to stand, so
 * that the process written is the one that asked. */
static int answer(struct sysinfo_listener *l, struct notify *n, const struct seccomp_notif *req)
{
	struct sysinfo s;
	char path[32];
	snprintf(path, sizeof(path), "%u/mem", req->pid);
	int mem = openat(l->proc_fd, path, O_WRONLY | O_CLOEXEC);
	if (mem < 0)
		return -errno;
	int r = ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0 ? -errno : 0;
	if (r == 0)
		r = answer_of(l, n, (pid_t)req->pid, &s);
	if (r == 0 && pwrite(mem, &s, sizeof(s), (off_t)req->data.args[0]) != (ssize_t)sizeof(s))
		r = -EFAULT;
	close(mem);
	return r;
}

/* One notification of fd: FALSE if fd is done (every process of its
 * filter gone). */
static gboolean handle_notification(struct sysinfo_listener *l, struct notify *n, gsize req_size, gsize resp_size)
{
	g_autofree struct seccomp_notif *req = g_malloc0(req_size);
	g_autofree struct seccomp_notif_resp *resp = g_malloc0(resp_size);
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return errno == EINTR || errno == ENOENT; /* ENOENT: the caller went */
	resp->id = req->id;
	/* Any other call, a 32-bit caller, or a failure: the kernel's answer. */
	if (req->data.nr == __NR_sysinfo && req->data.arch == AUDIT_ARCH_X86_64 && answer(l, n, req) == 0) {
		g_atomic_int_inc(&l->answered);
	} else {
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		g_atomic_int_inc(&l->continued);
	}
	ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, resp); /* ENOENT: the caller went meanwhile */
	return TRUE;
}

static gpointer listener_thread(gpointer data)
{
	struct sysinfo_listener *l = data;
	struct seccomp_notif_sizes sizes = { 0 };
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		sizes = (struct seccomp_notif_sizes){ .seccomp_notif = sizeof(struct seccomp_notif),
						      .seccomp_notif_resp = sizeof(struct seccomp_notif_resp) };
	for (;;) {
		g_autoptr(GArray) p = g_array_new(FALSE, TRUE, sizeof(struct pollfd));
		g_array_append_val(p, ((struct pollfd){ .fd = l->wake[0], .events = POLLIN }));
		g_array_append_val(p, ((struct pollfd){ .fd = l->listen_fd, .events = POLLIN }));
		for (guint i = 0; i < l->notify->len; i++)
			g_array_append_val(p, ((struct pollfd){ .fd = g_array_index(l->notify, struct notify, i).fd,
								 .events = POLLIN }));
		if (poll((struct pollfd *)p->data, p->len, -1) < 0)
			continue;
		struct pollfd *pf = (struct pollfd *)p->data;
		if (pf[0].revents)
			return NULL;
		g_mutex_lock(&l->lock);
		for (guint i = p->len - 1; i >= 2; i--) {
			if (!pf[i].revents)
				continue;
			struct notify *n = &g_array_index(l->notify, struct notify, i - 2);
			if ((pf[i].revents & POLLIN) &&
			    handle_notification(l, n, sizes.seccomp_notif, sizes.seccomp_notif_resp))
				continue;
			close(pf[i].fd);
			g_array_remove_index(l->notify, i - 2);
		}
		g_mutex_unlock(&l->lock);
		if (pf[1].revents & POLLIN) {
			int conn = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (conn >= 0) {
				take_connection(l, conn);
				close(conn);
			}
		}
	}
}

/* A listening stream socket at path, root's alone (an old one replaced):
 * the fd, or -errno. */
static int listen_at(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* a dead daemon's, that no keeper held */
	mode_t old = umask(077);
	int r = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 64) < 0 ? -errno : 0;
	umask(old);
	if (r < 0)
		close(fd);
	return r < 0 ? r : fd;
}

int sysinfo_listener_start(const char *path, int listen_fd, struct view *view, int proc_fd, gboolean reuse,
			   struct keeper *keeper, GArray *taken, struct sysinfo_listener **ret)
{
	int fd = listen_fd >= 0 ? listen_fd : listen_at(path);
	if (fd < 0)
		return fd;
	struct sysinfo_listener *l = g_new0(struct sysinfo_listener, 1);
	if (!g_unix_open_pipe(l->wake, FD_CLOEXEC, NULL)) {
		close(fd);
		g_free(l);
		return -EMFILE;
	}
	l->listen_fd = fd;
	l->notify = g_array_new(FALSE, FALSE, sizeof(struct notify));
	l->reuse = reuse;
	l->keeper = keeper;
	g_mutex_init(&l->lock);
	for (guint i = 0; taken && i < taken->len; i++) {
		adopt(l, g_array_index(taken, int, i));
		g_array_index(taken, int, i) = -1;
	}
	l->view = view;
	l->proc_fd = proc_fd;
	l->path = g_strdup(path);
	struct stat st;
	l->path_ino = stat(path, &st) == 0 ? st.st_ino : 0;
	l->thread = g_thread_new("seccomp", listener_thread, l);
	*ret = l;
	return 0;
}

int sysinfo_listener_fd(struct sysinfo_listener *l)
{
	return l ? l->listen_fd : -1;
}

void sysinfo_listener_render_stats(struct sysinfo_listener *l, GString *out)
{
	metrics_u64(out, "cgprocfs_sysinfo_answered_total", "counter",
		    "sysinfo(2) calls of containers answered with the caller's view.",
		    (uint64_t)g_atomic_int_get(&l->answered));
	metrics_u64(out, "cgprocfs_sysinfo_continued_total", "counter",
		    "Seccomp notifications left to the kernel (other calls, 32-bit callers, failures).",
		    (uint64_t)g_atomic_int_get(&l->continued));
}

void sysinfo_listener_keep_all(struct sysinfo_listener *l)
{
	if (!l)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	for (guint i = 0; i < l->notify->len; i++)
		keeper_keep_notify(l->keeper, g_array_index(l->notify, struct notify, i).fd);
}

int sysinfo_listener_hand_over(struct sysinfo_listener *l, int conn, GError **error)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	int r = 0;
	for (guint i = 0; r == 0 && i < l->notify->len; i++)
		r = handover_send_notify(conn, g_array_index(l->notify, struct notify, i).fd, error);
	return r;
}

struct sysinfo_listener *sysinfo_listener_for(struct daemon *d)
{
	g_autofree char *path = g_strconcat(d->cfg->control_socket, ".seccomp", NULL);
	struct sysinfo_listener *l = NULL;
	int r = sysinfo_listener_start(path, d->ho.seccomp_listener, d->view, d->proc_fd,
				       d->cfg->scope == SCOPE_CONTAINER, d->keeper, d->ho.notify, &l);
	if (d->ho.seccomp_listener >= 0)
		d->ho.seccomp_listener = -1; /* the listener's, whatever came of it */
	if (r < 0)
		g_warning("cannot listen on %s (%s): containers' sysinfo(2) stays the host's", path, g_strerror(-r));
	return l;
}

void sysinfo_listener_stop(struct sysinfo_listener *l)
{
	if (!l)
		return;
	if (write(l->wake[1], "", 1) < 0)
		g_warning("cannot stop the seccomp listener: %s", g_strerror(errno));
	g_thread_join(l->thread);
	for (guint i = 0; i < l->notify->len; i++)
		close(g_array_index(l->notify, struct notify, i).fd);
	g_array_unref(l->notify);
	g_mutex_clear(&l->lock);
	close(l->wake[0]);
	close(l->wake[1]);
	struct stat here;
	if (stat(l->path, &here) == 0 && here.st_ino == l->path_ino)
		unlink(l->path); /* not a newer daemon's */
	close(l->listen_fd);
	g_free(l->path);
	g_free(l);
}
