/* A cgroup's CPU time as the cpu lines of /proc/stat: its user and system
 * time spread evenly over the n CPUs of the view, each line's idle the
 * rest of the time elapsed since the cgroup's epoch; and those counters
 * kept from going back for a reader when n changes (a new quota or
 * cpuset), or when usage outruns elapsed time, also across a restart of
 * the daemon or a handover (the offsets that keep them are saved in a
 * file). */
#pragma once

#include <glib.h>
#include <stdint.h>

enum { CPU_TICKS_USER, CPU_TICKS_SYSTEM, CPU_TICKS_IDLE, CPU_TICKS_FIELDS };
/* One line's counters, in clock ticks, by CPU_TICKS_*. Rows: [0] the cpu
 * line, [1 + i] cpuI's. */
typedef struct {
	uint64_t f[CPU_TICKS_FIELDS];
} cpu_ticks;

/* rows[0 .. n]: user and system spread evenly over n lines (the first
 * lines take the remainder: they sum to the totals), each line's idle
 * elapsed less its user and system (never below 0); rows[0] their sums. */
void cpu_ticks_spread(uint64_t user, uint64_t system, uint64_t elapsed, unsigned n, cpu_ticks *rows);

struct cpu_counters;

/* path: the file that keeps the offsets over a restart (read now, written
 * when they change: cpu_counters_flush), or NULL for none. Rows given
 * since it was last written are appended to path.log before the reader
 * gets them, so that they hold over a SIGKILL too. The directory of path
 * is made (0700) if it is missing. */
struct cpu_counters *cpu_counters_new(const char *path);
void cpu_counters_free(struct cpu_counters *c);
/* Remove the file and its log, and keep nothing more: no daemon goes on
 * from these counters. */
void cpu_counters_unkeep(struct cpu_counters *c);

/* The counters of group (with epoch: a cgroup made again under its name
 * starts over) for a reader of n CPUs, given its totals: the spread
 * (cpu_ticks_spread) moved by the group's offsets so that no counter is
 * ever below what an earlier call gave. cpus: the CPU each line is (host
 * numbers, as /proc/stat names them), or NULL. When the lines change (n,
 * or their CPUs), the cpu line and the line of each CPU both have go on
 * from where the old spread has them now (the time since the last call
 * counts at the old lines; without cpus, lines at the same place), a new
 * line starts at its spread. rows: n + 1. */
void cpu_counters_follow(struct cpu_counters *c, const char *group, gint64 epoch, uint64_t user, uint64_t system,
			 uint64_t elapsed, unsigned n, const unsigned *cpus, cpu_ticks *rows);

/* Write what changed since the file was last written, if anything: a
 * new count of CPUs is written at once, the rest (a new group, offsets
 * that hold a counter) by this, from the background thread. */
void cpu_counters_flush(struct cpu_counters *c);

/* Read the file again, in place of what is kept: a daemon that took over
 * from another before serving, which wrote it (cpu_counters_flush) once
 * it had stopped answering. */
void cpu_counters_reload(struct cpu_counters *c);

/* Forget the groups that are gone: gone(group, epoch, data) TRUE. (Kept
 * until then, read or not: a reader may come back after any time.) */
void cpu_counters_sweep(struct cpu_counters *c, gboolean (*gone)(const char *group, gint64 epoch, void *data),
			void *data);
