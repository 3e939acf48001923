#include "pidns.h"

#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.9; not in older headers. */
#ifndef NS_GET_PID_FROM_PIDNS
#define NS_GET_PID_FROM_PIDNS _IOR(NSIO, 0x6, int)
#define NS_GET_PID_IN_PIDNS _IOR(NSIO, 0x8, int)
#define NS_GET_TGID_IN_PIDNS _IOR(NSIO, 0x9, int)
#endif

static int open_own(pid_t pid, unsigned flags)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, flags);
	return fd < 0 ? -errno : fd;
}

int pidns_pidfd_open(int ns_fd, pid_t pid, unsigned flags)
{
	if (ns_fd < 0)
		return open_own(pid, flags);
	int own = ioctl(ns_fd, NS_GET_PID_FROM_PIDNS, (unsigned long)pid);
	if (own < 0)
		return errno == ESRCH ? -ESRCH : -EOPNOTSUPP;
	int fd = open_own(own, flags);
	/* The process may have exited between the two calls and its number
	 * here gone to another: the pidfd's must still be pid there. */
	if (fd >= 0 && ioctl(ns_fd, NS_GET_PID_IN_PIDNS, (unsigned long)own) != pid) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

pid_t pidns_tgid_in(int ns_fd, pid_t tid)
{
	int tgid = ioctl(ns_fd, NS_GET_TGID_IN_PIDNS, (unsigned long)tid);
	if (tgid > 0)
		return tgid;
	return tgid == 0 || errno == ESRCH ? -ESRCH : -EOPNOTSUPP;
}

gboolean pidns_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return pidfd >= 0 && poll(&p, 1, 0) != 0;
}

uint64_t pidns_of(int proc_fd, pid_t tid)
{
	char path[32];
	struct stat st;
	snprintf(path, sizeof(path), "%d/ns/pid", (int)tid);
	return fstatat(proc_fd, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The daemon's pid namespace never changes: looked up once (g_once), not
 * on every tenant lookup; read by every thread, no lock. */
uint64_t pidns_own(void)
{
	static gsize own;
	if (g_once_init_enter(&own)) {
		struct stat st;
		g_once_init_leave(&own, stat("/proc/self/ns/pid", &st) == 0 ? (gsize)st.st_ino : 1);
	}
	return own == 1 ? 0 : (uint64_t)own;
}

uint64_t pidns_tenant_pick(const uint64_t *chain, unsigned n, uint64_t view, uint64_t own)
{
	for (unsigned i = 0; i < n; i++) {
		if (chain[i] == view || chain[i] == own)
			return chain[i];
		if (i + 1 < n && chain[i + 1] == own)
			return chain[i]; /* a child of the daemon's: a container */
	}
	/* Not below the daemon's as far as it could be told: its own top. */
	return n ? chain[n - 1] : 0;
}

uint64_t pidns_tenant(int proc_fd, pid_t tid, int ns_fd)
{
	char path[32];
	struct stat st;
	uint64_t chain[PIDNS_DEPTH_MAX];
	unsigned n = 0;
	snprintf(path, sizeof(path), "%d/ns/pid", (int)tid);
	_cleanup_close_ int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	uint64_t own = pidns_own();
	uint64_t view = ns_fd >= 0 ? (fstat(ns_fd, &st) == 0 ? (uint64_t)st.st_ino : 0) : own;
	/* Up from tid's own while it is neither the view's nor the daemon's
	 * (above the daemon's NS_GET_PARENT fails). */
	for (fstat(fd, &st); n < PIDNS_DEPTH_MAX; n++) {
		chain[n] = st.st_ino;
		if (chain[n] == view || chain[n] == own)
			break;
		_cleanup_close_ int parent = ioctl(fd, NS_GET_PARENT);
		if (parent < 0 || fstat(parent, &st) < 0)
			break;
		close(fd);
		fd = steal_fd(&parent);
	}
	return pidns_tenant_pick(chain, MIN(n + 1, PIDNS_DEPTH_MAX), view, own);
}
