/* Scope-bound cleanup for what glib 2.74 does not cover (file descriptors). */
#pragma once

#include <errno.h>
#include <unistd.h>

static inline void cleanup_close_fd(const int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_close_ __attribute__((cleanup(cleanup_close_fd)))

/* Hand an fd out of a scope that would otherwise close it. */
static inline int steal_fd(int *fd)
{
	int ret = *fd;
	*fd = -1;
	return ret;
}
