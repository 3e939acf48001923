/* Processes of another pid namespace, by the numbers they have there. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* A pidfd (flags as pidfd_open's) of the process numbered pid in the pid
 * namespace of ns_fd, or in the daemon's own for ns_fd -1. The fd, or
 * -ESRCH (no such process), -EOPNOTSUPP (this kernel cannot translate pids
 * between namespaces: before Linux 6.9), or another -errno of pidfd_open. */
int pidns_pidfd_open(int ns_fd, pid_t pid, unsigned flags);

/* The thread group id, in the pid namespace of ns_fd, of thread tid of the
 * daemon's namespace; -ESRCH if it has none there (or is gone), or
 * -EOPNOTSUPP (before Linux 6.9). */
pid_t pidns_tgid_in(int ns_fd, pid_t tid);

/* The pid namespace (its inode) of thread tid of proc_fd's namespace, or
 * 0 if it cannot be told (the thread is gone). */
uint64_t pidns_of(int proc_fd, pid_t tid);

/* Has the process of pidfd exited (its pidfd polls readable)? FALSE for
 * -1, where there is no pidfd to ask. */
gboolean pidns_pidfd_exited(int pidfd);

/* The daemon's own pid namespace (its inode), or 0 if it cannot be told. */
uint64_t pidns_own(void);

/* Whose caller thread tid (of proc_fd's namespace) is, for its limits: its
 * container. That is the namespace of ns_fd (the view's; -1: the
 * daemon's) if tid is of it or of one nested below it; else the child of
 * the daemon's namespace that tid is of or below (another container); else
 * the daemon's (the host's processes, one tenant). Its inode, or 0 if it
 * cannot be told (the thread is gone). */
uint64_t pidns_tenant(int proc_fd, pid_t tid, int ns_fd);

#define PIDNS_DEPTH_MAX 33 /* the kernel nests at most 32 below the first */

/* pidns_tenant's choice, from chain: the inodes of tid's namespace and of
 * each one above it, n of them (as far as they could be told), view the
 * view's namespace and own the daemon's. */
uint64_t pidns_tenant_pick(const uint64_t *chain, unsigned n, uint64_t view, uint64_t own);
