/* /proc/uptime for a caller in a container: time since the init of its pid
 * namespace started, and idle time of its CPUs since then. A caller of the
 * daemon's own pid namespace reads the host's file. */
#pragma once

#include "cgroup.h"
#include "cpuview.h"
#include "deciders.h"
#include "nsinit.h"

#include <glib.h>
#include <stdint.h>

/* What decides a caller's uptime text. Immutable, reference counted
 * (cputime_key_ref, cputime_key_unref). */
struct cputime_key {
	uint64_t ns;         /* its pid namespace; 0: the host's file */
	uint64_t init_start; /* when that namespace's init started (clock ticks after boot) */
	unsigned cpus;       /* the CPUs its view shows */
	char group[];        /* its cgroup in the hierarchy that counts CPU time ("": none) */
};

gpointer cputime_key_ref(gpointer key);
void cputime_key_unref(gpointer key);

struct cputimes_config {
	int proc_fd; /* the daemon's procfs: callers, and the host's uptime */
	struct cgroup_config cgroups;
	struct cpuview *cpuview;
	struct nsinits *nsinits;
};

struct cputimes;

struct cputimes *cputimes_new(const struct cputimes_config *cfg);
void cputimes_free(struct cputimes *u);

/* Callers' keys (struct cputime_key), by thread and by class. */
struct deciders *cputimes_uptime_deciders(struct cputimes *u);

/* The text of proc/uptime for key. */
int cputimes_render_uptime(struct cputimes *u, const struct cputime_key *key, GBytes **ret);

/* The host's uptime text for a namespace whose init started init_start_s
 * after boot, with cpus CPUs that used used_s of CPU time: the first field
 * the time since then, the second cpus x that less used_s; neither
 * negative nor above the host's. 0 or -EINVAL (host text not understood). */
int cputime_render_uptime(const char *host, double init_start_s, unsigned cpus, double used_s, GString **ret);
