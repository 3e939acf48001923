/* The CPU view: which host CPUs a caller sees, with their host numbers in
 * every file, and the renderers that rewrite host text for it.
 *
 * C = effective cpuset ∩ online; N = min(|C|, ceil(min quota/period over
 * the cgroup and its ancestors)), at least 1. The CPUs shown, V, are C
 * when N = |C|; under a quota (N < |C|) the N CPUs of C placed for the
 * caller's container (fs/cpuplace.h: spread over the machine, kept for
 * its life), or the first N with CPUVIEW_PLACE_FIRST. A present CPU
 * outside V looks offline. A caller with no limit sees the host's files
 * unchanged. */
#pragma once

#include "cgroup.h"
#include "cpucounters.h"

#include <glib.h>
#include <sys/types.h>

/* The CPUs one caller sees. Immutable once made, so shared by threads
 * without a lock; reference counted (atomic): freed by the last unref. */
struct cpu_map {
	gboolean is_host; /* no limit: serve the host's text as it is */
	unsigned count;   /* CPUs shown: N */
	uint64_t class_id; /* cpu_map_class's, computed once */
	unsigned host[];  /* the CPUs shown (V), host numbers, ascending */
};

/* The CPUs a caller with limits (NULL: none) may be shown, C, in *ret,
 * and how many it is shown: N. */
unsigned cpu_map_allowed(const struct cpuset *online, const struct cgroup_limits *limits, gboolean use_quota,
			 struct cpuset *ret);
/* The map showing the n CPUs cpus (ascending, online) of online. */
struct cpu_map *cpu_map_of(const struct cpuset *online, const unsigned *cpus, unsigned n);
/* The map for an online set and a cgroup's limits (NULL: none), showing
 * the first N CPUs of C. */
struct cpu_map *cpu_map_new(const struct cpuset *online, const struct cgroup_limits *limits,
			    gboolean use_quota);
struct cpu_map *cpu_map_ref(struct cpu_map *m);
void cpu_map_unref(struct cpu_map *m);
typedef struct cpu_map cpu_map;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cpu_map, cpu_map_unref)
/* The content class of files rendered for m (fs/ino.h, served layout): a
 * 52-bit hash of what m shows, never 0, the same in every process. */
uint64_t cpu_map_class(const struct cpu_map *m);
/* Where host_cpu is in m->host[], or -1 if it is not shown. */
int cpu_map_view_cpu(const struct cpu_map *m, unsigned host_cpu);

/* Which N CPUs of C a caller limited by a quota is shown. */
enum cpuview_placement {
	CPUVIEW_PLACE_SPREAD, /* fs/cpuplace.h: spread, sticky per container */
	CPUVIEW_PLACE_FIRST,  /* the first N of C (--cpu-placement=first) */
};

/* Called once per cgroup whose files could not be used (the caller then
 * gets the host's view): data, the file, and the errno. */
typedef void (*cpuview_report_fn)(void *data, const char *file, int err);

struct cpuview_config {
	int proc_fd;    /* where callers' /proc/<tid>/cgroup is read */
	struct scope *scope; /* which cgroup a caller's limits come from */
	int sys_cpu_fd; /* the host's /sys/devices/system/cpu */
	struct cgroup_config cgroups;
	gboolean use_quota; /* --cpu-limit=cpuset+quota (else cpuset only) */
	enum cpuview_placement placement; /* --cpu-placement */
	/* Where the placements are kept for the next daemon (written when
	 * they change, read at cpuview_new), or NULL. */
	const char *placement_path;
	cpuview_report_fn report;
	void *report_data;
};

struct cpuview;

int cpuview_new(const struct cpuview_config *cfg, struct cpuview **ret);
void cpuview_free(struct cpuview *cv);

/* The map of the caller thread tid (a reference) in *ret: 0; on an error
 * in the caller's cgroup files it is the host's. -EIO where the caller's
 * scope cannot be found (its /proc/<tid>/cgroup unread: scope.h): its
 * files are an error, never the host's; nothing is kept then. Kept for
 * half a second per thread. */
int cpuview_map_for(struct cpuview *cv, pid_t tid, struct cpu_map **ret);

/* The map of tid computed now, whatever this thread kept. */
int cpuview_map_fresh(struct cpuview *cv, pid_t tid, struct cpu_map **ret);
/* A caller moved: no thread answers from the maps it kept before. */
void cpuview_forget_cached(struct cpuview *cv);
/* Write the placements' file now if they changed since it was written
 * (a daemon handing over: it is written at each change too, unless
 * another thread was writing it then). */
void cpuview_keep_placements(struct cpuview *cv);
/* Read the placements' file again (a daemon that took over, once the one
 * before stopped placing), adding what it has. */
void cpuview_reload_placements(struct cpuview *cv);
/* Remove the placements' file: no daemon goes on from them. */
void cpuview_unkeep_placements(struct cpuview *cv);
/* Containers placed, and placements refused for a full table. */
void cpuview_placement_counts(struct cpuview *cv, unsigned *ret_placed, guint64 *ret_full);

/* The map of a class some caller of cv had (cpuview_map_for), or NULL. */
struct cpu_map *cpuview_map_of_class(struct cpuview *cv, uint64_t class_id);

/* The short class of m's class, for the cpu layout of fs/ino.h: the
 * same in every process for a class, unless another class took it first in
 * this one, or CPUVIEW_SHORTS_MAX classes have one already (a tenant
 * making cgroups of ever new CPU sets: kept for good, as the kernel may
 * keep their inodes); then 0 (no class: such files are rendered per open). */
#define CPUVIEW_SHORTS_MAX 65536
uint32_t cpuview_short_class(struct cpuview *cv, const struct cpu_map *m);
/* The map of the class a short class stands for in cv, or NULL. */
struct cpu_map *cpuview_map_of_short(struct cpuview *cv, uint32_t short_class);

/* Renderers: host text in, the caller's text out. 0 or -EINVAL when the
 * host text does not have the expected shape. */
int cpuview_render_cpuinfo(const char *host, const struct cpu_map *m, GString **ret);
int cpuview_render_stat(const char *host, const struct cpu_map *m, GString **ret);
/* A caller's own CPU time in stat, a /proc/stat of its view with n cpuN
 * lines in ascending order (cpuview_render_stat's, host numbers):
 * rows[0] (fs/cpucounters.h) on the cpu line, rows[1 + i] on the i-th
 * cpuN line, as user, system and idle, the other fields 0; other lines as
 * they are. 0 or -EINVAL. */
int cpuview_render_stat_usage(const char *stat, unsigned n, const cpu_ticks *rows, GString **ret);
/* online: the list of the CPUs shown, "1\n", "4-7\n". */
GString *cpuview_render_online(const struct cpu_map *m);
/* offline: the host's offline ∪ (present \ shown), from the host's
 * present and offline texts. 0 or -EINVAL. */
int cpuview_render_offline(const char *present, const char *offline, const struct cpu_map *m, GString **ret);
/* A CPU list or mask of host numbers, restricted to the CPUs shown. */
int cpuview_render_list(const char *host, const struct cpu_map *m, GString **ret);
int cpuview_render_mask(const char *host, const struct cpu_map *m, GString **ret);
