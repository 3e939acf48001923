"""Docker and containerd with cgprocfs-runtime, for real: a dockerd (and the
containerd it starts) with its state in a temporary directory
(--iptables=false --bridge=none, the overlay2 storage driver, containers'
cgroups under a parent of this test's), a busybox image made with docker
import, the daemon on a temporary mountpoint.

  - docker run --runtime cgprocfs --cpus 0.5 --memory 256m: one processor,
    one CPU online, ps lists only the container's processes, MemTotal is
    256 MiB, /proc/1/smaps_rollup is served by the memo; docker exec sees
    the same;
  - a runtime gated on the annotation (Docker 20.10 passes none): the real
    /proc;
  - per-file -v binds of the view (no runtime change): the same CPU checks,
    and again after docker update;
  - a second dockerd with "userns-remap": "default": --runtime cgprocfs
    (the hook at createRuntime) shows 256 MiB and one CPU in the files,
    busybox free and nproc; known gaps: -v binds (ESTALE) and another
    process's smaps_rollup without CAP_SYS_PTRACE (EACCES);
  - the daemon stopped: containers still start, with the real /proc;
  - containerd alone (ctr run --runc-binary, a container annotated
    io.cgprocfs.enable=true): the same CPU checks;
  - contrib/Containerfile builds the DaemonSet's image on a Debian 12 base
    made with debootstrap, and the DaemonSet's pod runs as Docker would run
    it: containers started afterwards get the view, and a reader in one
    reads on, with no error, across a kill and a restart of the daemon's
    container. The base (minbase, with the packages the Containerfile
    installs already in, so that its apt-get install lines are checked
    without downloading them each run) is debian.py's, kept between runs.

busybox free takes MemTotal from sysinfo(2), which no file can change, so
MemTotal is read from /proc/meminfo."""

import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
import debian  # noqa: E402
from dockerlab import (BUSYBOX, CGROUP_PARENT, DOCKER, DOCKERD, IMAGE, SUBID_FILES, Docker, end_remap,  # noqa: E402
                       make_image)
import yaml  # noqa: E402
from cgtest import check, check_equal, describe  # noqa: E402

CTR = shutil.which("ctr") or "/usr/bin/ctr"
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DAEMONSET = os.path.join(SOURCE, "contrib", "kubernetes", "cgprocfs-daemonset.yaml")
BASE_IMAGE = "cgprocfs-debian:bookworm"
DAEMON_IMAGE = "cgprocfs-daemon"
POD = "cgprocfs-pod-test"
# Linux's capabilities by number, as Docker names them.
CAPS = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE "
        "NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT "
        "SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
        "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE").split()
# In a container with the view: reads cpuinfo and /proc/1 until /tmp/stop
# exists, then says how many reads were right and how many were not.
READER = ('n=0; bad=0; while [ ! -e /tmp/stop ]; do c=$(grep -c ^processor /proc/cpuinfo 2>&1); '
          'if [ "$c" = 1 ] && [ -r /proc/1/status ]; then n=$((n+1)); else bad=$((bad+1)); echo "bad: $c"; fi; '
          'sleep 0.05; done; echo "reads $n bad $bad"')
# What every check runs in the container: its CPUs, processes and memory.
PROBE = ('echo "processors $(grep -c ^processor /proc/cpuinfo)"; echo "online $(cat /sys/devices/system/cpu/online)"; '
         'echo "pids $(ls /proc | grep -c "^[0-9]")"; grep MemTotal /proc/meminfo; '
         'grep -q "^Rss:" /proc/1/smaps_rollup && echo smaps ok')


# ... and in a container of userns-remap: its uid map, sysinfo (busybox
# free), sched_getaffinity (nproc) and /proc's owners as it sees them.
REMAP_PROBE = (PROBE + '; echo "uidmap $(cat /proc/self/uid_map)"; busybox free | grep ^Mem:; '
               'echo "nproc $(busybox nproc)"; echo "--- ls -ln /proc | head -3"; ls -ln /proc | head -3')


def probe_fields(out):
    fields = {}
    for line in out.splitlines():
        parts = line.replace(":", "").split()
        if len(parts) >= 2:
            fields[parts[0]] = parts[1]
    return fields


def remove_cgroups():
    for controller in os.listdir("/sys/fs/cgroup"):
        path = os.path.join("/sys/fs/cgroup", controller, CGROUP_PARENT)
        if os.path.isdir(path) and not os.path.islink(os.path.join("/sys/fs/cgroup", controller)):
            cgtest.remove_cgroups([path], os.path.join("/sys/fs/cgroup", controller))


def check_online(text, what):
    """One of the host's CPUs, by its host number (the daemon places it)."""
    check(text is not None and text.isdigit() and int(text) < int(host_processors()), "%s: %r is not one host CPU"
          % (what, text))


def check_limited(fields, what, pids_at_most=8):
    check_equal(fields.get("processors"), "1", "%s: processors in /proc/cpuinfo" % what)
    check_online(fields.get("online"), "%s: /sys/devices/system/cpu/online" % what)
    check(fields.get("pids") is not None and int(fields["pids"]) <= pids_at_most,
          "%s: /proc lists %s pids, not only the container's" % (what, fields.get("pids")))


def hook_of(work):
    """The hook the runtimes add. A hook built with AddressSanitizer ends in
    the container's namespaces, where LeakSanitizer cannot list its
    threads (cgtest.HOOK_ENV): there, a script runs it without the leak
    check, as runc gives hooks no environment of ours."""
    hook = os.environ["CGPROCFS_OCI_HOOK"]
    if not os.environ.get("CGPROCFS_SANITIZED"):
        return hook
    script = os.path.join(work, "cgprocfs-oci-hook")
    with open(script, "w") as f:
        f.write('#!/bin/sh\nASAN_OPTIONS=detect_leaks=0 exec "%s" "$@"\n' % hook)
    os.chmod(script, 0o755)
    return script


def host_processors():
    with open("/proc/cpuinfo") as f:
        return str(sum(1 for line in f if line.startswith("processor")))


def source_context(work):
    """A copy of the source tree without its build directories: docker
    build's context, as from a fresh clone."""
    def build_dirs(top, names):
        if top != SOURCE:
            return []
        return [n for n in names if n == ".git" or os.path.exists(os.path.join(top, n, "meson-private"))]
    context = os.path.join(work, "context")
    shutil.copytree(SOURCE, context, ignore=build_dirs, symlinks=True)
    return context


def privileged_args():
    """--privileged; where this machine's capability bounding set lacks one
    that Docker gives a privileged container (runc then fails: "unable to
    apply caps"), what --privileged does, without that one."""
    with open("/proc/self/status") as f:
        bounding = int(next(line for line in f if line.startswith("CapBnd:")).split()[1], 16)
    missing = [CAPS[n] for n in range(len(CAPS)) if not bounding >> n & 1]
    if not missing:
        return ["--privileged"]
    cgtest.diag("this machine's bounding set lacks %s: the pod runs with every other capability, no seccomp or "
                "AppArmor profile, every device, as --privileged would" % " ".join(missing))
    args = ["--cap-add", "ALL"]
    for cap in missing:
        args += ["--cap-drop", cap]
    return args + ["--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                   "--security-opt", "systempaths=unconfined", "--device-cgroup-rule", "a *:* rwm"]


def pod_run_args(pod_mnt, pod_run):
    """docker run's arguments for the DaemonSet's pod, read from its
    manifest: its command, privileged, the host's pid namespace, its
    volumes (Bidirectional: rshared); the node's /var/lib/cgprocfs and
    /run/cgprocfs are pod_mnt and pod_run, on both sides, and the control
    socket is named, as its default follows the mountpoint."""
    with open(DAEMONSET) as f:
        ds = next(doc for doc in yaml.safe_load_all(f) if doc and doc.get("kind") == "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    container = spec["containers"][0]
    moved = {"/var/lib/cgprocfs": pod_mnt, "/run/cgprocfs": pod_run}
    args = ["--pid", "host"] if spec.get("hostPID") else []
    if container.get("securityContext", {}).get("privileged"):
        args += privileged_args()
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    for m in container["volumeMounts"]:
        mode = "rshared" if m.get("mountPropagation") == "Bidirectional" else "ro" if m.get("readOnly") else "rw"
        host = host_paths[m["name"]]
        args += ["-v", "%s:%s:%s" % (moved.get(host, host), moved.get(m["mountPath"], m["mountPath"]), mode)]
    command = [moved.get(a, a) for a in container["command"]]
    command[-1:-1] = ["--control-socket=" + os.path.join(pod_run, "cgprocfs.sock")]
    if command[0] == "nsenter" and cgtest.errno_of(os.readlink, "/proc/1/ns/cgroup"):
        # Docker's own way into the host's cgroup namespace.
        cgtest.diag("this machine's pid 1 does not let its namespaces be opened: the pod runs with --cgroupns host "
                    "instead of nsenter --target 1 --cgroup")
        command = command[command.index("--") + 1:]
        args += ["--cgroupns", "host"]
    return args + ["--entrypoint", command[0], DAEMON_IMAGE] + command[1:]


def end_pod(docker, state):
    """The pod's containers removed, its keeper killed (it would wait for a
    new daemon), its mounts detached."""
    docker.docker(["rm", "-f", POD, POD + "-reader"], timeout=60)
    mnt = state.get("pod_mnt")
    if not mnt:
        return
    for pid in cgtest.keepers_of(mnt):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    cgtest.wait_until(lambda: not cgtest.keepers_of(mnt), timeout=10)
    cgtest.force_unmount(mnt)


def make_tests(d, state):
    t, test = cgtest.test_registry()

    @test("dockerd (state in a temporary directory) starts with the cgprocfs runtimes; a busybox image is imported")
    def _():
        for exe in (DOCKER, DOCKERD, BUSYBOX):
            if not os.access(exe, os.X_OK):
                raise cgtest.Skip("%s is missing (apt-get install docker.io containerd busybox-static)" % exe)
        for var in ("CGPROCFS_OCI_HOOK", "CGPROCFS_RUNTIME_WRAPPER"):
            if not os.environ.get(var):
                raise cgtest.Skip("%s is not set (run through meson test)" % var)
        state["work"] = tempfile.mkdtemp(prefix="cgprocfs-docker-")
        state["run_before"] = set(os.listdir("/run"))
        state["pod_mnt"] = os.path.join(state["work"], "pod", "state")
        state["pod_run"] = os.path.join(state["work"], "pod", "run")
        state["docker"] = Docker(state["work"], os.environ["CGPROCFS_RUNTIME_WRAPPER"], hook_of(state["work"]), d.mnt,
                                 state["pod_mnt"])
        make_image(state["docker"], state["work"])

    def docker():
        if "docker" not in state:
            raise cgtest.Skip("no dockerd")
        return state["docker"]

    @test("docker run --runtime cgprocfs --cpus 0.5 --memory 256m: 1 processor, one CPU online, only the "
          "container's pids, MemTotal 256 MiB, smaps_rollup from the memo")
    def _():
        before = cgtest.read_stats(d.mnt)
        res = docker().docker(["run", "--rm", "--runtime", "cgprocfs", "--cpus", "0.5", "--memory", "256m", IMAGE,
                               "sh", "-c", PROBE])
        check(res[0] == 0, "docker run", describe(res), docker().daemon_log())
        fields = probe_fields(res[1])
        check_limited(fields, "docker run")
        check_equal(fields.get("MemTotal"), str(256 * 1024), "MemTotal (kB) in /proc/meminfo")
        check_equal(fields.get("smaps"), "ok", "/proc/1/smaps_rollup")
        after = cgtest.read_stats(d.mnt)
        served = sum(after[k] - before.get(k, 0) for k in ("hits_total", "misses_total", "stale_serves_total"))
        check(served >= 1, "the memo served no smaps_rollup", before, after)

    @test("docker run --runtime cgprocfs --memory 256m, with Docker's seccomp profile and with none "
          "(seccomp=unconfined): busybox free's total is 256 MiB and busybox uptime says up 0 min (sysinfo(2), "
          "answered by the daemon)")
    def _():
        for security in ([], ["--security-opt", "seccomp=unconfined"]):
            res = docker().docker(["run", "--rm", "--runtime", "cgprocfs", "--memory", "256m"] + security +
                                  [IMAGE, "sh", "-c", "busybox free; busybox uptime"])
            check(res[0] == 0, "docker run %s" % security, describe(res), docker().daemon_log())
            mem = [line.split() for line in res[1].splitlines() if line.startswith("Mem:")]
            check(mem and mem[0][1] == str(256 * 1024), "busybox free's total with %s" % (security or "Docker's "
                  "profile"), res[1])
            check(" up 0 min," in res[1], "busybox uptime in a new container", res[1])

    @test("with the wrapper's profile edit, what Docker's profile denies stays denied (unshare: EPERM), a "
          "profile that denies sysinfo keeps denying it (EPERM), and docker exec's sysinfo is the container's")
    def _():
        res = docker().docker(["run", "--rm", "--runtime", "cgprocfs", IMAGE, "busybox", "unshare", "-U", "true"])
        check(res[0] != 0 and "not permitted" in res[1] + res[2], "unshare under Docker's profile", describe(res))
        work = state["work"]
        probe = os.path.join(work, "sysinfo-errno")
        with open(probe + ".c", "w") as f:
            f.write('#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/sysinfo.h>\n'
                    'int main(void) { struct sysinfo s; int r = sysinfo(&s); '
                    'printf("%d %s\\n", r, r ? strerror(errno) : "ok"); return 0; }\n')
        cgtest.check_ran(cgtest.run(["cc", "-static", "-o", probe, probe + ".c"]), "cc -static (the probe)")
        profile = os.path.join(work, "deny-sysinfo.json")
        with open(profile, "w") as f:
            json.dump({"defaultAction": "SCMP_ACT_ALLOW",
                       "syscalls": [{"names": ["sysinfo"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}, f)
        res = docker().docker(["run", "--rm", "--runtime", "cgprocfs", "--security-opt", "seccomp=" + profile,
                               "-v", probe + ":/probe:ro", IMAGE, "/probe"])
        check(res[0] == 0 and res[1].strip() == "-1 Operation not permitted",
              "sysinfo under a profile that denies it", describe(res))
        res = docker().docker(["run", "-d", "--runtime", "cgprocfs", "--memory", "256m", IMAGE, "sleep", "600"])
        check(res[0] == 0, "docker run -d", describe(res))
        cid = res[1].strip()
        try:
            res = docker().docker(["exec", cid, "busybox", "free"])
            mem = [line.split() for line in res[1].splitlines() if line.startswith("Mem:")]
            check(res[0] == 0 and mem and mem[0][1] == str(256 * 1024), "busybox free by docker exec", describe(res))
        finally:
            docker().docker(["rm", "-f", cid])

    @test("docker exec into a container run with the runtime sees the same")
    def _():
        res = docker().docker(["run", "-d", "--runtime", "cgprocfs", "--cpus", "0.5", "--memory", "256m", IMAGE,
                               "sleep", "600"])
        check(res[0] == 0, "docker run -d", describe(res))
        cid = res[1].strip()
        try:
            res = docker().docker(["exec", cid, "sh", "-c", PROBE])
            check(res[0] == 0, "docker exec", describe(res))
            fields = probe_fields(res[1])
            check_limited(fields, "docker exec")
            check_equal(fields.get("MemTotal"), str(256 * 1024), "MemTotal (kB) in /proc/meminfo")
        finally:
            docker().docker(["rm", "-f", cid])

    @test("a runtime gated on io.cgprocfs.enable=true, and a container without it: the real /proc")
    def _():
        res = docker().docker(["run", "--rm", "--runtime", "cgprocfs-gated", "--cpus", "0.5", IMAGE, "sh", "-c",
                               PROBE + "; grep -c fuse.cgprocfs /proc/mounts || true"])
        check(res[0] == 0, "docker run", describe(res))
        check_equal(probe_fields(res[1]).get("processors"), host_processors(), "processors")
        check_equal(res[1].split()[-1], "0", "cgprocfs mounts in the container")

    @test("docker run -v of the view's cpuinfo, stat, meminfo and CPU directory (no runtime change), --cpus 0.5 "
          "--memory 256m: 1 processor (busybox cat too, which reads by sendfile), 1 CPU in stat, one CPU online, "
          "MemTotal 256 MiB; after docker update --cpus 2, as many as the host has")
    def _():
        binds = []
        for path in ("proc/cpuinfo", "proc/stat", "proc/meminfo", "sys/devices/system/cpu"):
            binds += ["-v", "%s:/%s:ro" % (os.path.join(d.mnt, path), path)]
        probe = PROBE + '; echo "catted $(cat /proc/cpuinfo | grep -c ^processor)"; ' \
                        'echo "statcpus $(grep -c "^cpu[0-9]" /proc/stat)"'
        res = docker().docker(["run", "-d", "--cpus", "0.5", "--memory", "256m"] + binds + [IMAGE, "sleep", "600"])
        check(res[0] == 0, "docker run -v", describe(res))
        cid = res[1].strip()
        try:
            res = docker().docker(["exec", cid, "sh", "-c", probe])
            fields = probe_fields(res[1])
            for key in ("processors", "catted", "statcpus"):
                check_equal(fields.get(key), "1", "%s (%s)" % (key, res[2].strip()))
            check_online(fields.get("online"), "/sys/devices/system/cpu/online")
            check_equal(fields.get("MemTotal"), str(256 * 1024), "MemTotal (kB) in /proc/meminfo")
            host = host_processors()
            res = docker().docker(["update", "--cpus", host, cid])
            check(res[0] == 0, "docker update", describe(res))
            fields = probe_fields(docker().docker(["exec", cid, "sh", "-c", probe])[1])
            for key in ("processors", "catted", "statcpus"):
                check_equal(fields.get(key), host, "%s after docker update --cpus %s" % (key, host))
        finally:
            docker().docker(["rm", "-f", cid])

    def remap_docker():
        """A second dockerd, with "userns-remap": "default" (Docker makes the
        user dockremap and its subordinate ids if they are not there), its
        state in a directory of its own that the remapped root can pass
        through, the image imported."""
        if "remap" not in state:
            docker()
            state["dockremap_before"] = cgtest.run(["getent", "passwd", "dockremap"])[0] == 0
            # usermod, which Docker asks for dockremap's ranges, refuses
            # to make these files.
            for path in SUBID_FILES:
                if not os.path.exists(path):
                    open(path, "a").close()
                    state.setdefault("subid_files_made", []).append(path)
            work = state["remap_work"] = tempfile.mkdtemp(prefix="cgprocfs-docker-remap-")
            os.chmod(work, 0o711)
            state["remap"] = Docker(work, os.environ["CGPROCFS_RUNTIME_WRAPPER"], hook_of(state["work"]), d.mnt,
                                    extra={"userns-remap": "default"})
            make_image(state["remap"], work)
        return state["remap"]

    def check_remapped(res, what):
        """What REMAP_PROBE printed in a container of the userns-remap dockerd."""
        check(res[0] == 0, what, describe(res))
        cgtest.diag("%s:\n%s%s" % (what, res[1].rstrip(), "\nstderr: " + res[2].rstrip() if res[2].strip() else ""))
        fields = probe_fields(res[1])
        uidmap = fields.get("uidmap") and res[1].split("uidmap", 1)[1].split()
        check(uidmap and uidmap[0] == "0" and uidmap[1] != "0", "%s: the container's root is not remapped (uid_map "
              "%s)" % (what, uidmap))
        check_equal(fields.get("MemTotal"), str(256 * 1024), "%s: MemTotal (kB) in /proc/meminfo" % what)
        check_equal(fields.get("processors"), "1", "%s: processors in /proc/cpuinfo" % what)
        check_online(fields.get("online"), "%s: /sys/devices/system/cpu/online" % what)
        return fields

    @test("dockerd with userns-remap: default: docker run --runtime cgprocfs --cpus 0.5 --memory 256m as "
          "dockremap's ids: MemTotal 256 MiB, 1 processor, one CPU online, only the container's pids, busybox free's "
          "total 256 MiB and nproc 1 (the seccomp listener)")
    def _():
        res = remap_docker().docker(["run", "--rm", "--runtime", "cgprocfs", "--cpus", "0.5", "--memory", "256m",
                                     IMAGE, "sh", "-c", REMAP_PROBE])
        fields = check_remapped(res, "docker run --runtime cgprocfs (userns-remap)")
        check_limited(fields, "docker run --runtime cgprocfs (userns-remap)")
        check_equal(fields.get("Mem"), str(256 * 1024), "busybox free's total")
        check_equal(fields.get("nproc"), "1", "busybox nproc")

    @test("dockerd with userns-remap: default, --runtime cgprocfs: the container's root reads its init's "
          "smaps_rollup and exe link through the view as the kernel's own procfs (/proc/.real) lets it, with "
          "Docker's capabilities (no CAP_SYS_PTRACE)",
          todo="the daemon's acting thread is not in the caller's user namespace: the kernel's rule that a "
          "process may read another of its own namespace whose capabilities are a subset of its own does not "
          "hold for it, and without CAP_SYS_PTRACE it is refused (EACCES)")
    def _():
        probe = ('for root in /proc/.real /proc; do echo "$root $(grep -c ^Rss: $root/1/smaps_rollup) '
                 '$(busybox readlink $root/1/exe)"; done')
        res = remap_docker().docker(["run", "--rm", "--runtime", "cgprocfs", IMAGE, "sh", "-c", probe + "; true"])
        check(res[0] == 0, "docker run", describe(res))
        said = {line.partition(" ")[0]: line.partition(" ")[2].strip() for line in res[1].splitlines()
                if line.startswith("/proc")}
        cgtest.diag("the kernel's: %s; the view's: %s%s" % (said.get("/proc/.real"), said.get("/proc"),
                                                           "; " + res[2].strip() if res[2].strip() else ""))
        check_equal(said.get("/proc/.real"), "1 /bin/busybox", "the kernel's answer (its own procfs)")
        check_equal(said.get("/proc"), said.get("/proc/.real"), "smaps_rollup's Rss lines and the exe link "
                    "through the view")

    @test("dockerd with userns-remap: default: a -v bind of the view's meminfo, which runc makes from the host "
          "(another cgroup's file), is refused with ESTALE, never read as that file; the daemon's log says why "
          "and what works, once")
    def _():
        bind = "%s:/proc/meminfo:ro" % os.path.join(d.mnt, "proc/meminfo")
        said = lambda: d.log().count("through a bind made by a caller of another cgroup")  # noqa: E731
        for run in (1, 2):
            res = remap_docker().docker(["run", "--rm", "--memory", "256m", "-v", bind, IMAGE, "sh", "-c",
                                         "cat /proc/meminfo; echo status $?"])
            check(res[0] == 0 and "status 1" in res[1] and "Stale file handle" in res[2] and
                  "MemTotal" not in res[1], "run %d: cat of the bound meminfo" % run, describe(res))
            check_equal(said(), 1, "the daemon's lines about a bind from another cgroup after run %d" % run)
        check("--runtime cgprocfs" in d.log(), "the daemon's line names no way that works", d.log())

    @test("dockerd with userns-remap: default: docker run -v of the view's cpuinfo, stat, meminfo and CPU "
          "directory, --cpus 0.5 --memory 256m: MemTotal 256 MiB, 1 processor, one CPU online (busybox free and "
          "nproc ask the kernel: no listener without the wrapper)",
          todo="runc opens a user namespace's bind sources on the host, in the host's pid namespace: the bind "
          "holds the host's content class of each file, and the container's reads of it fail with ESTALE "
          "(never another class's text); use --runtime cgprocfs")
    def _():
        binds = []
        for path in ("proc/cpuinfo", "proc/stat", "proc/meminfo", "sys/devices/system/cpu"):
            binds += ["-v", "%s:/%s:ro" % (os.path.join(d.mnt, path), path)]
        try:
            res = remap_docker().docker(["run", "--rm", "--cpus", "0.5", "--memory", "256m"] + binds +
                                        [IMAGE, "sh", "-c", REMAP_PROBE])
        finally:
            end_remap(state)
        check_remapped(res, "docker run -v (userns-remap)")

    @test("containerd alone: ctr run --runc-binary (the wrapper), annotated io.cgprocfs.enable=true: 1 processor, "
          "one CPU online, only the container's pids")
    def _():
        ctr = [CTR, "--address", docker().containerd_socket(), "--namespace", "cgprocfs-test"]
        if not os.access(CTR, os.X_OK):
            raise cgtest.Skip("ctr is missing (apt-get install containerd)")
        image_tar = os.path.join(state["work"], "image.tar")
        res = docker().docker(["save", "-o", image_tar, IMAGE])
        check(res[0] == 0, "docker save", describe(res))
        res = cgtest.run(ctr + ["images", "import", image_tar], timeout=120)
        check(res[0] == 0, "ctr images import", describe(res))
        # containerd's runc options name a binary, no arguments: a script.
        wrapper = os.path.join(state["work"], "cgprocfs-runc")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec "%s" --cgprocfs-hook="%s" --cgprocfs-mountpoint="%s" "$@"\n'
                    % (os.environ["CGPROCFS_RUNTIME_WRAPPER"], hook_of(state["work"]), d.mnt))
        os.chmod(wrapper, 0o755)
        try:
            res = cgtest.run(ctr + ["run", "--rm", "--runc-binary", wrapper, "--annotation", "io.cgprocfs.enable=true",
                                    "--cpus", "0.5", "--cgroup", "/%s/ctr-test" % CGROUP_PARENT,
                                    "docker.io/library/%s:latest" % IMAGE, "cgprocfs-ctr-test", "sh", "-c", PROBE],
                             timeout=120)
            check(res[0] == 0, "ctr run", describe(res))
            check_limited(probe_fields(res[1]), "ctr run")
        finally:
            cgtest.run(ctr + ["containers", "rm", "cgprocfs-ctr-test"])
            cgtest.run(ctr + ["images", "rm", "docker.io/library/%s:latest" % IMAGE])

    @test("contrib/Containerfile builds the DaemonSet's image (docker build --network host) on a Debian 12 base "
          "made with debootstrap and docker import; its cgprocfs is this tree's")
    def _():
        docker()
        if os.environ.get("CGPROCFS_SANITIZED"):
            raise cgtest.Skip("the image builds its own daemon, unsanitized: built in the plain run")
        if not shutil.which("debootstrap"):
            raise cgtest.Skip("debootstrap is missing (apt-get install debootstrap)")
        res = docker().docker(["import", debian.base_tar(state["work"]), BASE_IMAGE], timeout=300)
        check(res[0] == 0, "docker import of the Debian base", describe(res))
        context = source_context(state["work"])
        res = docker().docker(["build", "--network", "host", "--build-arg", "BASE=" + BASE_IMAGE,
                               "-f", os.path.join(context, "contrib", "Containerfile"), "-t", DAEMON_IMAGE, context],
                              timeout=1500)
        shutil.rmtree(context)
        check(res[0] == 0, "docker build -f contrib/Containerfile", res[1][-3000:], res[2][-3000:])
        res = docker().docker(["run", "--rm", DAEMON_IMAGE, "--version"])
        ours = cgtest.run([cgtest.daemon_exe(), "--version"])[1]
        check(res[1].split()[:2] == ours.split()[:2], "cgprocfs --version in the image is not this tree's %r"
              % ours.strip(), describe(res))
        state["image"] = DAEMON_IMAGE

    @test("the DaemonSet's pod run as Docker would run it (its command, privileged, the host's pid namespace, its "
          "volumes, the state directory with shared propagation): a container started afterwards gets the view; "
          "the daemon's container killed and started again, then restarted (SIGTERM): each new daemon takes the "
          "views over from the keeper, which is out of the pod's cgroups, and a reader in the container reads on "
          "with 0 failed reads")
    def _():
        if "image" not in state:
            raise cgtest.Skip("no image: see the test above")
        mnt = state["pod_mnt"]
        for path in (mnt, state["pod_run"]):
            os.makedirs(path)
        # Docker binds with rshared only from a shared mount.
        for argv in (["mount", "--bind", mnt, mnt], ["mount", "--make-shared", mnt]):
            res = cgtest.run(argv)
            check(res[0] == 0, " ".join(argv[:2]), describe(res))
        try:
            res = docker().docker(["run", "-d", "--name", POD] + pod_run_args(mnt, state["pod_run"]))
            check(res[0] == 0, "docker run of the pod", describe(res))

            def logs():
                return docker().docker(["logs", POD])[2]

            def took_over(times):
                check(cgtest.wait_until(lambda: logs().count("keeper of a daemon that died") == times, timeout=60),
                      "the pod's new daemon did not take the views over from the keeper", logs())

            def keeper_outside():
                keepers = cgtest.keepers_of(mnt, wait=True)
                check_equal(len(keepers), 1, "keepers of the pod's daemon")
                with open("/proc/%d/cgroup" % keepers[0]) as f:
                    cgroups = sorted({line.rstrip("\n").split(":", 2)[2] for line in f})
                check_equal(cgroups, ["/"], "the keeper's cgroups")
                return keepers

            def probe(what):
                res = docker().docker(["exec", POD + "-reader", "sh", "-c", PROBE])
                check(res[0] == 0, "docker exec " + what, describe(res))
                check_limited(probe_fields(res[1]), what)

            # Not stat() of mnt, as serving_mounts would: nothing but the
            # daemon may have the kernel cache its root's attributes, which
            # Docker's stat of the source of the state directory's bind asks
            # for while no daemon serves it.
            check(cgtest.wait_until(lambda: os.path.exists(os.path.join(mnt, "proc", ".real", "self")), timeout=60),
                  "the pod's daemon does not serve its state directory on the host", logs())
            keepers = keeper_outside()
            res = docker().docker(["run", "-d", "--name", POD + "-reader", "--runtime", "cgprocfs-pod", "--cpus", "0.5",
                                   IMAGE, "sh", "-c", READER])
            check(res[0] == 0, "docker run of the reader", describe(res))
            probe("with the pod's daemon")
            time.sleep(1)
            res = docker().docker(["kill", POD])
            check(res[0] == 0, "docker kill of the pod", describe(res))
            docker().docker(["wait", POD])
            check_equal(cgtest.keepers_of(mnt), keepers, "the keeper once the pod's container is gone")
            res = docker().docker(["start", POD])
            check(res[0] == 0, "docker start of the pod", describe(res))
            took_over(1)
            keeper_outside()
            probe("after the kill")
            time.sleep(1)
            res = docker().docker(["restart", "-t", "30", POD])
            check(res[0] == 0, "docker restart of the pod", describe(res))
            took_over(2)
            check("leaving the views to the keeper" in logs(), "what SIGTERM did", logs())
            keeper_outside()
            probe("after the restart")
            time.sleep(1)
            res = docker().docker(["exec", POD + "-reader", "sh", "-c", ": > /tmp/stop"])
            check(res[0] == 0, "docker exec to stop the reader", describe(res))
            res = docker().docker(["wait", POD + "-reader"], timeout=30)
            check(res[0] == 0, "docker wait for the reader", describe(res))
            said = docker().docker(["logs", POD + "-reader"])[1]
            m = re.search(r"reads (\d+) bad (\d+)", said)
            check(m and int(m.group(1)) > 0, "the reader did not read", said)
            check_equal(m.group(2), "0", "failed reads (%s)" % said.strip()[-500:])
            cgtest.diag("the reader: %s reads, 0 failed, across a kill and a restart of the daemon's container"
                        % m.group(1))
        finally:
            end_pod(docker(), state)

    @test("the daemon stopped: docker run --runtime cgprocfs still starts containers, with the real /proc")
    def _():
        docker()
        problems = d.stop()
        check(not problems, "the daemon did not stop cleanly", *problems)
        res = docker().docker(["run", "--rm", "--runtime", "cgprocfs", "--cpus", "0.5", IMAGE, "sh", "-c", PROBE])
        check(res[0] == 0, "docker run with the daemon stopped", describe(res), docker().daemon_log())
        check_equal(probe_fields(res[1]).get("processors"), host_processors(), "processors")

    @test("nothing of the test is left: dockerd stopped, its state, /run entries and cgroups removed")
    def _():
        if "docker" in state:
            state.pop("docker").close()
        cleanup(state)
        left = [p for p in ("/run/docker", "/run/containerd") if os.path.exists(p)
                and os.path.basename(p) not in state.get("run_before", ())]
        left += [c for c in os.listdir("/sys/fs/cgroup") if os.path.isdir(os.path.join("/sys/fs/cgroup", c, CGROUP_PARENT))]
        left += ["keeper %d" % pid for pid in cgtest.keepers_of(state.get("pod_mnt", ""))]
        if state.get("dockremap_made"):
            left += ["the user dockremap"] if cgtest.run(["getent", "passwd", "dockremap"])[0] == 0 else []
            for path in SUBID_FILES:
                with contextlib.suppress(FileNotFoundError), open(path) as f:
                    left += ["%s: %s" % (path, line.strip()) for line in f if line.startswith("dockremap:")]
        check_equal(left, [], "left behind")

    return t


def cleanup(state):
    end_remap(state)
    if "docker" in state:
        end_pod(state["docker"], state)
        state.pop("docker").close()
    remove_cgroups()
    for p in ("/run/docker", "/run/containerd"):
        if os.path.basename(p) not in state.get("run_before", {os.path.basename(p)}):
            shutil.rmtree(p, ignore_errors=True)
    if "work" in state:
        cgtest.force_unmount(state["work"])
        shutil.rmtree(state.pop("work"), ignore_errors=True)


if __name__ == "__main__":
    cgtest.run_with_state(make_tests, cleanup)
