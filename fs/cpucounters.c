#include "cpucounters.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* One group's counters: the n they were last given for, the offsets that
 * move the spread, and the last rows given (NULL until the first call for
 * this n in this process). */
typedef struct {
	int64_t f[CPU_TICKS_FIELDS];
} cpu_offsets;

struct state {
	gint64 epoch;
	unsigned n;
	unsigned *cpus;                   /* the n lines' CPUs, or NULL: not told */
	cpu_offsets *off;                 /* n + 1 rows */
	cpu_ticks *last;                  /* n + 1 rows, or NULL */
	char group[];
};

struct cpu_counters {
	GMutex lock;
	GHashTable *states; /* "epoch group" -> struct state */
	char *path;         /* where they are kept, or NULL */
	/* path.log: each group's lines as given since path was last written,
	 * appended before the reader gets them, so that a daemon after a
	 * SIGKILL gives no less (a write to the page cache outlives the
	 * process); emptied once path is written. */
	char *log_path;
	int log_fd;
	size_t logged; /* bytes in the log: past LOG_MAX, path is written */
	gboolean dirty;     /* changed since they were last kept */
	gboolean told;      /* that they could not be */
};

void cpu_ticks_spread(uint64_t user, uint64_t system, uint64_t elapsed, unsigned n, cpu_ticks *rows)
{
	rows[0] = (cpu_ticks){ { 0 } };
	for (unsigned i = 0; i < n; i++) {
		uint64_t *r = rows[1 + i].f;
		r[CPU_TICKS_USER] = user / n + (i < user % n);
		r[CPU_TICKS_SYSTEM] = system / n + (i < system % n);
		uint64_t used = r[CPU_TICKS_USER] + r[CPU_TICKS_SYSTEM];
		r[CPU_TICKS_IDLE] = elapsed > used ? elapsed - used : 0;
		for (int f = 0; f < CPU_TICKS_FIELDS; f++)
			rows[0].f[f] += r[f];
	}
}

static void state_free(gpointer p)
{
	struct state *s = p;
	g_free(s->cpus);
	g_free(s->off);
	g_free(s->last);
	g_free(s);
}

static struct state *state_new(const char *group, gint64 epoch, unsigned n)
{
	struct state *s = g_malloc0(sizeof(*s) + strlen(group) + 1);
	s->epoch = epoch;
	s->n = n;
	s->off = g_new0(cpu_offsets, n + 1);
	strcpy(s->group, group);
	return s;
}

static char *key_of(const char *group, gint64 epoch)
{
	return g_strdup_printf("%" G_GINT64_FORMAT " %s", epoch, group);
}

/* A group's lines in the file: "epoch n off... group", group escaped;
 * then, once rows were given, "=n last...": the next daemon gives no less
 * (its first reading may come out a tick lower, as one here would have
 * been held). */
static void save_line(GString *out, const struct state *s)
{
	g_autofree char *group = g_strescape(s->group, NULL);
	g_string_append_printf(out, "%" G_GINT64_FORMAT " %u", s->epoch, s->n);
	for (unsigned r = 0; r <= s->n; r++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++)
			g_string_append_printf(out, " %" G_GINT64_FORMAT, s->off[r].f[f]);
	g_string_append_printf(out, " %s\n", group);
	if (s->cpus) {
		g_string_append_c(out, '@');
		for (unsigned i = 0; i < s->n; i++)
			g_string_append_printf(out, "%s%u", i ? "," : "", s->cpus[i]);
		g_string_append_c(out, '\n');
	}
	if (!s->last)
		return;
	g_string_append_printf(out, "=%u", s->n);
	for (unsigned r = 0; r <= s->n; r++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++)
			g_string_append_printf(out, " %" G_GUINT64_FORMAT, s->last[r].f[f]);
	g_string_append_c(out, '\n');
}

/* A "=n last..." line, for s (the line before's): FALSE if it is not one
 * of s's n. */
static gboolean load_last(const char *line, struct state *s)
{
	char *end;
	guint64 n = g_ascii_strtoull(line + 1, &end, 10);
	if (!s || n != s->n || end == line + 1)
		return FALSE;
	g_autofree cpu_ticks *last = g_new(cpu_ticks, n + 1);
	for (unsigned r = 0; r <= n; r++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++) {
			line = end;
			if (*line != ' ')
				return FALSE;
			last[r].f[f] = g_ascii_strtoull(line + 1, &end, 10);
			if (end == line + 1)
				return FALSE;
		}
	if (*end != '\0')
		return FALSE;
	g_free(s->last);
	s->last = g_steal_pointer(&last);
	return TRUE;
}

/* An "@cpu,cpu..." line, for s (the line before's): FALSE if it is not
 * one of s's n. */
static gboolean load_cpus(const char *line, struct state *s)
{
	g_auto(GStrv) cpus = g_strsplit(line + 1, ",", -1);
	if (!s || g_strv_length(cpus) != s->n)
		return FALSE;
	g_autofree unsigned *got = g_new(unsigned, s->n);
	for (unsigned i = 0; i < s->n; i++) {
		guint64 cpu;
		if (!g_ascii_string_to_unsigned(cpus[i], 10, 0, G_MAXUINT, &cpu, NULL))
			return FALSE;
		got[i] = (unsigned)cpu;
	}
	g_free(s->cpus);
	s->cpus = g_steal_pointer(&got);
	return TRUE;
}

static struct state *load_line(const char *line)
{
	char *end;
	gint64 epoch = g_ascii_strtoll(line, &end, 10);
	if (end == line || *end != ' ')
		return NULL;
	line = end + 1;
	guint64 n = g_ascii_strtoull(line, &end, 10);
	if (end == line || *end != ' ' || n == 0 || n > 1u << 16)
		return NULL;
	cpu_offsets *off = g_new0(cpu_offsets, n + 1);
	for (unsigned r = 0; r <= n; r++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++) {
			line = end + 1;
			off[r].f[f] = g_ascii_strtoll(line, &end, 10);
			if (end == line || *end != ' ') {
				g_free(off);
				return NULL;
			}
		}
	g_autofree char *group = g_strcompress(end + 1);
	struct state *s = state_new(group, epoch, (unsigned)n);
	g_free(s->off);
	s->off = off;
	return s;
}

static void keep(struct cpu_counters *c, struct state *s)
{
	g_hash_table_replace(c->states, key_of(s->group, s->epoch), s);
}

/* A group's lines read from the file or its log: kept if the group is
 * new; for the n kept, what both give no less than (offsets only grow
 * while n stays, as do the rows given); for another n, dropped (an n is
 * written to the file at once, and the log emptied: the log's is older).
 * Frees s or keeps it. */
static void merge(struct cpu_counters *c, struct state *s)
{
	g_autofree char *key = key_of(s->group, s->epoch);
	struct state *had = g_hash_table_lookup(c->states, key);
	if (!had) {
		keep(c, s);
		return;
	}
	if (had->n == s->n) {
		for (unsigned r = 0; r <= s->n; r++)
			for (int f = 0; f < CPU_TICKS_FIELDS; f++) {
				had->off[r].f[f] = MAX(had->off[r].f[f], s->off[r].f[f]);
				if (had->last && s->last)
					had->last[r].f[f] = MAX(had->last[r].f[f], s->last[r].f[f]);
			}
		if (!had->last && s->last)
			had->last = g_steal_pointer(&s->last);
		if (!had->cpus && s->cpus)
			had->cpus = g_steal_pointer(&s->cpus);
	}
	state_free(s);
}

static void tell(struct cpu_counters *c, const char *path, const char *why)
{
	if (!c->told)
		g_warning("cannot keep CPU counters for a restart in %s: %s", path, why);
	c->told = TRUE;
}

/* Under c->lock. */
static void save(struct cpu_counters *c)
{
	c->dirty = FALSE;
	if (!c->path)
		return;
	g_autoptr(GString) out = g_string_new(NULL);
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, c->states);
	while (g_hash_table_iter_next(&it, NULL, &value))
		save_line(out, value);
	g_autoptr(GError) error = NULL;
	if (g_file_set_contents_full(c->path, out->str, (gssize)out->len, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
				     &error)) {
		if (c->log_fd >= 0 && ftruncate(c->log_fd, 0) < 0)
			tell(c, c->log_path, g_strerror(errno));
		c->logged = 0;
	} else {
		tell(c, c->path, error->message);
	}
}

/* The log's size that has the file written at once (and the log emptied)
 * rather than at the background thread's next flush. */
#define LOG_MAX (1u << 20)

/* s's lines as just given, to the log. Under c->lock. */
static void log_given(struct cpu_counters *c, const struct state *s)
{
	if (c->log_fd < 0)
		return;
	g_autoptr(GString) out = g_string_new(NULL);
	save_line(out, s);
	/* One write of both lines: O_APPEND keeps them together. */
	errno = 0;
	if (write(c->log_fd, out->str, out->len) != (ssize_t)out->len)
		tell(c, c->log_path, errno ? g_strerror(errno) : "short write");
	c->logged += out->len;
	if (c->logged > LOG_MAX)
		save(c);
}

/* The groups of file (path or its log), if there is one. Under c->lock
 * (or before c is shared). */
static void load_file(struct cpu_counters *c, const char *file)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents(file, &text, NULL, NULL))
		return;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	unsigned bad = 0;
	struct state *s = NULL;
	for (char **l = lines; *l; l++) {
		if (**l == '=' || **l == '@') {
			bad += !(**l == '=' ? load_last(*l, s) : load_cpus(*l, s));
			continue;
		}
		if (s)
			merge(c, s);
		s = **l ? load_line(*l) : NULL;
		bad += !s && **l != '\0';
	}
	if (s)
		merge(c, s);
	if (bad)
		g_warning("%s: %u lines not understood, their CPU counters start over", file, bad);
}

static void load(struct cpu_counters *c)
{
	if (!c->path)
		return;
	load_file(c, c->path);
	load_file(c, c->log_path);
}

struct cpu_counters *cpu_counters_new(const char *path)
{
	struct cpu_counters *c = g_new0(struct cpu_counters, 1);
	g_mutex_init(&c->lock);
	c->states = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, state_free);
	c->path = g_strdup(path);
	c->log_fd = -1;
	if (path) {
		/* On a fresh boot nothing has made the directory yet. */
		g_autofree char *dir = g_path_get_dirname(path);
		(void)g_mkdir_with_parents(dir, 0700);
		c->log_path = g_strconcat(path, ".log", NULL);
		c->log_fd = open(c->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (c->log_fd < 0)
			tell(c, c->log_path, g_strerror(errno));
	}
	load(c);
	return c;
}

void cpu_counters_reload(struct cpu_counters *c)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&c->lock);
	g_hash_table_remove_all(c->states);
	c->dirty = FALSE;
	load(c);
}

void cpu_counters_unkeep(struct cpu_counters *c)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&c->lock);
	if (c->path)
		unlink(c->path);
	if (c->log_path)
		unlink(c->log_path);
	g_clear_pointer(&c->path, g_free);
	if (c->log_fd >= 0)
		close(c->log_fd);
	c->log_fd = -1;
}

void cpu_counters_free(struct cpu_counters *c)
{
	if (!c)
		return;
	g_hash_table_unref(c->states);
	g_mutex_clear(&c->lock);
	if (c->log_fd >= 0)
		close(c->log_fd);
	g_free(c->log_path);
	g_free(c->path);
	g_free(c);
}

static int64_t moved(uint64_t v, int64_t off)
{
	int64_t out = (int64_t)MIN(v, (uint64_t)G_MAXINT64) + off;
	return MAX(out, 0);
}

/* The row of s that the new rows' row r (of n, lines of cpus) goes on
 * from: the line of the same CPU (the one at the same place where the CPUs
 * were not told), or -1 (a new line: it starts at its spread). */
static int old_row(const struct state *s, const unsigned *cpus, unsigned r)
{
	if (r == 0)
		return 0; /* the cpu line */
	if (!s->cpus || !cpus)
		return r <= s->n ? (int)r : -1;
	for (unsigned i = 0; i < s->n; i++)
		if (s->cpus[i] == cpus[r - 1])
			return (int)i + 1;
	return -1;
}

/* Are the lines of s those of n, cpus? CPUs not told on either side: the
 * count alone. */
static gboolean same_lines(const struct state *s, unsigned n, const unsigned *cpus)
{
	return s->n == n && (!s->cpus || !cpus || memcmp(s->cpus, cpus, n * sizeof(cpus[0])) == 0);
}

/* s's rows now given for n lines of cpus: those of a CPU s had go on from
 * what s's would be now (rows, given n's spread), the others start at
 * theirs. */
static void change_lines(struct state *s, uint64_t user, uint64_t system, uint64_t elapsed, unsigned n,
			 const unsigned *cpus, const cpu_ticks *rows)
{
	g_autofree cpu_ticks *was = g_new(cpu_ticks, s->n + 1);
	cpu_ticks_spread(user, system, elapsed, s->n, was);
	cpu_offsets *off = g_new0(cpu_offsets, n + 1);
	for (unsigned r = 0; r <= n; r++) {
		int o = old_row(s, cpus, r);
		for (int f = 0; o >= 0 && f < CPU_TICKS_FIELDS; f++) {
			/* from no less than was last given (held, or kept by the
			 * daemon before) */
			int64_t from = moved(was[o].f[f], s->off[o].f[f]);
			if (s->last)
				from = MAX(from, (int64_t)MIN(s->last[o].f[f], (uint64_t)G_MAXINT64));
			off[r].f[f] = from - (int64_t)rows[r].f[f];
		}
	}
	g_free(s->off);
	s->off = off;
	g_clear_pointer(&s->last, g_free);
	s->n = n;
	g_free(s->cpus);
	s->cpus = cpus ? g_memdup2(cpus, n * sizeof(cpus[0])) : NULL;
}

void cpu_counters_follow(struct cpu_counters *c, const char *group, gint64 epoch, uint64_t user, uint64_t system,
			 uint64_t elapsed, unsigned n, const unsigned *cpus, cpu_ticks *rows)
{
	cpu_ticks_spread(user, system, elapsed, n, rows);
	g_autofree char *key = key_of(group, epoch);
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&c->lock);
	struct state *s = g_hash_table_lookup(c->states, key);
	gboolean n_changed = s && !same_lines(s, n, cpus);
	if (!s) {
		s = state_new(group, epoch, n);
		s->cpus = cpus ? g_memdup2(cpus, n * sizeof(cpus[0])) : NULL;
		keep(c, s);
		c->dirty = TRUE;
	} else if (n_changed) {
		change_lines(s, user, system, elapsed, n, cpus, rows);
	} else if (!s->cpus && cpus) { /* kept by a daemon that did not tell them */
		s->cpus = g_memdup2(cpus, n * sizeof(cpus[0]));
		c->dirty = TRUE;
	}
	for (unsigned r = 0; r <= n; r++)
		for (int f = 0; f < CPU_TICKS_FIELDS; f++) {
			uint64_t out = (uint64_t)moved(rows[r].f[f], s->off[r].f[f]);
			if (s->last && out < s->last[r].f[f]) {
				/* usage outran the time elapsed: held where it was */
				s->off[r].f[f] += (int64_t)(s->last[r].f[f] - out);
				out = s->last[r].f[f];
				c->dirty = TRUE;
			}
			rows[r].f[f] = out;
		}
	gboolean given_new = !s->last || memcmp(s->last, rows, (n + 1) * sizeof(rows[0])) != 0;
	if (!s->last)
		s->last = g_new(cpu_ticks, n + 1);
	memcpy(s->last, rows, (n + 1) * sizeof(rows[0]));
	c->dirty = TRUE; /* the rows given, kept for the next daemon */
	/* A new n is kept at once: a daemon after this one must go on from
	 * it. Other rows given go to the log, and the file is written again
	 * from the background thread. */
	if (n_changed)
		save(c);
	else if (given_new)
		log_given(c, s);
}

void cpu_counters_flush(struct cpu_counters *c)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&c->lock);
	if (c->dirty)
		save(c);
}

void cpu_counters_sweep(struct cpu_counters *c, gboolean (*gone)(const char *group, gint64 epoch, void *data),
			void *data)
{
	G_GNUC_UNUSED g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&c->lock);
	GHashTableIter it;
	gpointer value;
	g_hash_table_iter_init(&it, c->states);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		const struct state *s = value;
		if (gone(s->group, s->epoch, data)) {
			g_hash_table_iter_remove(&it);
			c->dirty = TRUE;
		}
	}
	if (c->dirty)
		save(c);
}
