/* cgprocfs-bench-latency: open + read to EOF + close latency of files,
 * measured interleaved so that drift (frequency scaling, other load,
 * cache warmth) affects every file alike.
 *
 *   cgprocfs-bench-latency [--iterations N] [--warmup W] [--pause-us P] [--ref LABEL]
 *                          [--vs PREFIX]... LABEL=PATH [LABEL=PATH...]
 *
 * Each iteration times one open+read+close of every path, in a new random
 * order each time (fixed seed, so runs are repeatable): a fixed or merely
 * rotated order would always run a path right after the same other one,
 * and what ran just before (a FUSE round trip, the same procfs file)
 * changes what a read costs. Warm-up iterations run the same way and are
 * not recorded. --pause-us sleeps between iterations: a caller that reads
 * now and then, as a monitor does, rather than one that does nothing else.
 *
 * Ratios (p50 and p99 of a row over those of its reference):
 *   - with --ref LABEL, every row is compared with row LABEL;
 *   - without it, a row labelled "view:X" is compared with the row
 *     labelled "real:X", if there is one. Other rows get no ratio.
 * Each --vs PREFIX adds a second table after the first: every "view:X"
 * row over the "PREFIX:X" row, for the rows that have one (e.g. --vs lxcfs
 * with lxcfs:X rows, to compare the view with another implementation as
 * well as with the real file).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_BUFFER_SIZE (64 * 1024)
#define VIEW_PREFIX "view:"
#define REAL_PREFIX "real:"
#define SHUFFLE_SEED 20240601u

struct target {
	char *label;
	char *path;
	guint64 *samples_ns; /* one per recorded iteration */
	double p50_us, p99_us, mean_us;
	int ref;             /* index of the row compared against, or -1 */
};

/* One --vs PREFIX: the pairs (view:X, PREFIX:X) it compares. */
struct versus {
	char *prefix;        /* without the colon */
	GArray *pairs;       /* of struct pair */
};

struct pair {
	int row, ref;
};

static guint64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (guint64)ts.tv_sec * G_GUINT64_CONSTANT(1000000000) + (guint64)ts.tv_nsec;
}

/* One open + read-all + close. 0, or -errno with *ret_step naming the
 * failed step. */
static int read_whole(const char *path, char *buf, const char **ret_step)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		*ret_step = "open";
		return -errno;
	}
	for (;;) {
		ssize_t n = read(fd, buf, READ_BUFFER_SIZE);
		if (n > 0)
			continue;
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		int err = errno;
		close(fd);
		*ret_step = "read";
		return -err;
	}
	if (close(fd) < 0) {
		*ret_step = "close";
		return -errno;
	}
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in µs. */
static double percentile_us(const guint64 *sorted, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)sorted[rank - 1] / 1000.0;
}

static void summarize(struct target *t, size_t n)
{
	double sum = 0;

	qsort(t->samples_ns, n, sizeof(*t->samples_ns), compare_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)t->samples_ns[i];
	t->p50_us = percentile_us(t->samples_ns, n, 0.50);
	t->p99_us = percentile_us(t->samples_ns, n, 0.99);
	t->mean_us = sum / (double)n / 1000.0;
}

static int find_label(const struct target *targets, size_t count, const char *label)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(targets[i].label, label) == 0)
			return (int)i;
	return -1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: cgprocfs-bench-latency [--iterations N] [--warmup W] [--pause-us P] [--ref LABEL]\n"
		"                              [--vs PREFIX]... LABEL=PATH...\n"
		"  Times open + read to EOF (64 KiB reads) + close of each PATH, interleaved,\n"
		"  and prints p50, p99 and mean in microseconds per LABEL.\n"
		"  --iterations N  recorded rounds over all paths (default 10000)\n"
		"  --warmup W      unrecorded rounds first (default 1000)\n"
		"  --pause-us P    sleep P microseconds after each round (default 0)\n"
		"  --ref LABEL     compare every row with row LABEL; without it, each\n"
		"                  'view:X' row is compared with the 'real:X' row\n"
		"  --vs PREFIX     also print each 'view:X' row over the 'PREFIX:X' row,\n"
		"                  in a table of its own (repeatable)\n");
}

static gboolean parse_count(const char *option, const char *text, guint64 min, guint64 *ret)
{
	if (!text || !g_ascii_string_to_unsigned(text, 10, min, 100000000, ret, NULL)) {
		fprintf(stderr, "cgprocfs-bench-latency: %s needs a whole number >= %" G_GUINT64_FORMAT
			", got '%s'\n", option, min, text ? text : "(nothing)");
		return FALSE;
	}
	return TRUE;
}

static void target_clear(gpointer p)
{
	struct target *t = p;
	g_free(t->label);
	g_free(t->path);
	g_free(t->samples_ns);
}

/* Sets each row's reference (see the top of this file). FALSE if --ref
 * names no row. */
static gboolean resolve_refs(struct target *tv, size_t count, const char *ref_label)
{
	if (ref_label) {
		int ref = find_label(tv, count, ref_label);
		if (ref < 0) {
			fprintf(stderr, "cgprocfs-bench-latency: --ref %s: no such label\n", ref_label);
			return FALSE;
		}
		for (size_t i = 0; i < count; i++)
			tv[i].ref = (int)i == ref ? -1 : ref;
		return TRUE;
	}
	for (size_t i = 0; i < count; i++) {
		if (!g_str_has_prefix(tv[i].label, VIEW_PREFIX))
			continue;
		g_autofree char *real = g_strconcat(REAL_PREFIX, tv[i].label + strlen(VIEW_PREFIX), NULL);
		tv[i].ref = find_label(tv, count, real);
	}
	return TRUE;
}

static void versus_clear(gpointer p)
{
	struct versus *v = p;
	g_free(v->prefix);
	if (v->pairs)
		g_array_unref(v->pairs);
}

/* Pairs each view:X row with the PREFIX:X row of every --vs. FALSE if a
 * PREFIX pairs with no row at all (most likely a typo). */
static gboolean resolve_versus(const struct target *tv, size_t count, GArray *versus)
{
	for (guint k = 0; k < versus->len; k++) {
		struct versus *v = &g_array_index(versus, struct versus, k);
		v->pairs = g_array_new(FALSE, FALSE, sizeof(struct pair));
		for (size_t i = 0; i < count; i++) {
			if (!g_str_has_prefix(tv[i].label, VIEW_PREFIX))
				continue;
			g_autofree char *other =
				g_strconcat(v->prefix, ":", tv[i].label + strlen(VIEW_PREFIX), NULL);
			int ref = find_label(tv, count, other);
			if (ref >= 0)
				g_array_append_val(v->pairs, ((struct pair){ .row = (int)i, .ref = ref }));
		}
		if (v->pairs->len == 0) {
			fprintf(stderr, "cgprocfs-bench-latency: --vs %s: no 'view:X' row has a '%s:X' row\n",
				v->prefix, v->prefix);
			return FALSE;
		}
	}
	return TRUE;
}

/* Runs all rounds and records the samples. FALSE (with a message) if a
 * path could not be read. */
static gboolean measure(struct target *tv, size_t count, guint64 warmup, guint64 iterations, guint64 pause_us)
{
	g_autofree char *buf = g_malloc(READ_BUFFER_SIZE);
	g_autofree size_t *order = g_new(size_t, count);
	g_autoptr(GRand) rand = g_rand_new_with_seed(SHUFFLE_SEED);

	for (size_t i = 0; i < count; i++) {
		order[i] = i;
		tv[i].samples_ns = g_new(guint64, iterations);
	}
	for (guint64 round = 0; round < warmup + iterations; round++) {
		/* Fisher-Yates: every order equally likely. */
		for (size_t i = count - 1; i > 0; i--) {
			size_t j = (size_t)g_rand_int_range(rand, 0, (gint32)(i + 1));
			size_t tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
		for (size_t k = 0; k < count; k++) {
			struct target *t = &tv[order[k]];
			const char *step = NULL;
			guint64 t0 = now_ns();
			int r = read_whole(t->path, buf, &step);
			guint64 t1 = now_ns();
			if (r < 0) {
				fprintf(stderr, "cgprocfs-bench-latency: %s: cannot %s %s: %s\n", t->label, step,
					t->path, g_strerror(-r));
				return FALSE;
			}
			if (round >= warmup)
				t->samples_ns[round - warmup] = t1 - t0;
		}
		if (pause_us)
			g_usleep((gulong)pause_us);
	}
	return TRUE;
}

static int label_width(const struct target *tv, size_t count)
{
	int width = 5;

	for (size_t i = 0; i < count; i++)
		width = MAX(width, (int)strlen(tv[i].label));
	return width;
}

/* One table per --vs: "ratios vs PREFIX:", then a row per pair. */
static void print_versus(const struct target *tv, size_t count, const GArray *versus)
{
	int width = label_width(tv, count);

	for (guint k = 0; k < versus->len; k++) {
		const struct versus *v = &g_array_index(versus, struct versus, k);
		printf("ratios vs %s: (view:X p50 and p99 over those of %s:X)\n", v->prefix, v->prefix);
		printf("%-*s %10s %10s  %s\n", width, "label", "p50_ratio", "p99_ratio", "ratio_vs");
		for (guint j = 0; j < v->pairs->len; j++) {
			const struct pair *p = &g_array_index(v->pairs, struct pair, j);
			printf("%-*s %9.2fx %9.2fx  %s\n", width, tv[p->row].label,
			       tv[p->row].p50_us / tv[p->ref].p50_us, tv[p->row].p99_us / tv[p->ref].p99_us,
			       tv[p->ref].label);
		}
	}
}

static void print_table(const struct target *tv, size_t count)
{
	int width = label_width(tv, count);

	printf("%-*s %10s %10s %10s %10s %10s  %s\n", width, "label", "p50_us", "p99_us", "mean_us",
	       "p50_ratio", "p99_ratio", "ratio_vs");
	for (size_t i = 0; i < count; i++) {
		const struct target *t = &tv[i];
		printf("%-*s %10.2f %10.2f %10.2f", width, t->label, t->p50_us, t->p99_us, t->mean_us);
		if (t->ref >= 0)
			printf(" %9.2fx %9.2fx  %s\n", t->p50_us / tv[t->ref].p50_us,
			       t->p99_us / tv[t->ref].p99_us, tv[t->ref].label);
		else
			printf(" %10s %10s  %s\n", "-", "-", "-");
	}
}

static void print_footer(guint64 warmup, guint64 iterations)
{
	printf("(%" G_GUINT64_FORMAT " iterations after %" G_GUINT64_FORMAT
	       " warm-up, interleaved in random order; open + read to EOF + close)\n",
	       iterations, warmup);
}

int main(int argc, char **argv)
{
	guint64 iterations = 10000, warmup = 1000, pause_us = 0;
	const char *ref_label = NULL;
	g_autoptr(GArray) targets = g_array_new(FALSE, TRUE, sizeof(struct target));
	g_autoptr(GArray) versus = g_array_new(FALSE, TRUE, sizeof(struct versus));

	g_array_set_clear_func(targets, target_clear);
	g_array_set_clear_func(versus, versus_clear);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--iterations") == 0) {
			if (!parse_count(arg, i + 1 < argc ? argv[++i] : NULL, 1, &iterations))
				return 2;
		} else if (strcmp(arg, "--warmup") == 0) {
			if (!parse_count(arg, i + 1 < argc ? argv[++i] : NULL, 0, &warmup))
				return 2;
		} else if (strcmp(arg, "--pause-us") == 0) {
			if (!parse_count(arg, i + 1 < argc ? argv[++i] : NULL, 0, &pause_us))
				return 2;
		} else if (strcmp(arg, "--ref") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "cgprocfs-bench-latency: --ref needs a label\n");
				return 2;
			}
			ref_label = argv[++i];
		} else if (strcmp(arg, "--vs") == 0) {
			const char *prefix = i + 1 < argc ? argv[++i] : "";
			size_t len = strlen(prefix);
			if (len > 0 && prefix[len - 1] == ':') /* "lxcfs:" as well as "lxcfs" */
				len--;
			if (len == 0 || memchr(prefix, ':', len)) {
				fprintf(stderr, "cgprocfs-bench-latency: --vs needs a label prefix, like 'lxcfs'\n");
				return 2;
			}
			struct versus v = { .prefix = g_strndup(prefix, len) };
			g_array_append_val(versus, v);
		} else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (arg[0] == '-' && arg[1] == '-') {
			fprintf(stderr, "cgprocfs-bench-latency: unknown option '%s'\n", arg);
			usage(stderr);
			return 2;
		} else {
			const char *eq = strchr(arg, '=');
			if (!eq || eq == arg || eq[1] == '\0') {
				fprintf(stderr, "cgprocfs-bench-latency: expected LABEL=PATH, got '%s'\n", arg);
				return 2;
			}
			struct target t = {
				.label = g_strndup(arg, (gsize)(eq - arg)),
				.path = g_strdup(eq + 1),
				.ref = -1,
			};
			g_array_append_val(targets, t);
		}
	}
	size_t count = targets->len;
	struct target *tv = (struct target *)(void *)targets->data;
	if (count == 0) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < count; i++) {
		if (find_label(tv, count, tv[i].label) != (int)i) {
			fprintf(stderr, "cgprocfs-bench-latency: label '%s' given twice\n", tv[i].label);
			return 2;
		}
	}
	if (!resolve_refs(tv, count, ref_label) || !resolve_versus(tv, count, versus))
		return 2;
	if (!measure(tv, count, warmup, iterations, pause_us))
		return 1;
	for (size_t i = 0; i < count; i++)
		summarize(&tv[i], (size_t)iterations);
	print_table(tv, count);
	print_versus(tv, count, versus);
	print_footer(warmup, iterations);
	return 0;
}
