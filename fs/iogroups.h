/* Which cgroup a caller's I/O files come from, and their texts: diskstats
 * from the cgroup's I/O counters (fs/diskview renders it), pressure/<name>
 * from its <name>.pressure. A caller in the root cgroup, or whose cgroup
 * cannot be told or has no such files, gets the host's files. */
#pragma once

#include "caller.h"
#include "cgroup.h"
#include "deciders.h"
#include "reports.h"
#include "served.h"

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

struct iogroups_config {
	int proc_fd; /* where callers' /proc/<tid>/cgroup and the host's files are read */
	struct scope *scope; /* which cgroup a caller's figures come from */
	struct cgroup_hierarchy io; /* diskstats: v1 blkio, v2 io */
	/* pressure: the v2 hierarchy (the unified one of a hybrid host);
	 * CGROUP_NONE: the host's pressure files for all */
	struct cgroup_hierarchy pressure;
	/* Called once per cgroup file that could not be used (the caller then
	 * gets the host's file). */
	reports_fn report;
	void *report_data;
};

struct iogroups;

struct iogroups *iogroups_new(const struct iogroups_config *cfg);
void iogroups_free(struct iogroups *g);

/* Callers' cgroups (strings: the directory in the hierarchy, "" for the
 * host's files), for diskstats and for the pressure files, and the classes
 * of those files' texts. */
struct deciders *iogroups_disk_deciders(struct iogroups *g);
struct deciders *iogroups_pressure_deciders(struct iogroups *g);
uint64_t iogroups_disk_class(gconstpointer group);
uint64_t iogroups_pressure_class(gconstpointer group);

/* Does the host have /proc/pressure/<name> (name NULL: any of them)? */
gboolean iogroups_has_pressure(const struct iogroups *g, const char *name);

/* The text of proc/diskstats, proc/pressure/<name> for group: 0,
 * SERVED_HOST (fs/served.h: the host's file as it is), or -errno. */
int iogroups_render_diskstats(struct iogroups *g, const char *group, GBytes **ret);
int iogroups_render_pressure(struct iogroups *g, const char *group, const char *name, GBytes **ret);

/* The permissions of the host's /proc/pressure/<name> (0666 where
 * anyone may set triggers: Linux 6.5 and later). */
mode_t iogroups_pressure_mode(const struct iogroups *g, const char *name);
/* May c open the host's /proc/pressure/<name> for writing (its kernel's
 * check: before 6.5, CAP_SYS_RESOURCE)? 0 or -errno. */
int iogroups_may_trigger(struct iogroups *g, const struct caller *c, const char *name);
/* Set the PSI trigger text (as the kernel's /proc file reads it) on
 * pressure/<name> for c: on its cgroup's <name>.pressure, or the host's
 * file for a caller whose figures are the host's; EOPNOTSUPP for a caller
 * in a cgroup with no such file (cgroup v1). 0 and *ret_fd, the kernel
 * file the trigger is on, or the kernel's -errno (EINVAL, EPERM, ...). */
int iogroups_trigger(struct iogroups *g, const struct caller *c, const char *name, const char *text, int *ret_fd);
