#include "ops-internal.h"

#include "kcache.h"
#include "pidns.h"
#include "snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct ops_state *state(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

struct caller ops_caller(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	caller_set_serving(ctx->pid);
	return (struct caller){
		.tid = ctx->pid,
		.uid = ctx->uid,
		.gid = ctx->gid,
		.proc_fd = state(req)->proc_fd,
		.pid_ns_fd = view_pid_ns_fd(state(req)->view),
	};
}

/* TRUE at most once a minute for *told_minute (of the monotonic clock; -1
 * at first): when a condition is to be logged. */
static gboolean once_a_minute(gint *told_minute)
{
	gint minute = (gint)(g_get_monotonic_time() / (60 * G_USEC_PER_SEC));
	gint last = g_atomic_int_get(told_minute);
	return last != minute && g_atomic_int_compare_and_exchange(told_minute, last, minute);
}

/* Out of fds (EMFILE, ENFILE): said at most once a minute, with what to do. */
static void tell_out_of_fds(int negative_errno)
{
	static gint told_minute = -1;
	if (once_a_minute(&told_minute))
		g_warning("out of file descriptors (%s): requests fail until some are free; raise the open-files limit "
			  "(LimitNOFILE= in the unit, ulimit -n)",
			  g_strerror(-negative_errno));
}

/* Set by a refusal at a bound of the handles (told on its own), for the
 * reply of this thread's request. */
static __thread gboolean handle_refused;

void ops_reply_err(fuse_req_t req, int negative_errno)
{
	if ((negative_errno == -EMFILE || negative_errno == -ENFILE) && !handle_refused)
		tell_out_of_fds(negative_errno);
	handle_refused = FALSE;
	fuse_reply_err(req, -negative_errno);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	((struct ops_state *)userdata)->proto_minor = conn->proto_minor;
	/* Symlink targets are the same for every caller; magic links get a
	 * new inode per lookup, so their cached text is never reused. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ops_state *s = state(req);
	struct caller c = ops_caller(req);
	struct view_entry e;
	int r = view_lookup(s->view, &c, parent, name, &e);
	if (r < 0) {
		ops_reply_err(req, r);
		return;
	}
	struct fuse_entry_param param = {
		.ino = e.ino,
		.attr = e.attr,
		.attr_timeout = e.attr_timeout,
		.entry_timeout = e.entry_timeout,
	};
	if (e.ino)
		kcache_told_attr(s, e.ino, &param.attr);
	if (e.ino && view_class_row(e.ino))
		param.entry_timeout = kcache_entry_timeout(s, e.ino, e.entry_timeout);
	fuse_reply_entry(req, &param); /* req is gone from here on */
	/* After the reply: an exit seen from now on drops the new entry. */
	if (e.pidfd >= 0)
		pidwatch_adopt(s->watch, s, e.pid, e.pidfd);
}

/* ESTALE has the kernel walk a path again. A request on an open file (an
 * fstat, a READ after a handover) is walked again by nobody: there, a pid
 * node whose process is gone (its pid another's now) is ENOENT. */
static int unwalked(fuse_ino_t ino, int r)
{
	return r == -ESTALE && !view_class_row(ino) ? -ENOENT : r;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct caller c = ops_caller(req);
	struct stat attr;
	double timeout;
	int r = view_getattr(state(req)->view, &c, ino, &attr, &timeout);
	if (fi)
		r = unwalked(ino, r);
	if (r < 0) {
		ops_reply_err(req, r);
		return;
	}
	kcache_told_attr(state(req), ino, &attr);
	fuse_reply_attr(req, &attr, timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct caller c = ops_caller(req);
	g_autofree char *target = NULL;
	int r = view_readlink(state(req)->view, &c, ino, &target);
	if (r < 0)
		ops_reply_err(req, r);
	else
		fuse_reply_readlink(req, target);
}

/* access(2) by the mode bits the view reports (only pressure files have
 * write bits). */
static gboolean access_allowed(const struct caller *c, const struct stat *attr, int mask)
{
	if ((mask & W_OK) && !(attr->st_mode & 0222))
		return FALSE;
	if (c->uid == 0) /* root may search directories and run what has an x bit */
		return !(mask & X_OK) || S_ISDIR(attr->st_mode) || (attr->st_mode & 0111);
	mode_t bits = c->uid == attr->st_uid ? attr->st_mode >> 6 :
		      c->gid == attr->st_gid ? attr->st_mode >> 3 : attr->st_mode;
	return (mask & ~(int)(bits & 07)) == 0;
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct caller c = ops_caller(req);
	struct stat attr;
	double timeout;
	int r = view_getattr(state(req)->view, &c, ino, &attr, &timeout);
	if (r < 0) {
		ops_reply_err(req, r);
		return;
	}
	fuse_reply_err(req, access_allowed(&c, &attr, mask) ? 0 : EACCES);
}

/* Open files and directories by handle (fs/handles.h). A handle's object
 * is a struct listing* of a directory's entries, shared (HANDLE_DIR set in
 * the handle, fs/listing.h), or a struct served_file*. */
#define HANDLE_DIR (UINT64_C(1) << HANDLES_KIND_SHIFT)

static void served_file_free(struct served_file *f);

static void handle_object_free(uint64_t fh, gpointer object)
{
	if (fh & HANDLE_DIR)
		listing_unref(object);
	else
		served_file_free(object);
}

/* The tenants cache numbers, not references. */
static gpointer tenant_same(gpointer p)
{
	return p;
}

static void tenant_no_unref(gpointer p)
{
}

void ops_state_init(struct ops_state *s)
{
	kcache_init(s);
	handles_init(&s->handles, handle_object_free);
	tidcache_init(&s->tenants, tenant_same, tenant_no_unref);
	listings_init(&s->listings);
}

void ops_state_clear(struct ops_state *s)
{
	handles_clear(&s->handles);
	listings_clear(&s->listings);
	tidcache_clear(&s->tenants);
	kcache_clear(s);
}

/* An open past a bound (fs/handles.h): EMFILE for the caller's tenant,
 * ENFILE for the session, said at most once a minute. */
static void tell_handle_refused(int negative_errno)
{
	static gint told_minute = -1;
	handle_refused = TRUE;
	if (once_a_minute(&told_minute))
		g_warning(negative_errno == -EMFILE ? "a tenant's callers (a container: its pid namespace and those "
						      "below it) hold %d open files and directories of a view, or %zu "
						      "MiB of their listings: their opens fail with EMFILE until they "
						      "close some; others' open on"
						    : "a view's callers hold %d open files and directories, or %zu MiB "
						      "of their listings: its opens fail with ENFILE until they close some",
			  negative_errno == -EMFILE ? HANDLES_TENANT_MAX : HANDLES_MAX,
			  (negative_errno == -EMFILE ? HANDLES_TENANT_BYTES : HANDLES_BYTES) >> 20);
}

uint64_t ops_tenant(fuse_req_t req)
{
	struct ops_state *s = state(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint64_t tenant = GPOINTER_TO_SIZE(tidcache_get(&s->tenants, ctx->pid));
	if (!tenant) {
		tenant = pidns_tenant(s->proc_fd, ctx->pid, view_pid_ns_fd(s->view));
		if (tenant)
			tidcache_put(&s->tenants, ctx->pid, GSIZE_TO_POINTER(tenant));
	}
	return tenant;
}

/* A new handle of object (holding bytes) for req's caller, or 0 (object
 * freed, req answered) past a bound. */
static uint64_t handle_add(fuse_req_t req, gpointer object, gsize bytes, uint64_t kind)
{
	struct ops_state *s = state(req);
	uint64_t fh = 0;
	int r = handles_add(&s->handles, object, bytes, kind, ops_tenant(req), &fh);
	if (r < 0) {
		tell_handle_refused(r);
		ops_reply_err(req, r);
	}
	return fh;
}

static gpointer handle_get(struct ops_state *s, uint64_t fh)
{
	return handles_get(&s->handles, fh);
}

/* The object of a handle made before a handover, object (holding bytes)
 * or the one another request gave it, counted for req's caller: 0, or
 * -EMFILE or -ENFILE past a bound (told; object freed). */
static int handle_adopt(fuse_req_t req, uint64_t fh, gpointer object, gsize bytes, gpointer *ret_object)
{
	int r = handles_adopt(&state(req)->handles, fh, object, bytes, ops_tenant(req), ret_object);
	if (r < 0)
		tell_handle_refused(r);
	return r;
}

static void handle_remove(struct ops_state *s, uint64_t fh)
{
	handles_remove(&s->handles, fh);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct caller c = ops_caller(req);
	GArray *entries = NULL;
	int r = view_readdir(state(req)->view, &c, ino, &entries);
	if (r < 0) {
		ops_reply_err(req, r);
		return;
	}
	struct ops_state *s = state(req); /* a reply frees req, sent or not */
	struct listing *listing = listings_share(&s->listings, ino, entries);
	fi->fh = handle_add(req, listing, listing->bytes, HANDLE_DIR);
	if (fi->fh && fuse_reply_open(req, fi) < 0)
		handle_remove(s, fi->fh);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct listing *listing = handle_get(state(req), fi->fh | HANDLE_DIR);
	g_autofree char *buf = NULL;
	size_t used = 0;

	if (!listing) { /* opened before a handover */
		struct caller c = ops_caller(req);
		GArray *made = NULL;
		int r = view_readdir(state(req)->view, &c, ino, &made);
		if (r == 0) {
			struct listing *fresh = listings_share(&state(req)->listings, ino, made);
			r = handle_adopt(req, fi->fh | HANDLE_DIR, fresh, fresh->bytes, (gpointer *)&listing);
		}
		if (r < 0) {
			ops_reply_err(req, r);
			return;
		}
	}
	const GArray *entries = listing->entries;
	buf = g_malloc(size);

	/* an offset past the listing (2^32 + 1, or one of 2^63 and more that
	 * off_t makes negative) is its end, not an entry's */
	for (guint i = (guint)MIN((guint64)off, entries->len); i < entries->len; i++) {
		const struct view_dirent *e = &g_array_index(entries, struct view_dirent, i);
		struct stat st = { .st_ino = e->ino, .st_mode = e->type };
		size_t n = fuse_add_direntry(req, buf + used, size - used, e->name, &st, (off_t)i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	handle_remove(state(req), fi->fh | HANDLE_DIR);
	fuse_reply_err(req, 0);
}

static void served_file_free(struct served_file *f)
{
	if (!f)
		return;
	triggers_remove(f->trigger);
	g_bytes_unref(f->content);
	g_mutex_clear(&f->lock);
	g_free(f);
}

/* A snapshot of ino holding content (taken), of that version. */
static struct served_file *served_file_of(GBytes *content, int64_t version, fuse_ino_t ino, int flags)
{
	struct served_file *f = g_new0(struct served_file, 1);
	g_mutex_init(&f->lock);
	f->content = content;
	f->version = version;
	f->ino = ino;
	f->flags = flags;
	return f;
}

/* What a file's handle holds of its own, for its tenant's bytes: its text,
 * unless that is the text kept for every caller of the inode (a version),
 * which no open adds. Counted at the open: a text made again for a read
 * from the start is of the same file and class, of about its size. */
static gsize served_file_bytes(const struct served_file *f)
{
	return f->version > 0 ? 0 : g_bytes_get_size(f->content);
}

/* A snapshot of ino for the caller of req. 0 or -errno. */
static int served_file_new(fuse_req_t req, fuse_ino_t ino, int flags, struct served_file **ret)
{
	struct caller c = ops_caller(req);
	GBytes *content = NULL;
	int64_t version;
	int r = view_open(state(req)->view, &c, ino, flags, &content, &version);
	if (r == 0)
		*ret = served_file_of(content, version, ino, flags);
	return r;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ops_state *s = state(req);
	struct served_file *f;
	int r = served_file_new(req, ino, fi->flags, &f);
	if (r == -ESTALE && view_class_row(ino) && kcache_class_mixed(s, ino, fuse_req_ctx(req)->pid))
		g_warning("thread %d opens a file of the view through a bind made by a caller of another cgroup, which "
			  "shows that caller's file: its opens fail with ESTALE (Docker's -v binds with userns-remap, "
			  "which runc makes from the host); bind from the container's own view instead "
			  "(--runtime cgprocfs, or the OCI hook)",
			  (int)fuse_req_ctx(req)->pid);
	if (r < 0) {
		ops_reply_err(req, r);
		return;
	}
	if (f->version > 0) {
		/* Shared by every caller of the inode: the page cache keeps it,
		 * told of a new version before the open completes. */
		if (kcache_told(s, ino, f->version, (gint64)g_bytes_get_size(f->content)))
			kcache_store(s, ino, f->content);
		fi->keep_cache = 1;
	} else {
		/* Content can differ per open and per read pass: read past the
		 * page cache, but for sendfile and splice, which read through it
		 * up to the inode's size (Linux 6.5 and later): that size made
		 * this open's, and the pages, dropped at the open, this open's
		 * text (the inode is of one content class: they are never
		 * another class's). */
		gint64 size = (gint64)g_bytes_get_size(f->content);
		if (f->version == VIEW_FRESH && kcache_told_shorter(s, ino, size)) {
			kcache_store(s, ino, f->content);
			kcache_told(s, ino, 0, size);
		}
		fi->direct_io = 1;
	}
	fi->noflush = 1;
	fi->fh = handle_add(req, f, served_file_bytes(f), 0);
	if (fi->fh && fuse_reply_open(req, fi) < 0) /* req is gone, sent or not */
		handle_remove(s, fi->fh);
}

/* The snapshot a read at off gets: a new one for a read that starts over. */
static GBytes *snapshot_for_read(fuse_req_t req, struct served_file *f, off_t off, size_t size)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&f->lock);

	if (off == 0 && f->at_end) {
		struct caller c = ops_caller(req);
		GBytes *fresh = NULL;
		/* On failure the reader gets the previous pass again, not an error. */
		int64_t version;
		if (view_open(state(req)->view, &c, f->ino, f->flags, &fresh, &version) == 0) {
			g_bytes_unref(f->content);
			f->content = fresh;
		}
		f->at_end = FALSE;
		f->from_zero = FALSE;
	}
	if (off == 0)
		f->from_zero = TRUE;
	if (f->from_zero && off >= 0 && (guint64)off + size >= g_bytes_get_size(f->content))
		f->at_end = TRUE;
	return g_bytes_ref(f->content);
}

/* A file opened before a handover or a crash, whose snapshot went with
 * the daemon that took it: a snapshot of now. If the caller's content
 * class changed meanwhile (a new limit), nobody walks the path again. A
 * text the page cache keeps is the inode's own class's, whoever reads
 * (what this READ answers fills every caller's pages, up to the inode's
 * size), where this daemon knows that class, and ESTALE where it does not
 * (the caller's own text would be cut to that size, and read by the
 * class's other callers). A text of each open's, read from its start, is
 * the caller's own, as an open now would give, from that snapshot only;
 * past the start, ESTALE (the pass began with the other class's text,
 * whose length this daemon does not know). */
static int adopted_file(fuse_req_t req, fuse_ino_t ino, off_t off, int flags, struct served_file **ret)
{
	int r = served_file_new(req, ino, flags, ret);
	if (r != -ESTALE || !view_class_row(ino))
		return unwalked(ino, r);
	struct caller c = ops_caller(req);
	GBytes *content = NULL;
	int64_t version;
	r = view_class_text(state(req)->view, &c, ino, &content, &version);
	if (r == 0) {
		*ret = served_file_of(content, version, ino, flags);
		return 0;
	}
	if (off > 0 || r == -ESTALE)
		return -ESTALE;
	uint64_t own;
	r = view_own_class_ino(state(req)->view, &c, ino, &own);
	if (r == 0)
		r = served_file_new(req, own, flags, ret);
	if (r == 0)
		(*ret)->version = 0;
	return r;
}

struct served_file *ops_file(fuse_req_t req, fuse_ino_t ino, off_t off, struct fuse_file_info *fi, int *ret_err)
{
	struct served_file *f = handle_get(state(req), fi->fh & ~HANDLE_DIR);
	if (f)
		return f;
	int r = adopted_file(req, ino, off, fi->flags, &f);
	if (r == 0)
		r = handle_adopt(req, fi->fh & ~HANDLE_DIR, f, served_file_bytes(f), (gpointer *)&f);
	if (r < 0) {
		*ret_err = r;
		return NULL;
	}
	return f;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const char *data;
	size_t len;
	int r;
	struct served_file *f = ops_file(req, ino, off, fi, &r);

	if (!f) {
		ops_reply_err(req, r);
		return;
	}
	/* Unlocked before the reply: once it is sent, RELEASE may free f. A
	 * shared text is read as it is now: the page cache the READ fills is
	 * every caller's of the inode. */
	g_autoptr(GBytes) content = NULL;
	if (f->version <= 0 || view_read_shared(state(req)->view, ino, &content) < 0)
		content = snapshot_for_read(req, f, off, size);

	snapshot_slice(content, off, size, &data, &len);
	fuse_reply_buf(req, data, len);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (view_pressure_name(ino))
		triggers_released(state(req)->triggers, state(req)->key, fi->fh);
	handle_remove(state(req), fi->fh & ~HANDLE_DIR);
	fuse_reply_err(req, 0);
}

/* The view is read-only: what would change it gets EROFS (but setattr,
 * ops-pressure.c). Writes to the real files go through the delegating
 * symlinks, never through here. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void op_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops ops_table = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.access = op_access,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.write = ops_write,
	.poll = ops_poll,
	.setattr = ops_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_remove,
	.rmdir = op_remove,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.create = op_create,
};

void ops_forget_pid(void *owner, pid_t pid)
{
	struct ops_state *s = owner;
	char name[16];

	kcache_forget_process(s, pid);
	snprintf(name, sizeof(name), "%d", (int)pid);
	int r = fuse_lowlevel_notify_inval_entry(s->session, view_proc_ino(), name, strlen(name));
	if (r < 0 && r != -ENOENT)
		g_debug("cannot drop proc/%s: %s", name, g_strerror(-r));
}
