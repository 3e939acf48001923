#include "sysinfo.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The kB of meminfo's line "name:   N kB": TRUE if there is one. */
static gboolean meminfo_bytes(const char *meminfo, const char *name, unsigned long *ret)
{
	size_t len = strlen(name);
	for (const char *line = meminfo; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, name, len) != 0 || line[len] != ':')
			continue;
		char *end;
		guint64 kb = g_ascii_strtoull(line + len + 1, &end, 10);
		if (end == line + len + 1 || strncmp(end, " kB", 3) != 0 || kb > G_MAXUINT64 / 1024)
			return FALSE;
		*ret = (unsigned long)(kb * 1024);
		return TRUE;
	}
	return FALSE;
}

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
	return (long)up + 1;
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
	if (!meminfo_bytes(meminfo, "MemTotal", &s.totalram) || !meminfo_bytes(meminfo, "MemFree", &s.freeram) ||
	    !meminfo_bytes(meminfo, "Buffers", &s.bufferram) || !meminfo_bytes(meminfo, "SwapTotal", &s.totalswap) ||
	    !meminfo_bytes(meminfo, "SwapFree", &s.freeswap))
		return -EINVAL;
	if (!meminfo_bytes(meminfo, "Shmem", &s.sharedram))
		s.sharedram = 0;
	s.totalhigh = 0;
	s.freehigh = 0;
	s.mem_unit = 1;
	*ret = s;
	return 0;
}
