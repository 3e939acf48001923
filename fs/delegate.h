/* Delegation: what the view does not virtualize is a relative symlink into
 * the real procfs mounted at proc/.real, so the kernel serves it in the
 * caller's own context (magic links, writes, permission checks). */
#pragma once

#include "caller.h"

#include <glib.h>
#include <sys/types.h>

/* Name of the real procfs mount inside the view's proc/ directory. */
#define DELEGATE_REAL_NAME ".real"

/* proc/<name> -> ".real/<name>" */
char *delegate_top_target(const char *name);

/* proc/<pid>/<name> -> "../.real/<pid>/<name>" */
char *delegate_pid_target(pid_t pid, const char *name);

/* The text of the real magic link <pid>/<name> (exe, cwd, root) under
 * proc_fd, read with the caller's credentials: the caller gets the errno the
 * kernel would give it. 0 or -errno. */
int delegate_magic_target(const struct caller *c, int proc_fd, pid_t pid, const char *name,
			  char **ret_target);
