"""The host most users have: systemd as PID 1 and the unified cgroup v2
hierarchy (Debian 12 booted by user-mode Linux 6.1, tests/systemd/lane.py),
with the cgprocfs package installed as an operator installs it and its unit
serving, in two guests booted at once (a guest runs on one CPU). In one,
tests/systemd/runtimes.py starts 256 MiB containers the ways users do:
Docker (its systemd cgroup driver and private cgroup namespace) through
cgprocfs-runtime, with --cgroupns host, with LXCFS-style -v file binds,
docker exec and docker update; runc (cgroupfs and systemd drivers) and
crun with the hook, runc through the wrapper; podman through the wrapper
and through the hooks.d file; an LXC busybox container. Each must see its
own memory, uptime and load, and busybox free (sysinfo(2)) must agree with
its files. Then an operator's upgrade, reload, restart and a crash while
containers read. In the other: pods through containerd's CRI, rootless
podman, an LXC Debian system container, the unit stopped, and the
DaemonSet's pod and its rollout."""

import contextlib
import glob
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal, describe  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "systemd"))
import lane  # noqa: E402

MEM_KB = 256 << 10
# Containers with the whole view over /proc; those whose sysinfo(2) the
# daemon answers (the wrapper notifies it: Docker's default profile, or
# one that allows everything); those that get only file binds.
WHOLE = ["docker_run", "docker_cgroupns_host", "docker_exec", "runc_hook", "runc_systemd_hook", "crun_hook",
         "runc_wrapper", "podman_runtime", "podman_hooks_d"]
SYSINFO = ["docker_run", "docker_cgroupns_host", "docker_exec", "runc_wrapper", "podman_runtime"]
BINDS = ["docker_binds", "lxc_busybox", "lxc_system"]
# The CRI pods' containers (runtimes.py's cri()) and their limits, in MiB.
CRI_MIB = {"a": 256, "b": 128, "c": 192, "d": 256, "e": 128}
# The two guests booted at once, each with its part of runtimes.py (GUESTS there).
GUESTS = ("containers", "kubernetes")


def sections(text):
    secs, name = {}, None
    for line in text.splitlines():
        if line.startswith("@@"):
            name = line[2:].strip()
            secs[name] = []
        elif name:
            secs[name].append(line)
    return {k: "\n".join(v) for k, v in secs.items()}


def mem_row(text):
    """The Mem: row of a free's output, as ints."""
    for line in text.splitlines():
        if line.startswith("Mem:"):
            return [int(v) for v in line.split()[1:]]
    return None


def make_tests(state):
    t, test = cgtest.test_registry()

    @test("build the package (build-deb.sh, nocheck) and boot the systemd lane's two guests at once (Debian 12, "
          "systemd, cgroup v2, Linux 6.1), each of which installs it with dpkg -i and starts its part's containers")
    def _():
        shares = {g: os.path.join(state["share"], g) for g in GUESTS}
        for share in shares.values():
            os.mkdir(share, 0o700)
            for path in ("tests/systemd/runtimes.py", "tests/systemd/cri.py",
                         "contrib/kubernetes/containerd-cgprocfs.toml", "contrib/kubernetes/cgprocfs-daemonset.yaml"):
                shutil.copy2(os.path.join(TOP, path), share)
        built, builder = {}, None
        if os.environ.get("CGPROCFS_LANE_DEB"):  # another build's package, to compare
            for share in shares.values():
                shutil.copy2(os.environ["CGPROCFS_LANE_DEB"], share)
        else:  # built while the guests boot and start Docker; their installs wait for the marks to go
            marks = [os.path.join(share, "deb-building") for share in shares.values()]
            for mark in marks:
                open(mark, "w").close()

            def build():
                try:
                    built["res"] = cgtest.run([os.path.join(TOP, "contrib", "scripts", "build-deb.sh"),
                                               state["share"]], timeout=600,
                                              env=dict(os.environ, DEB_BUILD_OPTIONS="nocheck"))
                    for deb in glob.glob(os.path.join(state["share"], "*.deb")):
                        for share in shares.values():
                            shutil.copy2(deb, share)
                finally:
                    for mark in marks:
                        os.unlink(mark)
            builder = threading.Thread(target=build)
            builder.start()
        ran, logs, took, started = {}, {g: [] for g in GUESTS}, {}, time.monotonic()

        def boot(g):
            ran[g] = lane.run_script("python3 /lane/runtimes.py %s\n" % g, shares[g], timeout=900,
                                     log=logs[g].append)
            took[g] = time.monotonic() - started
        guests = [threading.Thread(target=boot, args=(g,)) for g in GUESTS]
        for t in guests:
            t.start()
        for t in guests + ([builder] if builder else []):
            t.join()
        if builder:
            check(built.get("res", [None])[0] == 0, "build-deb.sh failed",
                  describe(built["res"])[-3000:] if "res" in built else "(it raised)")
        for g in GUESTS:
            status, output = ran.get(g, (None, ""))
            for line in logs[g] + output.splitlines():
                if not line.startswith("@@json"):
                    cgtest.diag("%s: %s" % (g, line))
            cgtest.diag("%s: ended %.0f s after the boots began" % (g, took.get(g, 0)))  # balanced: GUESTS
            if status is None:
                with contextlib.suppress(OSError), open(os.path.join(shares[g], "console"), errors="replace") as f:
                    cgtest.diag("the %s guest's console ends:\n%s" % (g, "".join(f.readlines()[-30:])))
            check_equal(status, 0, "the %s guest's script's exit status" % g)
            found = [line[7:] for line in output.splitlines() if line.startswith("@@json ")]
            check(found, "the %s guest printed no observations" % g)
            state["obs"][g] = json.loads(found[-1])

    def observed(name, guest=None):
        """What a guest observed as name: the guest given, or the one that
        has it."""
        for g in [guest] if guest else GUESTS:
            check(g in state["obs"], "the %s guest gave nothing" % g)
            if name in state["obs"][g]:
                return state["obs"][g][name]
        errors = {g + ": " + k: v for g, o in state["obs"].items() for k, v in o.items() if k.endswith("_error")}
        check(False, "no guest ran %s" % name, errors)

    @test("the guest is what users run: systemd as PID 1, cgroup2 at /sys/fs/cgroup, Docker's systemd cgroup "
          "driver on cgroup v2; the package's unit is active after dpkg -i")
    def _():
        for g in GUESTS:
            o = lambda name: observed(name, g)  # noqa: E731
            check_equal(o("pid1"), "systemd", "the %s guest's PID 1" % g)
            check_equal(o("cgroup_fs"), "cgroup2fs", "the filesystem at /sys/fs/cgroup in the %s guest" % g)
            check_equal(o("install")["rc"], 0, "dpkg -i, then systemctl is-active, in the %s guest: %s"
                        % (g, o("install")["out"]))
            if g == "containers":  # the Kubernetes guest runs no Docker
                check_equal(o("docker_setup")["out"].split()[-2:], ["systemd", "2"],
                            "Docker's cgroup driver and version in the %s guest" % g)
            check("SubState=running" in o("unit")["out"], "the unit in the %s guest" % g, o("unit")["out"])
        cgtest.diag("versions:\n" + observed("versions"))

    @test("every container with the view over /proc (Docker through cgprocfs-runtime, with --cgroupns host, "
          "docker exec; runc with the cgroupfs and the systemd driver and crun with the hook; runc through the "
          "wrapper; podman through the wrapper and through hooks.d) sees fuse.cgprocfs on /proc, MemTotal "
          "256 MiB in meminfo and procps free, an uptime of its own, and busybox free with no figure over its total")
    def _():
        for name in WHOLE + BINDS:
            o = observed(name)
            what = "%s (exit %s): %s" % (name, o["rc"], o["out"][-2500:])
            check_equal(o["rc"], 0, "exit status of " + what)
            secs = sections(o["out"])
            check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(MEM_KB), "kB"], "MemTotal in " + what)
            if name in WHOLE:
                on_proc = [line.split()[2] for line in secs.get("mounts", "").splitlines()]
                check(on_proc[-1:] == ["fuse.cgprocfs"], "/proc's mounts in %s: %s" % (name, on_proc))
                free = mem_row(secs.get("free", ""))
                check(free and free[0] == MEM_KB, "procps free's total in " + what)
            up = float(secs.get("proc_uptime", "0").split()[0] or 0)
            # A system container's boot under one emulated CPU: up to 150 s.
            check(0 < up < (200 if name == "lxc_system" else 60), "the uptime of %s is %.1f s" % (name, up))
            bb = mem_row(secs.get("busybox_free", ""))
            check(bb and all(v <= bb[0] for v in bb), "busybox free's figures in " + what)
            if name in SYSINFO:
                check_equal(bb[0], MEM_KB, "busybox free's total (sysinfo(2), answered by the daemon) in " + name)
            check_equal(secs.get("nproc", "").strip(), "1", "nproc (sched_getaffinity) in " + what)
        cgtest.diag("docker run --runtime cgprocfs --memory 256m --cpus 0.5:\n" + observed("docker_run")["out"])

    @test("the containers whose profile the wrapper edits (Docker, runc's, podman's, the CRI pods') had their "
          "sched_getaffinity (nproc) notified to the listener: counted, and left to the kernel (one CPU: its mask "
          "is the view's), none failed")
    def _():
        for g, notified in (("containers", len(SYSINFO)), ("kubernetes", len(CRI_MIB))):
            stats = dict(line.split() for line in observed("affinity_stats", g).splitlines() if line.strip())
            cgtest.diag("the listener's sched_getaffinity counters in the %s guest: %s" % (g, stats))
            continued = sum(float(v) for k, v in stats.items() if k.startswith("cgprocfs_affinity_continued_total"))
            check(continued >= notified, "%d sched_getaffinity calls came to the listener from the %d containers "
                  "notified in the %s guest" % (continued, notified, g), stats)

    @test("rootless podman (a user's: its user namespace from /etc/subuid, its cgroup delegated by the user's "
          "systemd manager, cpu too), --memory 256m --cpus 0.5: the view's files bound -v (LXCFS's way) show "
          "256 MiB in meminfo and procps free and the container's uptime; the hooks.d file's hook, run as the "
          "user, cannot reach the daemon's root-only socket: the container starts with the kernel's /proc and "
          "the hook says so in the journal")
    def _():
        setup = observed("rootless_setup")
        check_equal(setup["rc"], 0, "the rootless user's setup: %s" % setup["out"])
        check("cpu" in setup["out"].split() and "memory" in setup["out"].split(),
              "the user's manager is not delegated cpu and memory", setup["out"])
        o = observed("podman_rootless_binds")
        what = "rootless podman with -v binds (exit %s): %s" % (o["rc"], o["out"][-2500:])
        check_equal(o["rc"], 0, "exit status of " + what)
        secs = sections(o["out"])
        check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(MEM_KB), "kB"], "MemTotal in " + what)
        free = mem_row(secs.get("free", ""))
        check(free and free[0] == MEM_KB, "procps free's total in " + what)
        up = float(secs.get("proc_uptime", "0").split()[0] or 0)
        check(0 < up < 60, "the uptime of the rootless container is %.1f s" % up)
        o = observed("podman_rootless_hooks_d")
        check_equal(o["rc"], 0, "exit status of rootless podman with the hooks.d hook: %s" % o["out"][-2500:])
        check(sections(o["out"]).get("meminfo", "").split()[1:2] != [str(MEM_KB)],
              "the hook's rootless container shows the view (the hook was expected to be refused)", o["out"])
        said = observed("rootless_hook_said")
        check("Permission denied; the container keeps the real /proc" in said,
              "the hook did not say why in the journal", said, state["obs"].get("journal_hook"))

    @test("the LXC busybox container runs in its cgroup under lxc.payload.bb (LXC on a systemd host)")
    def _():
        o = observed("lxc_cgroup")
        check(o["rc"] == 0 and o["out"].strip().startswith("0::/lxc.payload.bb"), "the LXC container's cgroup",
              o["out"])

    @test("the Debian system container (LXC, common.conf included as the debian template's configuration "
          "does) boots systemd to 'running' with the view's files bound, no unit failed")
    def _():
        o = observed("lxc_system_start")
        check_equal(o["out"].split(), ["running", "systemd"], "the system container's state and PID 1 (exit %s)"
                    % o["rc"])

    @test("docker update --memory 128m of a running container: its view follows (MemTotal and busybox free)")
    def _():
        o = observed("docker_update")
        check_equal(o["rc"], 0, "docker update, then docker exec: %s" % o["out"])
        check_equal(o["out"].split()[:3], ["MemTotal:", str(128 << 10), "kB"], "MemTotal after docker update")
        check_equal((mem_row(o["out"]) or [None])[0], 128 << 10, "busybox free's total after docker update")

    @test("the journal: no line of the hook while the daemon serves (but the rootless podman container's, whose "
          "hook is refused the socket); the daemon's log has no warning")
    def _():
        refused = [line.strip() for line in observed("rootless_hook_said").splitlines() if line.strip()]
        for g in GUESTS:
            lines = [line for line in observed("journal_hook", g).splitlines()
                     if line.strip() and not any(line.endswith(r) for r in refused)]
            check(lines in ([], ["-- No entries --"]),
                  "the hook's lines in the %s guest's journal (the rootless container's aside)" % g, lines)
            warnings = observed("daemon_warnings", g).splitlines()
            check(not warnings, "the daemon's journal in the %s guest has warnings" % g, *warnings)

    @test("Kubernetes pods through containerd's CRI (the shipped handler, SystemdCgroup, each pod's slice under "
          "kubepods with its limit): each container of a pod sees its own limit (256 and 128 MiB), a pod beside "
          "it its own (192 MiB), and so do the containers of a pod sharing its pid namespace, which see each "
          "other's processes; fuse.cgprocfs on /proc, busybox free (sysinfo) agreeing")
    def _():
        check_equal(observed("cri_setup")["rc"], 0, "containerd's restart and the images' import: %s"
                    % observed("cri_setup")["out"])
        cgtest.diag("CRI: %s" % observed("cri_version"))
        for name, mib in CRI_MIB.items():
            o = observed("cri_" + name)
            what = "the CRI container %s (exit %s): %s" % (name, o["rc"], o["out"][-2500:])
            check_equal(o["rc"], 0, "exit status of " + what)
            secs = sections(o["out"])
            check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(mib << 10), "kB"], "MemTotal in " + what)
            on_proc = [line.split()[2] for line in secs.get("mounts", "").splitlines()]
            check(on_proc[-1:] == ["fuse.cgprocfs"], "/proc's mounts in %s: %s" % (name, on_proc))
            check_equal((mem_row(secs.get("free", "")) or [None])[0], mib << 10, "procps free's total in " + what)
            check_equal((mem_row(secs.get("busybox_free", "")) or [None])[0], mib << 10,
                        "busybox free's total (sysinfo) in " + what)
            sleeps = [line for line in secs.get("ps", "").splitlines() if line.split()[1:] == ["sleep"]]
            check_equal(len(sleeps), 3 if name in "de" else 1, "sleep processes busybox ps lists in " + what)
        cgtest.diag("a CRI pod's container (256 MiB):\n" + observed("cri_a")["out"])
        cgtest.diag("the pods' cgroups:\n" + observed("cri_cgroups"))

    @test("the DaemonSet's pod as shipped (privileged, host pid, its volumes and command), started through the "
          "CRI with the unit stopped, serves the view at /var/lib/cgprocfs from its pod's cgroup, its keeper in the "
          "node's top cgroup; a runc container with the hook then gets the pod daemon's view (MemTotal 256 MiB)")
    def _():
        check_equal(observed("ds_image")["rc"], 0, "the DaemonSet's image: %s" % observed("ds_image")["out"])
        o = observed("ds_serving")
        lines = o["out"].splitlines()
        check(lines[:1] == ["fuse.cgprocfs"], "the filesystem at /var/lib/cgprocfs/proc", o["out"],
              observed("ds_log"))
        keeper = [line for line in lines[1:] if " --be-keeper " in line]
        daemon = [line for line in lines[1:] if line not in keeper]
        pod = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podd4.slice/cri-containerd-"
        check(daemon and all(pod in line for line in daemon), "the pod's daemon's processes and their cgroup", *lines)
        check(len(keeper) == 1 and keeper[0].endswith(": 0::/"), "the keeper and its cgroup", *lines)
        hooked = observed("ds_runc_hook")
        secs = sections(hooked["out"])
        check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(MEM_KB), "kB"],
                    "MemTotal in a runc container with the hook (exit %s): %s" % (hooked["rc"], hooked["out"]))
        check_equal([line.split()[2] for line in secs.get("mounts", "").splitlines()][-1:], ["fuse.cgprocfs"],
                    "/proc's top mount in that container")
        cgtest.diag("the DaemonSet's pod's processes:\n" + o["out"] + "its log's end:\n" + observed("ds_log"))

    @test("a rollout of the DaemonSet as kubelet does one with its strategy (the old pod stopped with its grace "
          "period, then the new one started) while a container with the hook reads every 10 ms: no failed read "
          "and no host figure; the new pod's daemon took the views over from the old one's keeper, and one keeper "
          "is left, in the node's top cgroup")
    def _():
        o = observed("ds_rollout")
        cgtest.diag("the rollout took %s s; the new pod's processes:\n%s\nits log's end:\n%s"
                    % (o["s"], o["out"], observed("ds_rollout_log")))
        r = observed("ds_reader")
        last = (r["out"].strip().splitlines() or [""])[-1].split()
        counts = dict(zip(last[0::2], (int(v) for v in last[1::2]))) if last[:1] == ["reads"] else {}
        check(r["rc"] == 0 and counts.get("reads", 0) >= 20 and counts.get("failed") == 0 and counts.get("host") == 0,
              "the reader (exit %s): %s" % (r["rc"], r["out"][-1500:]))
        check("from the keeper of a daemon that died" in observed("ds_rollout_log"),
              "the new pod's daemon did not say it took the views from the keeper", observed("ds_rollout_log"))
        lines = o["out"].splitlines()
        keepers = [line for line in lines[1:] if " --be-keeper " in line]
        check(lines[:1] == ["fuse.cgprocfs"] and len(keepers) == 1 and keepers[0].endswith(": 0::/"),
              "the view and the keepers after the rollout", *lines)

    @test("what an operator does, in turn, while a Docker and a runc container through the wrapper (sysinfo too), "
          "the LXC container (file binds) and a host process with the host view's meminfo bound read every 10 ms: "
          "an upgrade from an older version (dpkg -i: its postinst), systemctl reload, "
          "systemctl restart, a crash of the main process: each is another daemon, none a failed read or a host "
          "figure; one daemon and one keeper are left, and /run/cgprocfs holds what serves")
    def _():
        cgtest.diag("the unit's journal:\n" + observed("op_journal"))
        for name in ("upgrade", "reload", "restart", "crash"):
            o = observed("op_" + name)
            cgtest.diag("%s: from %s (the guest's clock), %s s, then the main pid %s"
                        % (name, o.get("at"), o["s"], o["pid"]))
        problems = ["a warning in the daemon's journal: " + line for line in observed("op_warnings").splitlines()]
        pids = [observed("op_pid_before")]
        for name in ("upgrade", "reload", "restart", "crash"):
            o = observed("op_" + name)
            if o["rc"] != 0:
                problems.append("%s, then systemctl is-active: exit %s, %s" % (name, o["rc"], o["out"]))
            if o["pid"] in pids:
                problems.append("the main pid after %s is %s, as before it (%s)" % (name, o["pid"], pids))
            pids.append(o["pid"])
        if observed("op_version") != "0.1.0":
            problems.append("the package's version after the upgrade is %r" % observed("op_version"))
        for name in ("docker", "runc", "lxc", "host"):
            o = observed("op_reader_" + name)
            last = (o["out"].strip().splitlines() or [""])[-1].split()
            counts = dict(zip(last[0::2], (int(v) for v in last[1::2]))) if last[:1] == ["reads"] else {}
            bad = {k: counts.get(k) for k in ("failed", "host", "sysinfo_host") if counts.get(k) != 0}
            if o["rc"] != 0 or counts.get("reads", 0) < 20 or bad:
                problems.append("the %s reader (exit %s): %s" % (name, o["rc"], o["out"][-1500:]))
            cgtest.diag("the %s reader: %s" % (name, " ".join(last)))
        where = "the readers' processes and the daemon (pid, comm, cgroup and pid namespaces, cgroup), before the " \
                "stop: " + " | ".join(observed("op_cgroups").splitlines())
        cgtest.diag(where)
        if any(p.startswith("the ") and " reader (exit " in p for p in problems):
            problems.append(where)
        lines = observed("op_processes").splitlines()
        comms = [line.split()[1] for line in lines[1:]]
        daemons = [line.split()[0] for line in lines[1:] if line.split()[1] == "cgprocfs:"]
        if daemons != lines[:1] or comms.count("cgprocfs-keeper:") != 1 or comms.count("cgprocfs-notify:") > 1:
            problems.append("the processes left: the main pid, then each one's pid, comm and command line: "
                            + " | ".join(lines))
        left = set(observed("op_run").split())
        if not left <= {"var-lib-cgprocfs.sock" + end for end in ("", ".keeper", ".seccomp", ".lxc", ".scopes",
                                                                  ".cputime", ".cputime.log", ".key")}:
            problems.append("/run/cgprocfs holds %s" % sorted(left))
        check(not problems, "what the operator's actions left", *problems)

    @test("with the unit stopped, a runc container with the hook starts with the kernel's /proc (MemTotal the "
          "guest's), and the hook's line, naming the container, is in the journal")
    def _():
        o = observed("runc_no_daemon")
        check_equal(o["rc"], 0, "runc's exit status with no daemon: %s" % o["out"])
        secs = sections(o["out"])
        check_equal(secs.get("meminfo", "").split(), ["MemTotal:", str(observed("guest_memtotal_kb")), "kB"],
                    "MemTotal with no daemon: %s" % o["out"])
        lines = [line for line in observed("journal_no_daemon").splitlines() if "runc-nodaemon" in line]
        check(len(lines) == 1 and "keeps the real /proc" in lines[0], "the hook's lines in the journal",
              observed("journal_no_daemon"))

    return t


def main():
    cgtest.skip_all_unless_runnable()
    why = cgtest.uml_unusable()
    if why:
        print("1..0 # SKIP " + why)
        return
    os.makedirs(lane.debian.CACHE, exist_ok=True)
    share = tempfile.mkdtemp(prefix="lane-", dir="/var/tmp")
    try:
        cgtest.run_tests(make_tests({"share": share, "obs": {}}))
    finally:
        shutil.rmtree(share, ignore_errors=True)


if __name__ == "__main__":
    main()
