"""LXC with the mount hook (contrib/lxc/cgprocfs-lxc-hook), for real: LXC's
own tools (lxc-create, lxc-start -d, lxc-attach, lxc-stop, lxc-destroy)
with an lxcpath in a temporary directory (-P), no network (lxc.net.0.type =
empty), the hook run from the common.conf.d snippet
(contrib/lxc/cgprocfs.conf.in, its @HOOK@ and @MOUNTPOINT@ filled in with
$CGPROCFS_LXC_HOOK and the test daemon's mountpoint) that each container's
configuration includes, the daemon on a temporary mountpoint. LXC gives each
container a cgroup namespace rooted at its cgroup, so every process of it,
in whichever cgroup below that, reads the container's figures.

  - a busybox container (lxc-create -t busybox, the host's python3 copied
    in for the processes that hold memory) with 256 MiB and half a CPU:
    the hook binds the nine /proc files and the CPU directory; MemTotal is
    256 MiB, one CPU everywhere, /proc/uptime the container's; a process
    holding 64 MiB in a sub-cgroup of the container (made on the host, with
    a tighter limit of its own) shows in MemFree and MemAvailable of a
    reader in another sub-cgroup, and the reader in the tighter one still
    sees the container's 256 MiB;
  - a Debian 12 system container with systemd as its init (its rootfs
    debian.py's base, which test_docker builds on too), 512 MiB and one
    CPU: a transient service in system.slice holds 128 MiB and spins; the lxc-attach shell
    (the container's root cgroups), a login shell (su -l: a logind session
    in user.slice) and another service in system.slice all see, with free,
    top, uptime, nproc --all, lscpu, getconf, the /proc/stat cpu line over
    2 s and psutil, 512 MiB with the service's memory used, one CPU busy by
    the service's share of it, and the container's uptime (nproc --all:
    gnulib's never says fewer than the affinity mask, all of this machine's
    CPUs, when the files say 1 or 2); systemctl status works;
  - in LXCFS's place (--files-only at /var/lib/lxcfs), LXCFS's own LXC hook
    binds the served files alone, which show the container's figures;
  - the daemon killed while a container starts (its keeper holding the
    views for the next): the start pauses until a daemon is back, and the
    container has the view;
  - the daemon stopped: a container still starts, with the kernel's files,
    and the hook's one line is in LXC's log (LXC logs a hook's output at
    DEBUG level only: lxc-start -l DEBUG).

busybox free and uptime take their totals and uptime from sysinfo(2), which
no file changes: the busybox checks read the files. For the same reason
glibc's getloadavg() (so os.getloadavg() and psutil.getloadavg()) gives the
host's load (strace shows a sysinfo call and no open of /proc/loadavg): the
load checks read /proc/loadavg and uptime's and top's load, which procps
reads from that file."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import debian  # noqa: E402
from lxclab import (DEB_HOLD, DEB_LIMIT, MIB, PROBE, UNPRIV_PROBE, USERNS_READER, USERNS_SIZE,  # noqa: E402
                    Container, SubCgroup, attach_past_lxc_race, busy_percent, cgroup_dirs, check_online,
                    check_reader, cleanup, fields_of, find_marked, hierarchies, host_meminfo_kb, host_processors,
                    host_threads, host_uid, idmap, kb, limits_config, memory_cgroup, pivots, pure_v2,
                    seccomp_proxy_config, snippet_config, systemd_cgroup, userns_base)
from cgtest import check, check_equal, describe  # noqa: E402

LXC_TOOLS = ("lxc-create", "lxc-start", "lxc-attach", "lxc-info", "lxc-wait", "lxc-stop", "lxc-destroy")
PYTHON_EXE = os.path.realpath("/usr/bin/python3")
# Container names: a new cgroup per run (the daemon keeps sampling the load
# of a cgroup read in the last 15 minutes, by its path).
BUSYBOX = "cgprocfs-bb-%d" % os.getpid()
SYSTEMD = "cgprocfs-deb-%d" % os.getpid()
UNPRIV = "cgprocfs-ubb-%d" % os.getpid()
# What the hook (and LXCFS's, from --files-only) binds of the view.
VIEW_BINDS = sorted(["/proc/" + n for n in ("cpuinfo", "diskstats", "loadavg", "meminfo", "pressure", "stat", "swaps",
                                            "uptime", "vmstat")] + ["/sys/devices/system/cpu"])
LXCFS_HOOK = "/usr/share/lxcfs/lxc.mount.hook"
LXCFS_DIR = "/var/lib/lxcfs"
BB_LIMIT, BB_HOLD, BB_TIGHT = 256 * MIB, 64 * MIB, 128 * MIB
BOOT_TIMEOUT = 60
HOG_UNIT = "cgprocfs-hog"
HOG_READY = "/run/cgprocfs-hog-ready"
PROBE_PATH = "/root/cgprocfs-probe.py"

# In the busybox container: holds argv[1] bytes (touched), says so, and
# waits for its stdin to close.
HOLDER = 'import sys; b = b"x" * int(sys.argv[1]); print("held", flush=True); sys.stdin.read()'
# ... and what a reader there reads.
BB_PROBE = ('cat /proc/self/cgroup; grep -E "^(MemTotal|MemFree|MemAvailable):" /proc/meminfo; '
            'echo "processors $(grep -c ^processor /proc/cpuinfo)"; echo "statcpus $(grep -c "^cpu[0-9]" /proc/stat)"; '
            'echo "online $(cat /sys/devices/system/cpu/online)"; echo "nprocall $(nproc --all)"; '
            'echo "uptime $(cat /proc/uptime)"; echo "loadavg $(cat /proc/loadavg)"; '
            'free | sed -n "s/^Mem:/freemem/p"')

# In the systemd container, as the service that holds memory and CPU.
HOG = ('b = b"x" * %d\nopen("%s", "w").close()\nwhile True:\n    pass\n' % (DEB_HOLD, HOG_READY))



# ------------------------------------------------------------------ tests --

def make_tests(d, state):
    t, test = cgtest.test_registry()

    def lxcpath():
        if "lxcpath" not in state:
            raise cgtest.Skip("LXC is not set up: see the first test")
        return state["lxcpath"]

    def container(key):
        if key not in state:
            raise cgtest.Skip("no %s container: see the test that starts it" % key)
        return state[key]

    @test("LXC's tools are installed; an lxcpath in a temporary directory")
    def _():
        missing = [tool for tool in LXC_TOOLS if not shutil.which(tool)]
        if missing:
            raise cgtest.Skip("%s missing (apt-get install lxc lxc-templates)" % " ".join(missing))
        if not os.environ.get("CGPROCFS_LXC_HOOK"):
            raise cgtest.Skip("CGPROCFS_LXC_HOOK is not set (run through meson test)")
        check(os.access(os.environ["CGPROCFS_LXC_HOOK"], os.X_OK), "the hook %s is not executable"
              % os.environ["CGPROCFS_LXC_HOOK"])
        state["var_lib_lxc"] = sorted(os.listdir("/var/lib/lxc")) if os.path.isdir("/var/lib/lxc") else None
        # LXC's monitor leaves an lxc.pivot cgroup in every hierarchy.
        state["pivots"] = [p for p in pivots() if not os.path.isdir(p)]
        state["lxcpath"] = tempfile.mkdtemp(prefix="cgprocfs-lxc-")
        state["snippet"] = snippet_config(state["lxcpath"], d.mnt)

    @test("a busybox container (lxc-create -t busybox) with 256 MiB, half a CPU and the snippet starts; the hook "
          "binds the nine /proc files and the CPU directory of the view")
    def _():
        path = lxcpath()
        if not os.path.exists("/usr/share/lxc/templates/lxc-busybox"):
            raise cgtest.Skip("the busybox template is missing (apt-get install lxc-templates)")
        if not shutil.which("busybox"):
            raise cgtest.Skip("busybox is missing (apt-get install busybox-static)")
        c = Container(path, BUSYBOX)
        config = os.path.join(path, BUSYBOX + ".conf")
        with open(config, "w") as f:
            f.write("\n".join(["lxc.net.0.type = empty"] + limits_config(BB_LIMIT, 50000)
                              + ["lxc.include = " + state["snippet"]]) + "\n")
        state["busybox"] = c
        res = c.tool("lxc-create", "-t", "busybox", "-f", config, timeout=300)
        check(res[0] == 0, "lxc-create -t busybox", describe(res))
        # The processes that hold memory: the host's python3 (the template
        # binds /lib and /usr/lib, where its libraries are).
        shutil.copy2(PYTHON_EXE, os.path.join(c.rootfs, "bin", "python3"))
        c.start()
        res = c.attach(["cat", "/proc/mounts"])
        check(res[0] == 0, "lxc-attach cat /proc/mounts", describe(res))
        bound = sorted(line.split()[1] for line in res[1].splitlines() if line.split()[2:3] == ["fuse.cgprocfs"])
        check_equal(bound, VIEW_BINDS, "the container's fuse.cgprocfs mounts")
        check_equal(c.hook_output(), [], "what the hook said in LXC's log")

    @test("busybox: MemTotal 256 MiB (and busybox free's available, its total is sysinfo's), one processor in "
          "cpuinfo, stat and online (the CPU directories, nproc --all, the host's), /proc/uptime the container's")
    def _():
        c = container("busybox")
        res = c.attach(["sh", "-c", BB_PROBE])
        check(res[0] == 0, "lxc-attach", describe(res))
        f = fields_of(res[1])
        check_equal(f.get("MemTotal"), "%d kB" % (BB_LIMIT // 1024), "MemTotal")
        check(kb(f["MemAvailable"]) <= BB_LIMIT // 1024 and kb(f["MemFree"]) <= BB_LIMIT // 1024,
              "MemFree or MemAvailable above the limit", res[1])
        free = f.get("freemem", "").split()
        check(len(free) == 6 and int(free[5]) <= BB_LIMIT // 1024, "busybox free's available column", res[1])
        for key in ("processors", "statcpus"):
            check_equal(f.get(key), "1", key)
        check_equal(f.get("nprocall"), str(host_processors()), "nproc --all (the CPU directories: offlined ones too)")
        check_online(f.get("online"), 1, "/sys/devices/system/cpu/online")
        up = float(f["uptime"].split()[0])
        check(0 <= up <= c.age() + 2, "/proc/uptime says %.1f s, the container is %.1f s old" % (up, c.age()))
        threads = int(f["loadavg"].split()[3].split("/")[1])
        check(threads < host_threads(), "/proc/loadavg counts %d threads: not the container's" % threads, res[1])
        if host_processors() == 1:
            cgtest.diag("this machine has one CPU: the CPU checks cannot tell the container from the host")

    @test("busybox: a process holding 64 MiB in a sub-cgroup of the container (with a tighter limit of its own, "
          "128 MiB) shows in MemFree and MemAvailable of a reader in another sub-cgroup; a reader in the tighter "
          "one sees the container's 256 MiB")
    def _():
        c = container("busybox")
        dirs = cgroup_dirs(c.init_pid())
        check(dirs, "no cgroup of the container's init found")
        hog = SubCgroup(dirs, "hog", memory_limit=None if pure_v2() else BB_TIGHT)
        reader = SubCgroup(dirs, "reader")
        state.setdefault("subcgroups", []).extend([hog, reader])
        marker = "cgprocfs-mark-%d" % os.getpid()

        def read_in(sub, n):
            """BB_PROBE by a shell moved into sub before it reads."""
            mark = "%s-%s" % (marker, n)
            proc = subprocess.Popen(
                c.attach_argv(["sh", "-c", 'read go; ' + BB_PROBE, mark]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                sub.move(find_marked(mark))
                out, err = proc.communicate("go\n", timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            check(proc.returncode == 0, "the reader failed", describe((proc.returncode, out, err)))
            f = fields_of(out)
            check(any(line.endswith("/" + os.path.basename(sub.dirs[0])) for line in out.splitlines()
                      if re.match(r"\d+:[^:]*memory[^:]*:", line) or line.startswith("0::")),
                  "the reader is not in its sub-cgroup", out)
            return {k: kb(f[k]) for k in ("MemTotal", "MemFree", "MemAvailable")}, f, out

        before, _, _ = read_in(reader, "before")
        mark = marker + "-hog"
        holder = subprocess.Popen(
            c.attach_argv(["sh", "-c", 'read go; exec python3 -c "$0" "$1"', HOLDER, str(BB_HOLD), mark]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            hog.move(find_marked(mark))
            holder.stdin.write("go\n")
            holder.stdin.flush()
            line = holder.stdout.readline()
            check(line.strip() == "held", "the holder did not say it holds its memory", line,
                  holder.stderr.read() if holder.poll() is not None else "")
            after, f_after, out_after = read_in(reader, "after")
            tight, f_tight, _ = read_in(hog, "tight")
        finally:
            with contextlib.suppress(OSError):
                holder.stdin.close()
            try:
                holder.wait(10)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()
        cgtest.diag("the reader's meminfo (kB) before: %s; while 64 MiB are held: %s" % (before, after))
        for what, got in (("before", before), ("after", after), ("in the tighter cgroup", tight)):
            check_equal(got["MemTotal"], BB_LIMIT // 1024, "MemTotal (kB) %s" % what)
        hold_kb = BB_HOLD // 1024
        check(before["MemFree"] - after["MemFree"] >= hold_kb - 4096,
              "MemFree fell by %d kB, less than the %d kB held" % (before["MemFree"] - after["MemFree"], hold_kb),
              out_after)
        check(before["MemAvailable"] - after["MemAvailable"] >= hold_kb - 4096,
              "MemAvailable fell by %d kB, less than the %d kB held"
              % (before["MemAvailable"] - after["MemAvailable"], hold_kb), out_after)
        check(after["MemTotal"] - after["MemAvailable"] >= hold_kb, "used (MemTotal - MemAvailable) below the held",
              after)
        for key in ("processors", "statcpus"):
            check_equal(f_after.get(key), "1", "%s in a sub-cgroup" % key)
        check_equal(f_after.get("nprocall"), str(host_processors()), "nproc --all in a sub-cgroup")
        check_equal(f_tight.get("MemTotal"), "%d kB" % (BB_LIMIT // 1024), "MemTotal in the tighter cgroup")

    @test("a Debian 12 container with systemd as init (debootstrap rootfs, 512 MiB, one CPU, the snippet) "
          "starts and systemd reaches running")
    def _():
        path = lxcpath()
        if not shutil.which("debootstrap"):
            raise cgtest.Skip("debootstrap is missing (apt-get install debootstrap)")
        tar = debian.base_tar(path)
        c = Container(path, SYSTEMD)
        os.makedirs(c.rootfs)
        res = cgtest.run(["tar", "-C", c.rootfs, "-xf", tar], timeout=300)
        check(res[0] == 0, "tar -x of the Debian rootfs", describe(res))
        with open(os.path.join(c.rootfs, "etc", "hostname"), "w") as f:
            f.write(SYSTEMD + "\n")
        with open(os.path.join(c.rootfs, PROBE_PATH.lstrip("/")), "w") as f:
            f.write(PROBE)
        lines = ["lxc.include = /usr/share/lxc/config/debian.common.conf",
                 "lxc.uts.name = " + SYSTEMD,
                 "lxc.rootfs.path = dir:" + c.rootfs,
                 "lxc.net.0.type = empty"]
        lines += limits_config(DEB_LIMIT, 100000) + ["lxc.include = " + state["snippet"]]
        with open(os.path.join(c.dir, "config"), "w") as f:
            f.write("\n".join(lines) + "\n")
        state["systemd"] = c
        c.start()
        # systemctl cannot connect until systemd has made its socket.
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            res = c.attach(["timeout", str(BOOT_TIMEOUT), "systemctl", "is-system-running", "--wait"],
                           timeout=BOOT_TIMEOUT + 10)
            if res[1].strip() in ("running", "degraded") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if res[1].strip() == "degraded":
            cgtest.diag("systemd is degraded:\n" + c.attach(["systemctl", "--failed", "--no-pager"])[1])
        check(res[1].strip() in ("running", "degraded"), "systemd did not reach running", describe(res), c.log_tail())
        cgtest.diag("systemd is %s %.1f s after lxc-start" % (res[1].strip(), c.age()))
        # What cgroups systemd runs with here: it mounts them itself, LXC
        # having given the container a cgroup namespace.
        res = c.attach(["sh", "-c", "grep cgroup /proc/self/mounts"])
        cgtest.diag("the container's cgroup mounts:\n" + res[1])

    @test("systemd container: a transient service in system.slice (systemd-run -p MemoryMax=300M) holds 128 MiB "
          "and spins")
    def _():
        c = container("systemd")
        res = c.attach(["systemd-run", "--unit", HOG_UNIT, "-p", "MemoryMax=300M", "python3", "-c", HOG])
        check(res[0] == 0, "systemd-run of the hog", describe(res))
        # /run is the container's tmpfs: asked in there.
        deadline = time.monotonic() + 30
        while c.attach(["test", "-e", HOG_READY])[0] != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        res = c.attach(["systemctl", "show", "-p", "MainPID", "--value", HOG_UNIT])
        pid = res[1].strip()
        check(pid.isdigit() and pid != "0", "the hog's MainPID", describe(res))
        state["hog"] = int(pid)
        res = c.attach(["sh", "-c", "test -e %s && cat /proc/%s/cgroup" % (HOG_READY, pid)])
        check(res[0] == 0, "the hog does not hold its memory (no %s)" % HOG_READY, describe(res),
              c.attach(["systemctl", "status", HOG_UNIT, "--no-pager"])[1])
        check("name=systemd:/system.slice/%s.service" % HOG_UNIT in res[1] or
              "0::/system.slice/%s.service" % HOG_UNIT in res[1], "the hog is not in system.slice", res[1])

    def probe(c, argv, what, expect_cgroup):
        hog = state.get("hog")
        if hog is None:
            raise cgtest.Skip("no hog: see the test that starts it")
        host_threads_now = host_threads()
        res = c.attach(argv, timeout=60)
        check(res[0] == 0, "%s: the probe failed" % what, describe(res))
        try:
            out = json.loads(res[1].strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise cgtest.Failure("%s: the probe said no JSON" % what, describe(res))
        where = systemd_cgroup(out)
        check(expect_cgroup(where), "%s: the reader is in %s" % (what, where), out["cgroup"])
        cgtest.diag("%s (%s; memory cgroup %s):" % (what, where, memory_cgroup(out)))
        cgtest.diag("$ free -m\n%s$ uptime\n%s$ top -bn1 | head -5\n%s" % (out["free_m"], out["uptime"], out["top"]))
        cgtest.diag("cpu busy over 2 s %.1f %%, psutil.cpu_percent(interval=1) %.1f %%; os.getloadavg() %s (sysinfo: "
                    "the host's), /proc/loadavg %s"
                    % (busy_percent(out["stat"]["before"], out["stat"]["after"])[0], out["cpu_percent"]["percent"],
                       ", ".join("%.2f" % v for v in out["getloadavg"]), out["loadavg"].strip()))
        check_reader(what, out, c.age(), 1, host_processors(), host_threads_now)
        return out

    @test("systemd container, the lxc-attach shell (the container's root cgroups): free, top, uptime, nproc --all, "
          "lscpu, getconf, the /proc/stat cpu line over 2 s, psutil: 512 MiB with the hog's 128 MiB used, one CPU "
          "busy by the hog's share of it, the container's uptime and load")
    def _():
        c = container("systemd")
        # (On pure v2 lxc-attach puts it in a leaf, .lxc.)
        probe(c, ["python3", PROBE_PATH, str(state.get("hog"))], "lxc-attach shell", lambda p: p in ("/", "/.lxc"))

    @test("systemd container, a login shell (lxc-attach -- su -l: a logind session in user.slice): the same")
    def _():
        c = container("systemd")
        probe(c, ["su", "-l", "-c", "python3 %s %s" % (PROBE_PATH, state.get("hog"))], "login shell (su -l)",
              lambda p: (p or "").startswith("/user.slice/"))

    @test("systemd container, another service in system.slice (systemd-run --wait --pipe): the same")
    def _():
        c = container("systemd")
        probe(c, ["systemd-run", "--quiet", "--wait", "--pipe", "--unit", "cgprocfs-probe", "python3", PROBE_PATH,
                  str(state.get("hog"))], "service in system.slice",
              lambda p: (p or "").startswith("/system.slice/cgprocfs-probe.service"))

    @test("systemd container: systemctl status works (the system's state, the hog's memory and cgroup)")
    def _():
        c = container("systemd")
        res = c.attach(["systemctl", "status", "--no-pager"])
        check(res[0] == 0 and re.search(r"State: (running|degraded)", res[1]), "systemctl status", describe(res))
        check("%s.service" % HOG_UNIT in res[1], "systemctl status does not list the hog", res[1])
        res = c.attach(["systemctl", "status", HOG_UNIT, "--no-pager"])
        check(res[0] == 0 and "active (running)" in res[1] and re.search(r"Memory: \d", res[1]),
              "systemctl status %s" % HOG_UNIT, describe(res))
        c.attach(["systemctl", "stop", HOG_UNIT])

    @test("in LXCFS's place: a daemon with --files-only at /var/lib/lxcfs, a busybox container run with LXCFS's "
          "own LXC hook (the lxcfs package's lxc.mount.hook): it binds the served files alone, which show the "
          "container's 256 MiB and one CPU; the container's pid directories are its own")
    def _():
        path = lxcpath()
        if not os.access(LXCFS_HOOK, os.X_OK):
            raise cgtest.Skip("LXCFS's LXC hook %s is missing (apt-get install lxcfs)" % LXCFS_HOOK)
        if os.path.ismount(LXCFS_DIR):
            raise cgtest.Skip("something serves %s already (an LXCFS): not touched" % LXCFS_DIR)
        c = Container(path, "cgprocfs-lxcfs-%d" % os.getpid())
        config = os.path.join(path, c.name + ".conf")
        with open(config, "w") as f:
            f.write("\n".join(["lxc.net.0.type = empty"] + limits_config(BB_LIMIT, 50000)
                              + ["lxc.hook.mount = " + LXCFS_HOOK]) + "\n")
        with cgtest.Daemon(mountpoint=LXCFS_DIR, args=["--files-only"]):
            try:
                res = c.tool("lxc-create", "-t", "busybox", "-f", config, timeout=300)
                check(res[0] == 0, "lxc-create -t busybox", describe(res))
                c.start()
                res = c.attach(["sh", "-c", "cat /proc/mounts; " + BB_PROBE + "; echo init $(cat /proc/1/comm)"])
                check(res[0] == 0, "lxc-attach", describe(res))
            finally:
                c.destroy()
        bound = sorted(line.split()[1] for line in res[1].splitlines() if line.split()[2:3] == ["fuse.cgprocfs"])
        check_equal(bound, VIEW_BINDS, "the container's fuse.cgprocfs mounts (LXCFS's hook)")
        f = fields_of(res[1])
        check_equal(f.get("MemTotal"), "%d kB" % (BB_LIMIT >> 10), "MemTotal")
        check_equal(f.get("processors"), "1", "processors in cpuinfo")
        check_online(f.get("online"), 1, "CPUs online")
        check_equal(f.get("init"), "init", "/proc/1/comm in the container (its busybox init)")

    @test("LXC's seccomp proxy: a busybox container whose profile is Debian's with 'sysinfo notify' and whose "
          "lxc.seccomp.notify.proxy is the daemon's .lxc socket: busybox free's total is 256 MiB and busybox "
          "uptime says up 0 min (sysinfo(2) answered by the daemon); the daemon counts the answers")
    def _():
        path = lxcpath()
        c = Container(path, "cgprocfs-sysinfo-%d" % os.getpid())
        config = os.path.join(path, c.name + ".conf")
        with open(config, "w") as f:
            f.write("\n".join(["lxc.net.0.type = empty"] + limits_config(BB_LIMIT, 50000) +
                              ["lxc.include = " + state["snippet"]] + seccomp_proxy_config(path, d.mnt)) + "\n")
        before = cgtest.read_stats(d.mnt, prefix="cgprocfs_sysinfo_").get("answered_total", 0)
        try:
            res = c.tool("lxc-create", "-t", "busybox", "-f", config, timeout=300)
            check(res[0] == 0, "lxc-create -t busybox", describe(res))
            c.start()
            res = attach_past_lxc_race(c, ["sh", "-c", "busybox free; busybox uptime"])
            check(res[0] == 0, "lxc-attach busybox free", describe(res), c.log_tail())
            # LXC answers a call itself (ENOSYS) when the proxy's answer does not come or is not whole
            proxy_errors = [line for line in c.log_tail(200000).splitlines() if "ERROR" in line and "seccomp" in line]
        finally:
            c.destroy()
        cgtest.diag(res[1].strip())
        mem = [line.split() for line in res[1].splitlines() if line.startswith("Mem:")]
        check(mem and mem[0][1] == str(BB_LIMIT >> 10), "busybox free's total is not the container's", res[1])
        check(" up 0 min," in res[1], "busybox uptime in a new container", res[1])
        after = cgtest.read_stats(d.mnt, prefix="cgprocfs_sysinfo_").get("answered_total", 0)
        check(after >= before + 2, "sysinfo answers counted: %d, then %d" % (before, after))
        check(not proxy_errors, "LXC's log has seccomp errors", *proxy_errors[-5:])

    @test("unprivileged: a busybox container with lxc.idmap u and g 0 BASE 65536 (BASE: root's range in "
          "/etc/subuid and /etc/subgid, or 100000; its init runs as host uid BASE), the snippet, 256 MiB, half a "
          "CPU and LXC's seccomp proxy starts; the hook, run in its user namespace, binds the nine /proc files and "
          "the CPU directory")
    def _():
        path = lxcpath()
        base = state["userns_base"] = userns_base(state)
        cgtest.diag("root's unprivileged containers map 0 to %d" % base)
        os.chmod(path, 0o711)  # the container's root passes through to its rootfs
        c = Container(path, UNPRIV)
        config = os.path.join(path, UNPRIV + ".conf")
        with open(config, "w") as f:
            f.write("\n".join(["lxc.net.0.type = empty"] + idmap(base) + limits_config(BB_LIMIT, 50000) +
                              ["lxc.include = " + state["snippet"]] + seccomp_proxy_config(path, d.mnt)) + "\n")
        state["unpriv"] = c
        res = c.tool("lxc-create", "-t", "busybox", "-f", config, timeout=300)
        check(res[0] == 0, "lxc-create -t busybox with lxc.idmap", describe(res))
        c.start()
        check_equal(host_uid(c.init_pid()), base, "the host uid of the container's init")
        res = attach_past_lxc_race(c, ["cat", "/proc/mounts"])
        check(res[0] == 0, "lxc-attach cat /proc/mounts", describe(res))
        bound = sorted(line.split()[1] for line in res[1].splitlines() if line.split()[2:3] == ["fuse.cgprocfs"])
        check_equal(bound, VIEW_BINDS, "the unprivileged container's fuse.cgprocfs mounts (the hook said: %s)"
                    % c.hook_output())
        check_equal(c.hook_output(), [], "what the hook said in LXC's log")

    @test("unprivileged busybox: MemTotal 256 MiB, one processor, /proc/uptime the container's, busybox free's "
          "total 256 MiB (sysinfo, LXC's proxy), nproc 1 (sched_getaffinity); the served files' owners are the "
          "kernel's files' there")
    def _():
        c = container("unpriv")
        res = attach_past_lxc_race(c, ["sh", "-c", UNPRIV_PROBE])
        check(res[0] == 0, "lxc-attach", describe(res))
        cgtest.diag(res[1].rstrip())
        f = fields_of(res[1])
        check_equal(f.get("MemTotal"), "%d kB" % (BB_LIMIT >> 10), "MemTotal")
        check_equal(f.get("processors"), "1", "processors in /proc/cpuinfo")
        up = float(f["uptime"].split()[0])
        check(0 <= up <= c.age() + 2, "/proc/uptime says %.1f s, the container is %.1f s old" % (up, c.age()))
        check_equal((f.get("freemem", "").split() or ["?"])[0], str(BB_LIMIT >> 10), "busybox free's total")
        check_equal(f.get("nproc"), "1", "nproc")
        owners = [line.split()[2:4] for line in res[1].splitlines()
                  if line.startswith("-r") and line.endswith(("/proc/meminfo", "/proc/version"))]
        check(len(owners) == 2 and owners[0] == owners[1], "/proc/meminfo (served) and /proc/version (the kernel's) "
              "have other owners", res[1])

    @test("unprivileged: a process in the container's user namespace (its root, host uid BASE; the host's pid "
          "and mount namespaces) reads through the host's view what the kernel's /proc lets it: its container's "
          "init, not the host's init nor a process of another user namespace with the same ids (lxc-usernsexec, as "
          "a second container's init): smaps_rollup, environ, the exe link")
    def _():
        c = container("unpriv")
        base = state["userns_base"]
        other = subprocess.Popen(["lxc-usernsexec", "-m", "b:0:%d:%d" % (base, USERNS_SIZE), "--", "sleep", "600"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            found = []

            def sleeper():
                with contextlib.suppress(OSError):
                    with open("/proc/%d/task/%d/children" % (other.pid, other.pid)) as f:
                        kids = [int(k) for k in f.read().split()] + [other.pid]
                    found[:] = [k for k in kids if host_uid(k) == base and
                                cgtest.read_all("/proc/%d/comm" % k).strip() == b"sleep"]
                return bool(found)
            check(cgtest.wait_until(sleeper, timeout=10, step=0.05), "lxc-usernsexec's sleep did not start",
                  other.stderr.read() if other.poll() is not None else "")
            pids = {"the host's init": 1, "its container's init": c.init_pid(), "another namespace's": found[0]}
            res = cgtest.run(["nsenter", "-U", "-t", str(pids["its container's init"]), "--", "/usr/bin/python3",
                              "-c", USERNS_READER, d.proc] + [str(p) for p in pids.values()])
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(other.pid, signal.SIGKILL)
            other.wait()
        check(res[0] == 0, "the reader in the container's user namespace", describe(res))
        out = json.loads(res[1])
        check_equal(out["ids"], [0, 0], "the reader's uid and euid in the namespace")
        for what, pid in pids.items():
            got = out["pids"][str(pid)]
            cgtest.diag("%s (%d): kernel %s, view %s" % (what, pid, got["kernel"], got["view"]))
            for name, kernel in got["kernel"].items():
                check_equal(got["view"][name] == "ok", kernel == "ok", "%s %s through the view (%s), the kernel "
                            "says %s" % (what, name, got["view"][name], kernel))
        check_equal(out["pids"][str(pids["its container's init"])]["kernel"]["smaps_rollup"], "ok",
                    "the kernel's answer for its container's init")
        for what in ("the host's init", "another namespace's"):
            check(out["pids"][str(pids[what])]["kernel"]["smaps_rollup"] != "ok", "the kernel lets it read %s" % what)

    @test("the daemon killed while a container starts, its keeper holding the views for the next one: the start "
          "pauses until a daemon is back 3 s later, and the container has the view")
    def _():
        c = container("busybox")
        res = c.stop()
        check(res[0] == 0, "lxc-stop", describe(res))
        done = {}

        def start():
            began = time.monotonic()
            with contextlib.suppress(cgtest.Failure):
                c.start()
                done["probe"] = c.attach(["sh", "-c", BB_PROBE])
            done["s"] = time.monotonic() - began

        starter = threading.Thread(target=start)

        def start_meanwhile():
            d.process.wait(10)
            starter.start()
            time.sleep(3)
        d.crash_and_restart(after_kill=start_meanwhile)
        starter.join(120)
        check("probe" in done, "the container did not start", c.log_tail())
        cgtest.diag("lxc-start and a probe, the daemon dead for its first 3 s: %.1f s" % done["s"])
        f = fields_of(done["probe"][1])
        check_equal(f.get("MemTotal"), "%d kB" % (BB_LIMIT >> 10), "MemTotal in the container started meanwhile")

    @test("the daemon stopped: the busybox container starts again, with the kernel's files, and the hook's one "
          "line is in LXC's log")
    def _():
        c = container("busybox")
        for other in ("systemd", "unpriv"):
            if other in state:
                state[other].stop()
        res = c.stop()
        check(res[0] == 0, "lxc-stop", describe(res))
        problems = d.stop()
        check(not problems, "the daemon did not stop cleanly", *problems)
        c.start()
        res = c.attach(["sh", "-c", BB_PROBE + "; grep -c fuse.cgprocfs /proc/mounts"])
        f = fields_of(res[1])
        check_equal(f.get("MemTotal"), "%d kB" % host_meminfo_kb("MemTotal"), "MemTotal: the host's")
        check_equal(f.get("processors"), str(host_processors()), "processors: the host's")
        check_equal(res[1].split()[-1], "0", "fuse.cgprocfs mounts in the container")
        said = c.hook_output()
        check_equal(len(said), 1, "outputs of the hook in LXC's log (%s)" % said)
        check(said[0].startswith("cgprocfs-lxc-hook: ") and d.mnt in said[0] and "\n" not in said[0],
              "the hook's output is not one line naming itself and the mountpoint", said[0])
        cgtest.diag("LXC's log: ... produced output: " + said[0])

    @test("nothing of the test is left: containers destroyed, their cgroups removed, /var/lib/lxc as it was")
    def _():
        lxcpath()
        names = [state[k].name for k in ("busybox", "systemd", "unpriv") if k in state]
        made = list(state.get("pivots", []))
        cleanup(state)
        left = [p for p in made if os.path.isdir(p)]
        for mp in set(hierarchies().values()):
            for name in names:
                for prefix in ("lxc.payload.", "lxc.monitor."):
                    if os.path.exists(os.path.join(mp, prefix + name)):
                        left.append(os.path.join(mp, prefix + name))
        if os.path.exists("/var/lib/lxc") or state["var_lib_lxc"] is not None:
            now = sorted(os.listdir("/var/lib/lxc")) if os.path.isdir("/var/lib/lxc") else None
            if now != state["var_lib_lxc"]:
                left.append("/var/lib/lxc: %s, was %s" % (now, state["var_lib_lxc"]))
        check_equal(left, [], "left behind")

    return t


if __name__ == "__main__":
    cgtest.run_with_state(make_tests, cleanup)
