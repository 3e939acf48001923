#include "snapshot.h"

void snapshot_slice(GBytes *content, off_t offset, size_t size,
		    const char **ret_data, size_t *ret_len)
{
	gsize len;
	const char *data = g_bytes_get_data(content, &len);

	if (offset < 0 || (guint64)offset >= len) {
		*ret_data = data;
		*ret_len = 0;
		return;
	}
	gsize left = len - (gsize)offset;
	*ret_data = data + offset;
	*ret_len = size < left ? size : left;
}
