/* The FUSE low-level adapters: decode a request, ask fs/view, reply.
 * Only these functions call fuse_reply_*. */
#pragma once

#include "pidwatch.h"
#include "view.h"

#include <fuse_lowlevel.h>

struct ops_state {
	struct view *view;
	struct pidwatch *watch;       /* with this state as the owner */
	struct fuse_session *session; /* set once the session exists */
	int proc_fd;                  /* where callers are looked up */
	unsigned proto_minor;         /* the kernel's FUSE protocol minor version, once INIT came */
};

extern const struct fuse_lowlevel_ops ops_table;

/* pidwatch callback: drop the kernel's cached proc/<pid> of a process
 * that exited. owner is the struct ops_state that cached it. */
void ops_forget_pid(void *owner, pid_t pid);
