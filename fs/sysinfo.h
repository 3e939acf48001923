/* sysinfo(2) as a caller's view has it: the figures of the /proc/meminfo,
 * /proc/uptime and /proc/loadavg the view shows that caller, in the
 * layout of the 64-bit struct sysinfo (what busybox free and uptime,
 * glibc's getloadavg() and _SC_PHYS_PAGES read). Pure: the daemon's seccomp
 * listener (daemon/sysinfo.c) renders the texts and writes the answer. */
#pragma once

#include <sys/sysinfo.h>

/* ret: host (the kernel's answer to the caller) with the view's figures in
 * place of the host's: memory and swap from meminfo (MemTotal, MemFree,
 * Shmem, Buffers, SwapTotal, SwapFree; in bytes, mem_unit 1), uptime
 * (whole seconds, rounded up as the kernel does), and from loadavg the
 * three loads (fixed point, 1 << SI_LOAD_SHIFT) and procs (the threads,
 * its fourth field). 0, or -EINVAL if a text lacks a figure or does not
 * parse (ret is then untouched). */
int sysinfo_from_texts(const struct sysinfo *host, const char *meminfo, const char *uptime, const char *loadavg,
		       struct sysinfo *ret);

/* sysinfo's uptime for up seconds, read from a text in hundredths: whole
 * seconds, rounded up as the kernel does. The time behind "12.00" lies in
 * [12.00, 12.01), where the kernel says 13 (it rounds any nanosecond up),
 * so the next whole second is taken, also for a whole number. */
long sysinfo_uptime(double up);
