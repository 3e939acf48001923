"""cgprocfs-runtime never fails a start for want of a hook: it adds only a
hook that can be run (--cgprocfs-hook's, else the installed one, else the
one beside the wrapper, as in a build tree), and otherwise leaves
config.json as it was, says why in one line and runs the runtime all the
same. A stand-in runtime (a script that prints its arguments) takes the
real one's place; no root needed. TAP; argv: WRAPPER INSTALLED-HOOK-PATH."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tap  # noqa: E402

WRAPPER, INSTALLED = sys.argv[1:3]
CONFIG = {"ociVersion": "1.0.2", "root": {"path": "rootfs"},
          "annotations": {"io.cgprocfs.enable": "true", "other": "é \" \\ \u2028"},
          "process": {"args": ["sh", "-c", "echo"], "env": ["A=1"]}, "linux": {"resources": {"memory": {"limit": 1}}},
          "hooks": {"prestart": [{"path": "/bin/false"}], "createContainer": [{"path": "/bin/true"}]}}


def bundle(tmp, text=None):
    path = tempfile.mkdtemp(dir=tmp)
    with open(os.path.join(path, "config.json"), "w") as f:
        f.write(json.dumps(CONFIG) if text is None else text)
    return path


def run(tmp, wrapper, path, *options):
    runtime = os.path.join(tmp, "runtime")
    with open(runtime, "w") as f:
        f.write('#!/bin/sh\necho "ran: $*"\n')
    os.chmod(runtime, 0o755)
    res = subprocess.run([wrapper, *options, "--cgprocfs-runtime=" + runtime, "create", "--bundle", path, "c1"],
                         capture_output=True, text=True, timeout=30)
    with open(os.path.join(path, "config.json")) as f:
        text = f.read()
    try:
        return res, json.loads(text)
    except ValueError:
        return res, text


def added(config):
    """The paths of the createContainer hooks beyond the bundle's own."""
    return [h["path"] for h in config["hooks"]["createContainer"][1:]]


def main():
    tests, test = tap.registry()

    tmp = tempfile.mkdtemp(prefix="cgprocfs-wrapper-")

    @test("a hook named with --cgprocfs-hook that does not exist: config.json unchanged, one line naming it, "
          "the runtime run with the container's arguments")
    def _():
        path = bundle(tmp)
        missing = os.path.join(tmp, "no-such-hook")
        res, config = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + missing)
        lines = res.stderr.splitlines()
        ok = (config == CONFIG and len(lines) == 1 and missing in lines[0] and res.returncode == 0 and
              res.stdout == "ran: create --bundle %s c1\n" % path)
        return ok, (res, config)

    @test("a hook named with --cgprocfs-hook that can be run is added after the bundle's own")
    def _():
        path = bundle(tmp)
        hook = os.path.join(tmp, "hook")
        shutil.copy("/bin/true", hook)
        res, config = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + hook)
        return added(config) == [hook] and res.returncode == 0 and not res.stderr, (res, config)

    @test("the hook added, config.json is the bundle's with one more createContainer entry: every other member "
          "kept (strings with escapes, other hooks, the hook's own list in its order); a second run adds none")
    def _():
        path = bundle(tmp)
        hook = os.path.join(tmp, "hook2")
        shutil.copy("/bin/true", hook)
        res, config = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=/m")
        again, config2 = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=/m")
        want = json.loads(json.dumps(CONFIG))
        want["hooks"]["createContainer"].append({"path": hook, "args": ["cgprocfs-oci-hook", "--mountpoint", "/m"]})
        return config == want and config2 == want and not again.stderr, (res, config, again, config2)

    @test("a container with a user namespace of its own (Docker's userns-remap): the hook goes to createRuntime "
          "(the runtime runs it on the host), not to createContainer (run as the namespace's root, which cannot "
          "reach the daemon's socket); the bundle's own hooks kept")
    def _():
        config = json.loads(json.dumps(CONFIG))
        config["linux"]["namespaces"] = [{"type": "pid"}, {"type": "user"}, {"type": "mount"}]
        config["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
        path = bundle(tmp, json.dumps(config))
        hook = os.path.join(tmp, "hook-userns")
        shutil.copy("/bin/true", hook)
        res, got = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=/m")
        want = json.loads(json.dumps(config))
        want["hooks"]["createRuntime"] = [{"path": hook, "args": ["cgprocfs-oci-hook", "--mountpoint", "/m"]}]
        return got == want and res.returncode == 0 and not res.stderr, (res, got)

    @test("a container not annotated (and no --cgprocfs-always): config.json byte for byte as it was")
    def _():
        text = json.dumps(dict(CONFIG, annotations={}), indent=1)
        path = bundle(tmp, text)
        res, config = run(tmp, WRAPPER, path, "--cgprocfs-hook=/bin/true")
        with open(os.path.join(path, "config.json")) as f:
            return f.read() == text and not res.stderr and res.returncode == 0, res

    @test("a config.json that is not JSON, and one whose hooks are not an object: left as they were, one line "
          "each, the runtime run")
    def _():
        results = []
        for text in ('{"annotations": {"io.cgprocfs.enable": "true"}, "hooks": ',
                     '{"annotations": {"io.cgprocfs.enable": "true"}, "hooks": [1]}'):
            path = bundle(tmp, text)
            res, _ = run(tmp, WRAPPER, path, "--cgprocfs-always", "--cgprocfs-hook=/bin/true")
            with open(os.path.join(path, "config.json")) as f:
                results.append((f.read() == text, len(res.stderr.splitlines()) == 1,
                                res.stdout.startswith("ran: create"), res.stderr))
        return all(r[:3] == (True, True, True) for r in results), results

    @test("no hook named: the installed one if it is there, else the one beside the wrapper")
    def _():
        path = bundle(tmp)
        res, config = run(tmp, WRAPPER, path)
        beside = os.path.join(os.path.dirname(os.path.realpath(WRAPPER)), "cgprocfs-oci-hook")
        want = INSTALLED if os.access(INSTALLED, os.X_OK) else beside
        return added(config) == [want] and os.access(want, os.X_OK) and res.returncode == 0, (res, config, want)

    @test("no hook named, none installed and none beside the wrapper (a copy of it alone): config.json "
          "unchanged, one line, the runtime run")
    def _():
        if os.access(INSTALLED, os.X_OK):
            return "skip", "a hook is installed at %s: the wrapper would rightly add it" % INSTALLED
        alone = os.path.join(tempfile.mkdtemp(dir=tmp), "cgprocfs-runtime")
        shutil.copy(WRAPPER, alone)
        path = bundle(tmp)
        res, config = run(tmp, alone, path)
        lines = res.stderr.splitlines()
        ok = config == CONFIG and len(lines) == 1 and INSTALLED in lines[0] and res.stdout.startswith("ran: create")
        return ok, (res, config)

    # The daemon's seccomp listener, as the wrapper finds it: a mountpoint
    # whose .cgprocfs/control names a control socket, and a listening
    # socket at that path + ".seccomp".
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(os.path.join(mnt, ".cgprocfs"))
    control = os.path.join(tmp, "daemon.sock")
    with open(os.path.join(mnt, ".cgprocfs", "control"), "w") as f:
        f.write(control + "\n")
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(control + ".seccomp")
    listening.listen(64)
    listener = control + ".seccomp"
    notify_rule = {"names": ["sysinfo", "sched_getaffinity"], "action": "SCMP_ACT_NOTIFY"}
    sysinfo_only = {"names": ["sysinfo"], "action": "SCMP_ACT_NOTIFY"}
    docker_like = {"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
                   "syscalls": [{"names": ["read", "sysinfo", "sched_getaffinity", "write"],
                                 "action": "SCMP_ACT_ALLOW"},
                                {"names": ["sysinfo"], "action": "SCMP_ACT_ALLOW"},
                                {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "args": []}]}

    def with_profile(profile):
        config = json.loads(json.dumps(CONFIG))
        if profile is not None:
            config["linux"]["seccomp"] = profile
        return json.dumps(config)

    hook = os.path.join(tmp, "hook3")
    shutil.copy("/bin/true", hook)

    def seccomp_of(*options, profile=None, annotations=None):
        text = with_profile(profile)
        if annotations:
            config = json.loads(text)
            config["annotations"].update(annotations)
            text = json.dumps(config)
        path = bundle(tmp, text)
        res, config = run(tmp, WRAPPER, path, "--cgprocfs-hook=" + hook, "--cgprocfs-mountpoint=" + mnt, *options)
        return res, config, config["linux"].get("seccomp") if isinstance(config, dict) else None

    @test("a daemon listening and no profile: one that allows everything and notifies sysinfo and "
          "sched_getaffinity to the listener, for x86-64, i386 and x32; nothing said")
    def _():
        res, config, got = seccomp_of()
        want = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
                "syscalls": [notify_rule], "listenerPath": listener}
        return got == want and added(config) == [hook] and not res.stderr, (res, got)

    @test("Docker's kind of profile (denied by default, sysinfo and sched_getaffinity among the allowed): both "
          "taken out of the allowing rules (one that named sysinfo alone goes), one notify rule for both, the "
          "architectures and the rest kept")
    def _():
        res, _, got = seccomp_of(profile=docker_like)
        want = json.loads(json.dumps(docker_like))
        want["syscalls"] = [{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
                            {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "args": []}, notify_rule]
        want["listenerPath"] = listener
        return got == want and not res.stderr, (res, got)

    @test("never more permissive: a profile that denies both calls (by default), one that allows sysinfo on a "
          "condition and denies sched_getaffinity, and one with another listenerPath stay as they were, one line "
          "for each call")
    def _():
        cases = [dict(docker_like, syscalls=[{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]),
                 dict(docker_like, syscalls=[{"names": ["sysinfo"], "action": "SCMP_ACT_ALLOW",
                                              "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]}]),
                 {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/other.sock"}]
        results = []
        for profile in cases:
            res, config, got = seccomp_of(profile=profile)
            kept = {k: v for k, v in got.items() if k != "syscalls" or v} == profile
            lines = res.stderr.splitlines()
            named = [l.split(": ")[1] if ": " in l else l for l in lines]
            results.append((kept, len(lines) == 2, added(config) == [hook], res.stderr, named))
        return all(r[:3] == (True, True, True) for r in results), results

    @test("each call decided alone: a profile that allows everything but denies sysinfo by a rule notifies "
          "sched_getaffinity only, the denying rule kept, one line naming sysinfo; one that allows sysinfo and "
          "not sched_getaffinity notifies sysinfo only, one line naming sched_getaffinity")
    def _():
        deny = {"names": ["sysinfo"], "action": "SCMP_ACT_ERRNO"}
        res, _, got = seccomp_of(profile={"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [deny]})
        want = {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": listener,
                "syscalls": [deny, {"names": ["sched_getaffinity"], "action": "SCMP_ACT_NOTIFY"}]}
        lines = res.stderr.splitlines()
        first = got == want and len(lines) == 1 and "sysinfo" in lines[0] and "sched_getaffinity" not in lines[0]
        res2, _, got2 = seccomp_of(profile=dict(docker_like, syscalls=[{"names": ["sysinfo"],
                                                                        "action": "SCMP_ACT_ALLOW"}]))
        want2 = dict(docker_like, syscalls=[sysinfo_only], listenerPath=listener)
        lines2 = res2.stderr.splitlines()
        second = got2 == want2 and len(lines2) == 1 and "sched_getaffinity" in lines2[0]
        return first and second, (res, got, res2, got2)

    @test("the annotation io.cgprocfs.affinity=false, and --cgprocfs-no-affinity: sysinfo notified alone, "
          "sched_getaffinity left in the allowing rule; nothing said, the flag not passed to the runtime")
    def _():
        want = json.loads(json.dumps(docker_like))
        want["syscalls"] = [{"names": ["read", "sched_getaffinity", "write"], "action": "SCMP_ACT_ALLOW"},
                            {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "args": []}, sysinfo_only]
        want["listenerPath"] = listener
        res, _, got = seccomp_of(profile=docker_like, annotations={"io.cgprocfs.affinity": "false"})
        res2, _, got2 = seccomp_of("--cgprocfs-no-affinity", profile=docker_like)
        ok = got == want and got2 == want and not res.stderr and not res2.stderr and "--cgprocfs" not in res2.stdout
        return ok, (res, got, res2, got2)

    @test("--cgprocfs-no-sysinfo, and no daemon listening: the profile as it was, nothing said, the hook added")
    def _():
        res, config, got = seccomp_of("--cgprocfs-no-sysinfo", profile=docker_like)
        listening.close()
        res2, config2, got2 = seccomp_of(profile=docker_like)
        ok = (got == docker_like and got2 == docker_like and not res.stderr and not res2.stderr and
              added(config) == added(config2) == [hook])
        return ok, (res, got, res2, got2)

    status = tap.run(tests)
    shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
