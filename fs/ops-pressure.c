/* The FUSE adapters of PSI triggers on proc/pressure/<name> (fs/triggers.h):
 * WRITE sets one, POLL answers from it at once (never held: a poller
 * sleeps in its own kernel, where it can be frozen), and SETATTR takes the
 * truncation of a writer's O_TRUNC. */
#include "ops-internal.h"

#include <errno.h>

static __thread uint64_t poll_fh, poll_kh;

void ops_poll_taken(uint64_t fh, uint64_t kh)
{
	poll_fh = fh;
	poll_kh = kh;
}

/* The text the kernel's /proc file takes from a write of buf: at most
 * TRIGGER_TEXT_MAX bytes, the last of them made NUL. */
static char *trigger_text(const char *buf, size_t size)
{
	return g_strndup(buf, MIN(size, TRIGGER_TEXT_MAX) - 1);
}

/* Set text as the trigger of f (the fd fh) for req's caller. Under f->lock. */
static int arm(fuse_req_t req, struct served_file *f, uint64_t fh, const char *text)
{
	struct ops_state *s = fuse_req_userdata(req);
	struct caller c = ops_caller(req);
	uint64_t tenant = ops_tenant(req);
	int fd;
	int r = triggers_admit(s->triggers, tenant);
	if (r == 0)
		r = view_trigger(s->view, &c, f->ino, text, &fd);
	if (r == 0)
		r = triggers_add(s->triggers, fd, tenant, s->key, fh, f->ino, text, &f->trigger);
	return r;
}

/* An fd whose trigger the daemon before this one set: set again, as its
 * caller now, once. If that fails, the fd has no trigger (a poll says
 * POLLERR, as the kernel's file with none). Under f->lock. */
static void rearm_kept(fuse_req_t req, struct served_file *f, uint64_t fh)
{
	struct ops_state *s = fuse_req_userdata(req);
	char text[TRIGGER_TEXT_MAX];

	if (f->rearmed || f->trigger)
		return;
	f->rearmed = TRUE;
	if (triggers_kept(s->triggers, s->key, fh, text) < 0)
		return;
	int r = arm(req, f, fh, text);
	if (r < 0)
		g_debug("cannot set again the PSI trigger \"%s\" of an fd opened before: %s", text, g_strerror(-r));
}

void ops_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	int r = -EBADF; /* no other file is open for writing */
	struct served_file *f = view_pressure_name(ino) ? ops_file(req, ino, 0, fi, &r) : NULL;
	if (f && size == 0)
		r = -EINVAL;
	if (!f || size == 0) {
		ops_reply_err(req, r);
		return;
	}
	g_autofree char *text = trigger_text(buf, size);
	{
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&f->lock);
		rearm_kept(req, f, fi->fh);
		/* One trigger per fd, as the kernel's file allows. */
		r = f->trigger ? -EBUSY : arm(req, f, fi->fh, text);
	}
	if (r < 0)
		ops_reply_err(req, r);
	else
		fuse_reply_write(req, size);
}

void ops_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct ops_state *s = fuse_req_userdata(req);
	int r = 0;
	struct served_file *f = view_pressure_name(ino) ? ops_file(req, ino, 0, fi, &r) : NULL;
	unsigned events = TRIGGERS_FILE_EVENTS; /* any other file: ready */

	if (r < 0) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		ops_reply_err(req, r);
		return;
	}
	if (f) {
		G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&f->lock);
		rearm_kept(req, f, fi->fh);
		events = TRIGGERS_NONE_EVENTS;
		if (f->trigger) {
			events = triggers_poll(s->triggers, f->trigger, ph, poll_fh == fi->fh ? poll_kh : 0);
			ph = NULL;
		}
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, events);
}

/* Changes the kernel's own pressure files take without a change (a
 * truncation to 0 and times: O_TRUNC of "echo ... >"). */
#define TRUNCATION (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW | \
		    FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)

void ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct ops_state *s = fuse_req_userdata(req);
	struct caller c = ops_caller(req);
	struct stat now;
	double timeout;

	if (!view_pressure_name(ino) || (to_set & ~TRUNCATION) || ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	int r = view_getattr(s->view, &c, ino, &now, &timeout);
	if (r < 0)
		ops_reply_err(req, r);
	else
		fuse_reply_attr(req, &now, timeout);
}
