/* FUSE passthrough for the files the daemon serves.
 *
 * A served file costs three FUSE round trips with direct_io (OPEN, READ and
 * the READ that finds the end), and a round trip costs more than reading the
 * real file. With passthrough (kernel 6.9 and later) the OPEN reply names a
 * backing file, a memfd holding the open's snapshot, and reads go straight
 * to it: one round trip per open, whatever the reader does after.
 *
 * libfuse 3.14 knows nothing of passthrough, so the session's I/O goes
 * through fuse_session_custom_io: the kernel's INIT offer is noted when the
 * request is read, the INIT reply accepts it, and an OPEN reply gets the
 * backing id of the open it answers (set by the same thread just before it
 * replies). Where the kernel does not offer it, nothing changes. */
#pragma once

#include <fuse_lowlevel.h>
#include <glib.h>
#include <stdint.h>

struct passthrough {
	int dev_fd;            /* the session's /dev/fuse */
	/* Set while INIT is handled, before any other request is read. */
	uint64_t init_unique;  /* the INIT request, if it offered passthrough */
	gboolean enabled;      /* the INIT reply took the offer */
};

/* The I/O functions to give fuse_session_custom_io. Their userdata (the
 * session's) must start with a struct passthrough. */
extern const struct fuse_custom_io passthrough_io;

/* A backing file holding content, registered with the kernel. 0 and the
 * backing id, or -errno (then serve the content with direct_io). */
int passthrough_backing_open(struct passthrough *pt, GBytes *content, int *ret_id);
void passthrough_backing_close(struct passthrough *pt, int id);

/* The next OPEN reply this thread sends passes reads through to id. */
void passthrough_reply_with(int id);
