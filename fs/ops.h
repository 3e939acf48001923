/* The FUSE low-level adapters: decode a request, ask fs/view, reply.
 * Only these functions call fuse_reply_*. */
#pragma once

#include "handles.h"
#include "listing.h"
#include "pidwatch.h"
#include "tidcache.h"
#include "view.h"

#include <fuse_lowlevel.h>

/* What the adapters of one FUSE session use: libfuse's userdata. It is
 * embedded in the daemon's session object and lives exactly as long; its
 * requests are answered by that session's workers, concurrently.
 * view, watch, session, proc_fd, triggers and key are set before the
 * session serves and never change; proto_minor is written once, by INIT, before any other
 * request of the session. */
struct ops_state {
	struct view *view;
	struct pidwatch *watch;       /* with this state as the owner */
	struct fuse_session *session; /* set once the session exists */
	int proc_fd;                  /* where callers are looked up */
	struct triggers *triggers;    /* the daemon's PSI triggers (NULL: none) */
	uint64_t key;                 /* the session's in every daemon (daemon/inflight.h) */
	unsigned proto_minor;         /* the kernel's FUSE protocol minor version, once INIT came */
	/* Open files and directories by handle, and the tenant of each
	 * caller thread (fs/handles.h), kept a while. Freed by
	 * ops_state_clear, once no request of the session can come. */
	struct handles handles;
	struct tidcache tenants;
	/* The listings of the open directories, shared (fs/listing.h). */
	struct listings listings;
	/* Served files shared per content class (view_class_row): the version
	 * of each inode's text the kernel was last told, and per row the one
	 * inode (class) its callers have looked up, or every class if several
	 * (then the kernel may not keep the name). cache_lock guards them. */
	GMutex cache_lock;
	GHashTable *told;      /* ino -> what the kernel was told (kcache.c) */
	GHashTable *told_of;   /* pid -> GArray of the inos in told of its process */
	GHashTable *row_class; /* row -> ino, or CLASS_MIXED */
	/* The last open refused as another class's (kcache_class_mixed):
	 * which inode, to which thread; and whether a bind was said. */
	uint64_t refused_ino;
	pid_t refused_tid;
	gboolean bind_said;
};

/* Make the handle table of s (the other fields are the caller's), and
 * free it with every open file and directory left in it. */
void ops_state_init(struct ops_state *s);
void ops_state_clear(struct ops_state *s);

extern const struct fuse_lowlevel_ops ops_table;

/* The kernel's handle of the file a FUSE POLL of fh (just read from the
 * kernel by this thread) is for, told before the request is answered. */
void ops_poll_taken(uint64_t fh, uint64_t kh);

/* pidwatch callback: drop the kernel's cached proc/<pid> of a process
 * that exited. owner is the struct ops_state that cached it. */
void ops_forget_pid(void *owner, pid_t pid);
