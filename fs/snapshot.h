/* Per-open snapshots: a daemon-served file is rendered once when it is
 * opened, and every read of that handle is a slice of the same bytes. */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* The part of content that a read of size bytes at offset returns:
 * empty past the end, short at the end. Never fails. */
void snapshot_slice(GBytes *content, off_t offset, size_t size,
		    const char **ret_data, size_t *ret_len);
