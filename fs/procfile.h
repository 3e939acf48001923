/* Reading whole kernel text files (procfs, sysfs, cgroupfs) relative to a
 * directory fd, and the few fields of /proc/<pid>/stat the view needs. */
#pragma once

#include <errno.h>
#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* -errno of a failed call on a procfs path, where a process that is gone
 * (ESRCH from some of its files) is -ENOENT, as procfs answers lookups
 * of it. */
static inline int procfile_errno(void)
{
	return errno == ESRCH ? -ENOENT : -errno;
}

/* openat(dirfd, path, flags | O_CLOEXEC | O_NOCTTY), or -errno. When the
 * process is out of fds (EMFILE), one fd kept in reserve is given up for
 * a retry, and taken again after; if another thread took the slot, the
 * open waits for one (a millisecond at a time, up to a second) before it
 * fails with EMFILE: a caller's cgroup or text is read, not replaced by a
 * fallback, while fds are short for a moment. */
int procfile_openat(int dirfd, const char *path, int flags);

/* Read all of the already open fd from its current position.
 * Returns 0 or -errno; *ret_content is untouched on failure. */
int procfile_read_fd(int fd, GBytes **ret_content);

/* Open dirfd/path read-only and read all of it. 0 or -errno. */
int procfile_read_at(int dirfd, const char *path, GBytes **ret_content);

/* The same, as a string: -EINVAL if the file holds a NUL byte. */
int procfile_read_text_at(int dirfd, const char *path, char **ret_text);

/* readlinkat(dirfd, path). 0 or -errno. */
int procfile_readlink_at(int dirfd, const char *path, char **ret_target);

struct pid_stat {
	char state;          /* 'R', 'S', 'Z', ... */
	uint64_t start_time; /* clock ticks after boot: with the pid, names a process */
	uint64_t minflt, majflt; /* page faults, minor and major */
	uint64_t vsize;      /* bytes of address space */
	uint64_t rss;        /* resident pages */
	/* Where the program's code and stack are: an exec changes them
	 * (0 for a zombie, a kernel thread, or an exec under way). */
	uint64_t start_code, end_code, start_stack;
};

/* Parse the text of /proc/<pid>/stat. 0 or -EINVAL. */
int procfile_parse_pid_stat(const char *text, size_t len, struct pid_stat *ret);

/* Read and parse proc_fd/<pid>/stat. 0, -ENOENT for a pid that is gone, or -errno. */
int procfile_pid_stat(int proc_fd, pid_t pid, struct pid_stat *ret);

/* pid's numbers in its pid namespaces (NSpid in proc_fd/<pid>/status):
 * how many levels there are, and its number in the innermost. 0, -ENOENT
 * for a pid that is gone, or -EINVAL. */
int procfile_nspid(int proc_fd, pid_t pid, guint *ret_levels, pid_t *ret_innermost);
