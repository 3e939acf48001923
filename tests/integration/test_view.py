"""The view bound over /proc (and used from the host through
psutil.PROCFS_PATH): everyday tools, delegation to the real procfs, exited
processes, errors, and the daemon-served files.

Every expectation comes from the real procfs in the same run (the host's
/proc, or /proc/.real inside the view), never from constants."""

import errno
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, check_ran  # noqa: E402

# A sleeping process of the test, with an argument no other process has.
MARKER_SECONDS = "7%d.%d" % (random.randrange(100000, 999999), os.getpid())
SLEEPER_CWD = None
sleeper = None


def sleeper_pid():
    return sleeper.pid


def marker_args():
    return "sleep " + MARKER_SECONDS


def real_pids():
    return {int(n) for n in os.listdir("/proc") if n.isdigit()}


def parse_kv(text):
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def meminfo_kb(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def make_tests(d):
    t, test = cgtest.test_registry()

    # ------------------------------------------------ tools in the view --

    @test("ps aux in the view lists the test's sleeping process, and the same processes as the host")
    def _():
        before = real_pids()
        out = check_ran(cgtest.bash_in_view(d.mnt, "ps aux"), "ps aux")
        after = real_pids()
        rows = [line.split(None, 10) for line in out.splitlines()[1:]]
        mine = [r for r in rows if len(r) == 11 and r[1] == str(sleeper_pid())]
        check(mine, "no line for pid %d" % sleeper_pid(), out)
        check_equal(mine[0][10], marker_args(), "command of pid %d" % sleeper_pid())
        check(mine[0][7].startswith("S"), "state of the sleeper is not S", mine[0])
        rc, host_out, err = cgtest.run(["ps", "aux"])
        host_rows = {r.split(None, 10)[1]: r.split(None, 10) for r in host_out.splitlines()[1:]}
        check_equal(mine[0][0], host_rows[str(sleeper_pid())][0], "user of the sleeper (view vs host)")
        view_pids = {int(r[1]) for r in rows}
        # Processes that lived before and after the listing must be in it;
        # others (ps itself, other activity) may come and go.
        missing = (before & after) - view_pids
        check(not missing, "ps aux in the view misses live processes: %s" % sorted(missing))
        extra = view_pids - before - after
        check(len(extra) <= max(5, len(after) // 20), "ps aux in the view lists unknown pids: %s" % sorted(extra))

    @test("top -bn1 in the view counts the real tasks and shows CPU and memory lines")
    def _():
        # The real count taken before and after top: the suites beside
        # this one start and end processes. Tried again while top's count
        # is outside them (a wrong count is outside every time).
        script = ("echo before=$(ls -d /proc/.real/[0-9]* | wc -l); top -bn1 | head -n 5; "
                  "echo after=$(ls -d /proc/.real/[0-9]* | wc -l)")
        for _ in range(5):
            out = check_ran(cgtest.bash_in_view(d.mnt, script), "top -bn1")
            m = re.search(r"Tasks:\s+(\d+) total", out)
            check(m, "no 'Tasks: N total' line", out)
            real = sorted(int(parse_kv(out)[k]) for k in ("before", "after"))
            slack = max(5, real[1] // 20)
            if real[0] - slack <= int(m.group(1)) <= real[1] + slack:
                break
        else:
            raise cgtest.Failure("top counts %s tasks, the real procfs between %d and %d"
                                 % (m.group(1), real[0], real[1]), out)
        check(re.search(r"^%Cpu\(s\):", out, re.M), "no %Cpu(s) line", out)
        m = re.search(r"^MiB Mem :\s+([\d.]+) total", out, re.M)
        check(m, "no 'MiB Mem' line", out)
        check(abs(float(m.group(1)) - meminfo_kb("MemTotal") / 1024) < 1,
              "top's total memory %s MiB, host MemTotal %d kB" % (m.group(1), meminfo_kb("MemTotal")))

    @test("free in the view reports the host's MemTotal")
    def _():
        out = check_ran(cgtest.bash_in_view(d.mnt, "free"), "free")
        mem = [line.split() for line in out.splitlines() if line.startswith("Mem:")]
        check(mem, "no Mem: line", out)
        check_equal(int(mem[0][1]), meminfo_kb("MemTotal"), "free's total (KiB) vs /proc/meminfo MemTotal")

    @test("uptime in the view gives the host's load averages")
    def _():
        out = check_ran(cgtest.bash_in_view(d.mnt, "uptime"), "uptime")
        m = re.search(r"\bup\b.*load average: ([\d.]+), ([\d.]+), ([\d.]+)", out)
        check(m, "unexpected uptime output", out)
        with open("/proc/loadavg") as f:
            real = [float(x) for x in f.read().split()[:3]]
        for got, want in zip((float(x) for x in m.groups()), real):
            check(abs(got - want) < 0.5, "load averages %s vs /proc/loadavg %s" % (m.groups(), real))

    @test("pgrep -f in the view finds the test's process, as on the host")
    def _():
        # "[.]" keeps pgrep's own command line from matching.
        pattern = marker_args().replace(".", "[.]")
        out = check_ran(cgtest.in_view(d.mnt, ["pgrep", "-f", pattern]), "pgrep -f")
        rc, host_out, err = cgtest.run(["pgrep", "-f", pattern])
        check_equal(out.split(), host_out.split(), "pgrep -f output (view vs host)")
        check(str(sleeper_pid()) in out.split(), "pgrep -f did not find pid %d" % sleeper_pid(), out)

    @test("cat <(echo x) in the view prints x (/dev/fd magic links)")
    def _():
        out = check_ran(cgtest.bash_in_view(d.mnt, "cat <(echo x)"), "cat <(echo x)")
        check_equal(out, "x\n", "output")

    @test("echo N > /proc/self/oom_score_adj in the view lands on the writer's real file")
    def _():
        with open("/proc/self/oom_score_adj") as f:
            mine_before = f.read()
        with open("/proc/%d/oom_score_adj" % d.process.pid) as f:
            daemon_before = f.read()
        value = 500 if int(mine_before) != 500 else 600
        out = check_ran(cgtest.bash_in_view(d.mnt, (
            "echo before=$(cat /proc/.real/$$/oom_score_adj)\n"
            "echo %d > /proc/self/oom_score_adj || exit 3\n"
            "echo real=$(cat /proc/.real/$$/oom_score_adj)\n"
            "echo view=$(cat /proc/$$/oom_score_adj)\n") % value), "the write")
        kv = parse_kv(out)
        check(kv.get("before") != str(value), "the shell had the value before the write", out)
        check_equal(kv.get("real"), str(value), "the writer's real oom_score_adj after the write")
        check_equal(kv.get("view"), str(value), "the writer's oom_score_adj read through the view")
        with open("/proc/self/oom_score_adj") as f:
            check_equal(f.read(), mine_before, "the test process's own oom_score_adj")
        with open("/proc/%d/oom_score_adj" % d.process.pid) as f:
            check_equal(f.read(), daemon_before, "the daemon's oom_score_adj")

    @test("readlink of /proc/self/exe and /proc/<pid>/{exe,cwd,root} in the view gives the real paths")
    def _():
        pid = sleeper_pid()
        out = check_ran(cgtest.bash_in_view(d.mnt, (
            "echo self=$(readlink /proc/self/exe)\n"
            "for e in exe cwd root; do echo $e=$(readlink /proc/%d/$e); done\n") % pid), "readlink")
        kv = parse_kv(out)
        # $(...) runs readlink in a child: its exe is readlink's binary.
        check_equal(kv.get("self"), os.path.realpath(shutil.which("readlink")), "readlink /proc/self/exe")
        for e in ("exe", "cwd", "root"):
            check_equal(kv.get(e), os.readlink("/proc/%d/%s" % (pid, e)), "readlink /proc/<pid>/%s" % e)

    @test("nsenter --mount=/proc/<pid>/ns/mnt works in the view, for a child and for a host process")
    def _():
        out = check_ran(cgtest.bash_in_view(d.mnt, (
            "sleep 60 & child=$!\n"
            "nsenter --mount=/proc/$child/ns/mnt true; echo child_rc=$?\n"
            "echo child_ns=$(readlink /proc/$child/ns/mnt) real_ns=$(readlink /proc/.real/$child/ns/mnt)\n"
            "kill $child\n"
            "echo host_ns=$(nsenter --mount=/proc/%d/ns/mnt readlink /proc/self/ns/mnt)\n") % sleeper_pid()),
            "nsenter")
        kv = parse_kv(out.replace(" ", "\n"))
        check_equal(kv.get("child_rc"), "0", "nsenter into the child's mount namespace: exit status")
        check_equal(kv.get("child_ns"), kv.get("real_ns"), "ns/mnt link text (view vs real)")
        check_equal(kv.get("host_ns"), os.readlink("/proc/self/ns/mnt"),
                    "mount namespace entered through the host sleeper's ns/mnt")

    @test("ls /proc/self/fd in the view lists what the real procfs lists")
    def _():
        out = check_ran(cgtest.bash_in_view(d.mnt, "ls /proc/self/fd; echo ---; ls /proc/.real/self/fd"), "ls")
        view, _, real = out.partition("---\n")
        check(view.split(), "empty listing", out)
        check_equal(view.split(), real.split(), "ls /proc/self/fd (view vs real)")

    @test("/proc/thread-self from a second thread resolves to that thread")
    def _():
        code = (
            "import json, os, threading\n"
            "res = {'pid': os.getpid()}\n"
            "def first_field(path):\n"
            "    with open(path) as f:\n"
            "        return int(f.read().split()[0])\n"
            "def worker():\n"
            "    res['tid'] = threading.get_native_id()\n"
            "    res['thread_stat'] = first_field('/proc/thread-self/stat')\n"
            "    res['thread_status_pid'] = [l.split()[1] for l in open('/proc/thread-self/status')"
            " if l.startswith('Pid:')][0]\n"
            "t = threading.Thread(target=worker); t.start(); t.join()\n"
            "res['main_stat'] = first_field('/proc/thread-self/stat')\n"
            "res['self_stat'] = first_field('/proc/self/stat')\n"
            "print(json.dumps(res))\n")
        res = json.loads(check_ran(cgtest.python_in_view(d.mnt, code), "the thread probe"))
        check(res["tid"] != res["pid"], "the second thread has the process's id", res)
        check_equal(res["thread_stat"], res["tid"], "first field of /proc/thread-self/stat in the thread")
        check_equal(res["thread_status_pid"], str(res["tid"]), "Pid: of /proc/thread-self/status in the thread")
        check_equal(res["main_stat"], res["pid"], "first field of /proc/thread-self/stat in the main thread")
        check_equal(res["self_stat"], res["pid"], "first field of /proc/self/stat")

    # ------------------------------------------------------------ psutil --

    def psutil_checks(res, where):
        view, real = res["view"], res["real"]
        for side in (view, real):
            check("error" not in side, "psutil failed (%s)" % where, side.get("error", ""))
        for pid in (res["pid"], res["target"], res["child"], res["grandchild"]):
            check(pid in view["pids"], "psutil.pids() misses %d (%s)" % (pid, where))
        stable = set(res["real_before"]) & set(real["pids"])
        missing = stable - set(view["pids"])
        check(not missing, "psutil.pids() misses live processes (%s): %s" % (where, sorted(missing)))
        extra = set(view["pids"]) - stable
        check(len(extra) <= max(5, len(stable) // 20),
              "psutil.pids() lists unknown pids (%s): %s" % (where, sorted(extra)))
        for key in ("uss", "pss", "rss"):
            check(view[key] > 0, "memory_full_info().%s is %r (%s)" % (key, view[key], where))
        check(abs(view["rss"] - real["rss"]) <= max(real["rss"] // 10, 256 * 1024),
              "memory_full_info().rss %d vs %d on the real procfs (%s)" % (view["rss"], real["rss"], where))
        check_equal(view["name"], real["name"], "Process(pid).name() (%s)" % where)
        check_equal(view["cmdline"], real["cmdline"], "Process(pid).cmdline() (%s)" % where)
        check(res["grandchild"] in view["children"], "children(recursive=True) misses the grandchild (%s)" % where,
              view["children"])
        check_equal(view["children"], real["children"], "children(recursive=True) (%s, view vs real)" % where)

    @test("psutil in the view: pids(), memory_full_info(), children(recursive=True) agree with the real procfs")
    def _():
        env = dict(os.environ, CG_VIEW="/proc", CG_REAL="/proc/.real", CG_TARGET=str(sleeper_pid()))
        out = check_ran(cgtest.python_in_view(d.mnt, PSUTIL_PROBE, env=env), "the psutil probe")
        psutil_checks(json.loads(out), "bound over /proc")

    @test("psutil on the host with PROCFS_PATH=MNT/proc agrees with the real /proc")
    def _():
        env = dict(os.environ, CG_VIEW=d.proc, CG_REAL="/proc", CG_TARGET=str(sleeper_pid()))
        out = check_ran(cgtest.run([cgtest.PYTHON, "-c", PSUTIL_PROBE], env=env), "the psutil probe")
        psutil_checks(json.loads(out), "PROCFS_PATH")

    # ------------------------------------------------- exits and errors --

    # One probe run per place, shared by the exit test and the zombie test.
    exit_results = {}

    def exit_probe(where):
        if where not in exit_results:
            if where == "view":
                env = dict(os.environ, CG_VIEW="/proc", CG_REAL="/proc/.real")
                result = cgtest.python_in_view(d.mnt, EXIT_PROBE, env=env)
            else:
                env = dict(os.environ, CG_VIEW=d.proc, CG_REAL="/proc")
                result = cgtest.run([cgtest.PYTHON, "-c", EXIT_PROBE], env=env)
            exit_results[where] = json.loads(check_ran(result, "the exit probe"))
        return exit_results[where]

    def reaped_checks(where):
        res = exit_probe(where)
        check_equal(res["alive_visible"], res["rounds"], "rounds where the live child was seen in /proc/<pid>")
        # Known daemon bug when this fails: the entry is dropped by the
        # daemon's pidfd thread, after the exit, asynchronously; the
        # parent's wait() can return first, and the kernel's cached
        # dentry still answers for a process that no longer exists.
        check(res["gone_after_reap"] == res["rounds"],
              "/proc/<pid> still exists right after the child was reaped in %d of %d rounds"
              % (res["rounds"] - res["gone_after_reap"], res["rounds"]),
              "(daemon bug: the cached entry is invalidated asynchronously by the pidfd watch,",
              " which can lose the race against the parent's wait())")

    def zombie_checks(where):
        res = exit_probe(where)
        check_equal(res["zombie_state"], "Z", "state of the unreaped child on the real procfs")
        check(res["zombie_visible"], "the zombie is not visible", res)
        check(res["zombie_stat_ok"], "the zombie's stat cannot be read", res)
        check(not res["zombie_after_reap"], "the zombie is still visible after it was reaped")

    @test("in the view /proc/<pid> of an exited child is gone as soon as it is reaped (no sleep)")
    def _():
        reaped_checks("view")

    @test("in the view a zombie stays visible until reaped, then is gone")
    def _():
        zombie_checks("view")

    @test("through MNT/proc on the host /proc/<pid> of an exited child is gone as soon as it is reaped")
    def _():
        reaped_checks("host")

    @test("through MNT/proc on the host a zombie stays visible until reaped, then is gone")
    def _():
        zombie_checks("host")

    @test("nonexistent pids and garbage names give the real procfs's ENOENT")
    def _():
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        live = real_pids()
        unused = next(p for p in range(pid_max - 1, 1, -1) if p not in live)
        names = ["notapid", str(unused), str(pid_max + 1), "0", "01", "-1", "+1", "1.0", "1x", " 1",
                 "4294967297", "99999999999999999999", "self2", ".real2"]
        bad = []
        for name in names:
            view = cgtest.errno_of(os.lstat, os.path.join(d.proc, name))
            real = cgtest.errno_of(os.lstat, os.path.join("/proc", name))
            if view != real or real != errno.ENOENT:
                bad.append("%r: view %s, real %s" % (name, cgtest.errname(view), cgtest.errname(real)))
        # Entries of a pid that does not exist, and garbage entries of one that does.
        for rel in ("%d/status" % unused, "%d/smaps_rollup" % unused, "%d/exe" % unused,
                    "%d/notanentry" % sleeper_pid(), "%d/smaps_rollup/x" % sleeper_pid()):
            view = cgtest.errno_of(os.stat, os.path.join(d.proc, rel))
            real = cgtest.errno_of(os.stat, os.path.join("/proc", rel))
            if view != real:
                bad.append("%r: view %s, real %s" % (rel, cgtest.errname(view), cgtest.errname(real)))
        check(not bad, "errors differ from the real procfs", *bad)

    # ------------------------------------------------ daemon-served files --

    def served_files():
        return {
            "proc/cpuinfo": (os.path.join(d.proc, "cpuinfo"), "/proc/cpuinfo"),
            "proc/stat": (os.path.join(d.proc, "stat"), "/proc/stat"),
            "proc/<pid>/smaps_rollup": (os.path.join(d.proc, str(sleeper_pid()), "smaps_rollup"),
                                        "/proc/%d/smaps_rollup" % sleeper_pid()),
            "sys/devices/system/cpu/online": (os.path.join(d.cpu, "online"), "/sys/devices/system/cpu/online"),
        }

    def shape(label, text):
        """What must not change when a write is refused (values move)."""
        if label in ("proc/cpuinfo",):
            return [line for line in text.splitlines() if not line.startswith("cpu MHz")]
        if label in ("proc/stat", "proc/<pid>/smaps_rollup"):
            return [line.split(None, 1)[0] for line in text.splitlines() if line.strip()]
        return text

    @test("write opens of daemon-served files fail with EACCES or EROFS and change nothing")
    def _():
        bad = []
        for label, (path, real) in served_files().items():
            with open(path) as f:
                before = f.read()
            check(before, "%s reads empty" % label)
            attempts = [
                ("open(..., 'w')", lambda: open(path, "w").close()),
                ("open(..., 'a')", lambda: open(path, "a").close()),
                ("open(..., 'r+')", lambda: open(path, "r+").close()),
                ("O_RDONLY|O_TRUNC", lambda: os.close(os.open(path, os.O_RDONLY | os.O_TRUNC))),
                ("truncate", lambda: os.truncate(path, 0)),
                ("chmod", lambda: os.chmod(path, 0o666)),
            ]
            for what, fn in attempts:
                e = cgtest.errno_of(fn)
                if e not in (errno.EACCES, errno.EROFS):
                    bad.append("%s %s: %s" % (what, label, cgtest.errname(e)))
            with open(path) as f:
                after = f.read()
            with open(real) as f:
                host = f.read()
            if shape(label, after) != shape(label, before) or shape(label, after) != shape(label, host):
                bad.append("%s changed, or differs from %s:\n--- before\n%s--- after\n%s--- real\n%s"
                           % (label, real, before, after, host))
        check(not bad, "unexpected results", *bad)

    @test("mkdir, unlink, rename, symlink and create in the view give EROFS")
    def _():
        attempts = [
            ("mkdir proc/newdir", lambda: os.mkdir(os.path.join(d.proc, "newdir"))),
            ("mkdir sys/devices/system/cpu/newdir", lambda: os.mkdir(os.path.join(d.cpu, "newdir"))),
            ("mkdir proc/<pid>/newdir", lambda: os.mkdir(os.path.join(d.proc, str(sleeper_pid()), "newdir"))),
            ("create proc/newfile", lambda: open(os.path.join(d.proc, "newfile"), "x").close()),
            ("unlink proc/cpuinfo", lambda: os.unlink(os.path.join(d.proc, "cpuinfo"))),
            ("unlink proc/<pid>/smaps_rollup",
             lambda: os.unlink(os.path.join(d.proc, str(sleeper_pid()), "smaps_rollup"))),
            ("rmdir proc/<pid>", lambda: os.rmdir(os.path.join(d.proc, str(sleeper_pid())))),
            ("rename proc/cpuinfo", lambda: os.rename(os.path.join(d.proc, "cpuinfo"),
                                                      os.path.join(d.proc, "cpuinfo2"))),
            ("symlink proc/newlink", lambda: os.symlink("x", os.path.join(d.proc, "newlink"))),
        ]
        bad = []
        for what, fn in attempts:
            e = cgtest.errno_of(fn)
            if e != errno.EROFS:
                bad.append("%s: %s" % (what, cgtest.errname(e)))
        check(not bad, "expected EROFS", *bad)
        check(cgtest.errno_of(os.lstat, os.path.join(d.proc, "newdir")) == errno.ENOENT, "proc/newdir appeared")

    def read_to_eof(fd, offset=0):
        parts = []
        while True:
            chunk = os.pread(fd, 1 << 20, offset)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            offset += len(chunk)

    @test("a kept-open proc/stat read to the end and re-read from offset 0 shows new counters, as top's is")
    def _():
        path = os.path.join(d.proc, "stat")
        fd = os.open(path, os.O_RDONLY)
        try:
            first = read_to_eof(fd)
            # burn some CPU so the counters must move
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                pass
            os.lseek(fd, 0, os.SEEK_SET)
            second = b""
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                second += chunk
        finally:
            os.close(fd)
        check(first.split(b"\n")[0] != second.split(b"\n")[0],
              "the cpu line did not move: a reader that keeps the file open sees frozen counters",
              first.split(b"\n")[0], second.split(b"\n")[0])

    @test("reads at odd offsets and 1-byte reads reassemble the bytes of one big read of the same open file")
    def _():
        bad = []
        for label, (path, real) in served_files().items():
            fd = os.open(path, os.O_RDONLY)
            try:
                whole = read_to_eof(fd)
                if len(whole) < 2:
                    bad.append("%s: only %d bytes" % (label, len(whole)))
                    continue
                odd = 5 if len(whole) > 5 else 1
                if os.pread(fd, 64, odd) != whole[odd:odd + 64]:
                    bad.append("%s: pread(64, %d) differs from the big read" % (label, odd))
                if os.pread(fd, 3, odd) != whole[odd:odd + 3]:
                    bad.append("%s: pread(3, %d) differs from the big read" % (label, odd))
                if os.pread(fd, 4096, len(whole)) != b"":
                    bad.append("%s: a read at the end is not empty" % label)
                # Starting over at offset 0 takes a new snapshot, as procfs
                # does (procps re-reads a kept /proc/stat this way): a file
                # whose content moves (stat's counters) keeps its shape.
                os.lseek(fd, 0, os.SEEK_SET)
                ones = []
                while True:
                    b = os.read(fd, 1)
                    if not b:
                        break
                    ones.append(b)
                again = b"".join(ones)
                if label == "proc/stat":
                    heads = lambda text: [line.split(b" ")[0] for line in text.splitlines()]
                    if heads(again) != heads(whole):
                        bad.append("proc/stat: 1-byte reads give other lines than the big read")
                elif label == "proc/cpuinfo":
                    if shape(label, again.decode()) != shape(label, whole.decode()):
                        bad.append("proc/cpuinfo: 1-byte reads differ from the big read")
                elif again != whole:
                    bad.append("%s: 1-byte reads give %d bytes, not the big read's %d"
                               % (label, len(again), len(whole)))
            finally:
                os.close(fd)
            # A snapshot taken by a first read at an odd offset.
            fd = os.open(path, os.O_RDONLY)
            try:
                first = os.pread(fd, 4096, odd)
                rest = read_to_eof(fd)
                if not first or first != rest[odd:odd + len(first)]:
                    bad.append("%s: a first read at offset %d does not match the same file's later big read"
                               % (label, odd))
                if os.fstat(fd).st_size != 0 and os.fstat(fd).st_size != len(rest):
                    bad.append("%s: st_size %d but %d bytes" % (label, os.fstat(fd).st_size, len(rest)))
            finally:
                os.close(fd)
        check(not bad, "reads disagree", *bad)

    @test("smaps_rollup of an idle process through the view matches the real file")
    def _():
        pid = sleeper_pid()
        # Its Pss moves with every process that maps or drops the same
        # libraries (the suites beside this one start and end many): the
        # two reads are made again, a few times, until nothing moved
        # between them; a wrong figure is wrong every time.
        for _ in range(5):
            with open(os.path.join(d.proc, str(pid), "smaps_rollup")) as f:
                view = f.read()
            with open("/proc/%d/smaps_rollup" % pid) as f:
                real = f.read()
            vhead, vfields = cgtest.smaps_fields(view)
            rhead, rfields = cgtest.smaps_fields(real)
            rss_ok = rfields["Rss"] and abs(vfields["Rss"] - rfields["Rss"]) <= max(rfields["Rss"] // 10, 64)
            pss_ok = abs(vfields["Pss"] - rfields["Pss"]) <= max(rfields["Pss"] // 4, 128)
            if rss_ok and pss_ok:
                break
            time.sleep(1)
        check_equal(vhead, rhead, "header line")
        check_equal(list(vfields), list(rfields), "field names, in order")
        check(rss_ok, "Rss %s kB through the view, %s kB real" % (vfields["Rss"], rfields["Rss"]))
        check(pss_ok, "Pss %s kB through the view, %s kB real" % (vfields["Pss"], rfields["Pss"]))

    @test("sys/devices/system/cpu/online and its directory equal the host's")
    def _():
        check_equal(cgtest.read_all(os.path.join(d.cpu, "online")),
                    cgtest.read_all("/sys/devices/system/cpu/online"), "online")
        check_equal(sorted(os.listdir(d.cpu)), sorted(os.listdir("/sys/devices/system/cpu")),
                    "listing of sys/devices/system/cpu")
        out = check_ran(cgtest.bash_in_view(d.mnt, "cat /sys/devices/system/cpu/online"), "cat in the view")
        check_equal(out.encode(), cgtest.read_all("/sys/devices/system/cpu/online"), "online read in the view")

    @test("ls -l /proc/<pid>/ in the view lists the real directory's names")
    def _():
        pid = sleeper_pid()
        out = check_ran(cgtest.bash_in_view(d.mnt, (
            "ls -lA --time-style=+T /proc/%d/ || exit 3\necho ---\nls -1A /proc/.real/%d/\n") % (pid, pid)), "ls -l")
        listing, _, real = out.partition("---\n")
        names = []
        for line in listing.splitlines()[1:]:  # "total 0" first
            fields = line.split(None, 6)
            check(len(fields) == 7, "unexpected ls -l line", line)
            names.append(fields[6].split(" -> ")[0])
        check_equal(sorted(names), sorted(real.split()), "names in /proc/%d (view vs real)" % pid)
        check_equal(sorted(names), sorted(os.listdir("/proc/%d" % pid)), "names in /proc/%d (view vs host)" % pid)

    @test("MNT/.cgprocfs/stats is Prometheus text, and 20 opens of proc/cpuinfo add 20 to its open requests")
    def _():
        def samples():
            with open(os.path.join(d.mnt, ".cgprocfs", "stats")) as f:
                text = f.read()
            typed, out = set(), {}
            for line in text.splitlines():
                if line.startswith("# TYPE "):
                    typed.add(line.split()[2])
                elif line and not line.startswith("#"):
                    name, value = line.rsplit(" ", 1)
                    check(name.split("{")[0] in typed, "%s has no # TYPE line before it" % name, text)
                    out[name] = float(value)
            return out
        before = samples()
        for _ in range(20):
            with open(os.path.join(d.proc, "cpuinfo")) as f:
                f.read()
        after = samples()
        key = 'cgprocfs_requests_total{op="open"}'
        # The second read of the stats file is one more open.
        check_equal(after[key] - before[key], 21, "open requests over 20 opens of cpuinfo and one of stats")
        for name in ("cgprocfs_container_views", "cgprocfs_container_sessions", "cgprocfs_smaps_entries"):
            check(name in after, "no %s in the stats" % name, sorted(after))

    @test("bind + mount -t proc proc /proc/.real variant: tools and delegation work")
    def _():
        pid = sleeper_pid()
        with open("/proc/self/oom_score_adj") as f:
            value = 500 if int(f.read()) != 500 else 600
        out = check_ran(cgtest.bash_in_view(d.mnt, (
            "echo fstype=$(stat -f -c %%T /proc/.real)\n"
            "echo fifo=$(cat <(echo x))\n"
            "echo exe=$(readlink /proc/self/exe)\n"
            "echo sleeper=$(ps -o args= -p %d)\n"
            "echo %d > /proc/self/oom_score_adj && echo oom=$(cat /proc/.real/$$/oom_score_adj)\n"
            "sleep 60 & c=$!\n"
            "nsenter --mount=/proc/$c/ns/mnt true && echo nsenter=ok\n"
            "kill $c\n"
            "echo \"smaps=$(head -n 1 /proc/%d/smaps_rollup)\"\n"
            # Both listed 5 times: under the suites' load processes come and
            # go between two listings; the closest pair is kept.
            "best=; for i in 1 2 3 4 5; do v=$(ls /proc | grep -c '^[0-9]'); r=$(ls /proc/.real | grep -c '^[0-9]'); "
            "d=$((v > r ? v - r : r - v)); if [ -z \"$best\" ] || [ $d -lt $best ]; then best=$d; pv=$v; pr=$r; fi; "
            "done; echo pids=$pv real_pids=$pr\n")
            % (pid, value, pid), variant="bind+proc"), "the snippet")
        kv = parse_kv(out.replace(" real_pids=", "\nreal_pids="))
        check_equal(kv.get("fstype"), "proc", "filesystem at /proc/.real")
        check_equal(kv.get("fifo"), "x", "cat <(echo x)")
        check_equal(kv.get("exe"), os.path.realpath(shutil.which("readlink")), "readlink /proc/self/exe")
        check_equal(kv.get("sleeper"), marker_args(), "ps -o args= -p <sleeper>")
        check_equal(kv.get("oom"), str(value), "oom_score_adj after the write, on the real file")
        check_equal(kv.get("nsenter"), "ok", "nsenter --mount=/proc/<child>/ns/mnt")
        with open("/proc/%d/smaps_rollup" % pid) as f:
            check_equal(kv.get("smaps"), f.readline().strip(), "first line of smaps_rollup")
        check(abs(int(kv["pids"]) - int(kv["real_pids"])) <= max(5, int(kv["real_pids"]) // 20),
              "pid counts differ", out)

    return t


# Runs with CG_VIEW (the view's proc), CG_REAL (a real procfs), CG_TARGET (a
# pid to look at); prints what psutil sees through each.
PSUTIL_PROBE = r"""
import json, os, signal, subprocess, time, traceback
import psutil

VIEW, REAL, TARGET = os.environ["CG_VIEW"], os.environ["CG_REAL"], int(os.environ["CG_TARGET"])
res = {"pid": os.getpid(), "target": TARGET}
child = subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
try:
    psutil.PROCFS_PATH = REAL
    deadline = time.monotonic() + 10
    kids = []
    while not kids and time.monotonic() < deadline:
        kids = psutil.Process(child.pid).children()
        time.sleep(0.01)
    res["child"] = child.pid
    res["grandchild"] = kids[0].pid if kids else -1
    res["real_before"] = psutil.pids()
    for side, path in (("view", VIEW), ("real", REAL)):
        psutil.PROCFS_PATH = path
        r = res[side] = {}
        try:
            r["pids"] = psutil.pids()
            p = psutil.Process(TARGET)
            mi = p.memory_full_info()
            r["uss"], r["pss"], r["rss"] = mi.uss, mi.pss, mi.rss
            r["name"], r["cmdline"] = p.name(), p.cmdline()
            r["children"] = sorted(c.pid for c in psutil.Process(os.getpid()).children(recursive=True))
        except Exception:
            r["error"] = traceback.format_exc()
finally:
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
print(json.dumps(res))
"""

# Runs with CG_VIEW and CG_REAL; watches /proc/<pid> of its children
# through the view as they exit.
EXIT_PROBE = r"""
import json, os, signal, subprocess
VIEW, REAL = os.environ["CG_VIEW"], os.environ["CG_REAL"]
rounds = 50
res = {"rounds": rounds, "alive_visible": 0, "gone_after_reap": 0}
for _ in range(rounds):
    p = subprocess.Popen(["sleep", "60"])
    path = os.path.join(VIEW, str(p.pid))
    if os.path.exists(path) and os.path.exists(os.path.join(path, "status")):
        res["alive_visible"] += 1
    p.kill()
    p.wait()
    if not os.path.exists(path):
        res["gone_after_reap"] += 1
z = subprocess.Popen(["sleep", "60"])
path = os.path.join(VIEW, str(z.pid))
os.path.exists(path)  # looked up (and cached) while alive
z.kill()
os.waitid(os.P_PID, z.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
with open(os.path.join(REAL, str(z.pid), "stat")) as f:
    res["zombie_state"] = f.read().rsplit(")", 1)[1].split()[0]
res["zombie_visible"] = os.path.exists(path)
try:
    with open(os.path.join(path, "stat")) as f:
        res["zombie_stat_ok"] = f.read().split()[0] == str(z.pid)
except OSError as e:
    res["zombie_stat_ok"] = False
    res["zombie_stat_error"] = str(e)
z.wait()
res["zombie_after_reap"] = os.path.exists(path)
print(json.dumps(res))
"""


def main():
    global sleeper, SLEEPER_CWD
    cgtest.skip_all_unless_runnable()
    SLEEPER_CWD = tempfile.mkdtemp(prefix="cgprocfs-sleeper-")
    sleeper = subprocess.Popen(["sleep", MARKER_SECONDS], cwd=SLEEPER_CWD, stdin=subprocess.DEVNULL)
    try:
        cgtest.run_with_daemon(make_tests)
    finally:
        sleeper.kill()
        sleeper.wait()
        shutil.rmtree(SLEEPER_CWD, ignore_errors=True)


if __name__ == "__main__":
    main()
