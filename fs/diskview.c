#include "diskview.h"

#include <errno.h>
#include <string.h>

/* The fields of a diskstats line after the name that the cgroup counts,
 * counted from 1 as in the kernel's documentation (iostats.rst). */
enum {
	FIELD_READS = 1,
	FIELD_SECTORS_READ = 3,
	FIELD_WRITES = 5,
	FIELD_SECTORS_WRITTEN = 7,
	FIELD_DISCARDS = 12,
	FIELD_SECTORS_DISCARDED = 14,
};
/* The fewest fields after the name a kernel writes (before 4.18). */
#define MIN_FIELDS 11

struct line {
	unsigned major, minor;
	const char *name;
	guint fields; /* after the name */
};

static gboolean parse_line(char **words, struct line *ret)
{
	guint64 major, minor, value;
	guint n = g_strv_length(words);
	if (n < 3 + MIN_FIELDS || !g_ascii_string_to_unsigned(words[0], 10, 0, G_MAXUINT32, &major, NULL) ||
	    !g_ascii_string_to_unsigned(words[1], 10, 0, G_MAXUINT32, &minor, NULL))
		return FALSE;
	for (guint i = 3; i < n; i++)
		if (!g_ascii_string_to_unsigned(words[i], 10, 0, G_MAXUINT64, &value, NULL))
			return FALSE;
	*ret = (struct line){ (unsigned)major, (unsigned)minor, words[2], n - 3 };
	return TRUE;
}

/* Is name a partition of disk: disk's name, then digits ('p' and digits
 * if disk's name ends in a digit)? */
static gboolean partition_of(const char *name, const char *disk)
{
	size_t n = strlen(disk);
	if (n == 0 || strncmp(name, disk, n) != 0)
		return FALSE;
	const char *rest = name + n;
	if (g_ascii_isdigit(disk[n - 1]) && *rest++ != 'p')
		return FALSE;
	if (!*rest)
		return FALSE;
	for (; *rest; rest++)
		if (!g_ascii_isdigit(*rest))
			return FALSE;
	return TRUE;
}

static void append_own(GString *out, const struct line *l, const struct cgroup_io_device *d)
{
	const struct {
		guint field;
		uint64_t value;
	} counted[] = {
		{ FIELD_READS, d->ios[CGROUP_IO_READ] },
		{ FIELD_SECTORS_READ, d->bytes[CGROUP_IO_READ] / 512 },
		{ FIELD_WRITES, d->ios[CGROUP_IO_WRITE] },
		{ FIELD_SECTORS_WRITTEN, d->bytes[CGROUP_IO_WRITE] / 512 },
		{ FIELD_DISCARDS, d->ios[CGROUP_IO_DISCARD] },
		{ FIELD_SECTORS_DISCARDED, d->bytes[CGROUP_IO_DISCARD] / 512 },
	};
	g_string_append_printf(out, "%4u %7u %s", l->major, l->minor, l->name);
	for (guint f = 1; f <= l->fields; f++) {
		uint64_t value = 0;
		for (size_t c = 0; c < G_N_ELEMENTS(counted); c++)
			if (counted[c].field == f)
				value = counted[c].value;
		g_string_append_printf(out, " %" G_GUINT64_FORMAT, value);
	}
	g_string_append_c(out, '\n');
}

struct host_line {
	struct line l;   /* l.name points into name */
	char *name;
	char *text;      /* the host's line, as it is */
	gboolean partition; /* of the last whole disk before it */
};

struct diskview_host {
	GArray *lines; /* struct host_line */
};

static void host_line_clear(gpointer data)
{
	struct host_line *h = data;
	g_free(h->name);
	g_free(h->text);
}

void diskview_host_free(struct diskview_host *h)
{
	if (!h)
		return;
	g_array_unref(h->lines);
	g_free(h);
}

/* One line of the host's text into ret (its name and text taken). */
static gboolean parse_host_line(const char *text, const char *disk, struct host_line *ret)
{
	g_autofree char *copy = g_strstrip(g_strdup(text));
	g_auto(GStrv) words = g_strsplit_set(copy, " \t", -1);
	/* several blanks between the numbers: drop the empty words */
	char **w = words, **to = words;
	for (; *w; w++)
		if (**w)
			*to++ = *w;
		else
			g_free(*w);
	*to = NULL;
	struct line l;
	if (!parse_line(words, &l))
		return FALSE;
	*ret = (struct host_line){ l, g_strdup(l.name), g_strdup(text), disk && partition_of(l.name, disk) };
	ret->l.name = ret->name;
	return TRUE;
}

int diskview_host_parse(const char *host, struct diskview_host **ret)
{
	g_auto(GStrv) lines = g_strsplit(host, "\n", -1);
	g_autoptr(GArray) parsed = g_array_new(FALSE, FALSE, sizeof(struct host_line));
	g_array_set_clear_func(parsed, host_line_clear);
	const char *disk = NULL; /* the last whole disk's name */
	for (char **text = lines; *text; text++) {
		if (!**text)
			continue;
		struct host_line h;
		if (!parse_host_line(*text, disk, &h))
			return -EINVAL;
		g_array_append_val(parsed, h);
		if (!h.partition)
			disk = g_array_index(parsed, struct host_line, parsed->len - 1).name;
	}
	*ret = g_new(struct diskview_host, 1);
	(*ret)->lines = g_steal_pointer(&parsed);
	return 0;
}

/* The host's line h as it is. */
static void append_host(GString *out, const struct host_line *h)
{
	g_string_append(out, h->text);
	g_string_append_c(out, '\n');
}

GString *diskview_render_host(const struct diskview_host *host, const GArray *devs, enum diskview_others others)
{
	GString *out = g_string_new(NULL);
	gboolean disk_own = FALSE; /* the last whole disk's line is the cgroup's */
	for (guint i = 0; i < host->lines->len; i++) {
		const struct host_line *h = &g_array_index(host->lines, struct host_line, i);
		if (h->partition) {
			if (!disk_own)
				append_host(out, h);
			continue;
		}
		static const struct cgroup_io_device unused;
		const struct cgroup_io_device *d = cgroup_io_device_find(devs, h->l.major, h->l.minor);
		if (!d && others == DISKVIEW_OTHERS_ZERO)
			d = &unused;
		disk_own = d != NULL;
		if (d)
			append_own(out, &h->l, d);
		else
			append_host(out, h);
	}
	return out;
}

int diskview_render(const char *host, const GArray *devs, enum diskview_others others, GString **ret)
{
	g_autoptr(diskview_host) parsed = NULL;
	int r = diskview_host_parse(host, &parsed);
	if (r == 0)
		*ret = diskview_render_host(parsed, devs, others);
	return r;
}
