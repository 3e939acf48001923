/* Sets of CPU numbers, and the two ways the kernel writes them:
 * lists ("0-3,7") and masks ("00000000,0000008f"). Pure. */
#pragma once

#include <glib.h>
#include <stdint.h>

#define CPUSET_MAX 8192 /* the kernel's largest NR_CPUS */

struct cpuset {
	uint64_t bits[CPUSET_MAX / 64];
};

/* "0-3,7" (white space around it ignored; empty text is the empty set).
 * 0 or -EINVAL; *ret untouched on failure. */
int cpuset_parse_list(const char *text, struct cpuset *ret);
/* Comma-separated 32-bit hex words, most significant first. 0 or -EINVAL. */
int cpuset_parse_mask(const char *text, struct cpuset *ret);

/* As the kernel writes them, without the newline. */
char *cpuset_format_list(const struct cpuset *s);
/* nwords 32-bit words, as many as the host's mask had. */
char *cpuset_format_mask(const struct cpuset *s, unsigned nwords);

void cpuset_clear(struct cpuset *s);
void cpuset_add(struct cpuset *s, unsigned cpu);
void cpuset_remove(struct cpuset *s, unsigned cpu);
gboolean cpuset_has(const struct cpuset *s, unsigned cpu);
unsigned cpuset_count(const struct cpuset *s);
void cpuset_intersect(struct cpuset *s, const struct cpuset *with);
gboolean cpuset_equal(const struct cpuset *a, const struct cpuset *b);
/* The CPUs of s in increasing order, at most max of them; returns how many. */
unsigned cpuset_members(const struct cpuset *s, unsigned *out, unsigned max);
