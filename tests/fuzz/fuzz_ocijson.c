/* ocijson_add_hook (contrib/oci/ocijson.h): any config.json text. It ends
 * (no endless walk), and what it makes still walks, holds the entry in
 * hooks.createContainer, and is the input with the entry added. */
#include "fuzz.h"
#include "ocijson.h"

#include <errno.h>
#include <string.h>

#define ENTRY "{\"path\":\"/h\",\"args\":[\"h\"]}"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *config = fuzz_text(data, size);
	g_autofree char *out = NULL;
	int r = ocijson_add_hook(config, "createContainer", ENTRY, "/h", &out);
	FUZZ_CHECK(r == 1 || r == 0 || r == -EINVAL);
	if (r != 1)
		return 0;
	FUZZ_CHECK(out && strlen(out) > strlen(config));
	FUZZ_CHECK(ocijson_skip(out) != NULL);
	const char *hooks = ocijson_get(out, "hooks");
	FUZZ_CHECK(hooks != NULL);
	const char *list = ocijson_get(hooks, "createContainer");
	FUZZ_CHECK(list != NULL && *list == '[');
	/* Added once: a second time finds it. */
	g_autofree char *again = NULL;
	FUZZ_CHECK(ocijson_add_hook(out, "createContainer", ENTRY, "/h", &again) == 0);
	return 0;
}
