#!/usr/bin/env bash
# Fresh Debian 12 to a passing test suite: install, build with gcc (and
# check that clang builds it clean too, with the fuzzers), run every test,
# replay the fuzzers' seeds and past crash inputs, run the concurrency
# scenarios under ThreadSanitizer, and the unit and mount tests again with
# the daemon under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/../.."
. contrib/scripts/deps.sh
cgprocfs_install "${cgprocfs_build_deps[@]}" "${cgprocfs_test_deps[@]}"
cgprocfs_build
rm -rf build-clang
CC=clang meson setup -Dfuzz=true build-clang >/dev/null
ninja -C build-clang >build-clang/build.log || { cat build-clang/build.log; exit 1; }
echo "clang build: clean"

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=$?
if meson test -C build-clang --suite fuzz --num-processes 2 >build-clang/fuzz.log 2>&1; then
	echo "fuzzers: seeds replayed clean ($(grep -c ' OK ' build-clang/fuzz.log) harnesses)"
else
	cat build-clang/fuzz.log
	status=1
fi

# The concurrency scenarios of fs/ under ThreadSanitizer (clang).
rm -rf build-tsan
if contrib/scripts/tsan.sh build-tsan >build-clang/tsan.log 2>&1; then
	echo "tsan: concurrency scenarios clean"
else
	cat build-clang/tsan.log
	status=1
fi

# The unit and mount tests again, the daemon built with ASan and UBSan.
rm -rf build-asan
if contrib/scripts/asan.sh build-asan >build-clang/asan.log 2>&1; then
	echo "asan+ubsan: unit and mount tests clean"
else
	cat build-clang/asan.log
	status=1
fi

# One closing line for whoever reads only the end.
/usr/bin/python3 - <<'PY'
import json
counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
with open("build/meson-logs/testlog.json") as f:
    for line in f:
        result = json.loads(line)["result"]
        key = result if result in counts else "FAIL"
        counts[key] += 1
print("%d passed, %d failed, %d skipped" % (counts["OK"], counts["FAIL"], counts["SKIP"]))
PY
exit $status
