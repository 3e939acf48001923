/* procfile_parse_pid_stat (fs/procfile.h): the text of /proc/<pid>/stat,
 * whose comm field may hold any bytes, spaces and parentheses included. */
#include "fuzz.h"
#include "procfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* (text, len): exactly len bytes, no terminating NUL. */
	char *text = fuzz_exact(data, size);
	struct pid_stat st;
	memset(&st, 0xa5, sizeof(st));
	int r = procfile_parse_pid_stat(text, size, &st);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0)
		FUZZ_CHECK(st.state != '\0' && memchr(text, ')', size) != NULL);
	free(text);
	return 0;
}
