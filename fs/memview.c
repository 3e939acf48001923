#include "memview.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

/* The kernel prints its transparent huge page counters in PMD-sized pages:
 * 2 MiB on x86-64 and on arm64 with 4 KiB pages. */
#define THP_BYTES (UINT64_C(2) << 20)

#define SWAPS_HEADER "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority"

void mem_figures_clear(struct mem_figures *f)
{
	g_clear_pointer(&f->stat, g_hash_table_unref);
	*f = (struct mem_figures){ 0 };
}

gboolean mem_figures_stat(const struct mem_figures *f, const char *key, uint64_t *ret)
{
	/* A hash table of whole keys: "file" never finds "file_mapped". */
	const guint64 *value = f->stat ? g_hash_table_lookup(f->stat, key) : NULL;
	if (!value)
		return FALSE;
	*ret = *value;
	return TRUE;
}

/* ------------------------------------------------------------- helpers -- */

/* Counters may disagree for a moment (usage above the limit, swap.current
 * above swap.max): a difference stops at 0, never wraps around. */
static uint64_t sub_floor(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t add_ceil(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t kb(uint64_t bytes)
{
	return bytes / 1024;
}

/* host's lines, without the empty string after its last newline. */
static GStrv split_lines(const char *host)
{
	GStrv lines = g_strsplit(host, "\n", -1);
	guint n = g_strv_length(lines);
	if (n > 0 && lines[n - 1][0] == '\0')
		g_clear_pointer(&lines[n - 1], g_free);
	return lines;
}

/* s, all of it, as a decimal number. */
static gboolean parse_decimal(const char *s, uint64_t *ret)
{
	return g_ascii_isdigit(*s) && g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, ret, NULL);
}

/* Does the name of length len at the start of a line read name, whole? */
static gboolean name_is(const char *line, size_t len, const char *name)
{
	return strlen(name) == len && memcmp(line, name, len) == 0;
}

/* ------------------------------------------------------------- meminfo -- */

/* One line of /proc/meminfo: "Name:   <value> kB", or "Name:   <count>"
 * for the HugePages_ counts. */
struct meminfo_line {
	const char *text;
	size_t name_len;
	uint64_t value;
	gboolean kb;
};

static int parse_meminfo_line(const char *text, struct meminfo_line *ret)
{
	const char *colon = strchr(text, ':');
	if (!colon || colon == text)
		return -EINVAL;
	const char *number = colon + 1;
	while (*number == ' ')
		number++;
	g_autofree char *digits = g_strdup(number);
	gboolean kb = g_str_has_suffix(digits, " kB");
	if (kb)
		digits[strlen(digits) - 3] = '\0';
	*ret = (struct meminfo_line){ .text = text, .name_len = (size_t)(colon - text), .kb = kb };
	return parse_decimal(digits, &ret->value) ? 0 : -EINVAL;
}

/* lines: struct meminfo_line, pointing into the strings of text_lines. */
static int parse_meminfo(char **text_lines, GArray **ret)
{
	g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(struct meminfo_line));
	for (char **l = text_lines; *l; l++) {
		struct meminfo_line line;
		if (parse_meminfo_line(*l, &line) < 0)
			return -EINVAL;
		g_array_append_val(lines, line);
	}
	*ret = g_steal_pointer(&lines);
	return 0;
}

static const struct meminfo_line *meminfo_find(GArray *lines, const char *name)
{
	for (guint i = 0; i < lines->len; i++) {
		const struct meminfo_line *l = &g_array_index(lines, struct meminfo_line, i);
		if (name_is(l->text, l->name_len, name))
			return l;
	}
	return NULL;
}

/* A kB line's value in the host's text, 0 if it has none. */
static uint64_t meminfo_host_kb(GArray *lines, const char *name)
{
	const struct meminfo_line *l = meminfo_find(lines, name);
	return l && l->kb ? l->value : 0;
}

/* SwapTotal and SwapFree (kB) of a cgroup whose swap the kernel counts. */
static void swap_view_of(uint64_t host_total, const struct mem_figures *f, uint64_t *ret_total,
			 uint64_t *ret_free)
{
	uint64_t total = f->swap_limited ? MIN(host_total, kb(f->swap_limit)) : host_total;
	*ret_total = total;
	*ret_free = sub_floor(total, kb(f->swap_usage));
}

/* The figures of the caller's meminfo every other line is measured by, in kB. */
struct meminfo_view {
	uint64_t mem_total, mem_free, mem_available;
	gboolean swap_shown; /* FALSE: the host's swap lines */
	uint64_t swap_total, swap_free;
};

static uint64_t stat_kb_or_0(const struct mem_figures *f, const char *key)
{
	uint64_t bytes;
	return mem_figures_stat(f, key, &bytes) ? kb(bytes) : 0;
}

static int meminfo_view_of(GArray *lines, const struct mem_figures *f, gboolean swap_view,
			   struct meminfo_view *ret)
{
	const struct meminfo_line *total = meminfo_find(lines, "MemTotal");
	if (!total || !total->kb)
		return -EINVAL;
	struct meminfo_view v = { 0 };
	/* Never 0: programs divide by it (ps did, and crashed). */
	v.mem_total = MAX(MIN(total->value, kb(f->limit)), 1);
	v.mem_free = sub_floor(v.mem_total, kb(f->usage));
	/* What the cgroup could get back without swapping, as the kernel
	 * reckons MemAvailable: free, plus page cache, plus reclaimable slab. */
	uint64_t reclaimable = add_ceil(add_ceil(stat_kb_or_0(f, "active_file"), stat_kb_or_0(f, "inactive_file")),
					stat_kb_or_0(f, "slab_reclaimable"));
	v.mem_available = MIN(add_ceil(v.mem_free, reclaimable), v.mem_total);
	v.swap_shown = swap_view && f->swap_accounted;
	v.swap_total = meminfo_host_kb(lines, "SwapTotal");
	v.swap_free = meminfo_host_kb(lines, "SwapFree");
	if (v.swap_shown)
		swap_view_of(v.swap_total, f, &v.swap_total, &v.swap_free);
	*ret = v;
	return 0;
}

enum meminfo_rule {
	MEMINFO_HOST,          /* the host's value, at most MemTotal */
	MEMINFO_UNCOUNTED,     /* a part of what the cgroup is charged for that it
	                        * does not count apart: 0. Not the host's value at
	                        * most the usage: that grows with anything the
	                        * cgroup touches, and free and psutil take Buffers
	                        * and SReclaimable out of "used" */
	MEMINFO_HOST_SIZE,     /* the host's value: a page size, not an amount */
	MEMINFO_MEM_TOTAL,
	MEMINFO_MEM_FREE,
	MEMINFO_MEM_AVAILABLE,
	MEMINFO_SWAP_TOTAL,
	MEMINFO_SWAP_FREE,
	MEMINFO_COMMIT,        /* the host's value, at most MemTotal + SwapTotal */
	MEMINFO_STAT,          /* the sum of memory.stat keys; without one, MEMINFO_UNCOUNTED */
};

/* meminfo line <- its source. A line not here follows MEMINFO_HOST. */
static const struct meminfo_source {
	const char *line;
	enum meminfo_rule rule;
	const char *keys[3]; /* MEMINFO_STAT: NULL-terminated */
} meminfo_sources[] = {
	{ "MemTotal", MEMINFO_MEM_TOTAL, { NULL } },
	{ "MemFree", MEMINFO_MEM_FREE, { NULL } },
	{ "MemAvailable", MEMINFO_MEM_AVAILABLE, { NULL } },
	{ "SwapTotal", MEMINFO_SWAP_TOTAL, { NULL } },
	{ "SwapFree", MEMINFO_SWAP_FREE, { NULL } },
	{ "CommitLimit", MEMINFO_COMMIT, { NULL } },
	{ "Committed_AS", MEMINFO_COMMIT, { NULL } },
	{ "Hugepagesize", MEMINFO_HOST_SIZE, { NULL } },
	{ "Buffers", MEMINFO_UNCOUNTED, { NULL } },
	{ "Mlocked", MEMINFO_UNCOUNTED, { NULL } },
	{ "Cached", MEMINFO_STAT, { "file" } },
	{ "SwapCached", MEMINFO_STAT, { "swapcached" } },
	{ "Active", MEMINFO_STAT, { "active_anon", "active_file" } },
	{ "Inactive", MEMINFO_STAT, { "inactive_anon", "inactive_file" } },
	{ "Active(anon)", MEMINFO_STAT, { "active_anon" } },
	{ "Inactive(anon)", MEMINFO_STAT, { "inactive_anon" } },
	{ "Active(file)", MEMINFO_STAT, { "active_file" } },
	{ "Inactive(file)", MEMINFO_STAT, { "inactive_file" } },
	{ "Unevictable", MEMINFO_STAT, { "unevictable" } },
	{ "Zswap", MEMINFO_STAT, { "zswap" } },
	{ "Zswapped", MEMINFO_STAT, { "zswapped" } },
	{ "Dirty", MEMINFO_STAT, { "file_dirty" } },
	{ "Writeback", MEMINFO_STAT, { "file_writeback" } },
	{ "AnonPages", MEMINFO_STAT, { "anon" } },
	{ "Mapped", MEMINFO_STAT, { "file_mapped" } },
	{ "Shmem", MEMINFO_STAT, { "shmem" } },
	{ "KReclaimable", MEMINFO_STAT, { "slab_reclaimable" } },
	{ "Slab", MEMINFO_STAT, { "slab" } },
	{ "SReclaimable", MEMINFO_STAT, { "slab_reclaimable" } },
	{ "SUnreclaim", MEMINFO_STAT, { "slab_unreclaimable" } },
	{ "KernelStack", MEMINFO_STAT, { "kernel_stack" } },
	{ "PageTables", MEMINFO_STAT, { "pagetables" } },
	{ "SecPageTables", MEMINFO_STAT, { "sec_pagetables" } },
	{ "Percpu", MEMINFO_STAT, { "percpu" } },
	{ "AnonHugePages", MEMINFO_STAT, { "anon_thp" } },
	{ "ShmemHugePages", MEMINFO_STAT, { "shmem_thp" } },
	{ "FileHugePages", MEMINFO_STAT, { "file_thp" } },
};

static const struct meminfo_source *meminfo_source_of(const struct meminfo_line *l)
{
	for (size_t i = 0; i < G_N_ELEMENTS(meminfo_sources); i++)
		if (name_is(l->text, l->name_len, meminfo_sources[i].line))
			return &meminfo_sources[i];
	return NULL;
}

/* The sum of keys' values in kB; FALSE if the cgroup lacks one of them. */
static gboolean stat_sum_kb(const struct mem_figures *f, const char *const *keys, uint64_t *ret)
{
	uint64_t sum = 0;
	for (; *keys; keys++) {
		uint64_t bytes;
		if (!mem_figures_stat(f, *keys, &bytes))
			return FALSE;
		sum = add_ceil(sum, bytes);
	}
	*ret = kb(sum);
	return TRUE;
}

static uint64_t meminfo_value(const struct meminfo_line *l, const struct mem_figures *f,
			      const struct meminfo_view *v)
{
	const struct meminfo_source *s = meminfo_source_of(l);
	enum meminfo_rule rule = s ? s->rule : MEMINFO_HOST;
	uint64_t sum;

	switch (rule) {
	case MEMINFO_HOST:
		return MIN(l->value, v->mem_total);
	case MEMINFO_HOST_SIZE:
		return l->value;
	case MEMINFO_UNCOUNTED:
		return 0;
	case MEMINFO_MEM_TOTAL:
		return v->mem_total;
	case MEMINFO_MEM_FREE:
		return v->mem_free;
	case MEMINFO_MEM_AVAILABLE:
		return v->mem_available;
	case MEMINFO_SWAP_TOTAL:
		return v->swap_shown ? v->swap_total : l->value;
	case MEMINFO_SWAP_FREE:
		return v->swap_shown ? v->swap_free : l->value;
	case MEMINFO_COMMIT:
		return MIN(l->value, add_ceil(v->mem_total, v->swap_total));
	case MEMINFO_STAT:
		return stat_sum_kb(f, s->keys, &sum) ? sum : 0;
	}
	g_assert_not_reached();
}

int memview_render_meminfo(const char *host, const struct mem_figures *f, gboolean swap_view, GString **ret)
{
	g_auto(GStrv) text_lines = split_lines(host);
	g_autoptr(GArray) lines = NULL;
	struct meminfo_view v;

	if (parse_meminfo(text_lines, &lines) < 0 || meminfo_view_of(lines, f, swap_view, &v) < 0)
		return -EINVAL;
	g_autoptr(GString) out = g_string_new(NULL);
	for (guint i = 0; i < lines->len; i++) {
		const struct meminfo_line *l = &g_array_index(lines, struct meminfo_line, i);
		if (!l->kb && meminfo_source_of(l))
			return -EINVAL; /* a size the view rewrites, without its unit */
		if (!l->kb) {
			g_string_append_printf(out, "%s\n", l->text);
			continue;
		}
		/* The kernel's shape: "Name:" in 16 columns, the value in 8. */
		g_string_append_printf(out, "%-16.*s%8" PRIu64 " kB\n", (int)l->name_len + 1, l->text,
				       meminfo_value(l, f, &v));
	}
	*ret = g_steal_pointer(&out);
	return 0;
}

/* --------------------------------------------------------------- swaps -- */

/* A column of a swaps line as the kernel ends it: with a tab, and another
 * one under 8 characters, to reach the header's next tab stop. */
static void append_swaps_column(GString *out, const char *field)
{
	g_string_append_printf(out, "%s\t%s", field, strlen(field) < 8 ? "\t" : "");
}

/* One line for the caller's swap: the first host device's name, type and
 * priority, the cgroup's size and use (kB). */
static int append_swaps_device(GString *out, const char *host_line, uint64_t size, uint64_t used)
{
	g_auto(GStrv) all = g_strsplit_set(host_line, " \t", -1);
	g_autoptr(GPtrArray) fields = g_ptr_array_new();
	for (char **s = all; *s; s++)
		if (**s)
			g_ptr_array_add(fields, *s);
	if (fields->len != 5) /* name, type, size, used, priority */
		return -EINVAL;
	const char *name = g_ptr_array_index(fields, 0);
	size_t len = strlen(name);
	g_autofree char *size_text = g_strdup_printf("%" PRIu64, size);
	g_autofree char *used_text = g_strdup_printf("%" PRIu64, used);

	g_string_append_printf(out, "%s%*s", name, len < 40 ? (int)(40 - len) : 1, "");
	append_swaps_column(out, g_ptr_array_index(fields, 1));
	append_swaps_column(out, size_text);
	append_swaps_column(out, used_text);
	g_string_append_printf(out, "%s\n", (const char *)g_ptr_array_index(fields, 4));
	return 0;
}

int memview_render_swaps(const char *host, const char *host_meminfo, const struct mem_figures *f,
			 GString **ret)
{
	g_auto(GStrv) lines = split_lines(host);
	if (!lines[0] || strcmp(lines[0], SWAPS_HEADER) != 0)
		return -EINVAL;
	if (!f->swap_accounted || !f->swap_limited) {
		*ret = g_string_new(host);
		return 0;
	}
	g_auto(GStrv) meminfo_lines = split_lines(host_meminfo);
	g_autoptr(GArray) meminfo = NULL;
	if (parse_meminfo(meminfo_lines, &meminfo) < 0)
		return -EINVAL;
	uint64_t size, swap_free;
	swap_view_of(meminfo_host_kb(meminfo, "SwapTotal"), f, &size, &swap_free);
	g_autoptr(GString) out = g_string_new(SWAPS_HEADER "\n");
	if (lines[1] && append_swaps_device(out, lines[1], size, size - swap_free) < 0)
		return -EINVAL;
	*ret = g_steal_pointer(&out);
	return 0;
}

/* -------------------------------------------------------------- vmstat -- */

/* What a vmstat line counts in, memory.stat's bytes divided by it. */
enum vmstat_unit {
	VMSTAT_EVENTS,
	VMSTAT_PAGES,
	VMSTAT_KB,
	VMSTAT_THPS,
};

/* vmstat line <- memory.stat key; the key NULL: what the limit leaves free.
 * A line not here is the host's. */
static const struct vmstat_source {
	const char *line;
	const char *key;
	enum vmstat_unit unit;
} vmstat_sources[] = {
#define EVENT(name) { name, name, VMSTAT_EVENTS }
	EVENT("pgfault"),
	EVENT("pgmajfault"),
	EVENT("pswpin"),
	EVENT("pswpout"),
	EVENT("pgrefill"),
	EVENT("pgscan"),
	EVENT("pgsteal"),
	EVENT("pgscan_kswapd"),
	EVENT("pgscan_direct"),
	EVENT("pgscan_khugepaged"),
	EVENT("pgsteal_kswapd"),
	EVENT("pgsteal_direct"),
	EVENT("pgsteal_khugepaged"),
	EVENT("pgactivate"),
	EVENT("pgdeactivate"),
	EVENT("pglazyfree"),
	EVENT("pglazyfreed"),
	EVENT("zswpin"),
	EVENT("zswpout"),
	EVENT("zswpwb"),
	EVENT("thp_fault_alloc"),
	EVENT("thp_collapse_alloc"),
	EVENT("thp_swpout"),
	EVENT("thp_swpout_fallback"),
	EVENT("workingset_refault_anon"),
	EVENT("workingset_refault_file"),
	EVENT("workingset_activate_anon"),
	EVENT("workingset_activate_file"),
	EVENT("workingset_restore_anon"),
	EVENT("workingset_restore_file"),
	EVENT("workingset_nodereclaim"),
#undef EVENT
	{ "nr_free_pages", NULL, VMSTAT_PAGES },
	{ "nr_anon_pages", "anon", VMSTAT_PAGES },
	{ "nr_mapped", "file_mapped", VMSTAT_PAGES },
	{ "nr_file_pages", "file", VMSTAT_PAGES },
	{ "nr_dirty", "file_dirty", VMSTAT_PAGES },
	{ "nr_writeback", "file_writeback", VMSTAT_PAGES },
	{ "nr_shmem", "shmem", VMSTAT_PAGES },
	{ "nr_active_anon", "active_anon", VMSTAT_PAGES },
	{ "nr_inactive_anon", "inactive_anon", VMSTAT_PAGES },
	{ "nr_active_file", "active_file", VMSTAT_PAGES },
	{ "nr_inactive_file", "inactive_file", VMSTAT_PAGES },
	{ "nr_unevictable", "unevictable", VMSTAT_PAGES },
	{ "nr_slab_reclaimable", "slab_reclaimable", VMSTAT_PAGES },
	{ "nr_slab_unreclaimable", "slab_unreclaimable", VMSTAT_PAGES },
	{ "nr_page_table_pages", "pagetables", VMSTAT_PAGES },
	{ "nr_sec_page_table_pages", "sec_pagetables", VMSTAT_PAGES },
	{ "nr_swapcached", "swapcached", VMSTAT_PAGES },
	{ "nr_kernel_stack", "kernel_stack", VMSTAT_KB },
	{ "nr_anon_transparent_hugepages", "anon_thp", VMSTAT_THPS },
	{ "nr_shmem_hugepages", "shmem_thp", VMSTAT_THPS },
	{ "nr_file_hugepages", "file_thp", VMSTAT_THPS },
};

static uint64_t vmstat_unit_size(enum vmstat_unit unit)
{
	switch (unit) {
	case VMSTAT_EVENTS:
		return 1;
	case VMSTAT_PAGES:
		return (uint64_t)sysconf(_SC_PAGESIZE);
	case VMSTAT_KB:
		return 1024;
	case VMSTAT_THPS:
		return THP_BYTES;
	}
	g_assert_not_reached();
}

/* vmstat_sources by line name, made once: a vmstat has some 200 lines. */
static GHashTable *vmstat_index(void)
{
	static gsize made;
	if (g_once_init_enter(&made)) {
		GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
		for (size_t i = 0; i < G_N_ELEMENTS(vmstat_sources); i++)
			g_hash_table_insert(t, (gpointer)vmstat_sources[i].line, (gpointer)&vmstat_sources[i]);
		g_once_init_leave(&made, (gsize)t);
	}
	return (GHashTable *)made;
}

/* The cgroup's value of the line whose name is the first name_len bytes
 * of line (a copy of the host's, a blank after the name): FALSE if the
 * line is the host's. */
static gboolean vmstat_value(char *line, size_t name_len, const struct mem_figures *f, uint64_t *ret)
{
	char blank = line[name_len];
	line[name_len] = '\0';
	const struct vmstat_source *s = g_hash_table_lookup(vmstat_index(), line);
	line[name_len] = blank;
	if (!s)
		return FALSE;
	uint64_t amount = sub_floor(f->limit, f->usage);
	if (s->key && !mem_figures_stat(f, s->key, &amount))
		return FALSE;
	*ret = amount / vmstat_unit_size(s->unit);
	return TRUE;
}

int memview_render_vmstat(const char *host, const struct mem_figures *f, GString **ret)
{
	g_auto(GStrv) lines = split_lines(host);
	g_autoptr(GString) out = g_string_new(NULL);

	for (char **l = lines; *l; l++) {
		const char *space = strchr(*l, ' ');
		uint64_t value;
		if (!space || space == *l || !parse_decimal(space + 1, &value))
			return -EINVAL;
		size_t name_len = (size_t)(space - *l);
		if (vmstat_value(*l, name_len, f, &value)) {
			char digits[24];
			g_string_append_len(out, *l, (gssize)name_len + 1);
			g_string_append_len(out, digits, g_snprintf(digits, sizeof(digits), "%" PRIu64, value));
		} else {
			g_string_append(out, *l);
		}
		g_string_append_c(out, '\n');
	}
	*ret = g_steal_pointer(&out);
	return 0;
}
