/* cpuview_render_list and cpuview_render_mask (fs/cpuview.h): sysfs CPU
 * lists and masks (topology *_list and cpumap files) of host numbers
 * rewritten in view numbers, for the fixed maps of fuzz_common.c and one
 * shaped by the last 10 bytes of the input. What renders must be the view
 * numbers of the shown host CPUs in the list, in the same form. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

static void render(const char *host, const struct cpu_map *m, gboolean mask)
{
	GString *out = NULL;
	struct cpuset in, got, want;
	int r = mask ? cpuview_render_mask(host, m, &out) : cpuview_render_list(host, m, &out);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	int parsed = mask ? cpuset_parse_mask(host, &in) : cpuset_parse_list(host, &in);
	if (m->is_host) {
		FUZZ_CHECK(r == 0 && strcmp(out->str, host) == 0);
		g_string_free(out, TRUE);
		return;
	}
	FUZZ_CHECK((r == 0) == (parsed == 0));
	if (r < 0) {
		FUZZ_CHECK(out == NULL);
		return;
	}
	FUZZ_CHECK(out->len >= 1 && out->str[out->len - 1] == '\n');
	FUZZ_CHECK((mask ? cpuset_parse_mask(out->str, &got) : cpuset_parse_list(out->str, &got)) == 0);
	cpuset_clear(&want);
	for (unsigned v = 0; v < m->count; v++)
		if (cpuset_has(&in, m->host[v]))
			cpuset_add(&want, m->host[v]);
	FUZZ_CHECK(cpuset_equal(&got, &want));
	g_string_free(out, TRUE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *host = fuzz_text(data, size);
	size_t n;
	struct cpu_map *const *maps = fuzz_fixed_maps(&n);
	g_autoptr(cpu_map) tail = fuzz_map_from_tail(data, size);
	for (size_t i = 0; i <= n; i++) {
		const struct cpu_map *m = i < n ? maps[i] : tail;
		render(host, m, FALSE);
		render(host, m, TRUE);
	}
	g_free(host);
	return 0;
}
