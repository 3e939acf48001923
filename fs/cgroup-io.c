/* A cgroup's I/O counters (cgroup.h): v2's io.stat, v1's blkio files. */
#include "cgroup-internal.h"

#include <errno.h>
#include <string.h>

static gboolean parse_device(const char *text, unsigned *major, unsigned *minor)
{
	guint64 a, b;
	g_auto(GStrv) f = g_strsplit(text, ":", -1);
	if (g_strv_length(f) != 2 || !g_ascii_string_to_unsigned(f[0], 10, 0, G_MAXUINT32, &a, NULL) ||
	    !g_ascii_string_to_unsigned(f[1], 10, 0, G_MAXUINT32, &b, NULL))
		return FALSE;
	*major = (unsigned)a;
	*minor = (unsigned)b;
	return TRUE;
}

const struct cgroup_io_device *cgroup_io_device_find(const GArray *devs, unsigned major, unsigned minor)
{
	for (guint i = 0; i < devs->len; i++) {
		const struct cgroup_io_device *d = &g_array_index(devs, struct cgroup_io_device, i);
		if (d->major == major && d->minor == minor)
			return d;
	}
	return NULL;
}

/* ret's entry for major:minor, added if new. */
static struct cgroup_io_device *device_in(GArray *ret, unsigned major, unsigned minor)
{
	const struct cgroup_io_device *had = cgroup_io_device_find(ret, major, minor);
	if (had)
		return (struct cgroup_io_device *)had;
	const struct cgroup_io_device d = { major, minor, { 0 }, { 0 } };
	g_array_append_val(ret, d);
	return &g_array_index(ret, struct cgroup_io_device, ret->len - 1);
}

int cgroup_parse_io_stat(const char *text, GArray *ret)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **line = lines; *line; line++) {
		if (!**line)
			continue;
		g_auto(GStrv) f = g_strsplit(*line, " ", -1);
		unsigned major, minor;
		if (!parse_device(f[0], &major, &minor))
			return -EINVAL;
		struct cgroup_io_device *d = device_in(ret, major, minor);
		const struct {
			const char *key;
			uint64_t *value;
		} keys[] = { { "rbytes", &d->bytes[CGROUP_IO_READ] },	 { "wbytes", &d->bytes[CGROUP_IO_WRITE] },
			     { "dbytes", &d->bytes[CGROUP_IO_DISCARD] }, { "rios", &d->ios[CGROUP_IO_READ] },
			     { "wios", &d->ios[CGROUP_IO_WRITE] },	 { "dios", &d->ios[CGROUP_IO_DISCARD] } };
		for (char **kv = f + 1; *kv; kv++) {
			const char *eq = strchr(*kv, '=');
			if (!eq)
				return -EINVAL;
			for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
				if ((size_t)(eq - *kv) == strlen(keys[k].key) && strncmp(*kv, keys[k].key, eq - *kv) == 0 &&
				    !cgroup_parse_u64(eq + 1, keys[k].value))
					return -EINVAL;
		}
	}
	return 0;
}

/* One of the v1 files: per device, its "Read", "Write" and "Discard"
 * counts into requests (ios) or bytes (!ios). */
static int parse_blkio_file(const char *text, GArray *ret, gboolean ios)
{
	static const char *const dirs[CGROUP_IO_DIRS] = { "Read", "Write", "Discard" };
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **line = lines; *line; line++) {
		g_auto(GStrv) f = g_strsplit(*line, " ", -1);
		guint n = g_strv_length(f);
		uint64_t value;
		unsigned major, minor;
		if (!**line || (n == 2 && strcmp(f[0], "Total") == 0 && cgroup_parse_u64(f[1], &value)))
			continue; /* the sum over devices */
		if (n != 3 || !parse_device(f[0], &major, &minor) || !cgroup_parse_u64(f[2], &value))
			return -EINVAL;
		for (int d = 0; d < CGROUP_IO_DIRS; d++)
			if (strcmp(f[1], dirs[d]) == 0) {
				struct cgroup_io_device *dev = device_in(ret, major, minor);
				(ios ? dev->ios : dev->bytes)[d] = value;
			}
	}
	return 0;
}

int cgroup_parse_blkio(const char *serviced, const char *bytes, GArray *ret)
{
	int r = parse_blkio_file(serviced, ret, TRUE);
	return r < 0 ? r : parse_blkio_file(bytes, ret, FALSE);
}

int cgroup_read_io(const struct cgroup_hierarchy *h, const char *dir, GArray *ret, char **ret_culprit)
{
	gboolean v2 = h->version == CGROUP_V2;
	const char *first = v2 ? "io.stat" : "blkio.throttle.io_serviced_recursive";
	const char *second = v2 ? NULL : "blkio.throttle.io_service_bytes_recursive";
	const char *reading = first;
	g_autofree char *a = NULL, *b = NULL, *level = NULL;
	int r = cgroup_read_text(h, dir, first, &a);
	if (r == -ENOENT && (r = cgroup_charged_level(h, dir, first, &level)) == 0) {
		dir = level; /* its I/O is counted there */
		r = cgroup_read_text(h, dir, first, &a);
	}
	if (r == 0 && second)
		r = cgroup_read_text(h, dir, (reading = second), &b);
	if (r < 0)
		return r == -EINVAL ? cgroup_bad(dir, reading, ret_culprit) : r;
	if ((v2 ? cgroup_parse_io_stat(a, ret) : cgroup_parse_blkio(a, b, ret)) < 0)
		return cgroup_bad(dir, first, ret_culprit);
	return 0;
}
