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

# sanitized NAME SCRIPT MESSAGE: run SCRIPT build-NAME, its output kept in
# build-clang/NAME.log and shown if it fails.
sanitized() {
	rm -rf "build-$1"
	if "$2" "build-$1" >"build-clang/$1.log" 2>&1; then
		echo "$3"
	else
		cat "build-clang/$1.log"
		status=1
	fi
}
# The concurrency scenarios of fs/ under ThreadSanitizer (clang); the unit
# and mount tests again, the daemon built with ASan and UBSan.
sanitized tsan contrib/scripts/tsan.sh "tsan: concurrency scenarios clean"
sanitized asan contrib/scripts/asan.sh "asan+ubsan: unit and mount tests clean"

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
