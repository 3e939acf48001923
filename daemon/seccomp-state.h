/* What the seccomp listener (sysinfo.c) reads from its peers: a runtime's
 * connection, and pure parsers of its state and of a caller's maps. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/* The fd named "seccompFd" among fds, by the state's "fds" list; the rest
 * closed. -1 if there is none. */
int seccomp_fd_of(const char *state, gsize len, GArray *fds);

/* Are the len bytes at addr in mappings the process may write, as maps
 * (an fd of its /proc/<pid>/maps, read from its start) says? */
gboolean seccomp_writable(int maps, uint64_t addr, size_t len);

/* Whether conn's peer is root (as for the control socket). */
gboolean seccomp_peer_is_root(int conn);
/* A runtime's connection (a root peer's): its JSON state and fds, read to
 * EOF within a second; the container's seccomp notification fd, or -1 (a
 * probe, no seccompFd: said in one line). */
int seccomp_runtime_fd(int conn);
