"""What test_docker.py runs Docker with: a dockerd (and the containerd it
starts) with its state in a directory of the test's, a busybox image made
with docker import, and the second, userns-remap dockerd's cleanup."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time

import cgtest
from cgtest import check, describe

# Debian's docker.io (or docker-ce); the client as packaged, not another
# docker first in PATH.
DOCKERD = shutil.which("dockerd") or "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"
BUSYBOX = "/bin/busybox"
IMAGE = "cgprocfs-busybox"
CGROUP_PARENT = "cgprocfs-docker-test-%d" % os.getpid()
START_TIMEOUT = 60
SUBID_FILES = ("/etc/subuid", "/etc/subgid")


class Docker:
    """dockerd with everything in work/, the cgprocfs runtimes of daemon.json."""

    def __init__(self, work, runtime, hook, mnt, pod_mnt=None, extra=None):
        self.work = work
        self.sock = os.path.join(work, "docker.sock")
        config = {"runtimes": {
            "cgprocfs": {"path": runtime, "runtimeArgs": ["--cgprocfs-always", "--cgprocfs-hook=" + hook,
                                                          "--cgprocfs-mountpoint=" + mnt]},
            "cgprocfs-gated": {"path": runtime, "runtimeArgs": ["--cgprocfs-hook=" + hook,
                                                                "--cgprocfs-mountpoint=" + mnt]},
            # runc itself, named as Docker names a runtime of daemon.json
            # (the benchmark's baseline).
            "runc-by-path": {"path": shutil.which("runc") or "/usr/sbin/runc"},
            # ... and with an argument, which Docker passes through a shell
            # script of its own (the cgprocfs runtimes' case)
            "runc-with-args": {"path": shutil.which("runc") or "/usr/sbin/runc", "runtimeArgs": ["--log-format",
                                                                                               "json"]},
        }}
        if pod_mnt:  # the view the DaemonSet's pod serves
            config["runtimes"]["cgprocfs-pod"] = {"path": runtime, "runtimeArgs": [
                "--cgprocfs-always", "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=" + pod_mnt]}
        config.update(extra or {})
        with open(os.path.join(work, "daemon.json"), "w") as f:
            json.dump(config, f)
        self.log = open(os.path.join(work, "dockerd.log"), "w+")
        self.process = subprocess.Popen(
            [DOCKERD, "--config-file", os.path.join(work, "daemon.json"), "--data-root", os.path.join(work, "data"),
             "--exec-root", os.path.join(work, "exec"), "--pidfile", os.path.join(work, "docker.pid"),
             "-H", "unix://" + self.sock, "--iptables=false", "--bridge=none", "--storage-driver=overlay2",
             "--cgroup-parent=/" + CGROUP_PARENT],
            stdout=self.log, stderr=self.log, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise cgtest.Failure("dockerd exited", self.daemon_log())
            if self.docker(["version"], timeout=10)[0] == 0:
                return
            time.sleep(0.5)
        raise cgtest.Failure("dockerd does not answer after %d s" % START_TIMEOUT, self.daemon_log())

    def daemon_log(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def docker(self, args, timeout=120, input=None):
        return cgtest.run([DOCKER, "-H", "unix://" + self.sock] + args, timeout=timeout, input=input)

    def containerd_socket(self):
        return os.path.join(self.work, "exec", "containerd", "containerd.sock")

    def close(self):
        rc, out, _ = self.docker(["ps", "-aq"], timeout=30)
        if rc == 0 and out.split():
            self.docker(["rm", "-f"] + out.split(), timeout=60)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def make_image(docker, work):
    rootfs = os.path.join(work, "rootfs")
    for d in ("bin", "proc", "sys", "dev", "etc", "tmp"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    shutil.copy2(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for applet in ("sh", "cat", "grep", "ls", "ps", "sleep", "echo", "head", "true"):
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    tar = os.path.join(work, "rootfs.tar")
    rc, _, err = cgtest.run(["tar", "-C", rootfs, "-cf", tar, "."])
    check(rc == 0, "tar of the rootfs", err)
    res = docker.docker(["import", tar, IMAGE])
    check(res[0] == 0, "docker import", describe(res))


def end_remap(state):
    """The userns-remap dockerd stopped, its state removed, and the user
    dockremap it made (and its subordinate ids) removed."""
    if "remap" in state:
        state.pop("remap").close()
    if "remap_work" in state:
        cgtest.force_unmount(state["remap_work"])
        shutil.rmtree(state.pop("remap_work"), ignore_errors=True)
    if state.pop("dockremap_before", True) is False:
        state["dockremap_made"] = True
        cgtest.run(["userdel", "dockremap"])
    for path in state.pop("subid_files_made", []):  # removed if nothing was added to them since
        with contextlib.suppress(FileNotFoundError):
            with open(path) as f:
                others = [line for line in f if line.strip() and not line.startswith("dockremap:")]
            if not others:
                os.unlink(path)
