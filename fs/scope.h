/* Which cgroup a caller's figures come from: the container rule (the
 * README's "The container as one machine").
 *
 * SCOPE_CONTAINER, the default:
 *   1. a caller in a container the daemon was told of (scope_add, at the
 *      OCI hook's attach): of the containers of its pid namespace, the one
 *      whose cgroup (its init's when it was attached) it is in;
 *   2. a caller with a cgroup namespace of its own: the root of it;
 *   3. any other caller: its own cgroup if that cgroup or an ancestor
 *      limits it (a CPU quota, a cpuset narrower than the online CPUs, a
 *      memory limit), and otherwise the host's files unchanged.
 * Limits are then the tightest of that cgroup and its ancestors, usage
 * that cgroup's own (its whole subtree); nothing below it counts.
 *
 * SCOPE_CALLER: the caller's own cgroup, whatever it is; each kind of file
 * decides by itself whether it is limited (the behaviour before the rule).
 *
 * Read by every request thread; the containers are added and removed by
 * the daemon's threads: everything here takes its own locks. */
#pragma once

#include "cgroup.h"

#include <glib.h>
#include <sys/types.h>

enum scope_rule {
	SCOPE_CONTAINER,
	SCOPE_CALLER,
};

struct scope_config {
	int proc_fd;    /* callers' <tid>/cgroup and <tid>/ns/cgroup */
	int sys_cpu_fd; /* /sys/devices/system/cpu: its "online" */
	struct cgroup_config cgroups;
	enum scope_rule rule;
};

/* What a caller's figures come from. */
struct scope_found {
	gboolean host;             /* the host's files, unchanged */
	struct cgroup_paths paths; /* otherwise, the cgroup in each hierarchy */
};

struct scope;

/* Where the daemon's own cgroup namespace cannot be told (a kernel
 * without them), rule 2 is left out. */
struct scope *scope_new(const struct scope_config *cfg);
void scope_free(struct scope *s);
/* TRUE under the container rule, where scope_find decides which callers
 * get the host's files; FALSE where each kind of file decides. */
gboolean scope_decides_host(const struct scope *s);

/* A container of pid namespace ns (the containers of a pod may share one)
 * lives in the cgroups of cgroup_text: its init's /proc/<pid>/cgroup as
 * the daemon read it at the attach. 0 or -EINVAL. */
int scope_add(struct scope *s, uint64_t ns, const char *cgroup_text);
/* The containers of ns are gone. */
void scope_remove(struct scope *s, uint64_t ns);
/* Every container, as text that scope_add_from reads (a file kept for
 * the next daemon: a container's cgroup is the one it was attached in,
 * wherever its init is now). */
char *scope_dump(struct scope *s);
/* Add the containers of ns in dump; how many. */
unsigned scope_add_from(struct scope *s, const char *dump, uint64_t ns);

/* Thread tid's: 0 and *ret (scope_found_clear it); -ENOENT if the thread
 * is gone; -EINVAL if its cgroup file is garbage; its read's -errno if it
 * cannot be read (EMFILE, ...). An error is not kept: the next call reads
 * again. A caller whose scope cannot be found gets an error, never the
 * host's files. */
int scope_find(struct scope *s, pid_t tid, struct scope_found *ret);
void scope_found_clear(struct scope_found *f);

/* The relative directory (cgroup_relative_dir's) of h in what tid's
 * figures come from: 0 and *ret, "" for the host's files (and if its
 * cgroup in h cannot be told); -EIO if tid's scope cannot be found
 * (scope_find's error: its files are an error, not the host's). The
 * memory and I/O views use it. */
int scope_dir(struct scope *s, pid_t tid, const struct cgroup_hierarchy *h, char **ret);

/* The root of a cgroup namespace, for a caller of it whose cgroups are
 * text ("<tid>/cgroup", read outside): own_text and own_ns_text are the
 * daemon's own cgroups (thread-self/cgroup) read outside and inside that
 * namespace. The daemon does not move: its path inside ("/../../x")
 * tells how deep the root is below the cgroup it shares with the daemon,
 * and the root is the caller's path cut at that depth, whichever of the
 * namespace's cgroups the caller is in, and however it moves among them
 * meanwhile. 0, or -EINVAL (paths that do not fit: the caller is not
 * below the root there). */
int scope_ns_root(const char *text, const char *own_text, const char *own_ns_text, const struct cgroup_config *cfg,
		  struct cgroup_paths *ret);
