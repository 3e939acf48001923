#include "sysinfo.h"
#include "memview.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A load of loadavg ("0.42") as the kernel keeps it: fixed point. */
static gboolean load_fixed(const char *text, char **end, unsigned long *ret)
{
	double load = g_ascii_strtod(text, end);
	if (*end == text || load < 0 || load > 1e6)
		return FALSE;
	*ret = (unsigned long)(load * (1 << SI_LOAD_SHIFT) + 0.5);
	return TRUE;
}

static gboolean parse_loadavg(const char *loadavg, struct sysinfo *ret)
{
	char *end = (char *)loadavg;
	for (int i = 0; i < 3; i++)
		if (!load_fixed(end, &end, &ret->loads[i]) || *end != ' ')
			return FALSE;
	unsigned running, threads;
	if (sscanf(end, " %u/%u", &running, &threads) != 2)
		return FALSE;
	ret->procs = (unsigned short)MIN(threads, G_MAXUINT16);
	return TRUE;
}

long sysinfo_uptime(double up)
{
	return (long)up + (up > (double)(long)up);
}

int sysinfo_from_texts(const struct sysinfo *host, const char *meminfo, const char *uptime, const char *loadavg,
		       struct sysinfo *ret)
{
	struct sysinfo s = *host;
	char *end;
	double up = g_ascii_strtod(uptime, &end);
	if (end == uptime || *end != ' ' || up < 0 || up > (double)G_MAXLONG)
		return -EINVAL;
	s.uptime = sysinfo_uptime(up);
	if (!parse_loadavg(loadavg, &s))
		return -EINVAL;
	static const char *const names[] = { "MemTotal", "MemFree", "Shmem", "Buffers", "SwapTotal", "SwapFree" };
	unsigned long *const into[] = { &s.totalram, &s.freeram, &s.sharedram, &s.bufferram, &s.totalswap,
					&s.freeswap };
	uint64_t kb[G_N_ELEMENTS(names)];
	if (memview_meminfo_kb(meminfo, names, G_N_ELEMENTS(names), kb) < 0)
		return -EINVAL;
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		if (kb[i] > G_MAXUINT64 / 1024)
			return -EINVAL;
		*into[i] = (unsigned long)(kb[i] * 1024);
	}
	s.totalhigh = 0;
	s.freehigh = 0;
	s.mem_unit = 1;
	*ret = s;
	return 0;
}
