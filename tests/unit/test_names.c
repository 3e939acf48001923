/* The numbers inodes carry for names are the same in every process,
 * whatever each interned before: a daemon taking over from another reads
 * the inodes the kernel cached the same way. */
#include "names.h"

#include <criterion/criterion.h>
#include <glib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const some[] = { "self", "meminfo", "cpu0/topology/core_id", "online", "sys", "net" };

/* The numbers of some[], interned in reverse after others, in a child. */
static void numbers_in_another_process(uint64_t *ret)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		uint64_t ids[G_N_ELEMENTS(some)];
		for (int i = 0; i < 500; i++) {
			g_autofree char *other = g_strdup_printf("cpu%d/cache/index%d/size", i, i % 4);
			names_intern(other);
		}
		for (size_t i = G_N_ELEMENTS(some); i-- > 0;)
			ids[i] = names_intern(some[i]);
		_exit(write(p[1], ids, sizeof(ids)) == sizeof(ids) ? 0 : 1);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], ret, sizeof(uint64_t) * G_N_ELEMENTS(some)),
		     (ssize_t)(sizeof(uint64_t) * G_N_ELEMENTS(some)));
	close(p[0]);
	waitpid(child, NULL, 0);
}

Test(names, a_name_has_one_number_in_every_process)
{
	uint64_t theirs[G_N_ELEMENTS(some)];
	numbers_in_another_process(theirs);
	for (size_t i = 0; i < G_N_ELEMENTS(some); i++) {
		uint64_t mine = names_intern(some[i]);
		cr_expect_eq(mine, theirs[i], "%s: %llu here, %llu there", some[i], (unsigned long long)mine,
			     (unsigned long long)theirs[i]);
		cr_expect_str_eq(names_lookup(mine), some[i]);
		cr_expect(mine > 0 && mine < (UINT64_C(1) << NAMES_BITS));
	}
	cr_expect_null(names_lookup(names_intern("x") ^ 1), "a number nothing was interned as");
}
