"""Time per container: /proc/uptime through the view, for callers of the
host's pid namespace (the host's file) and of new ones (the time since
their init started), read by cat, procps uptime and Python."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check  # noqa: E402


def uptime_of(text):
    up, idle = text.split()
    return float(up), float(idle)


def real_uptime():
    with open("/proc/uptime") as f:
        return uptime_of(f.read())


# In a new pid namespace: wait a little, then read the view's uptime as a
# file, and through the view bound over /proc as a file and with procps's
# uptime. (psutil's boot_time() comes from /proc/stat's btime, which stays
# the host's: process start times in ps depend on it.)
NEW_NS = r'''
sleep 1.5
cat "$CG_MNT/proc/uptime"
unshare --mount --propagation private sh -c '
    mount --rbind "$CG_MNT/proc" /proc || exit 97
    cat /proc/uptime
    uptime'
'''


def make_tests(d):
    t, test = cgtest.test_registry()

    @test("a caller of the host's pid namespace reads the host's uptime")
    def _():
        before = real_uptime()
        with open(os.path.join(d.mnt, "proc/uptime")) as f:
            view = uptime_of(f.read())
        after = real_uptime()
        check(before[0] <= view[0] <= after[0] and before[1] <= view[1] <= after[1],
              "the view's uptime is not the host's", before, view, after)

    @test("a caller in a pid namespace made 1.5 s ago reads an uptime of about 1.5 s, by cat and uptime; "
          "its idle time is at most the host's")
    def _():
        host = real_uptime()
        res = cgtest.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", NEW_NS],
                         env=dict(os.environ, CG_MNT=d.mnt))
        out = cgtest.check_ran(res, "the new pid namespace").splitlines()
        check(len(out) >= 3, "the reader printed too little", out)
        for what, line in (("MNT's uptime", out[0]), ("the view bound over /proc", out[1])):
            up, idle = uptime_of(line)
            check(1.4 <= up < 10, "%s in a pid namespace 1.5 s old: %.2f s" % (what, up), line)
            check(0 <= idle <= host[1] + 60, "%s: idle %.2f s" % (what, idle), line)
        check(" up 0 min," in out[2], "procps uptime does not say 0 min", out[2])

    return t


def main():
    cgtest.skip_all_unless_runnable()
    cgtest.run_with_daemon(make_tests)


if __name__ == "__main__":
    main()
