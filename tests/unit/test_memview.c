/* The memory view's renderers, on host text in tests/fixtures/meminfo:
 * meminfo, swaps and vmstat as a host without swap wrote them;
 * meminfo-swap is that meminfo with swap, swaps-partition and swaps-2dev
 * swap devices in the kernel's format. The cgroup's figures are made here. */
#include "memview.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#define KiB UINT64_C(1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

typedef struct mem_figures figures;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(figures, mem_figures_clear)

static char *fixture(const char *name)
{
	g_autofree char *path = g_build_filename(g_getenv("CGPROCFS_FIXTURES"), "meminfo", name, NULL);
	char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
	return text;
}

struct stat_value {
	const char *key;
	uint64_t value;
};

/* A cgroup's figures: its limit, usage and memory.stat (up to a NULL key);
 * its swap not counted. */
static figures figures_of(uint64_t limit, uint64_t usage, const struct stat_value *stat)
{
	figures f = { .limit = limit, .usage = usage };
	f.stat = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	for (; stat && stat->key; stat++)
		g_hash_table_insert(f.stat, g_strdup(stat->key), g_memdup2(&stat->value, sizeof(stat->value)));
	return f;
}

static void count_swap(figures *f, uint64_t swap_usage, uint64_t swap_limit)
{
	f->swap_accounted = TRUE;
	f->swap_usage = swap_usage;
	f->swap_limited = swap_limit != 0;
	f->swap_limit = swap_limit;
}

static char *meminfo(const char *host, const figures *f, gboolean swap_view)
{
	GString *out = NULL;
	cr_assert_eq(memview_render_meminfo(host, f, swap_view, &out), 0);
	return g_string_free(out, FALSE);
}

static char *swaps(const char *host, const char *host_meminfo, const figures *f)
{
	GString *out = NULL;
	cr_assert_eq(memview_render_swaps(host, host_meminfo, f, &out), 0);
	return g_string_free(out, FALSE);
}

static char *vmstat(const char *host, const figures *f)
{
	GString *out = NULL;
	cr_assert_eq(memview_render_vmstat(host, f, &out), 0);
	return g_string_free(out, FALSE);
}

/* The line of text whose name (before sep) is name, or NULL. */
static char *line_of(const char *text, const char *name, char sep)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	size_t len = strlen(name);
	for (char **l = lines; *l; l++)
		if (strncmp(*l, name, len) == 0 && (*l)[len] == sep)
			return g_strdup(*l);
	return NULL;
}

/* The number after name and sep in text; fails the test if there is none. */
static uint64_t number_of(const char *text, const char *name, char sep)
{
	g_autofree char *line = line_of(text, name, sep);
	cr_assert_not_null(line, "no %s line", name);
	char *end;
	uint64_t value = g_ascii_strtoull(line + strlen(name) + 1, &end, 10);
	cr_assert(end != line + strlen(name) + 1, "%s", line);
	return value;
}

static uint64_t kb_of(const char *text, const char *name)
{
	return number_of(text, name, ':');
}

/* Does name's line read the same in both texts? */
static gboolean same_line(const char *a, const char *b, const char *name, char sep)
{
	g_autofree char *la = line_of(a, name, sep);
	g_autofree char *lb = line_of(b, name, sep);
	cr_assert_not_null(la, "no %s line", name);
	cr_assert_not_null(lb, "no %s line", name);
	return strcmp(la, lb) == 0;
}

/* Both texts have the same names (before sep), in the same order. */
static void assert_same_names(const char *host, const char *text, char sep)
{
	g_auto(GStrv) want = g_strsplit(host, "\n", -1);
	g_auto(GStrv) got = g_strsplit(text, "\n", -1);
	cr_assert_eq(g_strv_length(got), g_strv_length(want));
	for (guint i = 0; want[i]; i++) {
		const char *end = strchr(want[i], sep);
		size_t len = end ? (size_t)(end - want[i]) + 1 : strlen(want[i]);
		cr_assert(strncmp(got[i], want[i], len) == 0, "line %u: %s, host %s", i, got[i], want[i]);
	}
}

/* ------------------------------------------------------------- meminfo -- */

Test(memview, a_limit_below_the_host_memory_is_memtotal)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(text, "MemTotal"), 512 * 1024);
	cr_assert_eq(kb_of(text, "MemFree"), 412 * 1024);
	cr_assert_eq(kb_of(text, "MemAvailable"), 412 * 1024, "nothing reclaimable in memory.stat");
}

Test(memview, a_limit_above_the_host_memory_shows_the_host_memtotal)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_of(1024 * GiB, 100 * MiB, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert(same_line(text, host, "MemTotal", ':'));
	cr_assert_eq(kb_of(text, "MemFree"), kb_of(host, "MemTotal") - 100 * 1024);
}

Test(memview, memavailable_is_free_memory_and_what_reclaim_gets_back)
{
	g_autofree char *host = fixture("meminfo");
	const struct stat_value stat[] = {
		{ "active_file", 10 * MiB }, { "inactive_file", 20 * MiB }, { "slab_reclaimable", 5 * MiB },
		{ "anon", 150 * MiB }, { NULL, 0 },
	};
	g_auto(figures) f = figures_of(256 * MiB, 200 * MiB, stat);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(text, "MemAvailable"), (56 + 35) * 1024);
}

Test(memview, usage_above_the_limit_leaves_nothing_free_and_no_more_than_memtotal_available)
{
	g_autofree char *host = fixture("meminfo");
	const struct stat_value stat[] = {
		{ "active_file", 100 * MiB }, { "inactive_file", 100 * MiB }, { "slab_reclaimable", 100 * MiB },
		{ NULL, 0 },
	};
	g_auto(figures) f = figures_of(256 * MiB, 300 * MiB, stat);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(text, "MemFree"), 0);
	cr_assert_eq(kb_of(text, "MemAvailable"), kb_of(text, "MemTotal"));
}

Test(memview, memtotal_is_never_0)
{
	g_autofree char *host = fixture("meminfo");
	const uint64_t limits[] = { 0, 1, 1023, 1024 };
	for (size_t i = 0; i < G_N_ELEMENTS(limits); i++) {
		g_auto(figures) f = figures_of(limits[i], 4096, NULL);
		g_autofree char *text = meminfo(host, &f, TRUE);
		cr_assert_eq(kb_of(text, "MemTotal"), 1, "limit %" PRIu64, limits[i]);
		cr_assert_eq(kb_of(text, "MemFree"), 0);
		cr_assert_eq(kb_of(text, "Buffers"), 0, "not counted by the cgroup");
		cr_assert(same_line(text, host, "Hugepagesize", ':'), "a page size, not an amount");
	}
}

Test(memview, lines_without_a_cgroup_source_are_the_hosts_up_to_memtotal)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_of(64 * MiB, 16 * MiB, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_gt(kb_of(host, "VmallocTotal"), 64 * 1024, "the fixture's vmalloc space is above the limit");
	cr_assert_eq(kb_of(text, "VmallocTotal"), 64 * 1024);
	cr_assert_eq(kb_of(text, "DirectMap2M"), 64 * 1024);
	cr_assert(same_line(text, host, "HugePages_Total", ':'), "a count, not an amount");
	cr_assert_eq(kb_of(text, "Cached"), 0, "no 'file' in memory.stat: not counted, 0");
}

Test(memview, commit_figures_are_at_most_memtotal_and_swaptotal)
{
	g_autofree char *host = fixture("meminfo");
	g_autofree char *host_swap = fixture("meminfo-swap");
	cr_assert_gt(kb_of(host, "Committed_AS"), 32 * 1024, "the fixture commits more than the limit");
	g_auto(figures) f = figures_of(32 * MiB, 16 * MiB, NULL);
	g_autofree char *no_swap = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(no_swap, "CommitLimit"), 32 * 1024);
	cr_assert_eq(kb_of(no_swap, "Committed_AS"), 32 * 1024);

	count_swap(&f, 0, 1 * GiB);
	g_autofree char *swap = meminfo(host_swap, &f, TRUE);
	cr_assert_eq(kb_of(swap, "CommitLimit"), (32 + 1024) * 1024);
	cr_assert(same_line(swap, host_swap, "Committed_AS", ':'), "below MemTotal + SwapTotal");
}

Test(memview, swap_limit_and_usage_make_swaptotal_and_swapfree)
{
	g_autofree char *host = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 100 * MiB, 1 * GiB);
	g_autofree char *limited = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(limited, "SwapTotal"), 1024 * 1024);
	cr_assert_eq(kb_of(limited, "SwapFree"), (1024 - 100) * 1024);

	count_swap(&f, 100 * MiB, 0);
	g_autofree char *unlimited = meminfo(host, &f, TRUE);
	cr_assert(same_line(unlimited, host, "SwapTotal", ':'));
	cr_assert_eq(kb_of(unlimited, "SwapFree"), kb_of(host, "SwapTotal") - 100 * 1024);

	count_swap(&f, 100 * MiB, 64 * GiB);
	g_autofree char *above = meminfo(host, &f, TRUE);
	cr_assert(same_line(above, host, "SwapTotal", ':'), "a limit above the host's swap");
}

Test(memview, swap_usage_above_swap_limit_leaves_no_swap_free_never_a_huge_figure)
{
	g_autofree char *host = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 2 * GiB, 1 * GiB);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(text, "SwapTotal"), 1024 * 1024);
	cr_assert_eq(kb_of(text, "SwapFree"), 0);
}

Test(memview, swap_not_counted_or_not_viewed_shows_the_hosts_swap_lines)
{
	g_autofree char *host = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 100 * MiB, 1 * GiB);
	f.swap_accounted = FALSE;
	g_autofree char *not_counted = meminfo(host, &f, TRUE);
	f.swap_accounted = TRUE;
	g_autofree char *not_viewed = meminfo(host, &f, FALSE);
	const char *names[] = { "SwapTotal", "SwapFree" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		cr_assert(same_line(not_counted, host, names[i], ':'), "%s", names[i]);
		cr_assert(same_line(not_viewed, host, names[i], ':'), "%s", names[i]);
	}
	cr_assert_eq(kb_of(not_viewed, "MemTotal"), 512 * 1024, "memory is still the cgroup's");
}

Test(memview, parts_of_the_usage_without_a_source_are_0)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_gt(kb_of(host, "Buffers"), 0, "the fixture has buffers");
	cr_assert_gt(kb_of(host, "SReclaimable"), 0, "the fixture has reclaimable slab");
	cr_assert_eq(kb_of(text, "Buffers"), 0, "the host's buffers are not the cgroup's");
	cr_assert_eq(kb_of(text, "SReclaimable"), 0, "v1 counts no slab: none is shown (free would take it out of used)");
	cr_assert_eq(kb_of(text, "Slab"), 0);
	cr_assert_eq(kb_of(text, "VmallocTotal"), 512 * 1024, "not a part of the usage: at most MemTotal");
}

Test(memview, stat_keys_are_matched_whole_never_by_prefix)
{
	g_autofree char *host = fixture("meminfo");
	const struct stat_value stat[] = {
		{ "file_mapped", 3 * MiB }, { "anon_thp", 4 * MiB }, { "active_file", 5 * MiB }, { NULL, 0 },
	};
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, stat);
	g_autofree char *text = meminfo(host, &f, TRUE);
	cr_assert_eq(kb_of(text, "Mapped"), 3 * 1024);
	cr_assert_eq(kb_of(text, "Cached"), 0, "no 'file': not counted");
	cr_assert_eq(kb_of(text, "AnonHugePages"), 4 * 1024);
	cr_assert_eq(kb_of(text, "AnonPages"), 0, "no 'anon': not counted");
	cr_assert_eq(kb_of(text, "Active(file)"), 5 * 1024);
	cr_assert_eq(kb_of(text, "Active"), 0, "active_anon missing: not counted");

	uint64_t v;
	cr_assert_not(mem_figures_stat(&f, "file", &v));
	cr_assert_not(mem_figures_stat(&f, "file_map", &v));
	cr_assert(mem_figures_stat(&f, "file_mapped", &v) && v == 3 * MiB);
}

/* The meminfo lines memory.stat gives, as the design has them. */
static const struct {
	const char *line;
	const char *keys[3];
} stat_lines[] = {
	{ "Cached", { "file" } },
	{ "SwapCached", { "swapcached" } },
	{ "Active", { "active_anon", "active_file" } },
	{ "Inactive", { "inactive_anon", "inactive_file" } },
	{ "Active(anon)", { "active_anon" } },
	{ "Inactive(anon)", { "inactive_anon" } },
	{ "Active(file)", { "active_file" } },
	{ "Inactive(file)", { "inactive_file" } },
	{ "Unevictable", { "unevictable" } },
	{ "Zswap", { "zswap" } },
	{ "Zswapped", { "zswapped" } },
	{ "Dirty", { "file_dirty" } },
	{ "Writeback", { "file_writeback" } },
	{ "AnonPages", { "anon" } },
	{ "Mapped", { "file_mapped" } },
	{ "Shmem", { "shmem" } },
	{ "KReclaimable", { "slab_reclaimable" } },
	{ "Slab", { "slab" } },
	{ "SReclaimable", { "slab_reclaimable" } },
	{ "SUnreclaim", { "slab_unreclaimable" } },
	{ "KernelStack", { "kernel_stack" } },
	{ "PageTables", { "pagetables" } },
	{ "SecPageTables", { "sec_pagetables" } },
	{ "Percpu", { "percpu" } },
	{ "AnonHugePages", { "anon_thp" } },
	{ "ShmemHugePages", { "shmem_thp" } },
	{ "FileHugePages", { "file_thp" } },
};

/* Every key of stat_lines, each with its own value: 1000 + 37 * its place. */
static figures figures_with_every_key(uint64_t limit, uint64_t usage)
{
	figures f = figures_of(limit, usage, NULL);
	uint64_t next = 1000;
	for (size_t i = 0; i < G_N_ELEMENTS(stat_lines); i++)
		for (const char *const *k = stat_lines[i].keys; *k; k++) {
			if (g_hash_table_contains(f.stat, *k))
				continue;
			uint64_t bytes = next * KiB;
			g_hash_table_insert(f.stat, g_strdup(*k), g_memdup2(&bytes, sizeof(bytes)));
			next += 37;
		}
	return f;
}

Test(memview, every_line_memory_stat_gives_shows_its_keys)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_with_every_key(512 * MiB, 100 * MiB);
	g_autofree char *text = meminfo(host, &f, TRUE);
	for (size_t i = 0; i < G_N_ELEMENTS(stat_lines); i++) {
		uint64_t want = 0;
		for (const char *const *k = stat_lines[i].keys; *k; k++)
			want += *(const guint64 *)g_hash_table_lookup(f.stat, *k) / KiB;
		cr_assert_eq(kb_of(text, stat_lines[i].line), want, "%s", stat_lines[i].line);
	}
}

Test(memview, a_line_whose_value_is_unchanged_is_the_hosts_byte_for_byte)
{
	g_autofree char *host = fixture("meminfo");
	/* MemTotal and MemFree as the host's. */
	uint64_t used = (kb_of(host, "MemTotal") - kb_of(host, "MemFree")) * KiB;
	g_auto(figures) f = figures_of(1024 * GiB, used, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	g_auto(GStrv) want = g_strsplit(host, "\n", -1);
	g_auto(GStrv) got = g_strsplit(text, "\n", -1);
	guint same = 0;
	for (guint i = 0; want[i] && got[i]; i++) {
		char *colon = strchr(want[i], ':');
		if (!colon)
			continue;
		g_autofree char *name = g_strndup(want[i], (gsize)(colon - want[i]));
		if (kb_of(text, name) != kb_of(host, name))
			continue;
		cr_assert_str_eq(got[i], want[i]);
		same++;
	}
	cr_assert(same_line(text, host, "MemTotal", ':'));
	cr_assert(same_line(text, host, "MemFree", ':'));
	/* Every line but those of memory.stat (none here: they are 0). */
	cr_assert_gt(same, 20, "the host's lines keep their value here");
}

Test(memview, lines_without_kb_are_the_hosts)
{
	g_autofree char *host = fixture("meminfo");
	g_auto(figures) f = figures_of(1, 1 * GiB, NULL);
	g_autofree char *text = meminfo(host, &f, TRUE);
	const char *names[] = { "HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
		cr_assert(same_line(text, host, names[i], ':'), "%s", names[i]);
	g_autofree char *odd = meminfo("MemTotal: 8 kB\nHugePages_Total:   7\n", &f, TRUE);
	cr_assert_str_eq(odd, "MemTotal:              1 kB\nHugePages_Total:   7\n", "a count keeps its spacing");
}

Test(memview, the_output_has_the_hosts_lines_in_the_hosts_order)
{
	g_autofree char *host = fixture("meminfo");
	g_autofree char *host_swap = fixture("meminfo-swap");
	g_auto(figures) small = figures_with_every_key(64 * MiB, 200 * MiB);
	g_auto(figures) big = figures_with_every_key(1024 * GiB, 1 * GiB);
	count_swap(&small, 3 * GiB, 1 * GiB);
	const char *hosts[] = { host, host_swap };
	const figures *fs[] = { &small, &big };
	for (size_t h = 0; h < G_N_ELEMENTS(hosts); h++)
		for (size_t i = 0; i < G_N_ELEMENTS(fs); i++) {
			g_autofree char *text = meminfo(hosts[h], fs[i], TRUE);
			assert_same_names(hosts[h], text, ':');
		}
}

Test(memview, meminfo_of_odd_shape_is_einval)
{
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	const char *bad[] = {
		"",
		"garbage\n",
		"MemFree:  5 kB\n",             /* no MemTotal */
		"MemTotal:  x kB\n",
		"MemTotal:  -5 kB\n",
		"MemTotal:  5 MB\n",
		"MemTotal:  5 kB\nMemFree:\n",
		"MemTotal:  5 kB\n\nMemFree:  1 kB\n",
		"MemTotal:  99999999999999999999 kB\n",
		"MemTotal:  7\n",               /* not in kB */
		"MemTotal:  24683620 kB\nMemFree:  24345908\n", /* a size the view rewrites, not in kB */
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GString *out = NULL;
		cr_assert_eq(memview_render_meminfo(bad[i], &f, TRUE, &out), -EINVAL, "%s", bad[i]);
		cr_assert_null(out);
	}
}

/* --------------------------------------------------------------- swaps -- */

/* The whitespace-separated fields of a swaps line. */
static GStrv swaps_fields(const char *line)
{
	g_autoptr(GStrvBuilder) b = g_strv_builder_new();
	g_auto(GStrv) all = g_strsplit_set(line, " \t", -1);
	for (char **s = all; *s; s++)
		if (**s)
			g_strv_builder_add(b, *s);
	return g_strv_builder_end(b);
}

Test(memview, swaps_with_a_limit_is_one_device_agreeing_with_meminfo)
{
	g_autofree char *host = fixture("swaps-2dev");
	g_autofree char *host_meminfo = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 100 * MiB, 1 * GiB);
	g_autofree char *text = swaps(host, host_meminfo, &f);
	g_autofree char *mem = meminfo(host_meminfo, &f, TRUE);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_auto(GStrv) host_lines = g_strsplit(host, "\n", -1);
	cr_assert_eq(g_strv_length(lines), 3, "header, one device, the final newline");
	cr_assert_str_eq(lines[0], host_lines[0]);
	g_auto(GStrv) got = swaps_fields(lines[1]);
	g_auto(GStrv) first = swaps_fields(host_lines[1]);
	cr_assert_eq(g_strv_length(got), 5);
	cr_assert_str_eq(got[0], first[0]);
	cr_assert_str_eq(got[1], first[1]);
	cr_assert_str_eq(got[4], first[4]);
	cr_assert_eq(g_ascii_strtoull(got[2], NULL, 10), kb_of(mem, "SwapTotal"));
	cr_assert_eq(g_ascii_strtoull(got[3], NULL, 10), kb_of(mem, "SwapTotal") - kb_of(mem, "SwapFree"));
	cr_assert_eq(strspn(lines[1] + strlen(got[0]), " "), 40 - strlen(got[0]), "the name in 40 columns");
}

Test(memview, swaps_line_of_unchanged_figures_is_the_hosts_byte_for_byte)
{
	g_autofree char *host = fixture("swaps-partition");
	g_autofree char *host_meminfo = fixture("meminfo-swap");
	g_auto(GStrv) host_lines = g_strsplit(host, "\n", -1);
	g_auto(GStrv) fields = swaps_fields(host_lines[1]);
	cr_assert_eq(g_ascii_strtoull(fields[2], NULL, 10), kb_of(host_meminfo, "SwapTotal"),
		     "one device: its size is SwapTotal");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, g_ascii_strtoull(fields[3], NULL, 10) * KiB, 64 * GiB);
	g_autofree char *text = swaps(host, host_meminfo, &f);
	cr_assert_str_eq(text, host);
}

Test(memview, swaps_usage_above_the_swap_limit_is_the_whole_size_used)
{
	g_autofree char *host = fixture("swaps-2dev");
	g_autofree char *host_meminfo = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 3 * GiB, 1 * GiB);
	g_autofree char *text = swaps(host, host_meminfo, &f);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_auto(GStrv) got = swaps_fields(lines[1]);
	cr_assert_eq(g_ascii_strtoull(got[2], NULL, 10), 1024 * 1024);
	cr_assert_eq(g_ascii_strtoull(got[3], NULL, 10), 1024 * 1024);
}

Test(memview, swaps_without_a_swap_limit_is_the_hosts)
{
	g_autofree char *host = fixture("swaps-2dev");
	g_autofree char *host_meminfo = fixture("meminfo-swap");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	g_autofree char *not_counted = swaps(host, host_meminfo, &f);
	cr_assert_str_eq(not_counted, host);
	count_swap(&f, 100 * MiB, 0);
	g_autofree char *not_limited = swaps(host, host_meminfo, &f);
	cr_assert_str_eq(not_limited, host);
}

Test(memview, swaps_of_a_host_without_swap_is_the_header)
{
	g_autofree char *host = fixture("swaps");
	g_autofree char *host_meminfo = fixture("meminfo");
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 0, 1 * GiB);
	g_autofree char *text = swaps(host, host_meminfo, &f);
	cr_assert_str_eq(text, host);
	cr_assert_eq(strchr(text, '\n') - text + 1, (ptrdiff_t)strlen(text), "one line");
}

Test(memview, swaps_of_odd_shape_is_einval)
{
	g_autofree char *host_meminfo = fixture("meminfo-swap");
	g_autofree char *header = fixture("swaps");
	g_autofree char *short_line = g_strconcat(header, "/dev/vdb2 partition 5\n", NULL);
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	count_swap(&f, 0, 1 * GiB);
	const char *bad[] = { "", "garbage\n", "Filename Type Size Used Priority\n", short_line };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GString *out = NULL;
		cr_assert_eq(memview_render_swaps(bad[i], host_meminfo, &f, &out), -EINVAL, "%s", bad[i]);
		cr_assert_null(out);
	}
	GString *out = NULL;
	cr_assert_eq(memview_render_swaps(header, "garbage\n", &f, &out), -EINVAL);
}

/* -------------------------------------------------------------- vmstat -- */

/* vmstat line <- memory.stat key, and the bytes a unit of the line holds
 * (0: the page size; 1: events, copied). */
static const struct {
	const char *line;
	const char *key;
	uint64_t unit;
} vmstat_lines[] = {
	{ "pgfault", "pgfault", 1 },
	{ "pgmajfault", "pgmajfault", 1 },
	{ "pswpin", "pswpin", 1 },
	{ "pswpout", "pswpout", 1 },
	{ "pgrefill", "pgrefill", 1 },
	{ "pgscan_kswapd", "pgscan_kswapd", 1 },
	{ "pgscan_direct", "pgscan_direct", 1 },
	{ "pgscan_khugepaged", "pgscan_khugepaged", 1 },
	{ "pgsteal_kswapd", "pgsteal_kswapd", 1 },
	{ "pgsteal_direct", "pgsteal_direct", 1 },
	{ "pgsteal_khugepaged", "pgsteal_khugepaged", 1 },
	{ "pgactivate", "pgactivate", 1 },
	{ "pgdeactivate", "pgdeactivate", 1 },
	{ "pglazyfree", "pglazyfree", 1 },
	{ "pglazyfreed", "pglazyfreed", 1 },
	{ "zswpin", "zswpin", 1 },
	{ "zswpout", "zswpout", 1 },
	{ "zswpwb", "zswpwb", 1 },
	{ "thp_fault_alloc", "thp_fault_alloc", 1 },
	{ "thp_collapse_alloc", "thp_collapse_alloc", 1 },
	{ "thp_swpout", "thp_swpout", 1 },
	{ "thp_swpout_fallback", "thp_swpout_fallback", 1 },
	{ "workingset_refault_anon", "workingset_refault_anon", 1 },
	{ "workingset_refault_file", "workingset_refault_file", 1 },
	{ "workingset_activate_anon", "workingset_activate_anon", 1 },
	{ "workingset_activate_file", "workingset_activate_file", 1 },
	{ "workingset_restore_anon", "workingset_restore_anon", 1 },
	{ "workingset_restore_file", "workingset_restore_file", 1 },
	{ "workingset_nodereclaim", "workingset_nodereclaim", 1 },
	{ "nr_anon_pages", "anon", 0 },
	{ "nr_mapped", "file_mapped", 0 },
	{ "nr_file_pages", "file", 0 },
	{ "nr_dirty", "file_dirty", 0 },
	{ "nr_writeback", "file_writeback", 0 },
	{ "nr_shmem", "shmem", 0 },
	{ "nr_active_anon", "active_anon", 0 },
	{ "nr_inactive_anon", "inactive_anon", 0 },
	{ "nr_active_file", "active_file", 0 },
	{ "nr_inactive_file", "inactive_file", 0 },
	{ "nr_unevictable", "unevictable", 0 },
	{ "nr_slab_reclaimable", "slab_reclaimable", 0 },
	{ "nr_slab_unreclaimable", "slab_unreclaimable", 0 },
	{ "nr_page_table_pages", "pagetables", 0 },
	{ "nr_sec_page_table_pages", "sec_pagetables", 0 },
	{ "nr_swapcached", "swapcached", 0 },
	{ "nr_kernel_stack", "kernel_stack", 1024 },
	{ "nr_anon_transparent_hugepages", "anon_thp", 2 * MiB },
	{ "nr_shmem_hugepages", "shmem_thp", 2 * MiB },
	{ "nr_file_hugepages", "file_thp", 2 * MiB },
};

static uint64_t unit_bytes(uint64_t unit)
{
	return unit ? unit : (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Every key of vmstat_lines: 7 + its place units and a bit more, so that a
 * conversion that does not divide, or divides by another unit, shows. */
static figures figures_with_every_vmstat_key(uint64_t limit, uint64_t usage)
{
	figures f = figures_of(limit, usage, NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(vmstat_lines); i++) {
		uint64_t unit = unit_bytes(vmstat_lines[i].unit);
		uint64_t value = (7 + i) * unit + (unit > 1 ? unit / 2 : 0);
		g_hash_table_insert(f.stat, g_strdup(vmstat_lines[i].key), g_memdup2(&value, sizeof(value)));
	}
	return f;
}

Test(memview, vmstat_lines_come_from_memory_stat_in_their_units)
{
	g_autofree char *host = fixture("vmstat");
	g_auto(figures) f = figures_with_every_vmstat_key(512 * MiB, 100 * MiB);
	g_autofree char *text = vmstat(host, &f);
	guint checked = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(vmstat_lines); i++) {
		g_autofree char *in_host = line_of(host, vmstat_lines[i].line, ' ');
		if (!in_host)
			continue;
		cr_assert_eq(number_of(text, vmstat_lines[i].line, ' '), 7 + i, "%s", vmstat_lines[i].line);
		checked++;
	}
	cr_assert_gt(checked, 40, "the fixture has most of them");
}

Test(memview, nr_free_pages_is_what_the_limit_leaves)
{
	g_autofree char *host = fixture("vmstat");
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	g_autofree char *text = vmstat(host, &f);
	cr_assert_eq(number_of(text, "nr_free_pages", ' '), 412 * MiB / page);
	cr_assert(same_line(text, host, "nr_free_pages_blocks", ' '), "not nr_free_pages");
	g_auto(figures) over = figures_of(512 * MiB, 600 * MiB, NULL);
	g_autofree char *text_over = vmstat(host, &over);
	cr_assert_eq(number_of(text_over, "nr_free_pages", ' '), 0);
}

Test(memview, vmstat_lines_without_a_cgroup_value_are_the_hosts)
{
	g_autofree char *host = fixture("vmstat");
	g_auto(figures) f = figures_with_every_vmstat_key(512 * MiB, 100 * MiB);
	g_autofree char *text = vmstat(host, &f);
	assert_same_names(host, text, ' ');
	g_auto(GStrv) want = g_strsplit(host, "\n", -1);
	g_auto(GStrv) got = g_strsplit(text, "\n", -1);
	guint host_lines = 0;
	for (guint i = 0; want[i]; i++) {
		gboolean sourced = g_str_has_prefix(want[i], "nr_free_pages ");
		for (size_t k = 0; k < G_N_ELEMENTS(vmstat_lines); k++) {
			g_autofree char *prefix = g_strconcat(vmstat_lines[k].line, " ", NULL);
			sourced = sourced || g_str_has_prefix(want[i], prefix);
		}
		if (sourced)
			continue;
		cr_assert_str_eq(got[i], want[i]);
		host_lines++;
	}
	cr_assert_gt(host_lines, 100);

	g_auto(figures) none = figures_of(512 * MiB, 100 * MiB, NULL);
	g_autofree char *no_stat = vmstat(host, &none);
	cr_assert(same_line(no_stat, host, "pgfault", ' '), "a key the cgroup lacks: the host's line");
	cr_assert(same_line(no_stat, host, "nr_anon_pages", ' '));
}

Test(memview, line_names_are_matched_whole_never_by_prefix)
{
	g_auto(figures) f = figures_with_every_vmstat_key(512 * MiB, 100 * MiB);
	const char *host = "nr_free 5\npgscan_k 6\npgfault_total 7\nnr_anon_pages_x 8\n";
	g_autofree char *text = vmstat(host, &f);
	cr_assert_str_eq(text, host);
	const char *host_meminfo = "MemTotal:     2048 kB\nMapp:         1000 kB\nActive(f:        10 kB\n";
	g_autofree char *mem = meminfo(host_meminfo, &f, TRUE);
	cr_assert_eq(kb_of(mem, "Mapp"), 1000, "not Mapped, the host's");
	cr_assert_eq(kb_of(mem, "Active(f"), 10);
}

Test(memview, vmstat_of_odd_shape_is_einval)
{
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, NULL);
	const char *bad[] = { "garbage\n", "pgfault x\n", "pgfault 5\n 6\n", "pgfault -5\n", "pgfault 5 6\n",
			      "pgfault\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		GString *out = NULL;
		cr_assert_eq(memview_render_vmstat(bad[i], &f, &out), -EINVAL, "%s", bad[i]);
		cr_assert_null(out);
	}
}

Test(memview, clear_forgets_the_figures)
{
	g_auto(figures) f = figures_of(512 * MiB, 100 * MiB, (const struct stat_value[]){ { "anon", 1 }, { NULL, 0 } });
	count_swap(&f, 1, 2);
	mem_figures_clear(&f);
	uint64_t v;
	cr_assert_null(f.stat);
	cr_assert_eq(f.limit, 0);
	cr_assert_not(f.swap_accounted);
	cr_assert_not(mem_figures_stat(&f, "anon", &v));
}
