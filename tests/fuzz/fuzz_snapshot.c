/* snapshot_slice (fs/snapshot.h): the bytes a read(size, offset) of a
 * daemon-served file returns, for fuzzed offsets and sizes (the first 16
 * bytes of the input; the rest is the content). */
#include "fuzz.h"
#include "snapshot.h"

#include <string.h>

static volatile uint8_t sink;

static void check(GBytes *content, off_t offset, size_t size)
{
	gsize len;
	const char *base = g_bytes_get_data(content, &len);
	const char *data = (const char *)1;
	size_t got = (size_t)-1;

	snapshot_slice(content, offset, size, &data, &got);
	FUZZ_CHECK(got <= size);
	if (offset < 0 || (guint64)offset >= len) {
		FUZZ_CHECK(got == 0); /* empty past the end */
		return;
	}
	gsize left = len - (gsize)offset;
	FUZZ_CHECK(data == base + offset);
	FUZZ_CHECK(got == MIN(size, left)); /* short only at the end */
	/* every byte handed out is inside content (ASan checks each) */
	uint8_t x = 0;
	for (size_t i = 0; i < got; i++)
		x ^= (uint8_t)data[i];
	sink = x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_tail head = { data, MIN(size, 16) };
	uint64_t size_raw = fuzz_take(&head, 8), offset_raw = fuzz_take(&head, 8);
	size_t skip = MIN(size, 16);
	/* g_bytes_new copies into a buffer of exactly that size */
	GBytes *content = g_bytes_new(data + skip, size - skip);
	gsize len = g_bytes_get_size(content);

	const off_t offsets[] = {
		(off_t)offset_raw, (off_t)(offset_raw % (len + 2)), (off_t)len, (off_t)len - 1, -1,
		INT64_MIN, INT64_MAX, 0,
	};
	const size_t sizes[] = { (size_t)size_raw, (size_t)(size_raw % (len + 2)), 0, 1, SIZE_MAX, len };
	for (size_t i = 0; i < G_N_ELEMENTS(offsets); i++)
		for (size_t j = 0; j < G_N_ELEMENTS(sizes); j++)
			check(content, offsets[i], sizes[j]);
	g_bytes_unref(content);
	return 0;
}
