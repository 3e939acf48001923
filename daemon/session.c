/* One FUSE session's life: made, mounted or taken up from another daemon,
 * served by the server's workers (server.c), ended. */
#include "server.h"

#include "answers.h"
#include "cleanup.h"
#include "control.h"
#include "faults.h"
#include "inflight.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <unistd.h>

struct session *session_new(struct server *sv, struct view *view, struct pidwatch *watch, int proc_fd,
			    const char *fuse_options)
{
	char *argv[] = { "cgprocfs", "-o", (char *)fuse_options, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(fuse_options ? 3 : 1, argv);
	struct session *s = g_new0(struct session, 1);

	s->ops = (struct ops_state){ .view = view, .watch = watch, .proc_fd = proc_fd, .triggers = sv->triggers };
	ops_state_init(&s->ops);
	s->se = fuse_session_new(&args, &ops_table, sizeof(ops_table), &s->ops);
	fuse_opt_free_args(&args);
	if (!s->se) {
		ops_state_clear(&s->ops);
		g_free(s);
		return NULL;
	}
	s->ops.session = s->se;
	s->server = sv;
	return s;
}

/* A request taken is kept until it is answered (inflight.h); a POLL's
 * kernel handle is told to its adapter (which libfuse does not tell).
 * userdata: the session's ops_state, its first member. */
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	const struct session *s = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *h = buf;
	if (n > 0)
		inflight_taken(s->server->inflight, s->key, buf, (size_t)n);
	if (n >= (ssize_t)(sizeof(*h) + sizeof(struct fuse_poll_in)) && h->opcode == FUSE_POLL) {
		const struct fuse_poll_in *in = (const void *)(h + 1);
		ops_poll_taken(in->fh, in->kh);
	}
	if (n >= (ssize_t)(sizeof(*h) + sizeof(struct fuse_read_in)) && h->opcode == FUSE_READ && fault_armed()) {
		/* a daemon dying with a read in hand: the first, or one past a
		 * file's start (a reader a byte at a time, as busybox's read) */
		fault_point(((const struct fuse_read_in *)(h + 1))->offset ? "past-start-read-taken" : "read-taken");
		if (fault_wanted("answer-copy-fails"))
			answer_poison_next(h->unique);
	}
	return n;
}

/* Answers go to the kernel (answers.h), notifications (unique 0)
 * through the notifier. */
static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct session *s = userdata;
	const struct fuse_out_header *h = iov[0].iov_base;
	if (count > 0 && iov[0].iov_len >= sizeof(*h) && h->unique == 0)
		return notifier_writev(s->server->notifier, fd, iov, count);
	ssize_t n = answer_write(fd, iov, count);
	if (count > 0 && iov[0].iov_len >= sizeof(*h))
		inflight_answered(s->server->inflight, s->key, h->unique);
	return n;
}

void session_batch_notifications(struct session *s, gboolean on)
{
	if (on)
		notifier_batch_begin();
	else
		notifier_batch_end(s->server->notifier);
}

/* Once libfuse has the session's fd: write through io_writev. */
static int use_own_io(struct session *s)
{
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };
	return fuse_session_custom_io(s->se, &io, fuse_session_fd(s->se));
}

int session_mount(struct session *s, const char *mountpoint)
{
	if (fuse_session_mount(s->se, mountpoint) != 0)
		return -1;
	if (use_own_io(s) < 0) {
		fuse_session_unmount(s->se);
		return -1;
	}
	return 0;
}

/* The unique id of the INIT made up by session_take_up. Its answer goes to
 * the kernel, which knows no request of that id (ids are allocated from 1
 * upwards, two at a time) and drops it with ENOENT, which libfuse ignores. */
#define RESUME_UNIQUE (UINT64_C(1) << 62)

int session_take_up(struct session *s, int fuse_fd, unsigned proto_minor, gboolean resend)
{
	char dev[32];
	struct {
		struct fuse_in_header h;
		struct fuse_init_in in;
	} msg = {
		.h = { .len = sizeof(msg), .opcode = FUSE_INIT, .unique = RESUME_UNIQUE },
		/* MAX_PAGES as the kernel offered it (7.28 on): libfuse then
		 * reads requests into buffers as large as the old daemon
		 * told the kernel to fill; smaller ones get EINVAL. */
		.in = { .major = FUSE_KERNEL_VERSION, .minor = proto_minor,
			.flags = proto_minor >= 28 ? FUSE_MAX_PAGES : 0 },
	};
	const struct fuse_buf buf = { .size = sizeof(msg), .mem = &msg };

	/* libfuse takes a /dev/fd/N "mountpoint" as the fd of a mount made
	 * elsewhere, and owns N from then on, whatever happens next: a copy,
	 * so that fuse_fd is the caller's until this succeeds. */
	int own = fcntl(fuse_fd, F_DUPFD_CLOEXEC, 3);
	if (own < 0)
		return -errno;
	snprintf(dev, sizeof(dev), "/dev/fd/%d", own);
	if (fuse_session_mount(s->se, dev) != 0) {
		close(own);
		return -EINVAL;
	}
	if (use_own_io(s) < 0)
		return -EINVAL;
	close(fuse_fd);
	if (proto_minor > 0)
		fuse_session_process_buf(s->se, &buf);
	s->resend = resend;
	return 0;
}

/* FUSE 7.40 (Linux 6.9); older headers lack it. */
#define NOTIFY_RESEND 7

gboolean session_resend(struct session *s)
{
	const struct fuse_out_header h = { .len = sizeof(h), .error = NOTIFY_RESEND, .unique = 0 };
	return write(fuse_session_fd(s->se), &h, sizeof(h)) == (ssize_t)sizeof(h);
}

/* One request the dead daemon had taken, answered here as if read now. */
static void answer_kept(void *data, const struct fuse_in_header *req, size_t len)
{
	struct session *s = data;
	if (len == 0) { /* only its header was kept */
		const struct fuse_out_header h = { .len = sizeof(h), .error = -EIO, .unique = req->unique };
		(void)!write(fuse_session_fd(s->se), &h, sizeof(h));
		return;
	}
	const struct fuse_buf buf = { .size = len, .mem = (void *)req };
	fuse_session_process_buf(s->se, &buf);
}

/* The requests of s that the dead daemon had taken, which this kernel
 * cannot resend: answered by a thread of their own (as a worker, it acts
 * as their callers), while the workers serve s. */
static gpointer answer_taken(gpointer data)
{
	struct session *s = data;
	inflight_each(s->server->replay, s->key, answer_kept, s);
	return NULL;
}

/* Wake the pollers of an fd whose trigger the daemon before set (kh: the
 * fd's), so that they poll again, here, and the trigger is set again. */
static void wake_poller(void *data, uint64_t kh)
{
	struct session *s = data;
	struct fuse_out_header h = { .len = sizeof(h) + sizeof(struct fuse_notify_poll_wakeup_out),
				     .error = FUSE_NOTIFY_POLL };
	struct fuse_notify_poll_wakeup_out out = { .kh = kh };
	struct iovec iov[] = { { &h, sizeof(h) }, { &out, sizeof(out) } };
	if (notifier_writev(s->server->notifier, fuse_session_fd(s->se), iov, 2) < 0 && errno != ENOENT)
		g_debug("cannot wake a poller of a PSI trigger: %s", g_strerror(errno));
}

/* Said once (every view taken up is the same). */
static gint unanswerable_said;

int session_start(struct session *s, session_ended_fn ended, void *data)
{
	int fd = fuse_session_fd(s->se);

	s->key = inflight_key(session_ns_fd(s));
	s->ops.key = s->key;
	/* Even if it is not served here: whoever serves it next needs them. */
	gboolean resent = s->resend && session_resend(s);
	/* Workers only read what epoll said is there, but a request can go
	 * (its caller interrupted) before it is read. */
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	int r = server_add(s->server, s, ended, data);
	if (r < 0)
		return r;
	/* s cannot end before server_started, though workers serve it. */
	triggers_each_polled(s->server->triggers, s->key, wake_poller, s);
	if (s->resend && !resent && s->server->replay)
		g_thread_join(g_thread_new("answer-taken", answer_taken, s));
	else if (s->resend && !resent && !g_atomic_int_exchange(&unanswerable_said, 1))
		g_warning("this kernel cannot resend the requests a dead daemon had taken (Linux 6.9 can), and that "
			  "daemon kept none for the next: any such request waits until its caller is killed");
	server_started(s->server, s);
	return 0;
}

/* session_serve's end callback. */
static void served(void *data, int error)
{
}

int session_serve(struct session *s)
{
	int r = session_start(s, served, NULL);
	return r < 0 ? r : server_watch(s->server, s);
}

void session_exit(struct session *s)
{
	fuse_session_exit(s->se);
	fuse_session_unmount(s->se);
	/* Binds elsewhere may keep the connection up: end it here. */
	server_end(s->server, s);
}

void session_free(struct session *s)
{
	if (!s)
		return;
	pidwatch_forget_owner(s->ops.watch, &s->ops);
	/* Its open files' PSI triggers go first: their poll handles name
	 * s->se. */
	ops_state_clear(&s->ops);
	fuse_session_destroy(s->se);
	g_free(s);
}

void session_adopt_watches(struct session *s, struct handover *h, unsigned index)
{
	for (guint i = 0; h && i < h->watches->len; i++) {
		struct handover_watch *w = &g_array_index(h->watches, struct handover_watch, i);
		if (w->session == index && w->pidfd >= 0)
			pidwatch_adopt(s->ops.watch, &s->ops, w->pid, steal_fd(&w->pidfd));
	}
}

int session_fuse_fd(const struct session *s)
{
	return fuse_session_fd(s->se);
}

int session_ns_fd(const struct session *s)
{
	return view_pid_ns_fd(s->ops.view);
}

unsigned session_proto_minor(const struct session *s)
{
	return s->ops.proto_minor;
}

struct ops_state *session_ops(struct session *s)
{
	return &s->ops;
}
