#!/bin/sh
# Build the concurrency scenarios of fs/ with ThreadSanitizer and run them.
#
#   contrib/scripts/tsan.sh [BUILD_DIR]     (default: build-tsan)
#
# CC picks the compiler (default clang; gcc 12 needs libtsan2). Criterion
# cannot run under TSan, so the scenarios (memo single flight, readers and
# the refresher, pidwatch forgetting while adopting and during a report)
# are a plain driver, tests/tsan/concurrency.c: suite 'tsan'. Exits non-zero
# on any TSan report (TSan's exit status 66) or failed check.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build-tsan}
if [ ! -d "$dir" ]; then
	CC=${CC:-clang} meson setup -Db_sanitize=thread -Db_lundef=false "$dir" >/dev/null
fi
ninja -C "$dir" tests/unit/tsan_concurrency
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" meson test -C "$dir" --suite tsan --print-errorlogs --no-rebuild
