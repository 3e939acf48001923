/* Just enough JSON for the OCI state and config.json: find a member's
 * value by key, read a string, and add an entry to a hook list in place,
 * leaving every other byte of the text as it was (the runtime's own hooks,
 * their order, and whatever this code does not understand). The texts are
 * the runtimes' own, well formed; what is not found is simply absent, and
 * what cannot be walked is an error. */
#pragma once

#include <glib.h>

/* The value of key in the object at p (leading blanks allowed), or NULL. */
const char *ocijson_get(const char *p, const char *key);
/* The end of the value at p, or NULL. */
const char *ocijson_skip(const char *p);
/* The string value of key in the object at p, or NULL. */
char *ocijson_get_string(const char *p, const char *key);

/* Append s to out as a JSON string, quoted and escaped. */
void ocijson_quote(GString *out, const char *s);

/* config with entry (a JSON object) added at the end of hooks.<stage>,
 * the list and "hooks" made if missing: a new text in *ret. 1 if it was
 * added, 0 if the list has an entry whose "path" is path already
 * (*ret NULL), -EINVAL if config is not an object this code can walk. */
int ocijson_add_hook(const char *config, const char *stage, const char *entry, const char *path, char **ret);
