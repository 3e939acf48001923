#include "quiet.h"

/* Inodes kept at most; past that the table starts over: each inode's next
 * open stores its text again. */
#define QUIET_MAX 65536
/* The kernel counts an attribute timeout in jiffies: attributes given for
 * 0 s are still taken as valid until the next one (10 ms at HZ=100). */
#define JIFFY_US (10 * G_TIME_SPAN_MILLISECOND)

struct holder {
	uint64_t fh;
	gint64 contact; /* its latest request */
};

struct inode_state {
	GBytes *text; /* the kernel's, or NULL */
	int64_t version;
	gint64 attr_until; /* the kernel's attributes of it valid until then, at most */
	GArray *holders;   /* struct holder: its open files */
};

/* Shared by the workers of one session. */
struct quiet {
	GMutex lock; /* guards inodes */
	GHashTable *inodes; /* ino -> struct inode_state */
};

static void state_free(gpointer p)
{
	struct inode_state *e = p;
	if (e->text)
		g_bytes_unref(e->text);
	g_array_unref(e->holders);
	g_free(e);
}

struct quiet *quiet_new(void)
{
	struct quiet *q = g_new0(struct quiet, 1);
	g_mutex_init(&q->lock);
	q->inodes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, state_free);
	return q;
}

void quiet_free(struct quiet *q)
{
	if (!q)
		return;
	g_hash_table_unref(q->inodes);
	g_mutex_clear(&q->lock);
	g_free(q);
}

/* Under q->lock. */
static struct inode_state *state_of(struct quiet *q, uint64_t ino)
{
	struct inode_state *e = g_hash_table_lookup(q->inodes, &ino);
	if (e)
		return e;
	if (g_hash_table_size(q->inodes) >= QUIET_MAX)
		g_hash_table_remove_all(q->inodes);
	e = g_new0(struct inode_state, 1);
	e->holders = g_array_new(FALSE, FALSE, sizeof(struct holder));
	g_hash_table_insert(q->inodes, g_memdup2(&ino, sizeof(ino)), e);
	return e;
}

/* Whether no open file of e can be in a pass: none had a request lately,
 * and none can have begun one unseen (under valid attributes) lately. */
static gboolean quiet_point(const struct inode_state *e, gint64 now)
{
	for (guint i = 0; i < e->holders->len; i++)
		if (now - g_array_index(e->holders, struct holder, i).contact < QUIET_PASS_US)
			return FALSE;
	return e->holders->len == 0 || now >= e->attr_until + QUIET_PASS_US;
}

/* text the kernel's from now on: how it is stored. */
static enum quiet_store take(struct inode_state *e, GBytes *text, int64_t version)
{
	enum quiet_store how = e->text && g_bytes_get_size(e->text) == g_bytes_get_size(text) ? QUIET_OVER
												  : QUIET_STORE;
	if (e->text)
		g_bytes_unref(e->text);
	e->text = g_bytes_ref(text);
	e->version = version;
	return how;
}

static void contact(struct inode_state *e, uint64_t fh, gint64 now)
{
	for (guint i = 0; i < e->holders->len; i++) {
		struct holder *h = &g_array_index(e->holders, struct holder, i);
		if (h->fh == fh) {
			h->contact = MAX(h->contact, now);
			return;
		}
	}
	struct holder h = { fh, now };
	g_array_append_val(e->holders, h);
}

gboolean quiet_open(struct quiet *q, uint64_t ino, GBytes *text, int64_t version, gint64 now,
		    enum quiet_store *ret_store)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	struct inode_state *e = state_of(q, ino);
	*ret_store = QUIET_KEPT;
	if (e->text && e->version == version)
		return TRUE;
	if (!quiet_point(e, now))
		return FALSE;
	*ret_store = take(e, text, version);
	return TRUE;
}

enum quiet_store quiet_reread(struct quiet *q, uint64_t ino, uint64_t fh, GBytes *text, int64_t version,
			      gint64 now)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	struct inode_state *e = state_of(q, ino);
	enum quiet_store how = QUIET_KEPT;
	if ((!e->text || e->version != version) && quiet_point(e, now))
		how = take(e, text, version);
	contact(e, fh, now);
	return how;
}

void quiet_contact(struct quiet *q, uint64_t ino, uint64_t fh, gint64 now)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	contact(state_of(q, ino), fh, now);
}

void quiet_closed(struct quiet *q, uint64_t ino, uint64_t fh)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	struct inode_state *e = g_hash_table_lookup(q->inodes, &ino);
	for (guint i = 0; e && i < e->holders->len; i++)
		if (g_array_index(e->holders, struct holder, i).fh == fh) {
			g_array_remove_index_fast(e->holders, i);
			return;
		}
}

GBytes *quiet_text(struct quiet *q, uint64_t ino)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	const struct inode_state *e = g_hash_table_lookup(q->inodes, &ino);
	return e && e->text ? g_bytes_ref(e->text) : NULL;
}

void quiet_attr(struct quiet *q, uint64_t ino, struct stat *attr, double *ret_timeout, gint64 now)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&q->lock);
	struct inode_state *e = state_of(q, ino);
	if (e->text)
		attr->st_size = (off_t)g_bytes_get_size(e->text);
	attr->st_mtim = attr->st_ctim = attr->st_atim;
	/* A file held open longer than a pass reads with no request while
	 * these are valid: each of its passes must ask. */
	*ret_timeout = QUIET_ATTR_TIMEOUT;
	for (guint i = 0; i < e->holders->len; i++)
		if (now - g_array_index(e->holders, struct holder, i).contact >= QUIET_PASS_US)
			*ret_timeout = 0;
	e->attr_until = MAX(e->attr_until, now + (gint64)(*ret_timeout * G_USEC_PER_SEC) + JIFFY_US);
}
