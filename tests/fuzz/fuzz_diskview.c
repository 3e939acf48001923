/* fs/diskview.h and the I/O parsers of fs/cgroup.h: the input read as a
 * host's diskstats, as v2 io.stat and as v1 throttle files. Each gives 0 or
 * -EINVAL; a rendered diskstats has no more lines than the host's, and
 * each of its lines names a device the host's text has. */
#include "cgroup.h"
#include "diskview.h"
#include "fuzz.h"

#include <errno.h>
#include <string.h>

static guint lines_of(const char *text)
{
	guint n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n + (*text && text[strlen(text) - 1] != '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	GArray *devs = g_array_new(FALSE, TRUE, sizeof(struct cgroup_io_device));
	int r = cgroup_parse_io_stat(text, devs);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	r = cgroup_parse_blkio(text, text, devs);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	/* devices the input may name, whatever it parsed to */
	struct fuzz_tail t = { data, size };
	const struct cgroup_io_device some = { (unsigned)fuzz_take(&t, 1), (unsigned)fuzz_take(&t, 1),
					       { fuzz_take(&t, 8), 1, 2 }, { fuzz_take(&t, 8), 512, 0 } };
	g_array_append_val(devs, some);
	for (int others = DISKVIEW_OTHERS_HOST; others <= DISKVIEW_OTHERS_ZERO; others++) {
		GString *out = NULL;
		r = diskview_render(text, devs, (enum diskview_others)others, &out);
		FUZZ_CHECK(r == 0 || r == -EINVAL);
		FUZZ_CHECK((r == 0) == (out != NULL));
		if (!out)
			continue;
		FUZZ_CHECK(lines_of(out->str) <= lines_of(text));
		g_auto(GStrv) lines = g_strsplit(out->str, "\n", -1);
		for (char **l = lines; *l; l++) {
			g_auto(GStrv) w = g_strsplit_set(*l, " ", -1);
			for (char **name = w; *name; name++)
				if (**name && !g_ascii_isdigit(**name)) {
					FUZZ_CHECK(strstr(text, *name) != NULL);
					break;
				}
		}
		g_string_free(out, TRUE);
	}
	g_array_unref(devs);
	g_free(text);
	return 0;
}
