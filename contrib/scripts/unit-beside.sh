#!/bin/sh
# A build directory's tests, the unit suite beside the others: `meson test
# -C BUILD_DIR OPTIONS --no-suite unit`, and meanwhile the unit suite one
# test at a time (its log: meson-logs/testlog-unit.*). The mount tests
# that start first run alone (they compare the view with the whole host's
# figures) and leave a CPU idle, which the unit tests take.
#
#   contrib/scripts/unit-beside.sh BUILD_DIR [meson test options]
#
# Exit status: non-zero if either run failed (the unit run's output is
# shown then).
set -u
dir=$1
shift
log=$(mktemp)
meson test -C "$dir" --no-rebuild --logbase testlog-unit --num-processes 1 --suite unit >"$log" 2>&1 &
unit=$!
meson test -C "$dir" --no-rebuild "$@" --no-suite unit
status=$?
if ! wait "$unit"; then
	cat "$log"
	status=1
fi
rm -f "$log"
exit $status
