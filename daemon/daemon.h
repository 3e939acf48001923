/* The daemon: options, checks, mount, threads, signals, teardown. */
#pragma once

#include "cgroup.h"
#include "cpuview.h"
#include "pidwatch.h"
#include "smaps.h"

#include <glib.h>

#define DAEMON_DEFAULT_MOUNTPOINT "/var/lib/cgprocfs"
#define DAEMON_CONTROL_DIR "/run/cgprocfs"

struct daemon_config {
	const char *mountpoint;    /* absolute, canonical */
	const char *fuse_options;  /* extra -o options for the FUSE mount, or NULL */
	gboolean debug;
	gboolean cpu_quota;        /* --cpu-limit=cpuset+quota */
	struct memo_config smaps;  /* --smaps-max-age, --refresh-budget, ... */
	const char *control_socket; /* --control-socket */
};

/* Containers: views of other pid namespaces, attached by the OCI hook
 * over a control socket. */
struct containers_config {
	const char *socket_path;
	int host_proc_fd;  /* the daemon's procfs: where callers are found */
	int sys_cpu_fd;
	struct cpuview *cpuview;
	struct smaps *smaps;
	struct pidwatch *watch;
};
struct containers;
int containers_start(const struct containers_config *cfg, struct containers **ret);
/* Stop taking new containers. TRUE if containers' views are still served:
 * what they use (the CPU view, the memo, the watch) must then stay. */
gboolean containers_stop(struct containers *cs);

/* The background refresher of the smaps_rollup memo. */
struct refresher;
struct refresher *refresher_new(void);
void refresher_start(struct refresher *r, struct smaps *smaps);
void refresher_wake(void *data); /* data: the refresher */
void refresher_free(struct refresher *r); /* stops it at once */

/* The cgroup hierarchies the CPU view reads, and what keeps them open. */
struct daemon_cgroups {
	struct cgroup_config config;
	GPtrArray *roots; /* strings the config points to */
	GArray *fds;      /* int */
};

void cgroups_discover(struct daemon_cgroups *out);
void cgroups_log(const struct daemon_cgroups *c);
void cgroups_clear(struct daemon_cgroups *c);

/* Mount the view at cfg->mountpoint and serve until SIGINT or SIGTERM,
 * then unmount. Returns the process exit status. Signals must already
 * be blocked in every thread. */
int lifecycle_serve(const struct daemon_config *cfg);

/* Serving FUSE sessions (serve.c). serve_init once, before any session;
 * session_serve serves se with a pool of worker threads until the mount
 * goes away or serve_drain: 0 or -errno. serve_drain stops every session's
 * workers between requests, so that another daemon holding the same
 * /dev/fuse fds answers the rest; TRUE once no worker is left. */
struct fuse_session;
void serve_init(void);
int session_serve(struct fuse_session *se);
gboolean serve_drain(void);

/* Make dir ready to be mounted on: created if missing, a directory, not a
 * mount point (a stale cgprocfs mount left by a dead daemon is removed).
 * Writes its canonical path to *ret_path. FALSE after printing why not. */
gboolean mountpoint_prepare(const char *dir, char **ret_path);
