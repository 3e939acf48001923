/* Reading a caller's CPU limits from cgroup v1 and v2 hierarchies. The
 * hierarchies are directory fds handed in by the daemon (or by tests, on
 * fixture trees), so nothing here knows where cgroupfs is mounted. */
#pragma once

#include "cpuset.h"
#include "memview.h"

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_version {
	CGROUP_NONE, /* the controller is not available */
	CGROUP_V1,
	CGROUP_V2,
};

/* Where one controller's hierarchy is, as the daemon sees it. Read by every
 * request thread at once, never written once the view serves: no lock. The
 * daemon owns root_fd and mount_root and frees them after the view. */
struct cgroup_hierarchy {
	enum cgroup_version version;
	int root_fd;            /* the mount of the hierarchy, -1 if none */
	const char *mount_root; /* the cgroup at that mount ("/" unless a subtree is mounted) */
};

struct cgroup_config {
	struct cgroup_hierarchy cpu;    /* CFS bandwidth: v1 cpu.cfs_*, v2 cpu.max */
	struct cgroup_hierarchy cpuset; /* v1 cpuset.*cpus, v2 cpuset.cpus.effective */
	struct cgroup_hierarchy memory; /* v1 memory.*, v2 memory.* */
	struct cgroup_hierarchy cpuacct; /* v1 cpuacct.usage and .stat (v2: the cpu hierarchy's cpu.stat) */
	struct cgroup_hierarchy io;      /* v1 blkio.throttle.*, v2 io.stat */
	struct cgroup_hierarchy unified; /* the v2 hierarchy, whatever it holds: *.pressure */
};

/* A process's cgroup in each hierarchy, as /proc/<pid>/cgroup names it. */
struct cgroup_paths {
	char *cpu;    /* NULL when the controller is not available */
	char *cpuset;
	char *memory;
	char *cpuacct;
	char *io;
	char *unified;
};

void cgroup_paths_clear(struct cgroup_paths *p);

/* Parse the text of /proc/<pid>/cgroup. 0 or -EINVAL. */
int cgroup_parse_membership(const char *text, const struct cgroup_config *cfg,
			    struct cgroup_paths *ret);

struct cgroup_limits {
	gboolean has_cpuset;
	struct cpuset cpuset; /* effective CPUs of the cgroup */
	gboolean has_quota;
	uint64_t quota_us;    /* the smallest quota/period over the cgroup and its ancestors */
	uint64_t period_us;
};

/* Read the limits of the cgroups in p. 0, -ENOENT if a hierarchy or
 * cgroup is gone, or -EINVAL for files the kernel would not write (an
 * empty cpuset, a zero or negative quota or period, garbage); then
 * *ret_culprit names the file. */
int cgroup_read_limits(const struct cgroup_config *cfg, const struct cgroup_paths *p,
		       struct cgroup_limits *ret, char **ret_culprit);

/* How many CPUs a CFS quota grants: ceil(quota/period), at least 1. */
unsigned cgroup_quota_cpus(uint64_t quota_us, uint64_t period_us);

/* The cgroup at path (of the hierarchy h) relative to h's mount, the
 * same string for the same cgroup in every process: "." for the mount's
 * own. NULL if it is outside what is mounted. */
char *cgroup_relative_dir(const struct cgroup_hierarchy *h, const char *path);

/* Read the memory figures of the cgroup at dir (cgroup_relative_dir's) into
 * *ret: of the level its memory is charged to (dir, or on v2 where dir has
 * no memory controller, its nearest ancestor with one). 0; -ENOENT if the
 * cgroup is gone; -EINVAL for a file the kernel would not write (then
 * *ret_culprit names it). *ret_limited FALSE: no level has a memory
 * limit, and *ret is left empty. */
int cgroup_read_memory(const struct cgroup_hierarchy *h, const char *dir, struct mem_figures *ret,
		       gboolean *ret_limited, char **ret_culprit);

/* *ret: whether the cgroup at dir or an ancestor has a memory limit (from
 * the level its memory is charged to up). 0, -ENOENT if the cgroup is gone
 * or no level has the memory controller, -EINVAL for garbage. */
int cgroup_memory_limited(const struct cgroup_hierarchy *h, const char *dir, gboolean *ret);

/* The CPU time a cgroup's processes used since it was made. */
struct cgroup_cpu_time {
	uint64_t user_ns, system_ns;
};

/* Read the CPU time of the cgroups in p: v1 cpuacct.usage split as
 * cpuacct.stat splits it, v2 cpu.stat. 0; -ENOENT if no hierarchy counts
 * it or the cgroup is gone;
 * -EINVAL for garbage (then *ret_culprit names the file). */
int cgroup_read_cpu_usage(const struct cgroup_config *cfg, const struct cgroup_paths *p,
			  struct cgroup_cpu_time *ret, char **ret_culprit);

/* One device's I/O as a cgroup counted it: requests and their bytes, by
 * direction. */
enum { CGROUP_IO_READ, CGROUP_IO_WRITE, CGROUP_IO_DISCARD, CGROUP_IO_DIRS };
struct cgroup_io_device {
	unsigned major, minor;
	uint64_t ios[CGROUP_IO_DIRS];
	uint64_t bytes[CGROUP_IO_DIRS];
};

/* Parse v2 io.stat ("MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N
 * dios=N ...", other keys ignored) into ret (struct cgroup_io_device). 0
 * or -EINVAL. */
int cgroup_parse_io_stat(const char *text, GArray *ret);
/* Parse v1 blkio.throttle.io_serviced_recursive and
 * io_service_bytes_recursive ("MAJ:MIN Read N", Write, Sync, Async,
 * Discard, Total; a last "Total N") into ret. 0 or -EINVAL. */
int cgroup_parse_blkio(const char *serviced, const char *bytes, GArray *ret);

/* The entry of devs (struct cgroup_io_device) for major:minor, or NULL. */
const struct cgroup_io_device *cgroup_io_device_find(const GArray *devs, unsigned major, unsigned minor);

/* The I/O the cgroup at dir (cgroup_relative_dir's) of h counted, per
 * device: v2 io.stat, v1 the throttle files above; for a v2 cgroup the
 * io controller is not enabled for (LXC's attach leaf), those of the level
 * its I/O is counted at, its nearest ancestor with io.stat. 0, -ENOENT
 * (gone, or no level with the file: no I/O accounting), or -EINVAL (then
 * *ret_culprit names the file). */
int cgroup_read_io(const struct cgroup_hierarchy *h, const char *dir, GArray *ret, char **ret_culprit);
