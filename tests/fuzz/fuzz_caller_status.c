/* caller_parse_status (fs/caller.h): the CapEff and Groups lines of
 * /proc/<tid>/status. */
#include "fuzz.h"
#include "caller.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* (text, len): exactly len bytes, no terminating NUL. */
	char *text = fuzz_exact(data, size);
	struct caller_status st = { 0 };
	int r = caller_parse_status(text, size, &st);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(st.groups != NULL);
		/* every group was a word of the text: at most one per two bytes */
		FUZZ_CHECK(st.groups->len <= size / 2 + 1);
		for (guint i = 0; i < st.groups->len; i++)
			FUZZ_CHECK(g_array_index(st.groups, gid_t, i) != (gid_t)-1);
		g_array_unref(st.groups);
	} else {
		FUZZ_CHECK(st.groups == NULL);
	}
	free(text);
	return 0;
}
