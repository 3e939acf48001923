/* Which host CPUs a container limited by a CPU quota is shown: chosen
 * once, spread over the machine, and kept for the container's life. Pure
 * (no I/O): the CPU view (fs/cpuview.c) says which containers exist.
 *
 * A container whose quota grants N CPUs of the C it may run on (its cpuset
 * ∩ online, N < |C|) is placed on the N CPUs of C that the fewest placed
 * containers hold, ties broken by the fewest on the same core (the CPUs
 * of a core: cpuplace_set_cores), then the lowest number. The place
 * sticks: N growing adds the least used CPUs of C, N shrinking drops its
 * most shared ones, a new C keeps what is still in it. Containers limited
 * by their cpuset alone (N = |C|) or not at all are neither placed nor
 * counted. A program that pins one thread per CPU it is shown then runs
 * beside as few others as the machine allows, instead of every such
 * container on CPU 0.
 *
 * Thread-safe: one mutex inside. */
#pragma once

#include "cpuset.h"

#include <glib.h>

/* Containers placed at most; past it a new one gets the first N CPUs of
 * its C, is not counted, and cpuplace_counts says how often. */
#define CPUPLACE_MAX_ENTRIES 65536

struct cpuplace;

struct cpuplace *cpuplace_new(unsigned max_entries);
void cpuplace_free(struct cpuplace *p);

/* core[cpu] names cpu's core (the lowest CPU of its thread siblings) for
 * cpu < n; other CPUs are cores of their own. Before any placement. */
void cpuplace_set_cores(struct cpuplace *p, const unsigned *core, unsigned n);

/* The n CPUs (n <= |allowed|) that container key is shown, in ascending
 * order into ret (n entries): 0, or -ENOSPC when the table is full (ret
 * is then the first n of allowed), -EINVAL for n 0 or above |allowed|. */
int cpuplace_place(struct cpuplace *p, const char *key, const struct cpuset *allowed, unsigned n,
		   unsigned *ret);
/* The container key is gone: its CPUs no longer count. */
void cpuplace_release(struct cpuplace *p, const char *key);
/* The keys placed now (g_strfreev them). */
char **cpuplace_keys(struct cpuplace *p);

/* How many placed containers hold cpu. */
unsigned cpuplace_uses(struct cpuplace *p, unsigned cpu);
/* Containers placed, and placements refused for a full table so far. */
void cpuplace_counts(struct cpuplace *p, unsigned *ret_entries, guint64 *ret_full);
/* A number that changes whenever a placement does (to keep it elsewhere). */
guint64 cpuplace_generation(struct cpuplace *p);

/* The table as text ("cpu-list key" lines, key escaped), and back: the
 * entries of text are added to p (keys it has already are left as they
 * are); how many lines could not be read. */
char *cpuplace_dump(struct cpuplace *p);
unsigned cpuplace_load(struct cpuplace *p, const char *text);
