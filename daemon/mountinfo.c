/* The daemon's mount table. */
#include "mountinfo.h"

#include "procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <string.h>

static void mount_entry_free(gpointer p)
{
	struct mount_entry *e = p;
	mountinfo_entry_clear(e);
	g_free(e);
}

void mountinfo_entry_clear(struct mount_entry *e)
{
	g_clear_pointer(&e->mountpoint, g_free);
	g_clear_pointer(&e->root, g_free);
	g_clear_pointer(&e->fstype, g_free);
	g_clear_pointer(&e->super_options, g_free);
}

GPtrArray *mountinfo_parse(const char *text)
{
	GPtrArray *mounts = g_ptr_array_new_with_free_func(mount_entry_free);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **line = lines; *line; line++) {
		/* id parent dev ROOT MOUNTPOINT opts [optional...] - FSTYPE source SUPEROPTS */
		g_auto(GStrv) f = g_strsplit(*line, " ", -1);
		guint n = g_strv_length(f), sep = 6;
		while (sep < n && strcmp(f[sep], "-") != 0)
			sep++;
		if (n < 5 || sep + 3 >= n)
			continue;
		struct mount_entry *e = g_new0(struct mount_entry, 1);
		e->root = g_strcompress(f[3]);
		e->mountpoint = g_strcompress(f[4]);
		e->fstype = g_strdup(f[sep + 1]);
		e->super_options = g_strdup(f[sep + 3]);
		g_ptr_array_add(mounts, e);
	}
	return mounts;
}

GPtrArray *mountinfo_read(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return mountinfo_parse("");
	return mountinfo_parse(text);
}

GPtrArray *mountinfo_of(int proc_fd, pid_t pid)
{
	char path[32];
	g_autofree char *text = NULL;
	snprintf(path, sizeof(path), "%d/mountinfo", (int)pid);
	return procfile_read_text_at(proc_fd, path, &text) < 0 ? NULL : mountinfo_parse(text);
}

const struct mount_entry *mountinfo_top(GPtrArray *mounts, const char *path)
{
	/* The last match is the mount on top. */
	for (guint i = mounts->len; i-- > 0;) {
		const struct mount_entry *e = g_ptr_array_index(mounts, i);
		if (strcmp(e->mountpoint, path) == 0)
			return e;
	}
	return NULL;
}

/* One line of a mountinfo text (len bytes, no newline) for
 * mountinfo_tops_in: the type of a mount at one of paths in ret. */
static void line_tops(const char *line, size_t len, const char *const *paths, guint n, char **ret)
{
	/* id parent dev ROOT MOUNTPOINT opts [optional...] - FSTYPE source SUPEROPTS:
	 * the fields before " - " have their spaces escaped (\040) */
	const char *end = line + len, *at = line;
	for (int field = 0; field < 4 && at; field++) {
		at = memchr(at, ' ', (size_t)(end - at));
		at = at ? at + 1 : NULL;
	}
	const char *after = at ? memchr(at, ' ', (size_t)(end - at)) : NULL;
	for (guint i = 0; after && i < n; i++) {
		size_t plen = strlen(paths[i]);
		if ((size_t)(after - at) != plen || memcmp(at, paths[i], plen) != 0)
			continue;
		const char *sep = g_strstr_len(after, end - after, " - ");
		const char *type = sep ? sep + 3 : NULL;
		const char *type_end = type && type < end ? memchr(type, ' ', (size_t)(end - type)) : NULL;
		g_free(ret[i]);
		ret[i] = type_end ? g_strndup(type, (gsize)(type_end - type)) : NULL;
	}
}

void mountinfo_tops_in(const char *text, const char *const *paths, guint n, char **ret)
{
	for (guint i = 0; i < n; i++)
		ret[i] = NULL;
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		line_tops(text, len, paths, n, ret);
		text += len + (nl != NULL);
	}
}

/* Read at a time: the kernel makes a mountinfo text from its start to
 * where each read begins (one walk of the table per read on kernels
 * before 6.8), so small reads make a long table cost its square. */
#define TOPS_CHUNK (1u << 20)

int mountinfo_tops_of(int proc_fd, pid_t pid, const char *const *paths, guint n, char **ret)
{
	char path[32];
	snprintf(path, sizeof(path), "%d/mountinfo", (int)pid);
	int fd = procfile_openat(proc_fd, path, O_RDONLY);
	if (fd < 0)
		return fd;
	g_autofree char *buf = g_malloc(TOPS_CHUNK);
	size_t kept = 0; /* of a line not ended yet, at buf's start */
	ssize_t got;
	for (guint i = 0; i < n; i++)
		ret[i] = NULL;
	while ((got = read(fd, buf + kept, TOPS_CHUNK - kept)) > 0 || (got < 0 && errno == EINTR)) {
		size_t len = kept + (size_t)MAX(got, 0), at = 0;
		for (char *nl; (nl = memchr(buf + at, '\n', len - at)); at = (size_t)(nl - buf) + 1)
			line_tops(buf + at, (size_t)(nl - buf) - at, paths, n, ret);
		kept = len - at == TOPS_CHUNK ? 0 : len - at; /* a line longer than a chunk: no mount of paths */
		memmove(buf, buf + at, kept);
	}
	int r = got < 0 ? -errno : 0;
	close(fd);
	if (r == 0 && kept)
		line_tops(buf, kept, paths, n, ret);
	for (guint i = 0; r < 0 && i < n; i++)
		g_clear_pointer(&ret[i], g_free);
	return r;
}

gboolean mountinfo_find(const char *path, struct mount_entry *ret)
{
	g_autoptr(GPtrArray) mounts = mountinfo_read();
	const struct mount_entry *e = mountinfo_top(mounts, path);
	if (!e)
		return FALSE;
	*ret = (struct mount_entry){ g_strdup(e->mountpoint), g_strdup(e->root), g_strdup(e->fstype),
				     g_strdup(e->super_options) };
	return TRUE;
}

char *mountinfo_proc_restrictions(const char *super_options)
{
	g_autoptr(GString) out = g_string_new(NULL);
	g_auto(GStrv) opts = g_strsplit(super_options ? super_options : "", ",", -1);
	for (char **o = opts; *o; o++) {
		if (g_str_has_prefix(*o, "hidepid=") || g_str_has_prefix(*o, "gid=") || g_str_has_prefix(*o, "subset=")) {
			if (out->len)
				g_string_append_c(out, ',');
			g_string_append(out, *o);
		}
	}
	return out->len ? g_string_free(g_steal_pointer(&out), FALSE) : NULL;
}

enum view_hidepid mountinfo_hides_processes(const char *restrictions)
{
	g_auto(GStrv) list = g_strsplit(restrictions ? restrictions : "", ",", -1);
	enum view_hidepid level = VIEW_HIDEPID_OFF;
	for (char **o = list; *o; o++) {
		if (!g_str_has_prefix(*o, "hidepid="))
			continue;
		const char *value = *o + strlen("hidepid=");
		if (strcmp(value, "0") == 0 || strcmp(value, "off") == 0)
			level = VIEW_HIDEPID_OFF;
		else if (strcmp(value, "1") == 0 || strcmp(value, "noaccess") == 0)
			level = VIEW_HIDEPID_NOACCESS;
		else /* invisible, ptraceable, and any the kernel adds: hide */
			level = VIEW_HIDEPID_INVISIBLE;
	}
	return level;
}

const struct mount_entry *mountinfo_container_proc(GPtrArray *mounts)
{
	for (guint i = mounts->len; i-- > 0;) {
		const struct mount_entry *e = g_ptr_array_index(mounts, i);
		if (strcmp(e->fstype, "proc") == 0 && strcmp(e->root, "/") == 0 &&
		    (strcmp(e->mountpoint, "/proc") == 0 || g_str_has_suffix(e->mountpoint, "/proc") ||
		     g_str_has_suffix(e->mountpoint, "/proc/.real")))
			return e;
	}
	return NULL;
}
