#!/usr/bin/env bash
# Fresh Debian 12 to a passing test suite: install, build with gcc (and
# check that clang builds it clean too, with the fuzzers), run every test,
# replay the fuzzers' seeds and past crash inputs, run the concurrency
# scenarios under ThreadSanitizer, and the unit and mount tests again with
# the daemon under AddressSanitizer and UndefinedBehaviorSanitizer, then
# the soak against that daemon. At the end, how long each stage took.
#
# One stage at a time; within a stage, two tests at a time (meson's
# --num-processes 2; the suites that compare the view with the whole
# host's figures, or install into it, run alone: tests/integration/meson.build).
# The sanitized daemon's stage beside the plain one (tried) made each
# other's timing checks fail (psutil's, the host's texts) on 2 CPUs.
set -euo pipefail
cd "$(dirname "$0")/../.."
. contrib/scripts/deps.sh

logs=build-logs
rm -rf "$logs" && mkdir "$logs"
# stage NAME COMMAND...: run it, and note in $logs/stages how long it took;
# its status.
stage() {
	local name=$1 start=$SECONDS rc=0
	shift
	"$@" || rc=$?
	printf '%-36s %5d s%s\n' "$name" $((SECONDS - start)) "$([ $rc -eq 0 ] || echo "  (failed)")" >>"$logs/stages"
	return $rc
}

build_clang() {
	rm -rf build-clang
	CC=$clang meson setup -Dfuzz=true build-clang >/dev/null
	ninja -C build-clang >"$logs/clang-build.log" || { cat "$logs/clang-build.log"; return 1; }
	echo "clang build: clean"
}

fuzz_seeds() {
	if meson test -C build-clang --suite fuzz --num-processes 2 >"$logs/fuzz.log" 2>&1; then
		echo "fuzzers: seeds replayed clean ($(grep -c ' OK ' "$logs/fuzz.log") harnesses)"
	else
		cat "$logs/fuzz.log"
		return 1
	fi
}

# logged NAME MESSAGE COMMAND...: COMMAND's output kept in $logs/NAME.log,
# and shown if it fails; MESSAGE if not.
logged() {
	local name=$1 message=$2
	shift 2
	if "$@" >"$logs/$name.log" 2>&1; then
		echo "$message"
	else
		cat "$logs/$name.log"
		return 1
	fi
}

start=$SECONDS
stage "packages" cgprocfs_install "${cgprocfs_build_deps[@]}" "${cgprocfs_test_deps[@]}"
# clang through ccache, as meson does gcc by itself; the cache is kept
# whatever directory the tree was cloned into.
clang="ccache clang"
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
stage "build (gcc)" cgprocfs_build
stage "build (clang, fuzzers)" build_clang

status=0
# The two user-mode Linux guests together, then the other tests.
stage "meson test (guests)" meson test -C build --no-rebuild --print-errorlogs --num-processes 2 --suite guest \
	--logbase testlog-guest || status=1
stage "meson test (unit, mount)" contrib/scripts/unit-beside.sh build --print-errorlogs --num-processes 2 \
	--no-suite guest || status=1
[ $status -eq 0 ] || contrib/scripts/failed-tests.py build
stage "fuzzers' seeds" fuzz_seeds || status=1
rm -rf build-tsan build-asan
CC=$clang stage "tsan (build, scenarios)" logged tsan "tsan: concurrency scenarios clean" \
	contrib/scripts/tsan.sh build-tsan || status=1
stage "asan+ubsan (build, tests)" logged asan "asan+ubsan: unit and mount tests clean" \
	contrib/scripts/asan.sh build-asan tests || status=1
stage "asan+ubsan soak" logged soak "asan+ubsan: the soak passed" contrib/scripts/asan.sh build-asan soak ||
	status=1

# How long each stage and each test took, then one closing line for
# whoever reads only the end.
/usr/bin/python3 - "$((SECONDS - start))" "$logs" <<'PY'
import glob, json, os, sys
total, logs = int(sys.argv[1]), sys.argv[2]
print("\nstages:")
print("".join("  " + line for line in open(os.path.join(logs, "stages"))), end="")
for name in ("asan.log", "soak.log"):  # asan.sh's own stages
    try:
        with open(os.path.join(logs, name)) as f:
            print("".join("    " + line[len("stage: "):] for line in f if line.startswith("stage: ")), end="")
    except OSError:
        pass
print("  %-36s %5d s" % ("total", total))
results = [json.loads(line) for path in sorted(glob.glob("build/meson-logs/testlog*.json")) for line in open(path)]
groups = {}
for r in results:  # "cgprocfs:mount+view / view": suite group view
    group = r["name"].split(" / ")[0].split(":", 1)[1].split("+")[-1]
    groups[group] = groups.get(group, 0) + r["duration"]
print("\nsuites (plain build; the sum of their tests' times):")
for group, seconds in sorted(groups.items(), key=lambda kv: -kv[1]):
    print("  %-36s %5.0f s" % (group, seconds))
print("\nslowest tests (plain build):")
for r in sorted(results, key=lambda r: -r["duration"])[:12]:
    print("  %-36s %5.0f s" % (r["name"], r["duration"]))
counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for r in results:
    counts[r["result"] if r["result"] in counts else "FAIL"] += 1
print("%d passed, %d failed, %d skipped" % (counts["OK"], counts["FAIL"], counts["SKIP"]))
PY
exit $status
