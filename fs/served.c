#include "served.h"

#include <errno.h>
#include <time.h>

/* Texts kept at most; past that the table starts over. */
#define SERVED_MAX 8192

struct text {
	GBytes *text;
	int64_t version;  /* realtime ns when this text was first served */
	gint64 rendered;  /* monotonic µs when the last render that gave it began */
	gboolean host;    /* the host's file as it is */
};

/* Shared by every worker of every session of a view; freed by its view. */
struct served {
	GMutex lock;       /* guards texts and last_version */
	GHashTable *texts; /* ino -> struct text* */
	int64_t last_version;
	guint64 renders, reuses;
};

static void text_free(gpointer p)
{
	struct text *t = p;
	g_bytes_unref(t->text);
	g_free(t);
}

struct served *served_new(void)
{
	struct served *s = g_new0(struct served, 1);
	g_mutex_init(&s->lock);
	s->texts = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, text_free);
	return s;
}

void served_free(struct served *s)
{
	if (!s)
		return;
	g_hash_table_unref(s->texts);
	g_mutex_clear(&s->lock);
	g_free(s);
}

/* Under s->lock: a version later than any before (versions are times, and
 * two texts must never share one). */
static int64_t next_version(struct served *s)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t v = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	s->last_version = MAX(v, s->last_version + 1);
	return s->last_version;
}

/* Keep text as ino's, rendered from now on: a new version unless it is
 * the text kept already; the kept one if its render began later. Under
 * s->lock. */
static const struct text *keep(struct served *s, uint64_t ino, GBytes *text, gboolean host, gint64 now)
{
	struct text *t = g_hash_table_lookup(s->texts, &ino);
	if (t && t->rendered > now)
		return t;
	if (t && g_bytes_equal(t->text, text)) {
		t->rendered = MAX(t->rendered, now);
		return t;
	}
	if (!t) {
		if (g_hash_table_size(s->texts) >= SERVED_MAX)
			g_hash_table_remove_all(s->texts);
		t = g_new0(struct text, 1);
		g_hash_table_insert(s->texts, g_memdup2(&ino, sizeof(ino)), t);
	} else {
		g_bytes_unref(t->text);
	}
	t->text = g_bytes_ref(text);
	t->version = next_version(s);
	t->rendered = now;
	t->host = host;
	return t;
}

void served_counts(struct served *s, guint64 *ret_renders, guint64 *ret_reuses)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	*ret_renders = s->renders;
	*ret_reuses = s->reuses;
}

int served_peek(struct served *s, uint64_t ino, GBytes **ret_text, int64_t *ret_version)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	const struct text *t = g_hash_table_lookup(s->texts, &ino);
	if (!t)
		return -ENOENT;
	*ret_text = g_bytes_ref(t->text);
	*ret_version = t->version;
	return 0;
}

int served_get(struct served *s, uint64_t ino, struct served_ages ages, served_render_fn render, void *data,
	       GBytes **ret_text, int64_t *ret_version)
{
	gint64 now = g_get_monotonic_time();

	g_mutex_lock(&s->lock);
	const struct text *t = g_hash_table_lookup(s->texts, &ino);
	gboolean fresh = t && now - t->rendered <= (t->host ? ages.host_us : ages.own_us);
	if (fresh) {
		*ret_text = g_bytes_ref(t->text);
		*ret_version = t->version;
		s->reuses++;
	} else {
		s->renders++;
	}
	g_mutex_unlock(&s->lock);
	if (fresh)
		return 0;
	/* Rendered without the lock: it reads files. Of two renders at once,
	 * the one that began later is kept. */
	g_autoptr(GBytes) text = NULL;
	int r = render(data, &text);
	if (r < 0)
		return r;
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&s->lock);
	t = keep(s, ino, text, r == SERVED_HOST, now);
	*ret_text = g_bytes_ref(t->text);
	*ret_version = t->version;
	return 0;
}
