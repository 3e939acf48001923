/* The seccomp listener's answer to one sysinfo(2) (sysinfo.c): the
 * figures of the caller's view, written into the caller, and reused for
 * the same container's callers for a second. */
#pragma once

#include <errno.h>
#include <glib.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/sysinfo.h>

struct view;
struct inplace;

/* Where the answers come from. */
struct sysinfo_source {
	int proc_fd;
	struct view *view;
	struct inplace *in_place; /* whose view is in place */
	gboolean reuse;           /* an answer may serve other callers (the container rule) */
};

/* An answer, and whom it serves. */
struct answer {
	uint64_t ns[3]; /* the pid, cgroup and mount namespaces it is for; 0: none */
	gint64 at_us;   /* when (monotonic) */
	double up;      /* its uptime then, s */
	struct sysinfo s;
};

/* An open failed for want of the daemon's fds: EIO, not the kernel's (the
 * host's) figures. */
static inline gboolean sysinfo_out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE;
}

/* Write the answer to req, a sysinfo(2) notified on notify_fd, into mem,
 * the caller's memory, opened before the request is checked to stand on
 * notify_fd (so that the process written is the one that asked), where
 * the caller's maps say it may write: 0 if it is there, else -errno
 * (-ENOENT: the caller's view is not in place; -EIO: it is, and its
 * figures cannot be had). last: the answer given last to callers of
 * notify_fd, reused or replaced. */
int sysinfo_answer(const struct sysinfo_source *src, struct answer *last, int notify_fd, int mem,
		   const struct seccomp_notif *req);
