/* The notifier process, and the daemon's end of it (notifier.h). */
#include "notifier.h"

#include "cleanup.h"
#include "control.h"

#include <errno.h>
#include <glib.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* One per process (the channels are thread-local). */
struct notifier {
	GMutex lock;  /* guards sock's sends */
	int sock;     /* channels are sent to the notifier on it */
	gint lost;    /* the notifier process is gone: notifications go directly */
	gint silent;  /* notifier_silence: nothing is written */
	int silenced; /* eventfd, readable once silent */
};

/* ----------------------------------------------------------- the child -- */

/* Write the notifications of buf (one, or a batch of them one after the
 * other, each as long as its header says) on fd: 0, or the first errno. */
static int32_t write_all(int fd, const char *buf, size_t len)
{
	int32_t err = 0;
	while (len > 0) {
		struct fuse_out_header h; /* copied: a batch's are unaligned */
		if (len < sizeof(h))
			return err ? err : EINVAL;
		memcpy(&h, buf, sizeof(h));
		if (h.len < sizeof(h) || h.len > len)
			return err ? err : EINVAL;
		if (write(fd, buf, h.len) < 0 && !err)
			err = errno;
		buf += h.len;
		len -= h.len;
	}
	return err;
}

/* One thread of the daemon's: each message is a notification (or a
 * batch) with the fd to write it on; the answer is the write's errno (0:
 * written). */
static gpointer channel_thread(gpointer data)
{
	int chan = GPOINTER_TO_INT(data);
	g_autofree char *buf = g_malloc(NOTIFIER_MAX_MESSAGE + 1);

	for (;;) {
		int fuse_fd;
		size_t n_fds = 1;
		ssize_t len = fdmsg_receive(chan, buf, NOTIFIER_MAX_MESSAGE + 1, &fuse_fd, &n_fds);
		if (len == -EINTR)
			continue;
		if (len == 0 || len == -ECONNRESET || len == -EBADF)
			break; /* the thread is gone */
		int32_t err = 0;
		if (len < 0)
			err = (int32_t)-len;
		else if (n_fds != 1)
			err = EBADF;
		else
			err = write_all(fuse_fd, buf, (size_t)len);
		if (n_fds == 1)
			close(fuse_fd);
		if (send(chan, &err, sizeof(err), MSG_NOSIGNAL) < 0)
			break;
	}
	close(chan);
	return NULL;
}

/* Each message on sock brings a channel: a thread for it. Until the
 * daemon closes sock or exits (the parent-death signal). */
G_GNUC_NORETURN static void notifier_main(int sock)
{
	prctl(PR_SET_NAME, "cgprocfs-notify");
	/* Signals meant for the daemon (a terminal's Ctrl-C) are not the
	 * notifier's: it goes with the daemon. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	for (;;) {
		char byte[2];
		int chan;
		size_t n_fds = 1;
		ssize_t r = fdmsg_receive(sock, byte, sizeof(byte), &chan, &n_fds);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			_exit(0);
		if (n_fds == 1 && !g_thread_try_new("notify", channel_thread, GINT_TO_POINTER(chan), NULL))
			close(chan); /* the daemon's thread writes directly */
	}
}

int notifier_start(struct notifier **ret)
{
	int sock;
	pid_t parent = getpid();
	pid_t pid = fdmsg_fork(&sock);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		/* It must hold nothing of the daemon's (the keeper sees the
		 * daemon gone when its socket is closed by every holder), and
		 * go when the daemon's main thread does. */
		close_range(3, (unsigned)sock - 1, 0);
		close_range((unsigned)sock + 1, ~0u, 0);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(0);
		notifier_main(sock);
	}
	struct notifier *n = g_new0(struct notifier, 1);
	g_mutex_init(&n->lock);
	n->sock = sock;
	n->silenced = eventfd(0, EFD_CLOEXEC);
	if (n->silenced < 0) {
		int r = -errno;
		close(sock);
		g_free(n);
		return r;
	}
	*ret = n;
	return 0;
}

void notifier_silence(struct notifier *n)
{
	if (!n)
		return;
	g_atomic_int_set(&n->silent, 1);
	(void)!eventfd_write(n->silenced, 1);
}

void notifier_free(struct notifier *n)
{
	if (!n)
		return;
	close(n->silenced);
	close(n->sock);
	g_mutex_clear(&n->lock);
	g_free(n);
}

/* ---------------------------------------------------------- the daemon -- */

static void close_channel(gpointer p)
{
	close(GPOINTER_TO_INT(p) - 1);
}

/* This thread's channel (stored plus one: NULL is none). */
static GPrivate channel_of = G_PRIVATE_INIT(close_channel);

/* The notifier process is gone, or cannot take this thread: from now on
 * every notification is written directly. */
static void lose(struct notifier *n, const char *why)
{
	if (g_atomic_int_compare_and_exchange(&n->lost, 0, 1))
		g_warning("the notifier process cannot write notifications (%s): the daemon's threads write them, "
			  "and if the daemon is killed while one waits in the kernel, it exits only once a new daemon "
			  "has answered what that one waits for",
			  why);
}

/* This thread's channel, made at its first notification; -1 if there is none. */
static int channel(struct notifier *n)
{
	int chan = GPOINTER_TO_INT(g_private_get(&channel_of)) - 1;
	if (chan >= 0 || g_atomic_int_get(&n->lost))
		return chan;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		lose(n, g_strerror(errno));
		return -1;
	}
	/* Room for the longest message (only root may raise it past the
	 * system's default; a longer one fails with EMSGSIZE). */
	int size = NOTIFIER_MAX_MESSAGE + 4096;
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	g_mutex_lock(&n->lock);
	ssize_t r = fdmsg_send_bytes(n->sock, "c", 1, &sv[1], 1);
	g_mutex_unlock(&n->lock);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		lose(n, g_strerror((int)-r));
		return -1;
	}
	g_private_set(&channel_of, GINT_TO_POINTER(sv[0] + 1));
	return sv[0];
}

/* The notifier's answer to this thread's last message: its errno, or
 * -errno if the channel failed (EPIPE: closed); 0 once silenced, if it
 * has not come. */
static int32_t answer(struct notifier *n, int chan)
{
	struct pollfd p[2] = { { .fd = chan, .events = POLLIN }, { .fd = n->silenced, .events = POLLIN } };
	int32_t err;
	ssize_t r;

	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return -errno;
	if (!p[0].revents)
		return 0; /* another daemon's notifications now: nobody waits for this one */
	do
		r = recv(chan, &err, sizeof(err), 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == (ssize_t)sizeof(err) ? err : -EPIPE;
}

/* This thread's batch (notifier_batch_begin): notifications for one fd. */
struct batch {
	GByteArray *bytes;
	int fd;
};

static void batch_free(gpointer p)
{
	struct batch *b = p;
	g_byte_array_unref(b->bytes);
	g_free(b);
}

static GPrivate batch_of = G_PRIVATE_INIT(batch_free);

/* Flush at this size: a few hundred invalidations a round trip. */
#define BATCH_BYTES (32 * 1024)

void notifier_batch_begin(void)
{
	if (g_private_get(&batch_of))
		return;
	struct batch *b = g_new0(struct batch, 1);
	b->bytes = g_byte_array_sized_new(BATCH_BYTES + 512);
	b->fd = -1;
	g_private_set(&batch_of, b);
}

static ssize_t send_one(struct notifier *n, int fuse_fd, const struct iovec *iov, int count, size_t len);

/* Send what the batch holds (errors are the notifications', which say
 * what is: nobody waits for them). */
static void flush(struct notifier *n, struct batch *b)
{
	if (b->bytes->len == 0)
		return;
	const struct iovec iov = { b->bytes->data, b->bytes->len };
	if (send_one(n, b->fd, &iov, 1, b->bytes->len) < 0)
		g_debug("a batch of notifications: %s", g_strerror(errno));
	g_byte_array_set_size(b->bytes, 0);
}

void notifier_batch_end(struct notifier *n)
{
	struct batch *b = g_private_get(&batch_of);
	if (b)
		flush(n, b);
	g_private_replace(&batch_of, NULL);
}

ssize_t notifier_writev(struct notifier *n, int fuse_fd, const struct iovec *iov, int count)
{
	size_t len = 0;
	for (int i = 0; i < count; i++)
		len += iov[i].iov_len;
	struct batch *b = g_private_get(&batch_of);
	if (!b)
		return send_one(n, fuse_fd, iov, count, len);
	/* In order: what the batch holds goes first. */
	if (b->fd != fuse_fd || b->bytes->len + len > BATCH_BYTES)
		flush(n, b);
	if (len > BATCH_BYTES)
		return send_one(n, fuse_fd, iov, count, len);
	b->fd = fuse_fd;
	for (int i = 0; i < count; i++)
		g_byte_array_append(b->bytes, iov[i].iov_base, (guint)iov[i].iov_len);
	return (ssize_t)len;
}

/* Without the notifier: libfuse's pieces of one notification, or a batch
 * (one piece), written here. */
static ssize_t write_here(int fuse_fd, const struct iovec *iov, int count, size_t len)
{
	if (count > 1)
		return writev(fuse_fd, iov, count);
	int32_t err = write_all(fuse_fd, iov[0].iov_base, len);
	if (err) {
		errno = err;
		return -1;
	}
	return (ssize_t)len;
}

/* One message (a notification, or a batch), through this thread's channel. */
static ssize_t send_one(struct notifier *n, int fuse_fd, const struct iovec *iov, int count, size_t len)
{
	if (n && g_atomic_int_get(&n->silent))
		return (ssize_t)len;
	int chan = n ? channel(n) : -1;
	if (chan < 0)
		return write_here(fuse_fd, iov, count, len);
	if (len > NOTIFIER_MAX_MESSAGE) {
		errno = EMSGSIZE;
		return -1;
	}
	ssize_t r = fdmsg_sendv(chan, iov, (size_t)count, &fuse_fd, 1);
	if (r == -EMSGSIZE) {
		errno = EMSGSIZE; /* above what the socket may take here */
		return -1;
	}
	int32_t err = r < 0 ? (int32_t)r : answer(n, chan);
	if (err < 0) {
		/* Written or not, it is written again: notifications say what
		 * is, and saying it twice changes nothing. */
		g_private_replace(&channel_of, NULL);
		lose(n, g_strerror(-err));
		return write_here(fuse_fd, iov, count, len);
	}
	if (err > 0) {
		errno = err;
		return -1;
	}
	return (ssize_t)len;
}
