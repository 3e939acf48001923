/* sysinfo(2)'s answer from a view's texts (fs/sysinfo.h): against the
 * kernel's own answer for the host's texts, and a container's figures. */
#include "sysinfo.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL), "read %s", path);
	return text;
}

/* The texts read between two sysinfo(2) calls that agree: the machine's
 * other work (other tests beside this one) moves free memory and the load
 * between the reads of a single try. */
static bool steady(const struct sysinfo *a, const struct sysinfo *b)
{
	long long moved = (long long)(a->freeram * a->mem_unit) - (long long)(b->freeram * b->mem_unit);
	return llabs(moved) < 4LL << 20 && memcmp(a->loads, b->loads, sizeof(a->loads)) == 0 &&
	       a->uptime == b->uptime;
}

Test(sysinfo, the_hosts_texts_give_the_kernels_answer)
{
	struct sysinfo host, after, got;
	g_autofree char *meminfo = NULL, *uptime = NULL, *loadavg = NULL;
	for (int try = 0; try < 100; try++) {
		g_free(meminfo), g_free(uptime), g_free(loadavg);
		cr_assert_eq(sysinfo(&host), 0);
		meminfo = slurp("/proc/meminfo"), uptime = slurp("/proc/uptime"), loadavg = slurp("/proc/loadavg");
		cr_assert_eq(sysinfo(&after), 0);
		if (steady(&host, &after))
			break;
		cr_log_info("try %d: the machine's figures moved between the reads", try);
	}
	cr_assert_eq(sysinfo_from_texts(&host, meminfo, uptime, loadavg, &got), 0);
	cr_assert_eq(got.mem_unit, 1);
	/* Fixed sizes: exactly the kernel's. */
	cr_assert_eq(got.totalram, host.totalram * host.mem_unit);
	cr_assert_eq(got.totalswap, host.totalswap * host.mem_unit);
	/* Moving ones: read a moment apart. */
	cr_assert(got.uptime - host.uptime <= 1 && got.uptime >= host.uptime, "uptime %ld, kernel %ld", got.uptime,
		  host.uptime);
	unsigned long slack = 8UL << 20;
	cr_assert(got.freeram + slack > host.freeram * host.mem_unit &&
			  got.freeram < host.freeram * host.mem_unit + slack,
		  "freeram %lu, kernel %lu", got.freeram, host.freeram * host.mem_unit);
	for (int i = 0; i < 3; i++) /* loadavg has two decimals */
		cr_assert(labs((long)got.loads[i] - (long)host.loads[i]) <= 1 << 12, "load %d: %lu, kernel %lu", i,
			  got.loads[i], host.loads[i]);
}

static const char *const CONTAINER_MEMINFO = "MemTotal:         262144 kB\n"
					     "MemFree:          149340 kB\n"
					     "MemAvailable:     200000 kB\n"
					     "Buffers:               0 kB\n"
					     "Cached:            40000 kB\n"
					     "Shmem:              1024 kB\n"
					     "SwapTotal:         65536 kB\n"
					     "SwapFree:          65000 kB\n";

Test(sysinfo, a_containers_texts_replace_the_hosts_figures)
{
	struct sysinfo host = { .uptime = 99999, .procs = 700, .totalhigh = 5, .freehigh = 3, .mem_unit = 4096 }, got;
	host.totalram = 1000000;
	cr_assert_eq(sysinfo_from_texts(&host, CONTAINER_MEMINFO, "12.97 20.00\n", "1.50 0.25 0.00 3/42 999\n", &got),
		     0);
	cr_assert_eq(got.totalram, 262144UL * 1024);
	cr_assert_eq(got.freeram, 149340UL * 1024);
	cr_assert_eq(got.sharedram, 1024UL * 1024);
	cr_assert_eq(got.bufferram, 0);
	cr_assert_eq(got.totalswap, 65536UL * 1024);
	cr_assert_eq(got.freeswap, 65000UL * 1024);
	cr_assert_eq(got.totalhigh, 0);
	cr_assert_eq(got.freehigh, 0);
	cr_assert_eq(got.mem_unit, 1);
	cr_assert_eq(got.uptime, 13); /* rounded up, as the kernel does */
	cr_assert_eq(sysinfo_from_texts(&host, CONTAINER_MEMINFO, "12.00 20.00\n", "1.50 0.25 0.00 3/42 999\n", &got),
		     0);
	cr_assert_eq(got.uptime, 13, "12.00 is a time in [12.00, 12.01): the kernel says 13, not %ld", got.uptime);
	cr_assert_eq(got.loads[0], 3UL << 15);
	cr_assert_eq(got.loads[1], 1UL << 14);
	cr_assert_eq(got.loads[2], 0);
	cr_assert_eq(got.procs, 42);
}

Test(sysinfo, a_text_not_understood_is_einval_and_nothing_written)
{
	struct sysinfo host = { .uptime = 5 }, got, before;
	memset(&got, 0xa5, sizeof(got));
	before = got;
	const char *const bad[][3] = {
		{ "MemTotal: 1 kB\n", "1.00 2.00\n", "0.00 0.00 0.00 1/2 3\n" }, /* no MemFree */
		{ CONTAINER_MEMINFO, "soon\n", "0.00 0.00 0.00 1/2 3\n" },
		{ CONTAINER_MEMINFO, "1.00 2.00\n", "0.00 0.00\n" },
		{ CONTAINER_MEMINFO, "1.00 2.00\n", "0.00 0.00 0.00 many\n" },
		{ "MemTotal: 1 MB\n", "1.00 2.00\n", "0.00 0.00 0.00 1/2 3\n" },
		{ "", "", "" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		cr_assert_eq(sysinfo_from_texts(&host, bad[i][0], bad[i][1], bad[i][2], &got), -EINVAL, "case %zu", i);
		cr_assert(memcmp(&got, &before, sizeof(got)) == 0, "case %zu wrote", i);
	}
}
