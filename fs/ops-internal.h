/* What the FUSE adapters of ops.c and ops-pressure.c share. */
#pragma once

#include "ops.h"
#include "triggers.h"

/* An open daemon-served file. It reads as one consistent snapshot, taken
 * when it is opened, at any offset and in any chunk size; once a reader has
 * read it from offset 0 to the end, a read that starts over at offset 0
 * takes a new one, as procfs would give it (procps keeps /proc/stat open
 * and re-reads it that way). Read by the session's workers concurrently;
 * freed with its handle (RELEASE, which the kernel sends only once no READ
 * of it is under way), or by ops_state_clear. */
struct served_file {
	GMutex lock; /* guards content, from_zero, at_end, trigger and rearmed */
	GBytes *content;
	gint64 version; /* 0, or content is the shared text of this version */
	gboolean from_zero; /* a read of this snapshot started at offset 0 */
	gboolean at_end;    /* ... and a read of it reached the end */
	uint64_t ino;
	int flags;
	/* A pressure file's PSI trigger (fs/triggers.h), once written; and
	 * whether one kept by the daemon before was set again (or could not be). */
	struct trigger *trigger;
	gboolean rearmed;
};

/* The caller of req, as fs/ sees it. */
struct caller ops_caller(fuse_req_t req);
/* Answer req with -negative_errno (out of fds: said once a minute). */
void ops_reply_err(fuse_req_t req, int negative_errno);
/* The open file of fi, made again for one opened before a handover: NULL
 * and *ret_err if it cannot be. */
struct served_file *ops_file(fuse_req_t req, fuse_ino_t ino, off_t off, struct fuse_file_info *fi, int *ret_err);
/* The tenant of req's caller (fs/handles.h). */
uint64_t ops_tenant(fuse_req_t req);

/* ops-pressure.c: PSI triggers, and the changes of attributes that a
 * trigger writer's O_TRUNC makes. */
void ops_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
void ops_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi);
