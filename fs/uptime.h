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
 * (uptime_key_ref, uptime_key_unref). */
struct uptime_key {
	uint64_t ns;         /* its pid namespace; 0: the host's file */
	uint64_t init_start; /* when that namespace's init started (clock ticks after boot) */
	unsigned cpus;       /* the CPUs its view shows */
	char group[];        /* its cgroup in the hierarchy that counts CPU time ("": none) */
};

gpointer uptime_key_ref(gpointer key);
void uptime_key_unref(gpointer key);

struct uptimes_config {
	int proc_fd; /* the daemon's procfs: callers, and the host's uptime */
	struct cgroup_config cgroups;
	struct cpuview *cpuview;
	struct nsinits *nsinits;
};

struct uptimes;

struct uptimes *uptimes_new(const struct uptimes_config *cfg);
void uptimes_free(struct uptimes *u);

/* Callers' keys (struct uptime_key), by thread and by class. */
struct deciders *uptimes_deciders(struct uptimes *u);

/* The text of proc/uptime for key. */
int uptimes_render(struct uptimes *u, const struct uptime_key *key, GBytes **ret);

/* The host's uptime text for a namespace whose init started init_start_s
 * after boot, with cpus CPUs that used used_s of CPU time: the first field
 * the time since then, the second cpus x that less used_s; neither
 * negative nor above the host's. 0 or -EINVAL (host text not understood). */
int uptime_render(const char *host, double init_start_s, unsigned cpus, double used_s, GString **ret);
