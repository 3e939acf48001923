/* How the cpuinfo renderer scales with the host's CPU count: a made-up
 * one-package host of N CPUs (Intel's shape), a view of N-1 of them.
 *
 *   build/tests/bench/cgprocfs-bench-render [N...]   (default 2 96 256 1024 4096)
 *
 * Prints the best of 20 renders per N, in milliseconds. */
#include "cpuview.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RUNS 20

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bench(unsigned n)
{
	g_autoptr(GString) host = g_string_new(NULL);
	for (unsigned i = 0; i < n; i++)
		g_string_append_printf(host,
				       "processor\t: %u\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n"
				       "physical id\t: 0\nsiblings\t: %u\ncore id\t\t: %u\ncpu cores\t: %u\n"
				       "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr\n\n",
				       i, n, i, n);
	struct cpu_map *m = g_malloc(sizeof(*m) + sizeof(unsigned) * (n - 1));
	m->is_host = FALSE;
	m->count = n - 1;
	for (unsigned i = 0; i < n - 1; i++)
		m->host[i] = i;
	double best = -1;
	for (int k = 0; k < RUNS; k++) {
		GString *out = NULL;
		double start = now_ms();
		int r = cpuview_render_cpuinfo(host->str, m, &out);
		double took = now_ms() - start;
		if (r < 0) {
			fprintf(stderr, "render failed for N=%u\n", n);
			exit(1);
		}
		g_string_free(out, TRUE);
		if (best < 0 || took < best)
			best = took;
	}
	printf("%6u CPUs, %u shown: %8.3f ms\n", n, n - 1, best);
	g_free(m);
}

int main(int argc, char **argv)
{
	static const unsigned defaults[] = { 2, 96, 256, 1024, 4096 };
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			bench((unsigned)strtoul(argv[i], NULL, 10));
	else
		for (size_t i = 0; i < G_N_ELEMENTS(defaults); i++)
			bench(defaults[i]);
	return 0;
}
