/* The CPU view's renderers: the host's text in, the caller's out, with
 * host CPU numbers restricted to the CPUs shown (fs/cpuview.h). Pure. */
#include "cpuview.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- renderers -- */

int cpu_map_view_cpu(const struct cpu_map *m, unsigned host_cpu)
{
	unsigned lo = 0, hi = m->count; /* host[] ascends (cpuset_members) */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->host[mid] == host_cpu)
			return (int)mid;
		if (m->host[mid] < host_cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* "key<tabs>: value": is the key (blanks around it aside) key? Then also
 * where the value starts. */
static gboolean field_is(const char *line, const char *key, const char **ret_value)
{
	const char *colon = strchr(line, ':');
	if (!colon)
		return FALSE;
	const char *start = line, *end = colon;
	while (start < end && g_ascii_isspace(*start))
		start++;
	while (end > start && g_ascii_isspace(end[-1]))
		end--;
	size_t len = strlen(key);
	if ((size_t)(end - start) != len || memcmp(start, key, len) != 0)
		return FALSE;
	*ret_value = colon[1] == ' ' ? colon + 2 : colon + 1;
	return TRUE;
}

static const char *block_field(char **lines, const char *key)
{
	const char *value;
	for (char **l = lines; *l; l++)
		if (field_is(*l, key, &value))
			return value;
	return NULL;
}

struct cpuinfo_block {
	char **lines;
	const char *package; /* "physical id", NULL where the shape has none */
	const char *core;    /* "core id" */
};

/* The CPUs shown of one package, and their distinct cores. */
struct package_count {
	unsigned siblings;
	GHashTable *cores; /* core id strings */
};

static void package_count_free(gpointer p)
{
	struct package_count *c = p;
	g_hash_table_unref(c->cores);
	g_free(c);
}

static const char *package_key(const struct cpuinfo_block *b)
{
	return b->package ? b->package : "";
}

/* Counted once per render: a CPU's siblings and cores are those of its
 * package among the CPUs shown. NULL if a shown CPU has no block. */
static GHashTable *count_packages(const struct cpuinfo_block *by_view, unsigned count)
{
	GHashTable *packages = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, package_count_free);
	for (unsigned v = 0; v < count; v++) {
		if (!by_view[v].lines) {
			g_hash_table_unref(packages);
			return NULL;
		}
		struct package_count *c = g_hash_table_lookup(packages, package_key(&by_view[v]));
		if (!c) {
			c = g_new0(struct package_count, 1);
			c->cores = g_hash_table_new(g_str_hash, g_str_equal);
			g_hash_table_insert(packages, (gpointer)package_key(&by_view[v]), c);
		}
		c->siblings++;
		if (by_view[v].core)
			g_hash_table_add(c->cores, (gpointer)by_view[v].core);
	}
	return packages;
}

int cpuview_render_cpuinfo(const char *host, const struct cpu_map *m, GString **ret)
{
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	g_auto(GStrv) blocks = g_strsplit(host, "\n\n", -1);
	guint nblocks = g_strv_length(blocks);
	g_autofree struct cpuinfo_block *by_view = g_new0(struct cpuinfo_block, m->count);
	g_autoptr(GPtrArray) to_free = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	g_autoptr(GString) tail = g_string_new(NULL); /* blocks that are no CPU's */

	for (guint b = 0; b < nblocks; b++) {
		if (blocks[b][0] == '\0')
			continue;
		char **lines = g_strsplit(blocks[b], "\n", -1);
		g_ptr_array_add(to_free, lines);
		const char *proc = block_field(lines, "processor");
		guint64 cpu;
		if (!proc || !g_ascii_string_to_unsigned(proc, 10, 0, CPUSET_MAX - 1, &cpu, NULL)) {
			g_string_append_printf(tail, "%s\n\n", blocks[b]);
			continue;
		}
		int v = cpu_map_view_cpu(m, (unsigned)cpu);
		if (v >= 0)
			by_view[v] = (struct cpuinfo_block){ lines, block_field(lines, "physical id"),
							     block_field(lines, "core id") };
	}
	g_autoptr(GHashTable) packages = count_packages(by_view, m->count);
	if (!packages)
		return -EINVAL; /* a shown CPU without a block */
	g_autoptr(GString) out = g_string_new(NULL);
	for (unsigned v = 0; v < m->count; v++) {
		const struct package_count *c = g_hash_table_lookup(packages, package_key(&by_view[v]));
		for (char **l = by_view[v].lines; *l; l++) {
			const char *value;
			unsigned number;
			if (field_is(*l, "processor", &value))
				number = m->host[v];
			else if (field_is(*l, "siblings", &value))
				number = c->siblings;
			else if (field_is(*l, "cpu cores", &value))
				number = MAX(g_hash_table_size(c->cores), 1);
			else {
				g_string_append(out, *l);
				g_string_append_c(out, '\n');
				continue;
			}
			g_string_append_printf(out, "%.*s%u\n", (int)(value - *l), *l, number);
		}
		g_string_append_c(out, '\n');
	}
	g_string_append_len(out, tail->str, (gssize)tail->len);
	*ret = g_steal_pointer(&out);
	return 0;
}

/* "cpuN" at the start of a /proc/stat line: N, else -1 (-2 for "cpu "). */
static int stat_cpu_number(const char *line, const char **ret_rest)
{
	if (strncmp(line, "cpu", 3) != 0)
		return -1;
	if (line[3] == ' ') {
		*ret_rest = line + 3;
		return -2;
	}
	char *end;
	if (!g_ascii_isdigit(line[3]))
		return -1;
	unsigned long n = strtoul(line + 3, &end, 10);
	if (*end != ' ' || n >= CPUSET_MAX)
		return -1;
	*ret_rest = end;
	return (int)n;
}

int cpuview_render_stat(const char *host, const struct cpu_map *m, GString **ret)
{
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	g_auto(GStrv) lines = g_strsplit(host, "\n", -1);
	g_autofree const char **shown = g_new0(const char *, m->count); /* fields of view CPU i */
	guint64 sum[16] = { 0 };
	guint nfields = 0;

	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		int v = cpu >= 0 ? cpu_map_view_cpu(m, (unsigned)cpu) : -1;
		if (v >= 0)
			shown[v] = rest;
	}
	for (unsigned v = 0; v < m->count; v++) {
		if (!shown[v])
			return -EINVAL;
		g_autofree char *fields = g_strstrip(g_strdup(shown[v]));
		g_auto(GStrv) f = g_strsplit(fields, " ", -1);
		guint n = g_strv_length(f);
		if (n == 0 || n > G_N_ELEMENTS(sum) || (nfields && n != nfields))
			return -EINVAL;
		nfields = n;
		for (guint i = 0; i < n; i++) {
			guint64 x;
			if (!g_ascii_string_to_unsigned(f[i], 10, 0, G_MAXUINT64, &x, NULL))
				return -EINVAL;
			sum[i] += x;
		}
	}
	g_autoptr(GString) out = g_string_new(NULL);
	gboolean cpus_written = FALSE;
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_string_append(out, "cpu ");
			for (guint i = 0; i < nfields; i++)
				g_string_append_printf(out, " %" G_GUINT64_FORMAT, sum[i]);
		} else if (cpu >= 0) {
			if (cpus_written)
				continue;
			for (unsigned v = 0; v < m->count; v++)
				g_string_append_printf(out, "cpu%u%s%s", m->host[v], shown[v], v + 1 < m->count ? "\n" : "");
			cpus_written = TRUE;
		} else {
			g_string_append(out, *l);
		}
		if (l[1])
			g_string_append_c(out, '\n');
	}
	*ret = g_steal_pointer(&out);
	return 0;
}

/* The fields of a cpu line: user nice system idle, the rest 0. */
static void append_cpu_fields(GString *out, guint nfields, const cpu_ticks *row)
{
	const uint64_t head[] = { row->f[CPU_TICKS_USER], 0, row->f[CPU_TICKS_SYSTEM], row->f[CPU_TICKS_IDLE] };
	for (guint i = 0; i < nfields; i++)
		g_string_append_printf(out, " %" G_GUINT64_FORMAT, i < G_N_ELEMENTS(head) ? head[i] : 0);
}

int cpuview_render_stat_usage(const char *stat, unsigned n, const cpu_ticks *rows, GString **ret)
{
	g_auto(GStrv) lines = g_strsplit(stat, "\n", -1);
	guint nfields = 0;
	unsigned seen = 0;
	int last = -1;
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_autofree char *fields = g_strstrip(g_strdup(rest));
			g_auto(GStrv) f = g_strsplit(fields, " ", -1);
			nfields = g_strv_length(f);
		} else if (cpu >= 0) {
			if (cpu <= last)
				return -EINVAL; /* not ascending */
			last = cpu;
			seen++;
		}
	}
	if (n == 0 || seen != n || nfields < 4)
		return -EINVAL;
	g_autoptr(GString) out = g_string_new(NULL);
	unsigned i = 0;
	for (char **l = lines; *l; l++) {
		const char *rest;
		int cpu = stat_cpu_number(*l, &rest);
		if (cpu == -2) {
			g_string_append(out, "cpu ");
			append_cpu_fields(out, nfields, &rows[0]);
		} else if (cpu >= 0) {
			g_string_append_printf(out, "cpu%d", cpu);
			append_cpu_fields(out, nfields, &rows[1 + i++]);
		} else {
			g_string_append(out, *l);
		}
		if (l[1])
			g_string_append_c(out, '\n');
	}
	*ret = g_steal_pointer(&out);
	return 0;
}

/* The CPUs m shows. */
static void shown_set(const struct cpu_map *m, struct cpuset *ret)
{
	cpuset_clear(ret);
	for (unsigned v = 0; v < m->count; v++)
		cpuset_add(ret, m->host[v]);
}

GString *cpuview_render_online(const struct cpu_map *m)
{
	struct cpuset shown;
	shown_set(m, &shown);
	g_autofree char *list = cpuset_format_list(&shown);
	GString *out = g_string_new(list);
	g_string_append_c(out, '\n');
	return out;
}

int cpuview_render_offline(const char *present, const char *offline, const struct cpu_map *m, GString **ret)
{
	struct cpuset out, off, shown;
	if (cpuset_parse_list(present, &out) < 0 || cpuset_parse_list(offline, &off) < 0)
		return -EINVAL;
	shown_set(m, &shown);
	for (unsigned w = 0; w < G_N_ELEMENTS(out.bits); w++)
		out.bits[w] = (out.bits[w] & ~shown.bits[w]) | off.bits[w];
	g_autofree char *list = cpuset_format_list(&out);
	*ret = g_string_new(list);
	g_string_append_c(*ret, '\n');
	return 0;
}

static int host_set(const char *host, gboolean mask, struct cpuset *ret)
{
	return mask ? cpuset_parse_mask(host, ret) : cpuset_parse_list(host, ret);
}

static int render_set(const char *host, const struct cpu_map *m, gboolean mask, GString **ret)
{
	struct cpuset in, out;
	if (m->is_host) {
		*ret = g_string_new(host);
		return 0;
	}
	if (host_set(host, mask, &in) < 0)
		return -EINVAL;
	cpuset_clear(&out);
	for (unsigned v = 0; v < m->count; v++)
		if (cpuset_has(&in, m->host[v]))
			cpuset_add(&out, m->host[v]);
	unsigned words = 1;
	for (const char *p = host; *p; p++)
		words += *p == ',';
	g_autofree char *text = mask ? cpuset_format_mask(&out, words) : cpuset_format_list(&out);
	*ret = g_string_new(text);
	g_string_append_c(*ret, '\n');
	return 0;
}

int cpuview_render_list(const char *host, const struct cpu_map *m, GString **ret)
{
	return render_set(host, m, FALSE, ret);
}

int cpuview_render_mask(const char *host, const struct cpu_map *m, GString **ret)
{
	return render_set(host, m, TRUE, ret);
}
