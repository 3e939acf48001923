/* Files that could not be used are told once each (fs/reports.h). */
#include "reports.h"

#include <criterion/criterion.h>
#include <errno.h>

static void tell(void *data, const char *file, int err)
{
	g_ptr_array_add(data, g_strdup_printf("%s %d", file, err));
}

Test(reports, each_file_is_told_once)
{
	g_autoptr(GPtrArray) told = g_ptr_array_new_with_free_func(g_free);
	struct reports r;
	reports_init(&r, tell, told);
	for (int i = 0; i < 3; i++) {
		reports_once(&r, "a/cpu.stat", EINVAL);
		reports_once(&r, "b/memory.max", ENOENT);
	}
	cr_assert_eq(told->len, 2);
	g_autofree char *first = g_strdup_printf("a/cpu.stat %d", EINVAL);
	cr_assert_str_eq(g_ptr_array_index(told, 0), first);
	reports_clear(&r);

	struct reports nobody;
	reports_init(&nobody, NULL, NULL);
	reports_once(&nobody, "a/cpu.stat", EINVAL); /* tells nobody, and does not crash */
	reports_clear(&nobody);
}
