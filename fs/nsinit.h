/* The init of a caller's pid namespace, whose start is the epoch of the
 * caller's /proc/uptime: found once per namespace (among the caller's
 * ancestors, else by a walk of the daemon's procfs, under no lock another
 * namespace's caller takes), then kept while that process lives. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

struct nsinits;

/* proc_fd: the daemon's procfs (borrowed; it must outlive n). */
struct nsinits *nsinits_new(int proc_fd);
void nsinits_free(struct nsinits *n);

/* The pid namespace of thread tid (its inode) and the start time of that
 * namespace's init (clock ticks after boot). FALSE for a thread of the
 * daemon's own namespace, or one whose namespace or init cannot be found:
 * it gets the host's uptime. */
gboolean nsinits_of(struct nsinits *n, pid_t tid, uint64_t *ret_ns, uint64_t *ret_start);
