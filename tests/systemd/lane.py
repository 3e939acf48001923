#!/usr/bin/python3
"""The systemd lane: a Debian 12 guest with systemd as PID 1 and the
unified cgroup v2 hierarchy, booted by Debian's user-mode Linux (6.1, one
CPU) from a disk image, that runs one script once it is up and powers off.

The image is the Debian base of the Docker and LXC suites
(tests/integration/debian.py) with what an operator's node has (Docker,
containerd, runc, crun, podman, LXC) and the cgprocfs package's
dependencies installed in a chroot, then made with mkfs.ext4 -d; kept in
debian.CACHE, keyed on its inputs, so a warm run costs a boot. Each boot
writes to a copy-on-write file of its own, never to the image.

    tests/systemd/lane.py [--mem SIZE] [--timeout S] [--share DIR] -- SCRIPT

runs SCRIPT (a file, run by bash in the guest as root) with DIR (default:
a new empty one) mounted at /lane in the guest; what it prints is printed
here and its exit status is this command's (2 if the guest did not get to
run it). The guest's journal is left in DIR/journal.
"""

import argparse
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import debian  # noqa: E402

UML_MODULES = "/usr/lib/uml/modules"
IMAGE_SIZE = "6G"
# What the guest has beside the base: the runtimes the suites drive, the
# package's own dependencies (installed offline with dpkg -i), and the
# programs the scripts read with.
PACKAGES = ["docker.io", "containerd", "runc", "crun", "podman", "lxc", "lxc-templates", "busybox-static",
            "fuse3", "libfuse3-3", "libglib2.0-0", "libjson-glib-1.0-0", "python3", "python3-psutil", "procps",
            "util-linux", "kmod", "iproute2", "curl", "python3-grpcio", "python3-protobuf", "python3-yaml", "uidmap",
            "dbus-user-session"]

# Run once the guest is up (multi-user.target): the script from the share,
# its output and status back there, the journal, then power off.
LANE_UNIT = """[Unit]
Description=cgprocfs's test lane: run the script from the host, then power off
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cgprocfs-lane
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""
LANE_RUNNER = r"""#!/bin/bash
share=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^cgprocfs_lane=//p')
mkdir -p /lane
mount -t hostfs -o "$share" hostfs /lane || { echo "cannot mount the share $share"; systemctl poweroff -ff; }
echo "lane: up in $(cut -d' ' -f1 /proc/uptime) s" >/lane/output
(cd /lane && timeout "$(cat /lane/timeout)" bash /lane/script) >>/lane/output 2>&1
echo $? >/lane/status.part
journalctl -b --no-pager -o short-monotonic >/lane/journal 2>&1
mv /lane/status.part /lane/status
sync
systemctl poweroff -ff
"""
DOCKER_CONFIG = {"iptables": False, "bridge": "none", "ip-forward": False, "ip-masq": False}
# Units an unattended node does not need, that cost a one-CPU guest
# its boot time.
MASKED = ["apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "man-db.timer",
          "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer", "getty@tty1.service", "serial-getty@ttyS0.service",
          "systemd-networkd-wait-online.service", "lxc-net.service", "podman-restart.service",
          "console-getty.service", "podman.service", "podman.socket", "podman-auto-update.timer",
          "podman-auto-update.service", "e2scrub_reap.service"]

BOOT_DISABLED = ["docker.service", "docker.socket", "containerd.service", "lxc.service", "lxc-monitord.service"]


def uml_version():
    versions = os.listdir(UML_MODULES)
    if len(versions) != 1:
        raise RuntimeError("%s holds %s: one kernel's modules expected" % (UML_MODULES, versions))
    return versions[0]


def run(argv, **kw):
    res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if res.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), res.returncode, res.stdout[-3000:]))
    return res.stdout


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def configure(root, version):
    """The guest's files: its kernel's modules, fstab, the lane's unit,
    Docker's configuration for a guest with no nat table, the masks."""
    shutil.copytree(os.path.join(UML_MODULES, version), os.path.join(root, "lib", "modules", version), symlinks=True)
    run(["chroot", root, "depmod", version])
    write(root + "/etc/fstab", "/dev/ubda / ext4 rw,relatime 0 1\n")
    write(root + "/etc/hostname", "lane\n")
    write(root + "/etc/hosts", "127.0.0.1 localhost lane\n")
    write(root + "/etc/docker/daemon.json", json.dumps(DOCKER_CONFIG) + "\n")
    write(root + "/etc/systemd/system/cgprocfs-lane.service", LANE_UNIT)
    write(root + "/usr/local/sbin/cgprocfs-lane", LANE_RUNNER, 0o755)
    wants = root + "/etc/systemd/system/multi-user.target.wants"
    os.makedirs(wants, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.symlink("/etc/systemd/system/cgprocfs-lane.service", wants + "/cgprocfs-lane.service")
    for unit in MASKED:
        path = root + "/etc/systemd/system/" + unit
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.symlink("/dev/null", path)
    # The runtimes start when the script starts them (the first thing it
    # does with each), not at boot as well: a one-CPU guest's boot time.
    run(["systemctl", "--root=" + root, "disable"] + BOOT_DISABLED)
    # dpkg -i without man-db's index (a quarter of the install's time here).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root + "/var/lib/man-db/auto-update")
    # No password, no login: the guest only runs the lane's script.
    run(["chroot", root, "passwd", "-d", "root"])


def install_packages(root):
    """PACKAGES into root, by apt-get in a chroot, with no service started."""
    write(root + "/usr/sbin/policy-rc.d", "#!/bin/sh\nexit 101\n", 0o755)
    shutil.copy2("/etc/resolv.conf", root + "/etc/resolv.conf")
    mounts = []
    try:
        for fs, target in (("proc", "proc"), ("sysfs", "sys"), ("devtmpfs", "dev"), ("devpts", "dev/pts")):
            run(["mount", "-t", fs, fs, os.path.join(root, target)])
            mounts.append(os.path.join(root, target))
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["chroot", root, "apt-get", "update", "-q"], env=env, timeout=600)
        run(["chroot", root, "apt-get", "install", "-y", "-q", "--no-install-recommends"] + PACKAGES, env=env,
            timeout=1800)
        run(["chroot", root, "apt-get", "clean"], env=env)
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", "-l", m])
        os.unlink(root + "/usr/sbin/policy-rc.d")


def image(work, log=print):
    """The lane's image: the one in debian.CACHE made from the same inputs
    within debian.CACHE_DAYS, or one made now (a few minutes)."""
    base = debian.base_tar(work)
    version = uml_version()
    with open(os.path.abspath(__file__), "rb") as f:
        me = f.read()
    key = hashlib.sha256(json.dumps([os.path.basename(base), version, PACKAGES]).encode() + me).hexdigest()[:16]
    path = os.path.join(debian.CACHE, "systemd-lane-%s.img" % key)
    with open(os.path.join(debian.CACHE, ".lane-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            if time.time() - os.stat(path).st_mtime < debian.CACHE_DAYS * 86400:
                log("the lane's image from %s (made %.1f h ago)" % (path, (time.time() - os.stat(path).st_mtime) / 3600))
                return path
        started = time.monotonic()
        root = tempfile.mkdtemp(prefix="lane-root-", dir=work)
        try:
            run(["tar", "-C", root, "-xf", base])
            install_packages(root)
            configure(root, version)
            run(["mkfs.ext4", "-q", "-F", "-d", root, path + ".part", IMAGE_SIZE])
            os.replace(path + ".part", path)
            for old in glob.glob(os.path.join(debian.CACHE, "systemd-lane-*.img")):
                if old != path:  # made from other inputs
                    os.unlink(old)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        log("the lane's image made in %.0f s: %s" % (time.monotonic() - started, path))
        return path


def boot(img, share, timeout=900, mem="3G"):
    """Boot img (its writes in a copy-on-write file of this boot's) with
    share at /lane, until it powers off. The script's (status or None,
    output); the console's last lines are in share/console."""
    cow = os.path.join(share, ".cow")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(cow)
    argv = ["linux.uml", "mem=" + mem, "ubd0=%s,%s" % (cow, img), "root=/dev/ubda", "rw",
            "cgprocfs_lane=" + share, "umid=cgprocfs-lane-%d-%s" % (os.getpid(), os.path.basename(share)),
            "uml_dir=" + share,
            "con=null", "con0=fd:0,fd:1", "systemd.show_status=0", "quiet"]
    with open(os.path.join(share, "console"), "w") as console:
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
                           timeout=timeout + 300, start_new_session=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(cow)
    output = ""
    with contextlib.suppress(FileNotFoundError), open(os.path.join(share, "output")) as f:
        output = f.read()
    try:
        with open(os.path.join(share, "status")) as f:
            return int(f.read()), output
    except (FileNotFoundError, ValueError):
        return None, output


def run_script(script_text, share, timeout=900, mem="3G", work="/var/tmp", log=print):
    """Make (or take) the image, put script_text in share as the script,
    boot: boot()'s answer."""
    img = image(work, log)
    write(os.path.join(share, "script"), script_text)
    write(os.path.join(share, "timeout"), "%d\n" % timeout)
    for name in ("status", "output", "journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(share, name))
    return boot(img, share, timeout, mem)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mem", default="3G")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--share")
    p.add_argument("script")
    a = p.parse_args()
    with open(a.script) as f:
        text = f.read()
    share = a.share or tempfile.mkdtemp(prefix="lane-", dir="/var/tmp")
    status, output = run_script(text, os.path.abspath(share), a.timeout, a.mem,
                                log=lambda m: print("lane: " + m, file=sys.stderr))
    sys.stdout.write(output)
    if status is None:
        print("lane: the guest did not run the script; its console's end:", file=sys.stderr)
        with contextlib.suppress(FileNotFoundError), open(os.path.join(share, "console"), errors="replace") as f:
            sys.stderr.write("".join(f.readlines()[-30:]))
        sys.exit(2)
    sys.exit(status)


if __name__ == "__main__":
    main()
