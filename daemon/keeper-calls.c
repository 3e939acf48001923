/* The keeper past --keeper-wait: the containers' notified calls go to
 * the kernel (keeper-held.h). */
#include "keeper-held.h"

#include "inflight.h"
#include "log.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

void kept_free(gpointer p)
{
	struct kept *k = p;
	close(k->fuse_fd);
	if (k->ns_fd >= 0)
		close(k->ns_fd);
	g_free(k);
}

static void let_go(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Close every fd of h but the seccomp notification fds. */
static void drop_all_but_calls(struct held *h)
{
	g_hash_table_remove_all(h->sessions);
	let_go(&h->listener);
	let_go(&h->seccomp_listeners[0]);
	let_go(&h->seccomp_listeners[1]);
	let_go(&h->inflight);
	let_go(&h->listen_fd); /* its path stays: a newer keeper may be renamed there */
	for (guint i = h->notify->len; i-- > 0;) {
		int type, fd = g_array_index(h->notify, int, i);
		socklen_t len = sizeof(type);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0) { /* an LXC monitor's */
			close(fd);
			g_array_remove_index_fast(h->notify, i);
		}
	}
}

/* Answer one notification of fd, if one is there, with CONTINUE. */
static void let_through(int fd, struct seccomp_notif *req, gsize req_size, struct seccomp_notif_resp *resp,
			gsize resp_size)
{
	memset(req, 0, req_size);
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return; /* ENOENT: the caller went */
	memset(resp, 0, resp_size);
	resp->id = req->id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	(void)!ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp);
}

/* The notifications the dead daemon took and did not answer (inflight.h),
 * each let through on the fd of its filter (the others say ENOENT), and
 * those it was taking as it died. */
static void let_taken_through(struct held *h)
{
	struct seccomp_notif taken[INFLIGHT_CALLS];
	int fd = h->inflight >= 0 ? dup(h->inflight) : -1;
	struct inflight *f = fd >= 0 ? inflight_adopt(fd) : NULL;
	unsigned n = inflight_calls_take(f, taken);
	inflight_let_lost_through(f, (const int *)(void *)h->notify->data, h->notify->len);
	inflight_free(f);
	for (unsigned i = 0; i < n; i++)
		for (guint j = 0; j < h->notify->len; j++) {
			struct seccomp_notif_resp resp = { .id = taken[i].id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
			if (ioctl(g_array_index(h->notify, int, j), SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0)
				break;
		}
}

int keeper_let_calls_through(struct held *h, const char *why)
{
	struct seccomp_notif_sizes sizes = { 0 };
	let_taken_through(h);
	drop_all_but_calls(h);
	if (h->notify->len == 0)
		return 1;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		g_warning("the keeper cannot ask the kernel's seccomp sizes (%s): it assumes its own", g_strerror(errno));
	const gsize req_size = MAX((gsize)sizes.seccomp_notif, sizeof(struct seccomp_notif));
	const gsize resp_size = MAX((gsize)sizes.seccomp_notif_resp, sizeof(struct seccomp_notif_resp));
	g_autofree struct seccomp_notif *req = g_malloc0(req_size);
	g_autofree struct seccomp_notif_resp *resp = g_malloc0(resp_size);
	g_message("%s: the views end, and the notified calls of %u containers (sysinfo, sched_getaffinity) get "
		  "the kernel's answers until they are gone", why, h->notify->len);
	while (h->notify->len > 0) {
		g_autofree struct pollfd *p = g_new0(struct pollfd, h->notify->len);
		for (guint i = 0; i < h->notify->len; i++)
			p[i] = (struct pollfd){ .fd = g_array_index(h->notify, int, i), .events = POLLIN };
		if (poll(p, h->notify->len, -1) < 0 && errno != EINTR)
			return 1;
		for (guint i = h->notify->len; i-- > 0;) {
			if (p[i].revents & POLLIN)
				let_through(p[i].fd, req, req_size, resp, resp_size);
			else if (p[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
				close(p[i].fd);
				g_array_remove_index(h->notify, i);
			}
		}
	}
	return 1;
}
