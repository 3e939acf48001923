"""Run in a systemd lane's guest (tests/systemd/lane.py), as root, from
the share (/lane) that holds the cgprocfs package: install it as an
operator does, then (GUESTS: one of two guests' parts) start containers
the ways users do on a systemd + cgroup v2 host, each under a 256 MiB
limit, and do what operators and Kubernetes do with the daemon, and print,
as the last line, one JSON object of what each one's probe printed
(test_systemd.py reads it). Nothing here decides what is right: it only
runs and records."""

import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

MEM = 256 << 20
VIEW = "/var/lib/cgprocfs"
PREV_DEB = "/root/cgprocfs-prev.deb"
# The daemon's warnings and errors in its journal, since boot.
WARNINGS = "journalctl -u cgprocfs -b --no-pager -o cat | grep -E '^cgprocfs: (warning|error)'"
# What every container prints: its view of memory, time and load, by
# files, by busybox (sysinfo(2)) and by the guest's procps (its /usr,
# bound read-only at /usr).
PROBE = r"""
echo @@meminfo; head -1 /proc/meminfo
echo @@mounts; grep " /proc " /proc/mounts
echo @@busybox_free; busybox free
echo @@free; /usr/bin/free
echo @@nproc; /usr/bin/nproc
echo @@uptime; /usr/bin/uptime
echo @@proc_uptime; cat /proc/uptime
echo @@top; /usr/bin/top -bn1 | head -5
echo @@busybox_uptime; busybox uptime
echo @@cgroup; cat /proc/self/cgroup
"""
obs = {}


def sh(cmd, timeout=180):
    """cmd by bash: {"rc", "out"} (stdout and stderr together)."""
    started = time.monotonic()
    try:
        p = subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode(errors="replace") + "\n(timed out)"
    return {"rc": rc, "out": out[-6000:], "s": round(time.monotonic() - started, 1)}


def record(name, cmd, timeout=180):
    obs[name] = sh(cmd, timeout)
    print("%s: rc %s in %s s" % (name, obs[name]["rc"], obs[name]["s"]), flush=True)
    return obs[name]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_dirs(root, names):
    for d in names:
        os.makedirs(os.path.join(root, d), exist_ok=True)


def rootfs(path):
    """A busybox root with the guest's /usr to be bound in (procps)."""
    make_dirs(path, ("bin", "proc", "sys", "dev", "tmp", "etc", "usr", "run"))
    shutil.copy2("/bin/busybox", path + "/bin/busybox")
    for applet in ("sh", "cat", "grep", "head", "sleep", "echo"):
        os.symlink("busybox", path + "/bin/" + applet)
    for link in ("lib", "lib64"):
        os.symlink("usr/" + link, path + "/" + link)
    write(path + "/etc/passwd", "root:x:0:0:root:/:/bin/sh\n")
    write(path + "/etc/group", "root:x:0:\n")


def install(upgraded):
    # The host may still be building the package (test_systemd builds it
    # while the guest boots): it removes the mark when it is there.
    while os.path.exists("/lane/deb-building"):
        time.sleep(0.2)
    deb = glob.glob("/lane/cgprocfs_*.deb")[0]
    if upgraded:
        # The package as an older version (its version with ~prev: dpkg
        # sorts it before), which operator() upgrades from.
        sh("rm -rf /root/prev && dpkg-deb -R %s /root/prev && sed -i 's/^Version: .*/&~prev/' "
           "/root/prev/DEBIAN/control && dpkg-deb -b /root/prev %s" % (deb, PREV_DEB))
        deb = PREV_DEB
    record("install", "dpkg -i %s && systemctl is-active cgprocfs && ls %s/proc/.real/self >/dev/null" % (deb, VIEW))
    record("unit", "systemctl show -p ActiveState,SubState,MainPID cgprocfs; journalctl -u cgprocfs -b --no-pager | tail -5")


def bb_image():
    """Docker's image bb of a busybox root (rootfs), once; its command
    sleeps, so that it serves as the CRI pods' sandbox image too."""
    if not os.path.exists("/root/bb"):
        sh("systemctl is-active -q docker || systemctl start docker")
        rootfs("/root/bb")
        record("bb_image", "tar -C /root/bb -c . | docker import --change 'CMD [\"/bin/sleep\", \"1000000\"]' - bb")


def docker_setup():
    """Docker configured as the README says, started (before the package
    is installed: a runtime's program is looked for at a container's
    start)."""
    config = json.load(open("/etc/docker/daemon.json"))
    config["runtimes"] = {"cgprocfs": {"path": "/usr/bin/cgprocfs-runtime", "runtimeArgs": ["--cgprocfs-always"]}}
    write("/etc/docker/daemon.json", json.dumps(config))
    record("docker_setup", "systemctl restart docker && docker info --format '{{.CgroupDriver}} {{.CgroupVersion}}'")


def docker():
    bb_image()
    run = "docker run --rm -v /usr:/usr:ro --memory 256m --memory-swap 256m "
    record("docker_run", run + "--runtime cgprocfs --cpus 0.5 bb sh -c '%s'" % PROBE)
    record("docker_cgroupns_host", run + "--runtime cgprocfs --cgroupns host bb sh -c '%s'" % PROBE)
    binds = " ".join("-v %s/proc/%s:/proc/%s:ro" % (VIEW, f, f) for f in ("meminfo", "uptime", "loadavg", "stat"))
    record("docker_binds", run + binds + " bb sh -c '%s'" % PROBE)
    record("docker_detached", "docker run -d --name long -v /usr:/usr:ro --memory 256m --memory-swap 256m "
           "--runtime cgprocfs bb sleep 600")
    record("docker_exec", "docker exec long sh -c '%s'" % PROBE)
    record("docker_update", "docker update --memory 128m --memory-swap 128m long >/dev/null && sleep 1 && "
           "docker exec long sh -c 'head -1 /proc/meminfo; busybox free'")
    record("docker_scope", "systemctl status --no-pager docker-$(docker inspect -f '{{.Id}}' long).scope | head -3")
    sh("docker rm -f long")


def oci_bundle(name, hook, systemd_cgroup=False, script=PROBE):
    """A runc bundle in /root/NAME: a 256 MiB busybox container that runs
    script (PROBE), the hook in createContainer if hook."""
    b = "/root/" + name
    rootfs(b + "/rootfs")
    sh("cd %s && runc spec" % b)
    with open(b + "/config.json") as f:
        c = json.load(f)
    c["process"]["terminal"] = False
    c["process"]["args"] = ["sh", "-c", script]
    c["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]})
    c["linux"]["resources"]["memory"] = {"limit": MEM, "swap": MEM}
    if systemd_cgroup:
        c["linux"]["cgroupsPath"] = "system.slice:cgprocfs-lane:%s" % name
    if hook:
        c["hooks"] = {"createContainer": [{"path": "/usr/libexec/cgprocfs/cgprocfs-oci-hook",
                                           "args": ["cgprocfs-oci-hook", "--mountpoint", VIEW]}]}
    write(b + "/config.json", json.dumps(c))
    return b


def oci():
    record("runc_hook", "runc run --bundle %s runc-hook" % oci_bundle("runc-hook", True))
    record("runc_systemd_hook", "runc --systemd-cgroup run --bundle %s runc-sd"
           % oci_bundle("runc-sd", True, systemd_cgroup=True))
    record("crun_hook", "crun run --bundle %s crun-hook" % oci_bundle("crun-hook", True))
    record("runc_wrapper", "cgprocfs-runtime --cgprocfs-always run --bundle %s runc-wrapper"
           % oci_bundle("runc-wrapper", False))


def podman():
    rootfs("/root/pm")
    run = "podman run --rm --network none --memory 256m --memory-swap 256m -v /usr:/usr:ro "
    record("podman_runtime", run + "--runtime /usr/bin/cgprocfs-runtime --annotation io.cgprocfs.enable=true "
           "--rootfs /root/pm sh -c '%s'" % PROBE)
    record("podman_hooks_d", run + "--annotation io.cgprocfs.enable=true --rootfs /root/pm sh -c '%s'" % PROBE)


ROOTLESS_UID = 1500
AS_ROOTLESS = ("runuser -u rl -- env XDG_RUNTIME_DIR=/run/user/%d DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/%d/bus "
               "HOME=/home/rl " % (ROOTLESS_UID, ROOTLESS_UID))


def podman_rootless():
    """podman as a user (rootless: a user namespace from /etc/subuid's
    ranges, the user's systemd manager delegating its cgroup, cpu too), its
    containers limited to 256 MiB and half a CPU: the view's files bound
    -v (LXCFS's way), and the hooks.d file, whose hook runs in the user's
    namespace."""
    sh("id rl >/dev/null 2>&1 || useradd -m -u %d rl" % ROOTLESS_UID)
    write("/etc/systemd/system/user@.service.d/delegate.conf", "[Service]\nDelegate=cpu cpuset io memory pids\n")
    record("rootless_setup", "systemctl daemon-reload && loginctl enable-linger rl && "
           "until [ -S /run/user/%d/bus ]; do sleep 0.2; done; grep rl /etc/subuid; "
           "cat /sys/fs/cgroup/user.slice/user-%d.slice/user@%d.service/cgroup.controllers"
           % ((ROOTLESS_UID,) * 3), 60)
    rootfs("/home/rl/rootfs")
    sh("chown -R rl: /home/rl/rootfs")
    # from the user's home: the share (the working directory) is root's alone
    run = "cd /home/rl && " + AS_ROOTLESS + ("podman run --rm --network none --memory 256m --memory-swap 256m --cpus 0.5 "
                         "-v /usr:/usr:ro ")
    binds = " ".join("-v %s/proc/%s:/proc/%s:ro" % (VIEW, f, f) for f in ("meminfo", "uptime", "loadavg", "stat",
                                                                         "cpuinfo"))
    record("podman_rootless_binds", run + binds + " --rootfs /home/rl/rootfs sh -c '%s'" % PROBE)
    record("podman_rootless_hooks_d", run + "--annotation io.cgprocfs.enable=true --rootfs /home/rl/rootfs "
           "sh -c '%s'" % PROBE)
    obs["rootless_hook_said"] = sh("journalctl -b --no-pager -o cat -t cgprocfs-oci-hook | grep -F 'Permission denied'"
                                   )["out"]


def lxc_bb():
    """LXC's busybox container bb, made once: its configuration, like the
    one lxc-create's busybox template writes, includes no common.conf, so
    the shipped file is named in it, as the README says."""
    if os.path.exists("/var/lib/lxc/bb/config"):
        return
    rootfs("/var/lib/lxc/bb/rootfs")
    write("/var/lib/lxc/bb/config", "lxc.rootfs.path = dir:/var/lib/lxc/bb/rootfs\nlxc.uts.name = bb\n"
          "lxc.init.cmd = /bin/sleep 600\nlxc.net.0.type = empty\nlxc.cgroup2.memory.max = 256M\n"
          "lxc.mount.auto = proc:mixed sys:ro cgroup:mixed\nlxc.mount.entry = /usr usr none bind,ro 0 0\n"
          "lxc.include = /usr/share/lxc/config/common.conf.d/01-cgprocfs.conf\n")


def lxc():
    lxc_bb()
    record("lxc_start", "lxc-start -n bb && lxc-wait -n bb -s RUNNING -t 30 && lxc-info -n bb -s")
    record("lxc_busybox", "lxc-attach -n bb --clear-env -- sh -c '%s'" % PROBE)
    record("lxc_cgroup", "cat /proc/$(lxc-info -n bb -p -H)/cgroup")
    sh("lxc-stop -k -n bb")


def lxc_system():
    """A Debian system container, systemd its init, configured as the
    debian template's are (common.conf included, and so the package's
    common.conf.d file): the guest's /usr bound read-only, a copy of its
    /etc with no service enabled (the package's unit, the lane's)."""
    root = "/var/lib/lxc/deb/rootfs"
    make_dirs(root, ("proc", "sys", "dev", "tmp", "run", "usr", "var/log", "var/tmp", "root"))
    for link in ("bin", "sbin", "lib", "lib64"):
        os.symlink("usr/" + link, os.path.join(root, link))
    sh("cp -a /etc %s/etc && rm -rf %s/etc/systemd/system/*.wants && "
       "ln -sf /dev/null %s/etc/systemd/system/cgprocfs.service && echo deb > %s/etc/hostname && : > %s/etc/fstab"
       % ((root,) * 5))
    write("/var/lib/lxc/deb/config", "lxc.include = /usr/share/lxc/config/common.conf\n"
          "lxc.rootfs.path = dir:%s\nlxc.uts.name = deb\nlxc.net.0.type = empty\n"
          "lxc.cgroup2.memory.max = 256M\nlxc.mount.entry = /usr usr none bind,ro 0 0\n" % root)
    record("lxc_system_start", "lxc-start -n deb && lxc-wait -n deb -s RUNNING -t 30 && "
           "until lxc-attach -n deb -- test -S /run/systemd/private; do sleep 0.5; done; "
           "timeout 150 lxc-attach -n deb -- systemctl is-system-running --wait; "
           "lxc-attach -n deb -- cat /proc/1/comm; lxc-attach -n deb -- systemctl --failed --no-legend", 200)
    record("lxc_system", "lxc-attach -n deb --clear-env -- sh -c '%s'" % PROBE)
    sh("lxc-stop -k -n deb")


# Reads meminfo, stat and uptime (by the shell's read: no process per
# file, so that the one CPU is left to what the operator runs) every 10 ms
# until the file STOP is there (at most 60,000 times), and (SYSINFO 1)
# every 4th time busybox free (sysinfo(2)); counts the reads that failed
# (each named: the file, the part of its line read, the time) and those
# that gave the host's MemTotal, not the 256 MiB limit (each run of them
# named: what it got first, from when to when on the guest's clock, the
# reader's cgroup as it sees it and the inode its meminfo is). At nice
# 10: what the operator runs (dpkg, its maintainer scripts) shares the
# lane's one CPU with four of them.
READER = r"""
busybox renice -n 10 -p $$ >/dev/null
ok=0; failed=0; host=0; sys=0; n=0; since=
while [ ! -e STOP ] && [ $n -lt 60000 ]; do
  f= m= s= u=
  read m < /proc/meminfo || f="meminfo [$m]"
  [ -n "$f" ] || read s < /proc/stat || f="stat [$s]"
  [ -n "$f" ] || read u < /proc/uptime || f="uptime [$u]"
  if [ -n "$f" ]; then
    failed=$((failed+1)); echo "failed: $f at $(busybox date +%s)"
  elif [ "${m%% 262144 kB}" != "$m" ]; then
    ok=$((ok+1)); [ -z "$since" ] || echo "got it from $since to $(busybox date +%s)"; since=
  else
    host=$((host+1))
    [ -n "$since" ] || { since=$(busybox date +%s); echo "got: $m at $since, in $(busybox cat /proc/self/cgroup)," \
      "meminfo inode $(busybox stat -c %i /proc/meminfo)"; }
  fi
  [ SYSINFO = 0 ] || [ $((n % 4)) != 0 ] || busybox free | grep -q "^Mem: *262144 " || sys=$((sys+1))
  n=$((n+1))
  sleep 0.01
done
[ -z "$since" ] || echo "got it from $since to the end, $(busybox date +%s)"
echo "reads $ok failed $failed host $host sysinfo_host $sys"
"""


def reader(stop, sysinfo):
    return READER.replace("STOP", stop).replace("SYSINFO", "1" if sysinfo else "0")


def finish(p, timeout):
    """{"rc", "out"} of p, a reader started in a session of its own; if it
    has not ended within timeout, what its processes wait in, and then it
    is killed."""
    try:
        out = p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        # its session's and every process of the readers' cgroups (found
        # by path: a stuck reader's command line may not be readable),
        # with its state (D: a FUSE request; S: a wait, a notified call),
        # the system call it waits in and its kernel stack's top; the
        # runtimes' processes, Docker's containers, the listener's and
        # the server's counters
        stuck = sh("for t in $(pgrep -s %d) $(cat $(find /sys/fs/cgroup -name cgroup.procs \\( -path '*docker-*' "
                   "-o -path '*runc-reader*' -o -path '*lxc.payload*' -o -path '*/run-*.scope/*' \\))| sort -u); do "
                   "echo $t $(cat /proc/$t/comm) $(sed -n 's/^State:\t//p' /proc/$t/status) $(cat /proc/$t/wchan) "
                   "[$(cut -d' ' -f1 /proc/$t/syscall)] $(head -3 /proc/$t/stack | cut -d' ' -f2 | tr '\\n' ' ') "
                   "$(cat /proc/$t/cgroup); done 2>/dev/null; ps -eo pid,stat,wchan:24,args | grep -E "
                   "'[r]unc|[s]him|[c]gprocfs-runtime|[d]ocker (run|exec)'; docker ps -a --format '{{.ID}} {{.Status}}'; "
                   "grep -E '^cgprocfs_(sysinfo|affinity|requests)' %s/.cgprocfs/stats" % (p.pid, VIEW))
        os.killpg(p.pid, 9)
        try:
            out = p.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            out = ""
        out += "\n(still reading %d s after the stop file; its processes and where they wait:\n%s)" % (
            timeout, stuck["out"])
    return {"rc": p.returncode, "out": out[-3000:]}


def main_pid():
    return sh("systemctl show -p MainPID --value cgprocfs")["out"].strip()


# What an operator does, in turn, while the readers read: each is recorded
# with the unit's main pid after it (each must be another daemon's).
ACTIONS = [
    # From PREV_DEB's version: the postinst. dpkg -i over itself runs the
    # same maintainer scripts with the same arguments but the version (and
    # the same binary takes over): not run again. Each takes 28 s here, of
    # which the daemon's reload is 1 s; debhelper's three deb-systemd-*
    # (Perl) and systemctl daemon-reload (5 s) take the rest.
    ("upgrade", "dpkg -i /lane/cgprocfs_*.deb >/dev/null"),
    ("reload", "systemctl reload cgprocfs"),
    ("restart", "systemctl restart cgprocfs"),
    # a crash: Restart=on-failure starts it again 1 s later
    ("crash", "old=$(systemctl show -p MainPID --value cgprocfs); systemctl kill --kill-whom=main -s KILL cgprocfs; "
              "for i in $(seq 100); do new=$(systemctl show -p MainPID --value cgprocfs); "
              "[ $new != $old ] && [ $new != 0 ] && systemctl -q is-active cgprocfs && break; sleep 0.1; done"),
]


def operator():
    """What an operator's actions do to containers reading the whole time:
    an upgrade from the older version, systemctl
    reload, systemctl restart, a crash of the main process. Readers: a
    Docker container through the wrapper (sysinfo too), a runc container
    through the wrapper, the LXC busybox container (file binds), a host
    process in a 256 MiB scope with the host view's meminfo bound."""
    bb_image()
    lxc_bb()
    os.makedirs("/root/op", exist_ok=True)
    warnings_before = sh(WARNINGS)["out"]
    # Where each reader looks for its stop file, from the guest's side.
    stops = ["/root/op/stop", "/root/runc-reader/rootfs/stop", "/var/lib/lxc/bb/rootfs/stop"]
    readers = {
        "docker": "docker run --rm -v /root/op:/op --memory 256m --memory-swap 256m --runtime cgprocfs bb sh -c '%s'"
                  % reader("/op/stop", True),
        "runc": "cgprocfs-runtime --cgprocfs-always run --bundle %s runc-reader"
                % oci_bundle("runc-reader", False, script=reader("/stop", True)),
        "lxc": "lxc-start -n bb && lxc-wait -n bb -s RUNNING -t 30 && lxc-attach -n bb -- sh -c '%s'"
               % reader("/stop", False),
        "host": "systemd-run -q --scope -p MemoryMax=256M unshare -m sh -c 'mount --bind %s/proc/meminfo "
                "/proc/meminfo && %s'" % (VIEW, reader("/root/op/stop", False).replace("'", "")),
    }
    procs = {name: subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
             for name, cmd in readers.items()}
    time.sleep(8)  # all reading
    obs["op_pid_before"] = main_pid()
    for name, cmd in ACTIONS:
        started = time.time()
        record("op_" + name, cmd + " && sleep 2 && systemctl is-active cgprocfs", timeout=120)
        obs["op_" + name]["pid"] = main_pid()
        obs["op_" + name]["at"] = int(started)
    time.sleep(3)  # reading after the last one too
    # Where each reader's processes are, as the daemon sees them, and the daemon.
    obs["op_cgroups"] = sh("for p in $(pgrep -f 'read m < /proc/meminfo') $(main=$(systemctl show -p MainPID --value "
                           "cgprocfs); echo $main); do echo $p $(cat /proc/$p/comm) $(readlink /proc/$p/ns/cgroup "
                           "/proc/$p/ns/pid) $(cat /proc/$p/cgroup); done")["out"]
    for stop in stops:
        write(stop, "")
    for name, p in procs.items():
        obs["op_reader_" + name] = finish(p, 60)
    # What is left: the unit's main pid, the daemons and keepers, and what serves.
    obs["op_processes"] = sh("systemctl show -p MainPID --value cgprocfs; "
                             "for p in $(pgrep -f '^(/usr/sbin/cgprocfs|cgprocfs-keeper) '); do "
                             "echo $p $(cat /proc/$p/comm): $(tr '\\0' ' ' < /proc/$p/cmdline); done")["out"]
    obs["op_run"] = sh("ls -A /run/cgprocfs")["out"]
    obs["op_version"] = sh("dpkg-query -W -f '${Version}' cgprocfs")["out"]
    obs["op_journal"] = sh("journalctl -u cgprocfs -b --no-pager -o short-monotonic | "
                           "grep -vE '^ +(bind|unshare|or from|containers:|stop with)' | tail -40")["out"]
    obs["op_warnings"] = sh(WARNINGS)["out"][len(warnings_before):]
    sh("lxc-stop -k -n bb")


def cri_setup():
    """containerd as a node's, once: the shipped snippet's handler, with
    SystemdCgroup = true, and an image bb of a busybox root whose command
    sleeps as the sandbox image (made as an OCI layout: this guest runs
    no Docker)."""
    if "cri_setup" in obs:
        return
    with open("/lane/containerd-cgprocfs.toml") as f:
        snippet = f.read()
    write("/etc/containerd/config.toml",
          'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "docker.io/library/bb:latest"\n'
          '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
          '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
          + snippet.replace("version = 2\n", "") + "  SystemdCgroup = true\n")
    rootfs("/root/bb-sandbox")
    record("cri_setup", "systemctl restart containerd && until ctr version >/dev/null 2>&1; do sleep 0.2; done")
    imported = oci_import("bb", "/root/bb-sandbox", ["/bin/sleep", "1000000"])
    obs["cri_setup"]["rc"] = obs["cri_setup"]["rc"] or imported["rc"]
    obs["cri_setup"]["out"] += imported["out"]


def cri():
    """Pods as kubelet starts them (no kubelet: tests/systemd/cri.py speaks
    its CRI calls), through the shipped containerd snippet's handler with
    SystemdCgroup = true, each pod's slice under kubepods with the pod's
    limit on it as kubelet sets it, each container's own on its scope."""
    import cri as k
    cri_setup()
    obs["cri_version"] = k.version()
    annotations = {"io.cgprocfs.enable": "true"}
    # pod: (uid, its slice's MemoryMax, pid namespace, {container: MiB})
    pods = {"pod-a": ("a1", "384M", k.CONTAINER, {"a": 256, "b": 128}),
            "pod-b": ("b2", "192M", k.CONTAINER, {"c": 192}),
            "pod-shared": ("c3", "384M", k.POD, {"d": 256, "e": 128})}
    ids = []
    for pod, (uid, pod_max, pid_mode, containers) in pods.items():
        parent = "kubepods-burstable-pod%s.slice" % uid
        record("cri_slice_" + pod, "systemctl set-property --runtime %s MemoryMax=%s" % (parent, pod_max))
        config = k.pod_config(pod, uid, parent, annotations, pid_mode)
        pod_id = k.run_pod(config, "cgprocfs")
        ids.append(pod_id)
        started = {}
        for name, mib in containers.items():
            started[name] = k.create_container(pod_id, config, name, "docker.io/library/bb:latest", ["sleep", "600"],
                                               mib << 20, 50000, pid_mode, [("/usr", "/usr")])
            k.start_container(started[name])
        for name, cid in started.items():
            obs["cri_" + name] = k.exec_sync(cid, ["sh", "-c", PROBE + "echo @@ps; busybox ps -o pid,comm\n"])
            print("cri_%s: rc %s" % (name, obs["cri_" + name]["rc"]), flush=True)
    obs["cri_cgroups"] = sh("systemd-cgls --no-pager -u kubepods.slice | grep -v → | head -40")["out"]
    for pod_id in ids:
        k.remove_pod(pod_id)


def no_daemon():
    """The unit stopped: a container's hook says so in the journal, and the
    container starts with the kernel's /proc."""
    # The stop leaves the views to the keeper for a start (60 s): no daemon
    # at all is the keeper ended too, and the view unmounted, as a removal does.
    record("no_daemon_stop", "systemctl stop cgprocfs; systemctl kill --kill-whom=all -s KILL cgprocfs; "
           "umount -l %s/proc/.real; umount -l %s; systemctl is-active cgprocfs" % (VIEW, VIEW))
    record("runc_no_daemon", "runc run --bundle %s runc-nodaemon" % oci_bundle("runc-nodaemon", True))
    obs["journal_no_daemon"] = sh("journalctl -b --no-pager -t cgprocfs-oci-hook -o cat")["out"]
    obs["guest_memtotal_kb"] = int(open("/proc/meminfo").readline().split()[1])


def blob(layout, data, media_type):
    """data as a blob of the OCI layout: its descriptor."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest[7:]), "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def image_of(name, files):
    """containerd's image docker.io/library/NAME: files and the libraries
    they load in a root of their own (as contrib/Containerfile's final
    stage holds the package's files and their libraries), one layer of an
    OCI image layout imported with ctr."""
    root = "/root/image-" + name
    make_dirs(root, ("proc", "sys", "dev", "tmp", "run", "etc"))
    libs = sh("ldd %s | grep -o '/[^ :]*'" % " ".join(files))["out"].split()
    for path in set(files + libs):
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        shutil.copy2(path, root + path)
    return oci_import(name, root)


def oci_import(name, root, cmd=None):
    """containerd's image docker.io/library/NAME of root, cmd its command
    (if given): one layer of an OCI image layout imported with ctr."""
    layout = "/root/layout-" + name
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        t.add(root, arcname=".")
    layer_desc = blob(layout, layer.getvalue(), "application/vnd.oci.image.layer.v1.tar")
    config = {"architecture": "amd64", "os": "linux", "config": {"Cmd": cmd} if cmd else {},
              "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]}}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": blob(layout, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json"),
                "layers": [layer_desc]}
    desc = blob(layout, json.dumps(manifest).encode(), manifest["mediaType"])
    desc["annotations"] = {"io.containerd.image.name": "docker.io/library/%s:latest" % name,
                           "org.opencontainers.image.ref.name": "latest"}
    write(layout + "/index.json", json.dumps({"schemaVersion": 2, "manifests": [desc]}))
    write(layout + "/oci-layout", '{"imageLayoutVersion": "1.0.0"}')
    return sh("tar -C %s -c . | ctr -n k8s.io images import - && ctr -n k8s.io images ls -q" % layout)


def ds_pod(spec, uid):
    """The DaemonSet's pod (spec: its template's) as kubelet starts it,
    its log in /var/log/pods/cgprocfs-<uid>: the pod's and its container's ids."""
    import cri as k
    c = spec["containers"][0]
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    for v in spec["volumes"]:
        if v["hostPath"].get("type") == "DirectoryOrCreate":
            os.makedirs(v["hostPath"]["path"], exist_ok=True)
    mounts = [(m["mountPath"], volumes[m["name"]],
               k.BIDIRECTIONAL if m.get("mountPropagation") == "Bidirectional" else k.PRIVATE)
              for m in c["volumeMounts"]]
    pid_mode = k.NODE if spec.get("hostPID") else k.POD
    config = k.pod_config("cgprocfs-" + uid, uid, "kubepods-besteffort-pod%s.slice" % uid, {}, pid_mode,
                          privileged=True, log_dir="/var/log/pods/cgprocfs-" + uid)
    pod_id = k.run_pod(config, "runc")
    cid = k.create_container(pod_id, config, c["name"], c["image"], c["command"], 0, 0, pid_mode, mounts,
                             privileged=c["securityContext"]["privileged"])
    k.start_container(cid)
    return pod_id, cid


SERVING = ("for i in $(seq 300); do ls %s/proc/.real/self >/dev/null 2>&1 && break; sleep 0.2; done; "
           "findmnt -no FSTYPE -T %s/proc; for p in $(pgrep -f '^(/usr/sbin/cgprocfs|cgprocfs-keeper) '); do "
           "echo $(tr '\\0' ' ' < /proc/$p/cmdline): $(cat /proc/$p/cgroup); done" % (VIEW, VIEW))


def daemonset():
    """The DaemonSet's pod as shipped (contrib/kubernetes/cgprocfs-daemonset.yaml:
    privileged, the node's pid namespace, its hostPath volumes and command)
    started through the CRI as kubelet starts it, the unit stopped: the
    view at /var/lib/cgprocfs is its daemon's, a container with the hook
    gets it, and the daemon's keeper left the pod's cgroup for the node's
    top one (--keeper-cgroup=/). Then a rollout as kubelet does one with
    the manifest's strategy (the old pod stopped with its grace period,
    then the new one started) while a container with the hook reads."""
    import cri as k
    import yaml
    cri_setup()
    with open("/lane/cgprocfs-daemonset.yaml") as f:
        spec = yaml.safe_load(f)["spec"]["template"]["spec"]
    c = spec["containers"][0]
    obs["ds_image"] = image_of(c["image"].split(":")[0], ["/usr/sbin/cgprocfs", "/usr/bin/nsenter"])
    pod_id, cid = ds_pod(spec, "d4")
    record("ds_serving", SERVING)
    record("ds_runc_hook", "runc run --bundle %s ds-runc" % oci_bundle("ds-runc", True))
    obs["ds_log"] = sh("tail -5 /var/log/pods/cgprocfs-d4/%s.log" % c["name"])["out"]
    reading = subprocess.Popen(["runc", "run", "--bundle", oci_bundle("ds-reader", True, script=reader("/stop", False)),
                                "ds-reader"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    time.sleep(3)
    started = time.monotonic()
    k.stop_container(cid, spec.get("terminationGracePeriodSeconds", 30))
    k.remove_pod(pod_id)
    pod_id, cid = ds_pod(spec, "d5")
    record("ds_rollout", SERVING)
    obs["ds_rollout"]["s"] = round(time.monotonic() - started, 1)
    time.sleep(3)
    write("/root/ds-reader/rootfs/stop", "")
    obs["ds_reader"] = finish(reading, 60)
    obs["ds_rollout_log"] = sh("grep -h ' cgprocfs: ' /var/log/pods/cgprocfs-d5/%s.log" % c["name"])["out"]
    k.remove_pod(pod_id)


def served():
    """What the daemon did while the containers started: the listener's
    sched_getaffinity counters (the probe's nproc; before operator()'s
    restarts reset them), the hook's journal lines, the daemon's log and
    its warnings."""
    obs["affinity_stats"] = sh("grep -E '^cgprocfs_affinity_' %s/.cgprocfs/stats" % VIEW)["out"]
    obs["journal_hook"] = sh("journalctl -b --no-pager -t cgprocfs-oci-hook | tail -20")["out"]
    obs["daemon_log"] = sh("journalctl -u cgprocfs -b --no-pager | tail -40")["out"]
    obs["daemon_warnings"] = sh(WARNINGS)["out"]


# The lane's parts, in the two guests test_systemd.py boots at once (a
# guest runs on one CPU, and the host has two), about as long each:
# Docker's, runc's, crun's and podman's containers, then an operator's
# actions while some of them read; and Kubernetes (the CRI's pods),
# rootless podman, LXC's (the system container and the busybox one), then
# the unit stopped and the DaemonSet's pod in its place. The second runs
# no Docker (its sandbox image is an OCI layout) and installs the package
# as it is (the first upgrades to it): 172 s and 162 s (with Docker there:
# 212 s and 195 s; test_systemd shows each guest's end).
# A part runs even if one before it failed.
GUESTS = {"containers": [docker, oci, podman, served, operator],
          "kubernetes": [cri, podman_rootless, lxc_system, lxc, served, no_daemon, daemonset]}


def main():
    """runtimes.py GUEST [PART...]: GUEST's parts (those named only, a
    developer's shortcut)."""
    obs["kernel"] = os.uname().release
    obs["pid1"] = open("/proc/1/comm").read().strip()
    obs["cgroup_fs"] = sh("stat -fc %T /sys/fs/cgroup")["out"].strip()
    obs["versions"] = sh("dpkg-query -W systemd docker.io containerd runc crun podman lxc")["out"]
    # procps's top on the guest's own /proc (its kernel's files): what the
    # containers' top is compared with.
    obs["guest_top"] = sh("top -bn1 | head -5")["out"]
    sh("rm -f /var/lib/man-db/auto-update")  # no man-db trigger: dpkg -i took 30-60 s on the lane
    if docker in GUESTS[sys.argv[1]]:
        docker_setup()
    install(operator in GUESTS[sys.argv[1]])
    for part in GUESTS[sys.argv[1]]:
        if sys.argv[2:] and part.__name__ not in sys.argv[2:]:
            continue
        try:
            part()
        except Exception as e:  # the others still run: one boot shows them all
            obs[part.__name__ + "_error"] = repr(e)
    print("@@json " + json.dumps(obs))


main()
