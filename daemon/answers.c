/* Answers through a pipe (answers.h).
 *
 * The kernel copies an answer written to /dev/fuse from the daemon's
 * memory while it holds the request, and a copy that fails ends the
 * request with EIO. A daemon being killed cannot lend its pages (a slow
 * get_user_pages with SIGKILL pending fails: always, on a kernel without
 * the fast one, as user-mode Linux's; on others, for pages not mapped
 * yet), so a SIGKILL that lands while an answer is copied would cost
 * its caller an EIO. From a pipe, the kernel copies the pipe's pages:
 * the answer is first copied into the pipe, with no request held; if
 * that copy fails, the daemon dies with the request taken and kept
 * (inflight.h), and the next daemon answers it. */
#include "answers.h"

#include "faults.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <linux/fuse.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

struct answer_pipe {
	int fd[2];
	size_t size; /* its capacity */
};

static void answer_pipe_free(gpointer data)
{
	struct answer_pipe *p = data;
	if (p->fd[0] >= 0) {
		close(p->fd[0]);
		close(p->fd[1]);
	}
	g_free(p);
}

static GPrivate answer_pipe_of = G_PRIVATE_INIT(answer_pipe_free);

/* fds a pipe leaves free below the open-files limit, at least: a daemon
 * near its limit keeps them for the files it reads for callers, and its
 * threads answer without a pipe. */
#define PIPE_FD_RESERVE 16

/* Would a pipe whose higher fd is fd eat into the reserve? fds are
 * numbered lowest free first: every number below fd is taken. */
static gboolean near_fd_limit(int fd)
{
	struct rlimit rl;
	return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	       (rlim_t)fd + PIPE_FD_RESERVE >= rl.rlim_cur;
}

/* This thread's pipe, as large as the largest answer (a READ of
 * FUSE_MAX_MAX_PAGES pages) where the kernel lets it be; NULL if no pipe
 * can be made. One of size 0 (no fds) if the daemon is near its limit of
 * open files: the thread answers without one from then on. */
static struct answer_pipe *answer_pipe(void)
{
	struct answer_pipe *p = g_private_get(&answer_pipe_of);
	if (p)
		return p;
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) < 0)
		return NULL;
	p = g_new(struct answer_pipe, 1);
	if (near_fd_limit(MAX(fd[0], fd[1]))) {
		close(fd[0]);
		close(fd[1]);
		*p = (struct answer_pipe){ { -1, -1 }, 0 };
	} else {
		(void)fcntl(fd[1], F_SETPIPE_SZ, 1 << 20);
		int size = fcntl(fd[1], F_GETPIPE_SZ);
		*p = (struct answer_pipe){ { fd[0], fd[1] }, size > 0 ? (size_t)size : 0 };
	}
	g_private_set(&answer_pipe_of, p);
	return p;
}

/* The fault answer-copy-fails: the poisoned answer's bytes point at
 * pages that cannot be read, as a dying daemon's are to the kernel. */
enum { POISON_SIZE = 8 << 20, POISON_IOVS = 8 };
static __thread unsigned long long poisoned_unique;

void answer_poison_next(unsigned long long unique)
{
	poisoned_unique = unique;
}

static const struct iovec *poisoned(const struct iovec *iov, int count, struct iovec *copy)
{
	static gsize none;
	if (g_once_init_enter(&none))
		g_once_init_leave(&none, (gsize)mmap(NULL, POISON_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if ((void *)none == MAP_FAILED || count < 2 || count > POISON_IOVS)
		return iov;
	for (int i = 0; i < count; i++)
		copy[i] = iov[i];
	for (int i = 1; i < count; i++)
		if (copy[i].iov_len <= POISON_SIZE)
			copy[i].iov_base = (void *)none;
	return copy;
}

ssize_t answer_write(int fd, const struct iovec *iov, int count)
{
	struct iovec copy[POISON_IOVS];
	if (poisoned_unique && count > 0 && ((const struct fuse_out_header *)iov[0].iov_base)->unique == poisoned_unique) {
		poisoned_unique = 0;
		iov = poisoned(iov, count, copy);
	}
	size_t len = 0;
	for (int i = 0; i < count; i++)
		len += iov[i].iov_len;
	struct answer_pipe *p = answer_pipe();
	if (!p || len > p->size)
		return writev(fd, iov, count);
	ssize_t n = writev(p->fd[1], iov, count);
	if (n != (ssize_t)len) {
		/* This daemon's memory could not be read: a SIGKILL that came
		 * meanwhile has it die here, its request kept. Else, as from
		 * any writer, the kernel's own copy fails and says so. */
		fault_point("answer-copy-fails");
		g_private_replace(&answer_pipe_of, NULL); /* nothing stale in front of the next answer */
		return writev(fd, iov, count);
	}
	n = splice(p->fd[0], NULL, fd, NULL, len, 0);
	int unread = 0;
	if (n != (ssize_t)len && (ioctl(p->fd[0], FIONREAD, &unread) < 0 || unread > 0)) {
		int saved = errno;
		g_private_replace(&answer_pipe_of, NULL);
		errno = saved;
	}
	return n;
}
