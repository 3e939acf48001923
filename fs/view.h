/* The one registry of what exists at each path of the view, and how each
 * path is served. lookup, getattr, readlink, readdir and open all answer
 * from it. No FUSE calls here: fs/ops adapts these to requests.
 * view.c dispatches each call on the kind an inode number carries (fs/ino)
 * to one row of operations per kind: files.c has the static table and its
 * served files, view-proc.c proc/ and the pid directories, view-sys.c the
 * sysfs CPU mirror (fs/view-internal.h).
 *
 * Layout under the mountpoint:
 *   proc/                 whole-/proc view
 *   proc/.real/           mount point of the real procfs (hidden from readdir)
 *   proc/<name>           -> .real/<name>       (delegated)
 *   proc/cpuinfo, stat    the caller's CPUs (fs/cpuview)
 *   proc/meminfo, swaps, vmstat  the caller's memory cgroup (fs/memgroups)
 *   proc/uptime           the caller's pid namespace and CPU time (fs/cputime)
 *   proc/loadavg          the caller's cgroup's threads (fs/loadavg)
 *   proc/diskstats        the caller's I/O cgroup's counters (fs/iogroups)
 *   proc/pressure/<name>  its v2 cgroup's <name>.pressure (fs/iogroups)
 *   proc/<pid>/           one per process
 *   proc/<pid>/<entry>    -> ../.real/<pid>/<entry> (delegated)
 *   proc/<pid>/exe|cwd|root  symlinks carrying the real link's text
 *   proc/<pid>/smaps_rollup  served by the daemon from a memo
 *   .cgprocfs/stats       the daemon's counters (Prometheus text)
 *   .cgprocfs/control     the path of the daemon's control socket (OCI hook)
 *   sys/devices/system/cpu/  read-only mirror of the host directory, but
 *                         online, possible, present, offline and cpu<N>/
 *                         are the caller's CPUs
 */
#pragma once

#include "caller.h"
#include "cpuview.h"
#include "iogroups.h"
#include "memgroups.h"
#include "cputime.h"
#include "smaps.h"

#include <glib.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How proc_fd hides processes from a caller the kernel gives no access
 * to them (its hidepid option): not at all, their directories shown but
 * closed (noaccess), or not shown (invisible, ptraceable). */
enum view_hidepid { VIEW_HIDEPID_OFF, VIEW_HIDEPID_NOACCESS, VIEW_HIDEPID_INVISIBLE };

struct view_config {
	int proc_fd;    /* the procfs the view reads and delegates to */
	int sys_cpu_fd; /* the host's /sys/devices/system/cpu */
	struct cpuview *cpuview; /* which CPUs each caller sees */
	struct smaps *smaps;     /* the smaps_rollup memo */
	/* Whose memory files each caller sees; NULL: the host's, delegated
	 * (--no-memory-view). */
	struct memgroups *memgroups;
	/* Whose uptime, stat and loadavg each caller sees; NULL: the host's, delegated. */
	struct cputimes *cputimes;
	/* Whose diskstats and pressure files; NULL: the host's, delegated
	 * (--no-io-view). */
	struct iogroups *iogroups;
	/* proc_fd's pid namespace: -1 for the daemon's own, else an fd of it
	 * (a container's view). Pid directories are watched with pidfds and
	 * cached until their process exits; where pidfds cannot be had (a
	 * container's, before Linux 6.9), every walk through one asks. */
	int pid_ns_fd;
	uint64_t pid_ns; /* proc_fd's pid namespace, as the smaps memo knows it */
	/* proc_fd hides processes from some callers (hidepid): pid
	 * directories are then looked up and listed as the caller, and
	 * never cached. */
	enum view_hidepid hidepid;
	/* proc/ holds the served files alone: no pid directories and no
	 * links into the real procfs (LXCFS's layout, for tools that bind
	 * each entry of it). */
	gboolean files_only;
	const char *control_socket; /* shown in .cgprocfs/control, or NULL */
	/* More of .cgprocfs/stats, after the memo's (the daemon's), or NULL */
	void (*more_stats)(GString *out, void *data);
	void *more_stats_data;
};

struct view;

/* Borrows the fds in cfg; they must outlive the view. 0 or -errno. */
int view_new(const struct view_config *cfg, struct view **ret_view);
void view_free(struct view *v);

/* The pid namespace of its procfs: cfg.pid_ns_fd. */
int view_pid_ns_fd(const struct view *v);

/* The CPUs thread tid sees, computed now (cpuview_map_fresh): a
 * reference in *ret, or -errno. */
int view_cpu_map(struct view *v, pid_t tid, struct cpu_map **ret);

/* The process whose proc/<pid> ino stands for (a pid directory or a file
 * in it), or 0 for any other node. */
pid_t view_ino_process(uint64_t ino);

/* The inode of proc/: the parent of every pid directory. */
uint64_t view_proc_ino(void);

struct view_entry {
	uint64_t ino;         /* 0: the name does not exist, and the kernel may
	                       * remember that for entry_timeout */
	struct stat attr;
	double entry_timeout; /* how long the kernel may keep the name */
	double attr_timeout;  /* how long the kernel may keep attr */
	pid_t pid;            /* with pidfd: the process this entry stands for */
	int pidfd;            /* >= 0: the entry may stay cached until this
	                       * process exits; the receiver owns the fd */
};

int view_lookup(struct view *v, const struct caller *c, uint64_t parent, const char *name,
		struct view_entry *ret);
int view_getattr(struct view *v, const struct caller *c, uint64_t ino, struct stat *ret_attr,
		 double *ret_timeout);
int view_readlink(struct view *v, const struct caller *c, uint64_t ino, char **ret_target);

struct view_dirent {
	char *name;
	uint64_t ino;
	mode_t type; /* S_IFDIR, S_IFREG or S_IFLNK */
};

/* A snapshot of the directory: a GArray of struct view_dirent, "." and ".."
 * first. 0 or -errno. */
int view_readdir(struct view *v, const struct caller *c, uint64_t ino, GArray **ret_entries);

/* Render a daemon-served file for this open. Writes are refused (EACCES),
 * as the kernel refuses them on read-only proc and sysfs files.
 * *ret_version 0: the content is this open's, to be read without the page
 * cache (direct I/O). VIEW_FRESH: the same, for an inode of one content
 * class, whose size the kernel should be told (sendfile and splice read
 * up to it, through the page cache). Otherwise the content is shared by
 * every caller of the inode, whose page cache may keep it: *ret_version is
 * its version, the mtime (ns) its attributes carry. -ESTALE: the inode stands for a text
 * of another content class than the caller's (a dentry cached for another
 * caller): a new lookup gives the caller's. */
#define VIEW_FRESH ((int64_t)-1)
int view_open(struct view *v, const struct caller *c, uint64_t ino, int flags, GBytes **ret_content,
	      int64_t *ret_version);

/* "memory" for proc/pressure/memory, ...: NULL for any other inode. */
const char *view_pressure_name(uint64_t ino);
/* Set the PSI trigger text on pressure file ino for c (iogroups_trigger):
 * 0 and *ret_fd, the kernel file it is on, or -errno. */
int view_trigger(struct view *v, const struct caller *c, uint64_t ino, const char *text, int *ret_fd);

/* A served file whose text depends on the caller (one inode per content
 * class): its row, which the kernel may cache by name only while every
 * caller of a session has the same class; 0 for any other node. */
unsigned view_class_row(uint64_t ino);
/* The inode of ino's row that is of the caller's content class now (ino
 * itself for a node of no class): 0, or -EIO where the caller's class
 * cannot be decided. */
int view_own_class_ino(struct view *v, const struct caller *c, uint64_t ino, uint64_t *ret);
/* The text of a per-class inode that the page cache keeps (a READ of it
 * fills every caller's pages): its own class's, whoever asks, with its
 * version. -ESTALE where this daemon knows no caller of that class yet,
 * -ENOENT for any other node (its text is each open's). */
int view_class_text(struct view *v, const struct caller *c, uint64_t ino, GBytes **ret, int64_t *ret_version);
/* The text of proc/<name> (a file of proc/'s top) as the caller would read
 * it: served, or the host's where the view delegates it. 0 or -errno. */
int view_proc_text(struct view *v, const struct caller *c, const char *name, GBytes **ret);

/* The current text of a shared served file (view_open gave a version):
 * 0, or -ENOENT if there is none now. */
int view_read_shared(struct view *v, uint64_t ino, GBytes **ret);
