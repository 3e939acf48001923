/* Requests taken and not answered, in shared memory (inflight.h). */
#include "inflight.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* More than the workers of any daemon have in hand at once. */
#define SLOTS 128
/* Every request this file system answers but a long write fits. */
#define SLOT_BYTES 4096
#define MAGIC UINT64_C(0x6367696e666c3031) /* "cginfl01" */
/* A slot being filled: not to be taken, nor answered. */
#define FILLING UINT64_MAX

struct slot {
	guint64 unique; /* 0: free; published last, once the rest is written */
	guint64 key;
	guint32 len;    /* the request's; 0 if only its header is here */
	guint32 pad;
	union {
		struct fuse_in_header header;
		unsigned char bytes[SLOT_BYTES];
	} req;
};

/* A seccomp notification taken: used is 0 (free), FILLING, CALL_RECEIVING
 * (being taken) or 1. */
struct call_slot {
	guint64 used;
	struct seccomp_notif req;
};

struct table {
	guint64 magic;
	guint64 slots;
	struct slot slot[SLOTS];
	/* The PSI triggers of open fds (fs/triggers.h). A daemon before
	 * triggers made a table that ends here: taken, with none. */
	struct trigger_record triggers[TRIGGERS_MAX];
	/* The seccomp listener's notifications in hand; likewise. */
	struct call_slot calls[INFLIGHT_CALLS];
};
#define TABLE_BEFORE_TRIGGERS offsetof(struct table, triggers)
#define TABLE_BEFORE_CALLS offsetof(struct table, calls)

struct inflight {
	int fd;
	size_t size; /* of the table mapped */
	struct table *t;
};

/* The slot this thread filled last: where its answer is looked for first. */
static __thread unsigned last_slot;

static struct inflight *map(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	struct inflight *f = g_new(struct inflight, 1);
	*f = (struct inflight){ .fd = fd, .size = size, .t = p };
	return f;
}

struct inflight *inflight_new(void)
{
	int fd = memfd_create("cgprocfs-inflight", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, sizeof(struct table)) < 0) {
		g_warning("cannot keep the requests in hand for a daemon after this one (%s): if it dies, on Linux "
			  "before 6.9 they wait until their callers are killed", g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct inflight *f = map(fd, sizeof(struct table));
	if (f) {
		f->t->magic = MAGIC;
		f->t->slots = SLOTS;
	}
	return f;
}

struct inflight *inflight_adopt(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || (st.st_size != (off_t)sizeof(struct table) &&
				   st.st_size != (off_t)TABLE_BEFORE_CALLS && st.st_size != (off_t)TABLE_BEFORE_TRIGGERS)) {
		close(fd);
		return NULL;
	}
	struct inflight *f = map(fd, (size_t)st.st_size);
	if (f && (f->t->magic != MAGIC || f->t->slots != SLOTS)) {
		inflight_free(f);
		return NULL;
	}
	return f;
}

void inflight_free(struct inflight *f)
{
	if (!f)
		return;
	munmap(f->t, f->size);
	close(f->fd);
	g_free(f);
}

int inflight_fd(const struct inflight *f)
{
	return f ? f->fd : -1;
}

struct trigger_record *inflight_triggers(struct inflight *f, unsigned *ret_n)
{
	gboolean has = f && f->size >= TABLE_BEFORE_CALLS;
	*ret_n = has ? TRIGGERS_MAX : 0;
	return has ? f->t->triggers : NULL;
}

guint64 inflight_key(int ns_fd)
{
	struct stat st;
	return ns_fd >= 0 && fstat(ns_fd, &st) == 0 ? (guint64)st.st_ino : 0;
}

/* Whether the kernel waits for an answer to a request of opcode. */
static gboolean answered_op(guint32 opcode)
{
	return opcode != FUSE_FORGET && opcode != FUSE_BATCH_FORGET && opcode != FUSE_INTERRUPT &&
	       opcode != FUSE_NOTIFY_REPLY && opcode != FUSE_INIT && opcode != FUSE_DESTROY;
}

void inflight_taken(struct inflight *f, guint64 key, const void *req, size_t len)
{
	const struct fuse_in_header *h = req;
	if (!f || len < sizeof(*h) || h->unique == 0 || !answered_op(h->opcode))
		return;
	for (unsigned i = 0; i < SLOTS; i++) {
		unsigned n = (last_slot + i) % SLOTS;
		struct slot *s = &f->t->slot[n];
		guint64 free_slot = 0;
		if (!__atomic_compare_exchange_n(&s->unique, &free_slot, FILLING, FALSE, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		s->key = key;
		s->len = len <= SLOT_BYTES ? (guint32)len : 0;
		memcpy(s->req.bytes, req, len <= SLOT_BYTES ? len : sizeof(*h));
		__atomic_store_n(&s->unique, h->unique, __ATOMIC_RELEASE);
		last_slot = n;
		return;
	}
}

void inflight_answered(struct inflight *f, guint64 key, guint64 unique)
{
	if (!f || unique == 0)
		return;
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &f->t->slot[(last_slot + i) % SLOTS];
		guint64 kept = unique;
		/* key is written before unique is published (acquire pairs
		 * with inflight_taken's release); the slot is freed only if it
		 * still holds unique */
		if (__atomic_load_n(&s->unique, __ATOMIC_ACQUIRE) == unique && s->key == key &&
		    __atomic_compare_exchange_n(&s->unique, &kept, 0, FALSE, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
}

void inflight_each(struct inflight *f, guint64 key, inflight_fn fn, void *data)
{
	for (unsigned i = 0; f && i < SLOTS; i++) {
		struct slot *s = &f->t->slot[i];
		guint64 unique = __atomic_load_n(&s->unique, __ATOMIC_ACQUIRE);
		if (unique == 0 || unique == FILLING || s->key != key)
			continue;
		/* A copy: the slot is another process's memory, and aligned
		 * as libfuse wants a request. */
		const size_t kept = s->len ? s->len : sizeof(struct fuse_in_header);
		g_autofree struct fuse_in_header *req = g_malloc(kept);
		memcpy(req, s->req.bytes, kept);
		if (req->unique == unique && (s->len == 0 || req->len == s->len))
			fn(data, req, s->len);
		__atomic_store_n(&s->unique, 0, __ATOMIC_RELEASE);
	}
}

void inflight_call_answered(struct inflight *f, int slot)
{
	if (f && slot >= 0)
		__atomic_store_n(&f->t->calls[slot].used, 0, __ATOMIC_RELEASE);
}

/* A call slot's used while its notification is being taken: req.id is
 * the id expected, or the one taken. */
#define CALL_RECEIVING 2
/* Ids looked for after one a dead daemon expected: notifications of the
 * filter whose callers went before they were taken skip ids. */
#define LOST_IDS_AHEAD 4

int inflight_call_receiving(struct inflight *f, guint64 next)
{
	for (int i = 0; f && f->size == sizeof(struct table) && i < INFLIGHT_CALLS; i++) {
		struct call_slot *c = &f->t->calls[i];
		guint64 free_slot = 0;
		if (!__atomic_compare_exchange_n(&c->used, &free_slot, FILLING, FALSE, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		memset(&c->req, 0, sizeof(c->req));
		c->req.id = next;
		__atomic_store_n(&c->used, CALL_RECEIVING, __ATOMIC_RELEASE);
		return i;
	}
	return -1;
}

void inflight_call_taken_in(struct inflight *f, int slot, const struct seccomp_notif *req)
{
	if (!f || slot < 0)
		return;
	/* Still receiving meanwhile: its id is one to look for. */
	f->t->calls[slot].req = *req;
	__atomic_store_n(&f->t->calls[slot].used, 1, __ATOMIC_RELEASE);
}

int inflight_call_taken(struct inflight *f, const struct seccomp_notif *req)
{
	int slot = inflight_call_receiving(f, req->id);
	inflight_call_taken_in(f, slot, req);
	return slot;
}

unsigned inflight_let_lost_through(struct inflight *f, const int *fds, unsigned n)
{
	unsigned through = 0;
	for (int i = 0; f && f->size == sizeof(struct table) && i < INFLIGHT_CALLS; i++) {
		struct call_slot *c = &f->t->calls[i];
		if (__atomic_load_n(&c->used, __ATOMIC_ACQUIRE) != CALL_RECEIVING)
			continue;
		for (guint64 id = c->req.id; c->req.id != 0 && id < c->req.id + LOST_IDS_AHEAD; id++)
			for (unsigned j = 0; j < n; j++) {
				/* Only a notification taken and not answered is
				 * answered: the others say ENOENT or EINPROGRESS. */
				struct seccomp_notif_resp resp = { .id = id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
				if (ioctl(fds[j], SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0) {
					through++;
					break;
				}
			}
		__atomic_store_n(&c->used, 0, __ATOMIC_RELEASE);
	}
	return through;
}

unsigned inflight_calls_take(struct inflight *f, struct seccomp_notif ret[INFLIGHT_CALLS])
{
	unsigned n = 0;
	for (int i = 0; f && f->size == sizeof(struct table) && i < INFLIGHT_CALLS; i++) {
		struct call_slot *c = &f->t->calls[i];
		if (__atomic_load_n(&c->used, __ATOMIC_ACQUIRE) != 1)
			continue;
		ret[n++] = c->req;
		__atomic_store_n(&c->used, 0, __ATOMIC_RELEASE);
	}
	return n;
}
