#!/usr/bin/python3
"""What the failed tests of a meson test run said: for each, its failed
TAP lines and their diagnostics (meson's --print-errorlogs shows a TAP
test's stderr only, where these tests say nothing).

    contrib/scripts/failed-tests.py BUILD_DIR

Every run's log there: testlog.json, and testlog-NAME.json of a run with
--logbase testlog-NAME (the test command's unit suite)."""
import glob
import json
import os
import sys

LINES = 60  # of each failed test point


def failed_points(stdout):
    """Each "not ok" line with the "#" lines after it."""
    points, current = [], None
    for line in stdout.splitlines():
        if line.startswith("not ok"):
            current = [line]
            points.append(current)
        elif line.startswith("#") and current is not None:
            current.append(line)
        else:
            current = None
    return points


def main(build_dir):
    results = []
    for path in sorted(glob.glob(os.path.join(build_dir, "meson-logs", "testlog*.json"))):
        with open(path) as f:
            results += [json.loads(line) for line in f]
    for r in results:
        if r["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
            continue
        print("\n==== %s: %s" % (r["name"], r["result"]))
        points = failed_points(r.get("stdout") or "")
        for point in points:
            print("\n".join(point[:LINES]) + ("\n# ..." if len(point) > LINES else ""))
        if not points:
            print("\n".join((r.get("stdout") or "").splitlines()[-LINES:]))


if __name__ == "__main__":
    main(sys.argv[1])
