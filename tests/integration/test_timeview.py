"""Time per container through the view: /proc/uptime for callers of the
host's pid namespace (the host's file) and of new ones (the time since
their init started), read by cat and procps uptime; /proc/stat's CPU time
and /proc/loadavg of a cgroup under a CFS quota (v1 cpu and cpuacct), read
by psutil and top, busy and idle."""

import json
import os
import signal
import subprocess
import sys
import time

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


# Reads MNT/proc/uptime and loadavg for argv[2] seconds (MNT argv[1]), every
# way a pass can go over them: whole, a byte at a time, pread at an odd
# offset in the same open, and a file held open read again from offset 0
# every 50 ms; prints JSON: the texts not of their shape, the reads, and
# the held file's first and last uptime.
READERS = r"""
import json, os, re, sys, time
mnt, seconds = sys.argv[1], float(sys.argv[2])
shapes = {"uptime": re.compile(rb"^\d+\.\d\d \d+\.\d\d\n$"),
          "loadavg": re.compile(rb"^\d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+\n$")}
bad, reads, last_up = [], 0, 0.0
held = os.open(mnt + "/proc/uptime", os.O_RDONLY)
held_ups = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    for name, shape in shapes.items():
        fd = os.open(mnt + "/proc/" + name, os.O_RDONLY)
        whole = b"".join(iter(lambda: os.read(fd, 65536), b""))
        if os.pread(fd, 64, 3) != whole[3:67]:
            bad.append(["pread at 3 differs", name, whole.decode()])
        os.lseek(fd, 0, os.SEEK_SET)
        ones = b"".join(iter(lambda: os.read(fd, 1), b""))
        os.close(fd)
        reads += 1
        for text in (whole, ones):
            if not shape.match(text):
                bad.append(["not of its shape", name, text.decode(errors="replace")])
        if name == "uptime" and shape.match(whole):
            up = float(whole.split()[0])
            if up < last_up:
                bad.append(["uptime went back", last_up, up])
            last_up = up
    if not held_ups or time.monotonic() - held_ups[-1][0] >= 0.05:
        text = os.pread(held, 4096, 0)
        if not shapes["uptime"].match(text):
            bad.append(["held: not of its shape", text.decode(errors="replace")])
        else:
            held_ups.append((time.monotonic(), float(text.split()[0])))
print(json.dumps({"bad": bad[:20], "reads": reads, "held": [held_ups[0][1], held_ups[-1][1]]}))
"""


CGROUP = "/sys/fs/cgroup"
TOP = "cgprocfs-timetest-%d" % os.getpid()

# Through the view bound over /proc (a container's, or in_cgroups'): the
# loadavg first read, psutil.cpu_percent over 2 s, top's %Cpu(s) (us + sy)
# over its second sample, vmstat's us + sy over 2 s, procs_running, and
# for each tool the CPU time the busy loops (pids in $CG_HOGS, if any)
# used while it ran and the CPUs of /proc/stat, as JSON.
CPU_PROBE = r'''
import json, os, re, subprocess, time, psutil
hogs = os.environ.get("CG_HOGS", "").split()


def hog_ticks():
    ticks = 0
    for pid in hogs:
        with open("/proc/%s/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks


windows = {}


def timed(what, fn):
    h0, t0 = hog_ticks(), time.monotonic()
    got = fn()
    windows[what] = {"hog_ticks": hog_ticks() - h0, "seconds": time.monotonic() - t0}
    return got


def sh(*argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, text=True).stdout


# What uptime and top show; psutil.getloadavg() is glibc's getloadavg(),
# which asks sysinfo(), not the file, since glibc 2.35.
first_load = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
pct = timed("psutil", lambda: psutil.cpu_percent(interval=2))
top = timed("top", lambda: sh("top", "-bn2", "-d1"))
us = [float(m.group(1)) + float(m.group(2)) for m in re.finditer(r"%Cpu\(s\):\s*([0-9.]+) us,\s*([0-9.]+) sy", top)]
vm = timed("vmstat", lambda: sh("vmstat", "2", "2")).splitlines()
head, last = vm[1].split(), vm[-1].split()
running = [int(l.split()[1]) for l in open("/proc/stat") if l.startswith("procs_running ")]
print(json.dumps({"psutil": pct, "top": us[-1] if us else None,
                  "vmstat": int(last[head.index("us")]) + int(last[head.index("sy")]),
                  "load": first_load, "running": running[0], "loadavg": open("/proc/loadavg").read(),
                  "windows": windows, "clk": os.sysconf("SC_CLK_TCK"),
                  "cpus": len([l for l in open("/proc/stat") if re.match(r"cpu\d", l)])}))
'''


def set_quota(group, quota_us):
    """group's CFS quota every 100000 µs (group: its dirs, cpu's first)."""
    with open(os.path.join(group[0], "cpu.cfs_period_us"), "w") as f:
        f.write("100000")
    with open(os.path.join(group[0], "cpu.cfs_quota_us"), "w") as f:
        f.write(str(quota_us))


def quota_groups(names=("busy", "idle"), quota_us=50000):
    """cpu and cpuacct v1 cgroups TOP/<name> for each of names, each with
    quota_us of CPU time every 100000 µs (half a CPU): {name: [dirs]}, or
    a Skip."""
    roots = [os.path.join(CGROUP, h) for h in ("cpu", "cpuacct")]
    if not all(os.path.isdir(r) for r in roots) or not os.path.exists(os.path.join(roots[0], "cpu.cfs_quota_us")):
        raise cgtest.Skip("needs the cgroup v1 cpu and cpuacct hierarchies under " + CGROUP)
    groups = {}
    for name in names:
        groups[name] = []
        for root in roots:
            path = os.path.join(root, TOP, name)
            os.makedirs(path)
            groups[name].append(path)
        set_quota(groups[name], quota_us)
    return groups


# Reads /proc/stat (the view bound over it) for each line on stdin and
# prints its cpu lines as JSON: {"cpu": [fields], "cpu0": [...], ...}.
STAT_READER = r'''
import json, sys
for _ in sys.stdin:
    with open("/proc/stat") as f:
        rows = [l.split() for l in f if l.startswith("cpu")]
    print(json.dumps({r[0]: [int(x) for x in r[1:]] for r in rows}), flush=True)
'''


def check_not_back(before, after, what):
    """No counter of a cpu line both stat texts have is below before's."""
    for name in sorted(set(before) & set(after)):
        back = [i for i, (b, a) in enumerate(zip(before[name], after[name])) if a < b]
        check(not back, "%s: %s's fields %s went back" % (what, name, back), before[name], after[name])


def remove_quota_groups():
    for h in ("cpu", "cpuacct"):
        top = os.path.join(CGROUP, h, TOP)
        if os.path.isdir(top):
            cgtest.remove_cgroups([p for p, _, _ in os.walk(top, topdown=False)], os.path.join(CGROUP, h))


def check_cpu_percent(got):
    """CPU_PROBE's figures of a busy caller (half a CPU, spinning), an idle
    one, and the busy one after it stopped: psutil, top and vmstat say the
    busy loops' share of the caller's CPUs while each ran (50 %, less if
    the machine is loaded), ≤ 5 %, ≤ 5 %."""
    busy = got["busy"]
    for what in ("psutil", "top", "vmstat"):
        w = busy["windows"][what]
        cgtest.check_cpu_share("%s in the busy cgroup" % what, busy[what], w["hog_ticks"], w["seconds"], busy["clk"],
                               busy["cpus"], os.cpu_count())
        check(got["idle"][what] <= 5, "%s says %s %% in the idle cgroup" % (what, got["idle"][what]))
        check(got["after"][what] <= 5, "%s says %s %% once the loop ended" % (what, got["after"][what]))


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

    def served_counts():
        with open(os.path.join(d.mnt, ".cgprocfs/stats")) as f:
            got = dict(line.split() for line in f if line.startswith("cgprocfs_served_"))
        return int(got["cgprocfs_served_renders_total"]), int(got["cgprocfs_served_reuses_total"])

    @test("a class's counters are read once a tick: 50 opens of proc/stat in a row under a quota render it a few "
          "times, not 50; a caller of the host's pid namespace, whose uptime is the host's file, renders it at "
          "each open")
    def _():
        reader = "import os, sys\nfor _ in range(50):\n    open(sys.argv[1], 'rb').read()\n"
        path = os.path.join(d.mnt, "proc/stat")
        groups = quota_groups(("tick",))
        try:
            before = served_counts()
            cgtest.check_ran(cgtest.run(cgtest.in_cgroups(groups["tick"], [sys.executable, "-c", reader, path])),
                             "the reader under a quota")
            after = served_counts()
        finally:
            remove_quota_groups()
        check(after[0] - before[0] <= 25 and after[1] - before[1] >= 25,
              "50 opens under a quota: %d renders, %d texts served again" % (after[0] - before[0], after[1] - before[1]))
        before = served_counts()
        res = cgtest.run([sys.executable, "-c", reader, os.path.join(d.mnt, "proc/uptime")])
        cgtest.check_ran(res, "the reader of the host's uptime")
        after = served_counts()
        check(after[0] - before[0] >= 50, "50 opens of the host's uptime: %d renders" % (after[0] - before[0]))

    @test("four readers of uptime and loadavg for 3 s (whole, a byte at a time, pread at an odd offset, a file held "
          "open and read again): every text of its shape, no uptime goes back, the held file's moves")
    def _():
        procs = [subprocess.Popen([sys.executable, "-c", READERS, d.mnt, "3"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            check(p.returncode == 0, "a reader failed", err[-2000:])
            got = json.loads(out)
            check(not got["bad"], "%d reads, wrong ones" % got["reads"], *got["bad"])
            check(got["reads"] > 100, "only %d reads" % got["reads"])
            check(got["held"][1] >= got["held"][0] + 2, "the held file's uptime went from %.2f to %.2f in 3 s"
                  % tuple(got["held"]))

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

    @test("a caller under half a CPU sees its cgroup's CPU time in /proc/stat and load in /proc/loadavg: "
          "psutil.cpu_percent, top and vmstat say the share of its CPU that two busy loops there use (50 %), ≤ 5 % in an idle "
          "cgroup at the same time, and ≤ 5 % once the loops ended; a 1-minute load ≥ 0.6 there, ≤ 0.2 in the idle one")
    def _():
        groups = quota_groups()
        env = dict(os.environ, CG_MNT=d.mnt)
        try:
            # two spinning threads (processes) in the busy cgroup
            spin = subprocess.Popen(["sh", "-c", "".join("echo $$ > %s/cgroup.procs; " % g for g in groups["busy"]) +
                                     "sh -c 'while :; do :; done' & exec sh -c 'while :; do :; done'"],
                                    start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                procs = os.path.join(groups["busy"][0], "cgroup.procs")
                check(cgtest.wait_until(lambda: len(open(procs).read().split()) == 2),
                      "the two loops are not in the busy cgroup", open(procs).read())
                hogs = " ".join(open(procs).read().split())
                busy = subprocess.Popen(cgtest.in_cgroups(groups["busy"], [cgtest.PYTHON, "-c", CPU_PROBE], cgtest.BIND_PROC),
                                        env=dict(env, CG_HOGS=hogs), stdout=subprocess.PIPE, text=True)
                idle = subprocess.Popen(cgtest.in_cgroups(groups["idle"], [cgtest.PYTHON, "-c", CPU_PROBE], cgtest.BIND_PROC), env=env,
                                        stdout=subprocess.PIPE, text=True)
                got = {"busy": json.loads(busy.communicate(timeout=60)[0]),
                       "idle": json.loads(idle.communicate(timeout=60)[0])}
            finally:
                os.killpg(spin.pid, signal.SIGKILL)
                spin.wait()
            res = cgtest.run(cgtest.in_cgroups(groups["busy"], [cgtest.PYTHON, "-c", CPU_PROBE], cgtest.BIND_PROC), env=env)
            got["after"] = json.loads(cgtest.check_ran(res, "the probe after the loop"))
        finally:
            remove_quota_groups()
        cgtest.diag("cpu %%: %s" % got)
        # Loads: the busy cgroup's two spinners count from its first read.
        check(got["busy"]["load"][0] >= 0.6, "the busy cgroup's 1-minute load: %s" % got["busy"]["load"],
              got["busy"]["loadavg"])
        check(got["idle"]["load"][0] <= 0.2, "the idle cgroup's 1-minute load: %s" % got["idle"]["load"],
              got["idle"]["loadavg"])
        check(got["busy"]["loadavg"].split()[3].startswith(("1/", "2/", "3/")),
              "runnable/total of the busy cgroup", got["busy"]["loadavg"])
        # stat's procs_running: the cgroup's runnable threads (the probe's own at most, when idle)
        check(got["busy"]["running"] >= 2, "procs_running in the busy cgroup: %d" % got["busy"]["running"])
        check(got["idle"]["running"] <= 1, "procs_running in the idle cgroup: %d" % got["idle"]["running"])
        check_cpu_percent(got)

    @test("/proc/loadavg's last field, read in a pid namespace of its own in a cgroup, is the newest process "
          "there as that namespace numbers it")
    def _():
        group = quota_groups(("lastpid",))["lastpid"]
        try:
            res = cgtest.run(cgtest.in_cgroups(group, ["unshare", "--pid", "--fork", "sh", "-c",
                                                       "sleep 0.1; sh -c 'echo $$; exec cat /proc/loadavg'"],
                                               cgtest.BIND_PROC), env=dict(os.environ, CG_MNT=d.mnt))
        finally:
            remove_quota_groups()
        out = cgtest.check_ran(res, "cat in a new pid namespace").splitlines()
        check(len(out) == 2 and len(out[1].split()) == 5, "what the reader printed", out)
        check(out[1].split()[4] == out[0], "the last pid is not cat's own number %s" % out[0], out[1])

    @test("/proc/stat's counters never go back for a reader in a pid namespace of its own: not when its quota "
          "falls from 2 CPUs to one or rises again, not across a SIGKILL of the daemon and a restart, nor a --replace")
    def _():
        if os.cpu_count() < 2:
            raise cgtest.Skip("needs 2 CPUs for a view of 2 CPUs")
        group = quota_groups(("counters",), 200000)["counters"]
        env = dict(os.environ, CG_MNT=d.mnt)
        spin = subprocess.Popen(["sh", "-c", "".join("echo $$ > %s/cgroup.procs; " % g for g in group) +
                                 "exec sh -c 'while :; do :; done'"],
                                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # in a pid namespace of its own, as in a container: its cgroup's
        # figures also with a view of every CPU
        reader = subprocess.Popen(cgtest.in_cgroups(group, ["unshare", "--pid", "--fork", cgtest.PYTHON, "-c",
                                                            STAT_READER], cgtest.BIND_PROC),
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def read_stat():
            reader.stdin.write("\n")
            reader.stdin.flush()
            line = reader.stdout.readline()
            check(line, "the reader stopped", reader.poll())
            return json.loads(line)

        try:
            time.sleep(2)  # a cgroup 2 s old, a CPU of it busy
            seen = [("2 CPUs", read_stat())]
            steps = (("1 CPU", lambda: set_quota(group, 50000)),
                     ("1 CPU, after a SIGKILL and a restart", d.crash_and_restart),
                     ("2 CPUs again, after --replace", lambda: (set_quota(group, 200000), d.take_over())))
            for what, step in steps:
                step()
                time.sleep(1.2)  # a caller's CPU view is found again after a second
                seen.append((what, read_stat()))
                check_not_back(seen[-2][1], seen[-1][1], "from %s to %s" % (seen[-2][0], what))
            for (what, rows), cpus in zip(seen, (2, 1, 1, 2)):
                check(len(rows) == cpus + 1, "%s: %d cpu lines" % (what, len(rows)), rows)
            cgtest.diag("cpu lines: %s" % seen)
        finally:
            os.killpg(spin.pid, signal.SIGKILL)
            spin.wait()
            reader.stdin.close()
            reader.wait(10)
            remove_quota_groups()

    return t


def main():
    cgtest.skip_all_unless_runnable()
    try:
        cgtest.run_with_daemon(make_tests)
    finally:
        remove_quota_groups()


if __name__ == "__main__":
    main()
