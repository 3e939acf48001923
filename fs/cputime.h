/* CPU time and uptime of a caller's own: /proc/stat's cpu lines from its
 * cgroup's CPU time, and /proc/uptime from the start of its pid
 * namespace's init. A caller of the daemon's own pid namespace with no CPU
 * limit reads the host's figures. */
#pragma once

#include "cgroup.h"
#include "cpucounters.h"
#include "cpuview.h"
#include "deciders.h"
#include "loadavg.h"
#include "nsinit.h"
#include "reports.h"
#include "served.h"

#include <glib.h>
#include <stdint.h>

/* What decides a caller's stat and uptime texts. Immutable, reference
 * counted (cputime_key_ref, cputime_key_unref). */
struct cputime_key {
	struct cpu_map *map; /* the CPUs its view shows (a reference) */
	uint64_t ns;         /* its pid namespace if not the daemon's, else 0 */
	uint64_t init_start; /* when that namespace's init started (clock ticks after boot) */
	gint64 epoch_us;     /* when its cgroup was made (realtime), 0 if unknown */
	/* Its cgroup in the hierarchy that counts CPU time, as /proc/<pid>/cgroup
	 * names it; "" for a caller that gets the host's figures. */
	char group[];
};

gpointer cputime_key_ref(gpointer key);
void cputime_key_unref(gpointer key);

struct cputimes_config {
	int proc_fd; /* the daemon's procfs: callers, and the host's files */
	struct scope *scope; /* which cgroup a caller's time comes from */
	struct cgroup_config cgroups;
	struct cpuview *cpuview;
	struct nsinits *nsinits;
	gboolean loadavg; /* serve loadavg (not --no-loadavg) */
	/* Where stat's counters keep what holds them monotonic over a restart
	 * (fs/cpucounters.h), or NULL. */
	const char *counters_path;
	/* Called once per cgroup file that could not be used (the caller
	 * then gets the host's figures). */
	reports_fn report;
	void *report_data;
};

struct cputimes;

struct cputimes *cputimes_new(const struct cputimes_config *cfg);
void cputimes_free(struct cputimes *t);

/* Callers' keys (struct cputime_key), by thread and by the classes of their
 * texts: */
struct deciders *cputimes_deciders(struct cputimes *t);
uint64_t cputime_uptime_class(gconstpointer key);
uint64_t cputime_stat_class(gconstpointer key);
uint64_t cputime_loadavg_class(gconstpointer key);
/* FALSE with --no-loadavg: loadavg is the host's. */
gboolean cputimes_serves_loadavg(const struct cputimes *t);

/* The text of proc/uptime, proc/stat, proc/loadavg for key: 0, SERVED_HOST
 * (fs/served.h: the host's file as it is), or -errno. */
int cputimes_render_uptime(struct cputimes *t, const struct cputime_key *key, GBytes **ret);
int cputimes_render_stat(struct cputimes *t, const struct cputime_key *key, GBytes **ret);
int cputimes_render_loadavg(struct cputimes *t, const struct cputime_key *key, GBytes **ret);

/* The background work, for the daemon's background thread: the loadavg
 * sampler's step (fs/loadavg.h), and forgetting the counters of cgroups
 * gone; *ret_wait_us until the next. */
void cputimes_sample_due(struct cputimes *t, gint64 *ret_wait_us);

/* A handover: the daemon that hands its views over writes its /proc/stat
 * counters once it answers no more (a counter held a tick since the last
 * write would otherwise go back under the next daemon), and the one that
 * takes them reads them again before it answers. */
void cputimes_hand_over(struct cputimes *t);
void cputimes_take_over(struct cputimes *t);
/* The views end with this daemon: the counters kept for the next one go. */
void cputimes_unkeep(struct cputimes *t);

/* The host's uptime text for a namespace whose init started init_start_s
 * after boot, with cpus CPUs that used used_s of CPU time: the first field
 * the time since then, the second cpus x that less used_s; neither
 * negative nor above the host's. 0 or -EINVAL (host text not understood). */
int cputime_render_uptime(const char *host, double init_start_s, unsigned cpus, double used_s, GString **ret);
