/* The OCI JSON helpers: reading members, and adding a hook in place. */
#include "ocijson.h"

#include <criterion/criterion.h>
#include <errno.h>

#define ENTRY "{\"path\":\"/h\",\"args\":[\"h\"]}"

static char *added(const char *config)
{
	char *out = NULL;
	cr_assert_eq(ocijson_add_hook(config, "createContainer", ENTRY, "/h", &out), 1, "not added to %s", config);
	return out;
}

Test(ocijson, reads_members_and_strings)
{
	const char *t = "{ \"a\": {\"b\": [1, {\"c\": \"x\\\"y\"}]}, \"d\" : \"e\\\\f\", \"n\": 12 }";
	g_autofree char *d = ocijson_get_string(t, "d");
	cr_assert_str_eq(d, "e\\f");
	cr_assert_null(ocijson_get(t, "missing"));
	cr_assert_str_eq(ocijson_get(t, "n"), "12 }");
	cr_assert_null(ocijson_get("[1]", "a"));
}

Test(ocijson, quotes_what_it_writes)
{
	g_autoptr(GString) s = g_string_new(NULL);
	ocijson_quote(s, "a\"b\\c\nd");
	cr_assert_str_eq(s->str, "\"a\\\"b\\\\c\\u000ad\"");
}

Test(ocijson, makes_hooks_where_there_are_none)
{
	g_autofree char *a = added("{\"ociVersion\":\"1.0.2\"}");
	cr_assert_str_eq(a, "{\"hooks\":{\"createContainer\":[" ENTRY "]},\"ociVersion\":\"1.0.2\"}");
	g_autofree char *b = added(" { } ");
	cr_assert_str_eq(b, " {\"hooks\":{\"createContainer\":[" ENTRY "]} } ");
}

Test(ocijson, adds_the_stage_beside_the_others)
{
	/* Docker's own prestart hook stays first, untouched. */
	const char *c = "{\"hooks\": {\"prestart\": [{\"path\": \"/docker\", \"args\": [\"libnetwork\"]}]}, \"x\": 1}";
	g_autofree char *a = added(c);
	cr_assert_str_eq(a, "{\"hooks\": {\"createContainer\":[" ENTRY "],\"prestart\": [{\"path\": \"/docker\", "
			    "\"args\": [\"libnetwork\"]}]}, \"x\": 1}");
}

Test(ocijson, appends_after_the_existing_entries_in_order)
{
	const char *c = "{\"hooks\":{\"createContainer\":[{\"path\":\"/one\"},\n  {\"path\":\"/two\"}\n]}}";
	g_autofree char *a = added(c);
	cr_assert_str_eq(a, "{\"hooks\":{\"createContainer\":[{\"path\":\"/one\"},\n  {\"path\":\"/two\"}\n," ENTRY
			    "]}}");
	g_autofree char *empty = added("{\"hooks\":{\"createContainer\":[ ]}}");
	cr_assert_str_eq(empty, "{\"hooks\":{\"createContainer\":[ " ENTRY "]}}");
	/* What it made reads back. */
	const char *list = ocijson_get(ocijson_get(a, "hooks"), "createContainer");
	cr_assert_not_null(list);
	cr_assert_not_null(ocijson_skip(a));
}

Test(ocijson, never_adds_the_same_hook_twice)
{
	char *out = (char *)1;
	const char *c = "{\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}, {\"args\":[], \"path\":\"/h\"}]}}";
	cr_assert_eq(ocijson_add_hook(c, "createContainer", ENTRY, "/h", &out), 0);
	cr_assert_null(out);
}

Test(ocijson, refuses_what_it_cannot_walk)
{
	char *out = NULL;
	static const char *const bad[] = {
		"", "[]", "{\"hooks\":", "{\"hooks\":[1]}", "{\"hooks\":{\"createContainer\":{}}}",
		"{\"a\":\"unterminated}", "{\"hooks\":{\"createContainer\":[{\"path\":\"/x\"}}",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		cr_assert_eq(ocijson_add_hook(bad[i], "createContainer", ENTRY, "/h", &out), -EINVAL, "accepted %s",
			     bad[i]);
}
