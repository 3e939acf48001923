/* The inode-number layout: every field comes back as it went in, fields do
 * not spill into each other, and a node's number is the same in every
 * process and build (a daemon taking over the view reads the numbers the
 * kernel cached from the one before). */
#include "ino.h"
#include "names.h"

#include <criterion/criterion.h>
#include <glib.h>
#include <sys/wait.h>
#include <unistd.h>

static const pid_t pids[] = { 1, 2, 100, 4194303 };
static const unsigned entries[] = { 0, 1, 77, INO_ENTRY_MAX };
static const uint64_t tags[] = { 0, 1, 4242, (UINT64_C(1) << INO_TAG_BITS) - 1 };
static const unsigned cpus[] = { 0, 1, 255, INO_CPU_MAX };
static const uint32_t cpu_classes[] = { 0, 1, 77777, INO_CPU_CLASS_MAX };
static const uint64_t ids[] = { 0, 1, 16, (UINT64_C(1) << INO_ID_BITS) - 1 };

Test(ino, the_pid_layout_round_trips)
{
	for (unsigned kind = 0; kind <= INO_KIND_MAX; kind++)
		for (size_t p = 0; p < G_N_ELEMENTS(pids); p++)
			for (size_t e = 0; e < G_N_ELEMENTS(entries); e++)
				for (size_t t = 0; t < G_N_ELEMENTS(tags); t++) {
					uint64_t ino = ino_pid_make(kind, pids[p], entries[e], tags[t]);
					cr_assert_eq(ino_kind(ino), kind);
					cr_assert_eq(ino_pid(ino), pids[p]);
					cr_assert_eq(ino_entry(ino), entries[e]);
					cr_assert_eq(ino_tag(ino), tags[t]);
				}
}

Test(ino, the_cpu_layout_round_trips)
{
	for (unsigned kind = 0; kind <= INO_KIND_MAX; kind++)
		for (size_t c = 0; c < G_N_ELEMENTS(cpus); c++)
			for (size_t s = 0; s < G_N_ELEMENTS(ids); s++)
				for (size_t k = 0; k < G_N_ELEMENTS(cpu_classes); k++) {
					uint64_t ino = ino_cpu_make(kind, cpus[c], cpu_classes[k], ids[s]);
					cr_assert_eq(ino_kind(ino), kind);
					cr_assert_eq(ino_cpu(ino), cpus[c]);
					cr_assert_eq(ino_cpu_class(ino), cpu_classes[k]);
					cr_assert_eq(ino_sub(ino), ids[s]);
				}
}

Test(ino, the_named_layout_round_trips)
{
	for (unsigned kind = 0; kind <= INO_KIND_MAX; kind++)
		for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
			uint64_t ino = ino_named_make(kind, ids[i]);
			cr_assert_eq(ino_kind(ino), kind);
			cr_assert_eq(ino_id(ino), ids[i]);
		}
}

Test(ino, fields_out_of_range_are_cut_not_spilled)
{
	uint64_t ino = ino_pid_make(4, INO_PID_MAX + 2, INO_ENTRY_MAX + 2, UINT64_MAX);
	cr_assert_eq(ino_kind(ino), 4);
	cr_assert_eq(ino_pid(ino), 1);
	cr_assert_eq(ino_entry(ino), 1);
	ino = ino_named_make(3, UINT64_MAX);
	cr_assert_eq(ino_kind(ino), 3);
	ino = ino_cpu_make(9, INO_CPU_MAX + 3, INO_CPU_CLASS_MAX + 4, UINT64_MAX);
	cr_assert_eq(ino_kind(ino), 9);
	cr_assert_eq(ino_cpu(ino), 2);
	cr_assert_eq(ino_cpu_class(ino), 3);
}

Test(ino, a_process_tag_is_the_low_bits_of_its_start_time)
{
	cr_assert_eq(ino_process_tag(4242), 4242);
	cr_assert_eq(ino_process_tag((UINT64_C(1) << INO_TAG_BITS) + 7), 7);
}

/* The numbers are fixed by the layout, not by the process or the build:
 * these are the numbers daemons gave before served files had classes. */
Test(ino, numbers_are_what_they_always_were)
{
	cr_assert_eq(ino_named_make(0, 1), 1, "the root is inode 1");
	cr_assert_eq(ino_named_make(0, 2), 2);
	cr_assert_eq(ino_named_make(2, 16), UINT64_C(0x2000000000000010));
	cr_assert_eq(ino_named_make(8, 0), UINT64_C(0x8000000000000000));
	cr_assert_eq(ino_pid_make(4, 100, 0, 4242), UINT64_C(0x4000190000001092));
	cr_assert_eq(ino_pid_make(7, 100, 6, 4242), UINT64_C(0x7000190180001092));
	cr_assert_eq(ino_cpu_make(9, 1, 0, 0xdece4), UINT64_C(0x90000000020dece4));
}

static const char *const paths[] = { "self", "cpu0/topology/core_id", "online", "cpu3/cache/index2/size" };

/* The numbers of nodes named by paths[], made in a child that interned
 * other names first. */
static void numbers_in_another_process(uint64_t *ret)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		uint64_t out[G_N_ELEMENTS(paths) * 2];
		for (int i = 0; i < 300; i++) {
			g_autofree char *other = g_strdup_printf("cpu%d/topology/thread_siblings", i);
			names_intern(other);
		}
		for (size_t i = G_N_ELEMENTS(paths); i-- > 0;) {
			out[2 * i] = ino_named_make(8, names_intern(paths[i]));
			out[2 * i + 1] = ino_cpu_make(9, 5, 0, names_intern(paths[i]));
		}
		_exit(write(p[1], out, sizeof(out)) == sizeof(out) ? 0 : 1);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], ret, sizeof(uint64_t) * 2 * G_N_ELEMENTS(paths)),
		     (ssize_t)(sizeof(uint64_t) * 2 * G_N_ELEMENTS(paths)));
	close(p[0]);
	waitpid(child, NULL, 0);
}

Test(ino, a_node_has_one_number_in_every_process)
{
	uint64_t theirs[G_N_ELEMENTS(paths) * 2];
	numbers_in_another_process(theirs);
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		cr_expect_eq(ino_named_make(8, names_intern(paths[i])), theirs[2 * i], "%s", paths[i]);
		cr_expect_eq(ino_cpu_make(9, 5, 0, names_intern(paths[i])), theirs[2 * i + 1], "%s", paths[i]);
	}
}

Test(ino, the_served_layout_round_trips_and_keeps_rows_and_classes_apart)
{
	const unsigned rows[] = { 1, 4, 16, INO_ROW_MAX };
	const uint64_t served_classes[] = { 0, 1, UINT64_C(0x123456789abc), INO_SERVED_CLASS_MASK };
	for (size_t r = 0; r < G_N_ELEMENTS(rows); r++) {
		for (size_t c = 0; c < G_N_ELEMENTS(served_classes); c++) {
			uint64_t ino = ino_served_make(2, rows[r], served_classes[c]);
			cr_assert_eq(ino_kind(ino), 2);
			cr_assert_eq(ino_served_row(ino), rows[r]);
			cr_assert_eq(ino_served_class(ino), served_classes[c]);
		}
	}
	cr_assert_neq(ino_served_make(2, 4, 1), ino_served_make(2, 4, 2), "two classes of one row");
	cr_assert_neq(ino_served_make(2, 4, 1), ino_served_make(2, 5, 1), "one class of two rows");
	cr_assert_eq(ino_served_class(ino_served_make(2, 4, INO_SERVED_CLASS_MASK + 5)), 4,
		     "a class is cut to its bits, not spilled into the row");
	cr_assert_eq(ino_served_row(ino_served_make(2, 4, INO_SERVED_CLASS_MASK + 5)), 4);
}
