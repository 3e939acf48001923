/* cpuset_parse_list and cpuset_parse_mask (fs/cpuset.h): CPU lists
 * ("0-3,7": sysfs online/possible/present, *_list topology files, cgroup
 * cpuset.cpus[.effective]) and masks ("00000000,0000008f"); what parses
 * must come back unchanged through cpuset_format_list/_mask. */
#include "fuzz.h"
#include "cpuset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void check_members(const struct cpuset *s)
{
	static unsigned members[CPUSET_MAX];
	unsigned n = cpuset_count(s);
	FUZZ_CHECK(n <= CPUSET_MAX);
	FUZZ_CHECK(cpuset_members(s, members, CPUSET_MAX) == n);
	for (unsigned i = 0; i < n; i++) {
		FUZZ_CHECK(cpuset_has(s, members[i]));
		FUZZ_CHECK(i == 0 || members[i - 1] < members[i]);
	}
	FUZZ_CHECK(cpuset_members(s, members, 3) == MIN(n, 3u));
}

static void fuzz_list(const char *text)
{
	struct cpuset s, again;
	memset(&s, 0x5a, sizeof(s));
	int r = cpuset_parse_list(text, &s);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0) {
		struct cpuset sentinel;
		memset(&sentinel, 0x5a, sizeof(sentinel));
		FUZZ_CHECK(cpuset_equal(&s, &sentinel)); /* "*ret untouched on failure" */
		return;
	}
	check_members(&s);
	g_autofree char *list = cpuset_format_list(&s);
	FUZZ_CHECK(cpuset_parse_list(list, &again) == 0);
	FUZZ_CHECK(cpuset_equal(&s, &again));
	/* the same set as a mask of all words */
	g_autofree char *mask = cpuset_format_mask(&s, CPUSET_MAX / 32);
	FUZZ_CHECK(cpuset_parse_mask(mask, &again) == 0);
	FUZZ_CHECK(cpuset_equal(&s, &again));
	struct cpuset both = s;
	cpuset_intersect(&both, &again);
	FUZZ_CHECK(cpuset_equal(&both, &s));
}

static void fuzz_mask(const char *text)
{
	struct cpuset s, again;
	int r = cpuset_parse_mask(text, &s);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0)
		return;
	check_members(&s);
	unsigned words = 1;
	for (const char *p = text; *p; p++)
		words += *p == ',';
	FUZZ_CHECK(words <= CPUSET_MAX / 32);
	g_autofree char *mask = cpuset_format_mask(&s, words);
	FUZZ_CHECK(strlen(mask) == words * 9 - 1);
	FUZZ_CHECK(cpuset_parse_mask(mask, &again) == 0);
	FUZZ_CHECK(cpuset_equal(&s, &again));
	g_autofree char *list = cpuset_format_list(&s);
	FUZZ_CHECK(cpuset_parse_list(list, &again) == 0);
	FUZZ_CHECK(cpuset_equal(&s, &again));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	fuzz_list(text);
	fuzz_mask(text);
	g_free(text);
	return 0;
}
