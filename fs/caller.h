/* Who is asking: the thread behind a FUSE request, and acting as it.
 *
 * The daemon runs as root and serves every user. Whenever content depends
 * on what the caller may see (another process's memory maps, the target of
 * /proc/<pid>/exe, a root-only sysfs file), the daemon makes the kernel
 * decide by doing the open or readlink with every credential of the
 * caller's it consults: fsuid, fsgid, supplementary groups, effective
 * capabilities and euid (a user namespace's owner has every capability
 * in it), narrowed for this thread only and restored right after. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

struct caller {
	pid_t tid;     /* requesting thread, in the daemon's pid namespace */
	uid_t uid;     /* its fsuid, as the kernel stamped the request */
	gid_t gid;     /* its fsgid */
	int proc_fd;   /* a procfs in which tid can be looked up */
	int pid_ns_fd; /* the pid namespace owners (below) are numbered in: an
	                * fd of it, or -1 for the daemon's */
};

/* What /proc/<tid>/status says of a thread's process, groups and
 * capabilities. */
struct caller_status {
	pid_t tgid;     /* 0 where the text has no Tgid line */
	uint64_t cap_effective;
	GArray *groups; /* gid_t */
	/* The filesystem ids of its objective credentials (the 4th of the
	 * Uid and Gid lines), or -1 where the text has none. */
	uid_t fsuid;
	gid_t fsgid;
	uid_t euid; /* the 2nd of the Uid line, or -1 */
};

/* The thread whose request this thread serves now (0: none, as in a
 * background thread): set for each request. It waits for the answer, and
 * may not be asleep yet when the daemon looks at it (fs/loadavg.c). */
void caller_set_serving(pid_t tid);
pid_t caller_serving(void);

/* Parse status text. 0 or -EINVAL; ret->groups is set on success. */
int caller_parse_status(const char *text, size_t len, struct caller_status *ret);

/* openat(dirfd, path, flags) as the caller. owner is the process whose
 * file path is, numbered as in the procfs dirfd (in c->pid_ns_fd's
 * namespace), or 0 for a plain file: access to a process depends on the
 * user namespaces of both, and a process may always get at its own files,
 * whatever its credentials or dumpability. 0 or -errno (EACCES where the
 * caller may not open it, as the kernel would answer). */
int caller_openat(const struct caller *c, pid_t owner, int dirfd, const char *path, int flags,
		  int *ret_fd);

/* fn(data) run as the caller; owner and dirfd as above. fn's result, or
 * -errno if the caller's credentials could not be taken on (-EXDEV, fn not
 * run: owner is outside the caller's user namespace, and the kernel gives
 * the caller no access to it at all), or -EIO if the daemon's could not be
 * given back afterwards (what fn made is then data's to free). */
int caller_run(const struct caller *c, pid_t owner, int dirfd, int (*fn)(void *data), void *data);

/* 1 if the caller is in another user namespace than the daemon's, 0 if
 * not, -EACCES if that cannot be told (the caller is gone). The kernel
 * then counts the caller's capabilities in its namespace, which no thread
 * of the daemon can hold: caller_run decides them per owner. */
int caller_user_ns_foreign(const struct caller *c);

/* openat(dirfd, path, flags) as the daemon, but with capability cap in
 * the opened file's credentials only if the caller has it, as it counts
 * for a plain file (in the daemon's user namespace): for a file the
 * caller cannot open itself, whose kernel looks at its opener's
 * capability (PSI triggers: CAP_SYS_RESOURCE). 0 or -errno. */
int caller_open_capable(const struct caller *c, int cap, int dirfd, const char *path, int flags, int *ret_fd);

/* readlinkat(dirfd, path) as the caller; owner as above. 0 or -errno. */
int caller_readlinkat(const struct caller *c, pid_t owner, int dirfd, const char *path,
		      char **ret_target);

/* After acting as a caller, a thread gets the daemon's credentials back. If
 * that fails (the kernel refused capset, setgroups or setfsuid), the thread
 * keeps at most the caller's rights, never more than the daemon's, and is
 * marked: until a retry succeeds, every caller_* call on it is -EIO rather
 * than act as anyone on top of another caller's identity. */

/* 0 once this thread has the daemon's own credentials (retrying a restore
 * that failed on it), or -EIO: a request may check it before it reads
 * anything with the thread's credentials. */
int caller_restored(void);

/* How many restores failed, every attempt on every thread, since start. */
uint64_t caller_restore_failures(void);

/* Tests only: the next n restores fail without restoring anything. */
void caller_inject_restore_failures(unsigned n);
