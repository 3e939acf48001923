/* fs/memview.h: the host's meminfo, swaps and vmstat text (the input)
 * rendered for memory figures shaped by the last bytes of the input, with
 * memory.stat keys of every kind. A render gives 0 with a text or -EINVAL
 * with none; a meminfo it renders never shows MemTotal 0, a MemFree above
 * it, or a SwapFree of the cgroup's above SwapTotal. */
#include "fuzz.h"
#include "memview.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const keys[] = { "anon", "file", "file_mapped", "shmem", "active_file", "inactive_file",
				    "slab_reclaimable", "swapcached", "pgfault", "anon_thp" };

static void figures_from_tail(const uint8_t *data, size_t size, struct mem_figures *f)
{
	struct fuzz_tail t = { data, size };
	*f = (struct mem_figures){ 0 };
	f->limit = fuzz_take(&t, 8);
	f->usage = fuzz_take(&t, 8);
	unsigned flags = (unsigned)fuzz_take(&t, 1);
	f->swap_accounted = flags & 1;
	f->swap_limited = flags & 2;
	f->swap_limit = fuzz_take(&t, 8);
	f->swap_usage = fuzz_take(&t, 8);
	f->stat = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (!(flags & (4u << (i % 6))))
			continue;
		uint64_t v = fuzz_take(&t, 8);
		g_hash_table_insert(f->stat, g_strdup(keys[i]), g_memdup2(&v, sizeof(v)));
	}
}

/* The kB value of line name in text, or -1. */
static long long kb_of(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, name, n) == 0 && l[n] == ':')
			return strtoll(l + n + 1, NULL, 10);
	return -1;
}

/* swap: the swap lines are the cgroup's (else the host's, as they are). */
static void check_meminfo(const GString *out, gboolean swap)
{
	long long total = kb_of(out->str, "MemTotal"), free = kb_of(out->str, "MemFree");
	long long swap_total = kb_of(out->str, "SwapTotal"), swap_free = kb_of(out->str, "SwapFree");
	FUZZ_CHECK(total != 0);
	FUZZ_CHECK(free <= total || total < 0);
	FUZZ_CHECK(!swap || swap_free <= swap_total || swap_total < 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *host = fuzz_text(data, size);
	struct mem_figures f;
	figures_from_tail(data, size, &f);
	for (int which = 0; which < 4; which++) {
		GString *out = NULL;
		int r = which == 0   ? memview_render_meminfo(host, &f, TRUE, &out)
			: which == 1 ? memview_render_meminfo(host, &f, FALSE, &out)
			: which == 2 ? memview_render_swaps(host, host, &f, &out)
				     : memview_render_vmstat(host, &f, &out);
		FUZZ_CHECK(r == 0 || r == -EINVAL);
		FUZZ_CHECK((r == 0) == (out != NULL));
		if (out && which < 2)
			check_meminfo(out, which == 0 && f.swap_accounted);
		if (out)
			g_string_free(out, TRUE);
	}
	mem_figures_clear(&f);
	g_free(host);
	return 0;
}
