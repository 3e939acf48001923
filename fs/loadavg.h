/* /proc/loadavg of a cgroup: the kernel's exponentially damped 1, 5 and
 * 15 minute averages of its subtree's runnable and uninterruptible
 * threads, sampled every 5 s (the kernel's period and fixed-point
 * constants) for the cgroups someone read in the last 15 minutes. */
#pragma once

#include "cgroup.h"

#include <glib.h>
#include <stdint.h>

#define LOADAVG_FSHIFT 11
#define LOADAVG_FIXED_1 (1u << LOADAVG_FSHIFT)
#define LOADAVG_PERIOD_US (5 * G_USEC_PER_SEC)
/* A sample of a group meets at most this many cgroups of its subtree and
 * thread ids (the subtree's first, as the walk finds them; the rest is not
 * counted): a tenant's sub-cgroups and threads size the walk. */
#define LOADAVG_WALK_CGROUPS_MAX 512
#define LOADAVG_WALK_THREADS_MAX 8192

/* One 5 s step of the averages (fixed point) with active threads. */
void loadavg_step(uint64_t avenrun[3], unsigned active);
/* The text: "1.00 0.50 0.20 running/total last_pid\n"; last_pid: the
 * field as it stands in the host's file. */
GString *loadavg_render(const uint64_t avenrun[3], unsigned running, unsigned total, const char *last_pid);

struct loadavgs;

/* proc_fd: the daemon's procfs; h: the hierarchy whose cgroups list their
 * threads (borrowed). */
struct loadavgs *loadavgs_new(int proc_fd, const struct cgroup_hierarchy *h);
void loadavgs_free(struct loadavgs *l);

/* The loadavg text of the cgroup group (as /proc/<pid>/cgroup names it in
 * h), given the host's text; the first read of a group samples it at once
 * (under no lock another group's reader takes), so that its averages start
 * from what runs now. The last field: for a
 * caller of a pid namespace of its own (own_ns), the newest thread of the
 * group as its innermost namespace numbers it (when the last sample found
 * one), else the host's. -ENOENT: the cgroup is not there. */
int loadavgs_render(struct loadavgs *l, const char *group, const char *host, gboolean own_ns, GString **ret);

/* The group's runnable (R) and uninterruptible (D) threads as last
 * sampled (tracked from now on, as by a read). FALSE: no such cgroup. */
gboolean loadavgs_counts(struct loadavgs *l, const char *group, unsigned *ret_running, unsigned *ret_blocked);

/* Sample the groups read in the last 15 minutes if 5 s have passed since
 * the last sample, forget the others; *ret_wait_us: until the next. */
void loadavgs_sample_due(struct loadavgs *l, gint64 *ret_wait_us);
