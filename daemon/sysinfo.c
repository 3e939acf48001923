/* The seccomp listener (daemon.h): the socket an OCI runtime sends a
 * container's seccomp notification fd to, the one LXC's monitor sends each
 * notification of its containers to (lxc.seccomp.notify.proxy), and the
 * threads that answer each sysinfo(2) with the figures of the caller's
 * view, and each sched_getaffinity(2) with its CPUs (affinity.c). */
#include "affinity.h"
#include "cleanup.h"
#include "daemon.h"
#include "faults.h"
#include "inflight.h"
#include "inplace.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "procfile.h"
#include "seccomp-state.h"
#include "server.h"
#include "sysinfo-answer.h"
#include "sysinfo.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAKE_STOP 's'
#define WAKE_LOOK 'l'

/* What LXC's monitor sends for each notification (lxc.seccomp.notify.proxy),
 * before the notification, the response it proposes and a cookie, with
 * the caller's /proc/<pid> and /proc/<pid>/mem and the notification fd;
 * the answer is the same without the cookie, the response filled. */
struct lxc_proxy_msg {
	uint64_t reserved;
	int32_t monitor_pid, init_pid;
	struct seccomp_notif_sizes sizes;
	uint64_t cookie_len;
};
G_STATIC_ASSERT(sizeof(struct lxc_proxy_msg) == 32);
#define LXC_COOKIE_MAX 64
enum { LXC_FD_PROC, LXC_FD_MEM, LXC_FD_NOTIFY, LXC_FDS };

/* A container's notification fd, or an LXC monitor's connection, and the
 * last answer to its callers. */
struct notify {
	int fd;
	gboolean lxc; /* an LXC monitor's connection */
	gboolean busy; /* an answerer has it (under the listener's lock) */
	gboolean done; /* every process of its filter gone, or the peer (likewise) */
	struct answer last; /* its answerer's */
	guint64 next_id; /* its next notification's, once one was taken (its answerer's) */
};

/* Answerers at most: each answers one fd's notification at a time, so that
 * no container's sysinfo waits behind another's render (its first loadavg
 * sample, its namespace's first init search). */
#define ANSWERERS_MAX 8

struct sysinfo_listener {
	int listen_fds[2]; /* the runtimes' (stream), LXC's (seqpacket) */
	int wake[2];      /* a byte on wake[1]: STOP, or look at paused again */
	GMutex lock;      /* guards notify, each one's busy and done, and in_flight */
	GPtrArray *notify; /* struct notify (the listener thread adds and removes them) */
	guint in_flight;  /* notify's busy */
	GCond idle;       /* in_flight fell */
	GThreadPool *answerers;
	struct seccomp_notif_sizes sizes; /* the kernel's */
	gboolean paused;  /* handed over: nothing taken or answered (a notification
	                   * received and left unanswered waits for ever) */
	struct keeper *keeper; /* holds a copy of each fd */
	struct inflight *in_hand; /* the notifications taken and not answered yet */
	struct sysinfo_source src; /* sysinfo's answers; its in_place is per mount namespace */
	struct affinity *affinity; /* sched_getaffinity's answers */
	char *paths[2];
	ino_t path_inos[2]; /* the sockets' at paths: a newer daemon may bind there */
	GThread *thread;
	gint answered, failed, continued; /* counters for .cgprocfs/stats */
};

static struct notify *notify_at(struct sysinfo_listener *l, guint i)
{
	return g_ptr_array_index(l->notify, i);
}

static void notify_free(gpointer p)
{
	struct notify *n = p;
	close(n->fd);
	g_free(n);
}

/* Answer fd's notifications (a socket: an LXC monitor's requests) from now
 * on; the keeper holds a copy. One taken twice (an older keeper kept each
 * once more at every takeover) is answered on one fd: on the other, a
 * notification would already be gone. */
static void adopt(struct sysinfo_listener *l, int fd)
{
	int type;
	socklen_t len = sizeof(type);
	gboolean lxc = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	for (guint i = 0; i < l->notify->len; i++)
		if (control_same_file(notify_at(l, i)->fd, fd)) {
			close(fd);
			return;
		}
	struct notify *n = g_new0(struct notify, 1);
	*n = (struct notify){ .fd = fd, .lxc = lxc };
	g_ptr_array_add(l->notify, n);
	keeper_keep_notify(l->keeper, fd);
}

/* Whether req is a sysinfo(2) of an x86 ABI (x86-64, x32, i386: 116 there),
 * the one call a profile notifies for the view. */
static gboolean is_sysinfo(const struct seccomp_notif *req)
{
	if (req->data.arch == AUDIT_ARCH_I386)
		return req->data.nr == 116;
	return req->data.arch == AUDIT_ARCH_X86_64 &&
	       (req->data.nr & ~(int)__X32_SYSCALL_BIT) == __NR_sysinfo;
}

/* The calls a profile notifies for the view, by (arch, nr). */
enum call {
	CALL_SYSINFO,  /* sysinfo(2) of x86-64: answered here */
	CALL_AFFINITY, /* sched_getaffinity(2) of an x86 ABI: affinity.c's */
	CALL_KERNELS,  /* ours, left to the kernel: a 32-bit sysinfo */
	CALL_OTHER,    /* not ours */
};

static enum call call_of(const struct seccomp_notif *req)
{
	if (req->data.nr == __NR_sysinfo && req->data.arch == AUDIT_ARCH_X86_64)
		return CALL_SYSINFO;
	if (affinity_is_call(req))
		return CALL_AFFINITY;
	return is_sysinfo(req) ? CALL_KERNELS : CALL_OTHER;
}

/* resp for req: answered here (0 from answer), failed (-EIO: the
 * caller's figures could not be had), or the kernel's answer. */
static void respond(struct sysinfo_listener *l, const struct seccomp_notif *req, int answered,
		    struct seccomp_notif_resp *resp)
{
	*resp = (struct seccomp_notif_resp){ .id = req->id };
	if (answered == 0) {
		g_atomic_int_inc(&l->answered);
	} else if (answered == -EIO) {
		resp->error = -EIO;
		g_atomic_int_inc(&l->failed);
	} else {
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		g_atomic_int_inc(&l->continued);
	}
}

/* resp to req, one of ours, on notify_fd: the caller's memory is mem (-1:
 * it could not be opened, err why). */
static void answer_call(struct sysinfo_listener *l, struct notify *n, int notify_fd, int mem, int err,
			const struct seccomp_notif *req, struct seccomp_notif_resp *resp)
{
	uint64_t val = 0;
	int r;
	switch (call_of(req)) {
	case CALL_SYSINFO:
		r = mem >= 0 ? sysinfo_answer(&l->src, &n->last, notify_fd, mem, req) : sysinfo_out_of_fds(err) ? -EIO : -err;
		respond(l, req, r, resp);
		return;
	case CALL_AFFINITY:
		/* Never EIO: the kernel's errors, or its mask, at worst. */
		r = affinity_answer(l->affinity, notify_fd, mem, req, &val);
		*resp = (struct seccomp_notif_resp){ .id = req->id, .val = r == 0 ? (int64_t)val : 0,
						     .flags = r == 0 ? 0 : SECCOMP_USER_NOTIF_FLAG_CONTINUE };
		return;
	case CALL_KERNELS:
	case CALL_OTHER:
		respond(l, req, -ENOSYS, resp);
		return;
	}
}

/* Answer req, taken on n's fd, and send resp, kept in l->in_hand's slot
 * meanwhile. */
static void answer_and_send(struct sysinfo_listener *l, struct notify *n, const struct seccomp_notif *req,
			    struct seccomp_notif_resp *resp, int slot)
{
	if (fault_armed())
		fault_point("call-taken");
	enum call call = call_of(req);
	char path[32];
	snprintf(path, sizeof(path), "%u/mem", req->pid);
	int mem = call == CALL_SYSINFO || call == CALL_AFFINITY ? openat(l->src.proc_fd, path, O_WRONLY | O_CLOEXEC) : -1;
	answer_call(l, n, n->fd, mem, errno, req, resp);
	if (mem >= 0)
		close(mem);
	ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, resp); /* ENOENT: the caller went meanwhile */
	inflight_call_answered(l->in_hand, slot);
}

/* The notifications a dead daemon kept in dead, each on the fd of its
 * filter (the one the kernel says it stands on), answered as if taken
 * now; before the listener's thread takes anything. */
static void answer_dead_daemons(struct sysinfo_listener *l, struct inflight *dead)
{
	struct seccomp_notif taken[INFLIGHT_CALLS];
	unsigned n = inflight_calls_take(dead, taken), answered = 0;
	g_autofree struct seccomp_notif_resp *resp = g_malloc0(MAX(l->sizes.seccomp_notif_resp, sizeof(*resp)));
	for (unsigned i = 0; i < n; i++)
		for (guint j = 0; j < l->notify->len; j++) {
			struct notify *fd_of = notify_at(l, j);
			if (!fd_of->lxc && ioctl(fd_of->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &taken[i].id) == 0) {
				answer_and_send(l, fd_of, &taken[i], resp, inflight_call_taken(l->in_hand, &taken[i]));
				answered++;
				break;
			}
		}
	if (answered > 0)
		g_message("answered %u sysinfo(2) or sched_getaffinity(2) call(s) a daemon that died had taken", answered);
	g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
	for (guint j = 0; j < l->notify->len; j++)
		if (!notify_at(l, j)->lxc)
			g_array_append_val(fds, notify_at(l, j)->fd);
	unsigned through = inflight_let_lost_through(dead, (const int *)(void *)fds->data, fds->len);
	if (through > 0)
		g_message("let %u call(s) through to the kernel that a daemon that died was taking when it died", through);
}

/* One notification of n's fd: FALSE if the fd is done (every process of
 * its filter gone). */
static gboolean handle_notification(struct sysinfo_listener *l, struct notify *n, gsize req_size, gsize resp_size)
{
	g_autofree struct seccomp_notif *req = g_malloc0(req_size);
	g_autofree struct seccomp_notif_resp *resp = g_malloc0(resp_size);
	/* The receive waits for a notification: only if one is still there
	 * (another fd of the same filter may have taken it). */
	struct pollfd still = { .fd = n->fd, .events = POLLIN };
	if (poll(&still, 1, 0) != 1 || !(still.revents & POLLIN))
		return !(still.revents & (POLLHUP | POLLERR | POLLNVAL));
	int slot = inflight_call_receiving(l->in_hand, n->next_id);
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
		int err = errno;
		inflight_call_answered(l->in_hand, slot);
		return err == EINTR || err == ENOENT; /* ENOENT: the caller went */
	}
	if (fault_armed() && n->next_id) /* a call whose id was expected */
		fault_point("call-received");
	n->next_id = req->id + 1; /* a filter numbers its notifications one after another */
	inflight_call_taken_in(l->in_hand, slot, req);
	answer_and_send(l, n, req, resp, slot);
	return TRUE;
}

/* One request of an LXC monitor on n's connection: FALSE once it is gone.
 * LXC opened the caller's memory before it checked the request stands; a
 * message not as the kernel's sizes say gets an empty answer, on which
 * LXC answers the call itself. */
static gboolean handle_lxc_request(struct sysinfo_listener *l, struct notify *n, const struct seccomp_notif_sizes *k)
{
	struct lxc_proxy_msg msg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	char cookie[LXC_COOKIE_MAX];
	int fds[LXC_FDS] = { -1, -1, -1 };
	struct iovec iov[] = { { &msg, sizeof(msg) }, { &req, sizeof(req) }, { &resp, sizeof(resp) },
			       { cookie, sizeof(cookie) } };
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(fds))];
	} control;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 4, .msg_control = &control, .msg_controllen = sizeof(control) };
	ssize_t got = recvmsg(n->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (got <= 0)
		return got < 0 && (errno == EINTR || errno == EAGAIN);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	size_t n_fds = c && c->cmsg_type == SCM_RIGHTS ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;
	if (n_fds)
		memcpy(fds, CMSG_DATA(c), MIN(n_fds, (size_t)LXC_FDS) * sizeof(int));
	/* Room is rounded up: one more fd than LXC sends can come. */
	for (size_t i = LXC_FDS; i < n_fds; i++)
		close(((int *)CMSG_DATA(c))[i]);
	gboolean whole = got >= (ssize_t)(sizeof(msg) + sizeof(req) + sizeof(resp)) && n_fds == LXC_FDS &&
			 msg.sizes.seccomp_notif == k->seccomp_notif && msg.sizes.seccomp_notif_resp == k->seccomp_notif_resp &&
			 msg.sizes.seccomp_data == k->seccomp_data;
	if (whole) {
		/* LXC forwards every notification of the container's profile:
		 * a call the profile notifies that is neither sysinfo nor
		 * sched_getaffinity is another supervisor's to allow, not ours.
		 * ENOSYS, as the kernel answers a filter's notification that no
		 * listener takes. */
		if (call_of(&req) == CALL_OTHER)
			resp = (struct seccomp_notif_resp){ .id = req.id, .error = -ENOSYS };
		else
			answer_call(l, n, fds[LXC_FD_NOTIFY], fds[LXC_FD_MEM], EBADF, &req, &resp);
	}
	struct msghdr out = { .msg_iov = iov, .msg_iovlen = whole ? 3 : 0 };
	/* Never waiting: a peer that does not read its answers is dropped
	 * (it would hold every container's sysinfo here). */
	gboolean sent = sendmsg(n->fd, &out, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0;
	if (!sent && errno == EAGAIN)
		g_warning("dropped an LXC monitor's connection that does not read its answers");
	for (size_t i = 0; i < MIN(n_fds, (size_t)LXC_FDS); i++)
		close(fds[i]);
	return sent;
}

/* A connection on listen_fds[which]: a runtime's fd, or an LXC monitor. */
static void accept_on(struct sysinfo_listener *l, int which)
{
	int conn = accept4(l->listen_fds[which], NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	if (which == 1 && seccomp_peer_is_root(conn)) {
		adopt(l, conn); /* its requests come on it */
		return;
	}
	int fd = which == 0 ? seccomp_runtime_fd(conn) : -1;
	if (fd >= 0)
		adopt(l, fd);
	close(conn);
}

/* An answerer: n's notification or request, answered with no lock held;
 * then n is polled again. */
static void answer_one(gpointer data, gpointer user_data)
{
	struct notify *n = data;
	struct sysinfo_listener *l = user_data;
	gboolean on = n->lxc ? handle_lxc_request(l, n, &l->sizes)
			     : handle_notification(l, n, l->sizes.seccomp_notif, l->sizes.seccomp_notif_resp);
	g_mutex_lock(&l->lock);
	n->busy = FALSE;
	n->done = !on;
	l->in_flight--;
	g_cond_broadcast(&l->idle);
	g_mutex_unlock(&l->lock);
	if (write(l->wake[1], (char[]){ WAKE_LOOK }, 1) < 0)
		g_warning("cannot wake the seccomp listener: %s", g_strerror(errno));
}

/* The fds to poll after head: every one not busy, and not paused; the
 * done ones closed. Under the lock. */
static void poll_set(struct sysinfo_listener *l, gboolean paused, GArray *p, GPtrArray *polled)
{
	for (guint i = l->notify->len; i-- > 0;)
		if (notify_at(l, i)->done)
			g_ptr_array_remove_index(l->notify, i);
	for (guint i = 0; i < l->notify->len && !paused; i++) {
		struct notify *n = notify_at(l, i);
		if (n->busy)
			continue;
		g_array_append_val(p, ((struct pollfd){ .fd = n->fd, .events = POLLIN }));
		g_ptr_array_add(polled, n);
	}
}

static gpointer listener_thread(gpointer data)
{
	struct sysinfo_listener *l = data;
	for (;;) {
		g_autoptr(GArray) p = g_array_new(FALSE, TRUE, sizeof(struct pollfd));
		g_autoptr(GPtrArray) polled = g_ptr_array_new();
		const gboolean paused = g_atomic_int_get(&l->paused);
		const int head[] = { l->wake[0], paused ? -1 : l->listen_fds[0], paused ? -1 : l->listen_fds[1] };
		for (guint i = 0; i < G_N_ELEMENTS(head); i++)
			g_array_append_val(p, ((struct pollfd){ .fd = head[i], .events = POLLIN }));
		g_mutex_lock(&l->lock);
		poll_set(l, paused, p, polled);
		g_mutex_unlock(&l->lock);
		if (poll((struct pollfd *)p->data, p->len, -1) < 0)
			continue;
		struct pollfd *pf = (struct pollfd *)p->data;
		char said = 0;
		if (pf[0].revents && (read(l->wake[0], &said, 1) != 1 || said == WAKE_STOP))
			return NULL;
		g_mutex_lock(&l->lock);
		/* Paused since the poll: nothing more is taken (a handover
		 * waits for the answerers under way). */
		for (guint i = 0; i < polled->len && !g_atomic_int_get(&l->paused); i++) {
			struct notify *n = g_ptr_array_index(polled, i);
			if (!pf[G_N_ELEMENTS(head) + i].revents)
				continue;
			n->busy = TRUE;
			l->in_flight++;
			g_thread_pool_push(l->answerers, n, NULL);
		}
		g_mutex_unlock(&l->lock);
		for (int which = 0; which < 2; which++)
			if (pf[1 + which].revents & POLLIN)
				accept_on(l, which);
	}
}

int sysinfo_listener_start(const char *base, const int listen_fds[2], const struct affinity_config *calls,
			   gboolean reuse, const struct listener_kept *kept, struct sysinfo_listener **ret)
{
	static const char *const suffixes[] = { ".seccomp", ".lxc" };
	static const int types[] = { SOCK_STREAM, SOCK_SEQPACKET };
	struct sysinfo_listener *l = g_new0(struct sysinfo_listener, 1);
	int r = 0;
	for (int i = 0; i < 2; i++) {
		l->paths[i] = g_strconcat(base, suffixes[i], NULL);
		l->listen_fds[i] = listen_fds[i] >= 0 ? listen_fds[i] : r < 0 ? -1 : control_listen_type(l->paths[i], types[i], 64);
		r = l->listen_fds[i] < 0 ? (r < 0 ? r : l->listen_fds[i]) : r;
		struct stat st;
		l->path_inos[i] = stat(l->paths[i], &st) == 0 ? st.st_ino : 0;
	}
	if (r < 0 || !g_unix_open_pipe(l->wake, FD_CLOEXEC, NULL)) {
		for (int i = 0; i < 2; i++) {
			if (l->listen_fds[i] >= 0)
				close(l->listen_fds[i]);
			g_free(l->paths[i]);
		}
		g_free(l);
		return r < 0 ? r : -EMFILE;
	}
	l->notify = g_ptr_array_new_with_free_func(notify_free);
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &l->sizes) < 0)
		l->sizes = (struct seccomp_notif_sizes){ .seccomp_notif = sizeof(struct seccomp_notif),
							 .seccomp_notif_resp = sizeof(struct seccomp_notif_resp),
							 .seccomp_data = sizeof(struct seccomp_data) };
	l->answerers = g_thread_pool_new(answer_one, l, ANSWERERS_MAX, FALSE, NULL);
	g_cond_init(&l->idle);
	l->src.reuse = reuse;
	l->keeper = kept->keeper;
	l->in_hand = kept->in_hand;
	g_mutex_init(&l->lock);
	for (guint i = 0; kept->taken && i < kept->taken->len; i++) {
		adopt(l, g_array_index(kept->taken, int, i));
		g_array_index(kept->taken, int, i) = -1;
	}
	l->src.view = calls->view;
	l->src.proc_fd = calls->proc_fd;
	l->src.in_place = inplace_new(l->src.proc_fd);
	struct affinity_config affinity = *calls;
	affinity.in_place = l->src.in_place;
	l->affinity = affinity_new(&affinity);
	answer_dead_daemons(l, kept->dead);
	l->thread = g_thread_new("seccomp", listener_thread, l);
	*ret = l;
	return 0;
}

const int *sysinfo_listener_fds(struct sysinfo_listener *l)
{
	static const int none[2] = { -1, -1 };
	return l ? l->listen_fds : none;
}

void sysinfo_listener_render_stats(struct sysinfo_listener *l, GString *out)
{
	metrics_u64(out, "cgprocfs_sysinfo_answered_total", "counter",
		    "sysinfo(2) calls of containers answered with the caller's view.",
		    (uint64_t)g_atomic_int_get(&l->answered));
	metrics_u64(out, "cgprocfs_sysinfo_continued_total", "counter",
		    "Seccomp notifications left to the kernel (other calls, 32-bit callers, failures).",
		    (uint64_t)g_atomic_int_get(&l->continued));
	metrics_u64(out, "cgprocfs_sysinfo_failed_total", "counter",
		    "sysinfo(2) calls of containers whose view is in place answered EIO: their figures could not be "
		    "had (the daemon out of fds, a scope not found), and the kernel's are the host's.",
		    (uint64_t)g_atomic_int_get(&l->failed));
	affinity_render_stats(l->affinity, out);
}

void sysinfo_listener_keep_all(struct sysinfo_listener *l)
{
	if (!l)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	for (guint i = 0; i < l->notify->len; i++)
		keeper_keep_notify(l->keeper, notify_at(l, i)->fd);
}

/* Take no more, and wait for the answers under way to be sent. Under the lock. */
static void pause_locked(struct sysinfo_listener *l)
{
	g_atomic_int_set(&l->paused, TRUE); /* the thread takes no more under the lock */
	while (l->in_flight > 0)
		g_cond_wait(&l->idle, &l->lock);
}

void sysinfo_listener_pause(struct sysinfo_listener *l)
{
	if (!l)
		return;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	pause_locked(l);
}

int sysinfo_listener_hand_over(struct sysinfo_listener *l, int conn, GError **error)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&l->lock);
	pause_locked(l);
	int r = 0;
	for (guint i = 0; r == 0 && i < l->notify->len; i++)
		r = handover_send_notify(conn, notify_at(l, i)->fd, error);
	return r;
}

void sysinfo_listener_resume(struct sysinfo_listener *l)
{
	if (l && g_atomic_int_compare_and_exchange(&l->paused, TRUE, FALSE) &&
	    write(l->wake[1], (char[]){ WAKE_LOOK }, 1) < 0)
		g_warning("cannot wake the seccomp listener: %s", g_strerror(errno));
}

struct sysinfo_listener *sysinfo_listener_for(struct daemon *d)
{
	struct sysinfo_listener *l = NULL;
	const struct affinity_config calls = { .proc_fd = d->proc_fd, .view = d->view, .scope = d->scope,
					       .cgroups = &d->cgroups.config, .off = !d->cfg->affinity };
	const struct listener_kept kept = { .keeper = d->keeper, .taken = d->ho.notify,
					    .in_hand = d->server->inflight, .dead = d->server->replay };
	int r = sysinfo_listener_start(d->cfg->control_socket, d->ho.seccomp_listeners, &calls,
				       d->cfg->scope == SCOPE_CONTAINER, &kept, &l);
	d->ho.seccomp_listeners[0] = d->ho.seccomp_listeners[1] = -1; /* the listener's, whatever came of it */
	if (r < 0)
		g_warning("cannot listen on %s.seccomp and .lxc (%s): containers' sysinfo(2) and sched_getaffinity(2) "
			  "stay the host's",
			  d->cfg->control_socket, g_strerror(-r));
	return l;
}

void sysinfo_listener_stop(struct sysinfo_listener *l)
{
	if (!l)
		return;
	if (write(l->wake[1], (char[]){ WAKE_STOP }, 1) < 0)
		g_warning("cannot stop the seccomp listener: %s", g_strerror(errno));
	g_thread_join(l->thread);
	g_thread_pool_free(l->answerers, FALSE, TRUE); /* the answers under way end */
	g_ptr_array_unref(l->notify);
	g_cond_clear(&l->idle);
	g_mutex_clear(&l->lock);
	close(l->wake[0]);
	close(l->wake[1]);
	for (int i = 0; i < 2; i++) {
		struct stat here;
		if (stat(l->paths[i], &here) == 0 && here.st_ino == l->path_inos[i])
			unlink(l->paths[i]); /* not a newer daemon's */
		close(l->listen_fds[i]);
		g_free(l->paths[i]);
	}
	affinity_free(l->affinity);
	inplace_free(l->src.in_place);
	g_free(l);
}
