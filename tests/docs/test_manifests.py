"""The Kubernetes manifests and the container runtimes' configuration in
contrib/kubernetes agree with each other and with the programs: the
RuntimeClass's handler is the runtime the containerd and CRI-O snippets
define, they let through the annotation the runtime wrapper reads,
containerd itself reads its snippet, and the DaemonSet serves the daemon's
default mountpoint, with options the daemon takes. TAP; argv: KUBERNETES-DIR DAEMON RUNTIME-WRAPPER."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tomllib

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tap  # noqa: E402


def main():
    kdir, daemon, wrapper = sys.argv[1:4]
    tests, test = tap.registry()

    docs = {}
    for path in sorted(glob.glob(os.path.join(kdir, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                docs.setdefault(doc["kind"], []).append((os.path.basename(path), doc))
    with open(os.path.join(kdir, "containerd-cgprocfs.toml"), "rb") as f:
        containerd = tomllib.load(f)
    with open(os.path.join(kdir, "crio-cgprocfs.conf"), "rb") as f:
        crio = tomllib.load(f)
    helped = subprocess.run([wrapper, "--cgprocfs-help"], capture_output=True, text=True, timeout=30).stdout
    found = re.search(r"annotated (\S+)=true", helped)
    annotation = found.group(1) if found else None
    cri_runtimes = containerd["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]

    @test("every manifest parses, with apiVersion, kind and a name")
    def _():
        bad = [(f, d.get("kind")) for kind in docs for f, d in docs[kind]
               if not d.get("apiVersion") or not d.get("metadata", {}).get("name")]
        return not bad and docs, bad or "no manifest found"

    @test("the RuntimeClass's handler is a runtime of the containerd and of the CRI-O snippet, and the example "
          "pod names the RuntimeClass")
    def _():
        (_, rc), = docs["RuntimeClass"]
        handler = rc["handler"]
        pods = [d for _, d in docs["Pod"] if d["spec"].get("runtimeClassName")]
        ok = (handler in cri_runtimes and handler in crio["crio"]["runtime"]["runtimes"] and pods and
              all(p["spec"]["runtimeClassName"] == rc["metadata"]["name"] for p in pods))
        return ok, (handler, list(cri_runtimes), list(crio["crio"]["runtime"]["runtimes"]))

    @test("the wrapper's annotation is the example pod's, and both snippets let it through")
    def _():
        (_, rc), = docs["RuntimeClass"]
        pods = [d for _, d in docs["Pod"] if d["spec"].get("runtimeClassName")]
        ours = cri_runtimes[rc["handler"]]
        ok = (annotation and all(p["metadata"]["annotations"].get(annotation) == "true" for p in pods) and
              annotation in ours["pod_annotations"] and
              annotation in crio["crio"]["runtime"]["runtimes"][rc["handler"]]["allowed_annotations"] and
              os.path.basename(ours["options"]["BinaryName"]) == os.path.basename(wrapper))
        return ok, (annotation, ours)

    @test("containerd reads its snippet: config dump shows the runtime, its binary and the annotation")
    def _():
        exe = shutil.which("containerd")
        if not exe:
            return "skip", "containerd is not installed (apt-get install containerd)"
        r = subprocess.run([exe, "--config", os.path.join(kdir, "containerd-cgprocfs.toml"), "config", "dump"],
                           capture_output=True, text=True, timeout=60)
        dumped = tomllib.loads(r.stdout) if r.returncode == 0 else {}
        got = dumped.get("plugins", {}).get("io.containerd.grpc.v1.cri", {}).get("containerd", {}) \
            .get("runtimes", {}).get("cgprocfs", {})
        ok = (got.get("runtime_type") == "io.containerd.runc.v2" and annotation in got.get("pod_annotations", []) and
              got.get("options", {}).get("BinaryName", "").endswith("/cgprocfs-runtime"))
        return ok, r.stderr.strip()[-500:] or got

    @test("the DaemonSet serves the daemon's default mountpoint, from the node's path of that name")
    def _():
        (_, ds), = docs["DaemonSet"]
        spec = ds["spec"]["template"]["spec"]
        default = re.search(r"default (/\S+?)[,;)]", subprocess.run([daemon, "--help"], capture_output=True,
                                                                    text=True, timeout=30).stdout)
        command = spec["containers"][0]["command"]
        paths = {v["name"]: v.get("hostPath", {}).get("path") for v in spec["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
        ok = default and command[-1] == default.group(1) and mounts.get("state") == default.group(1) == \
            paths.get("state")
        return ok, (default and default.group(1), command, mounts.get("state"), paths.get("state"))

    @test("the DaemonSet's daemon takes every option its command gives (the daemon's --help lists them), and "
          "runs in the node's pid namespace with a writable /sys/fs/cgroup, where its keeper outlives the pod")
    def _():
        (_, ds), = docs["DaemonSet"]
        spec = ds["spec"]["template"]["spec"]
        container = spec["containers"][0]
        command = container["command"]
        given = [a.split("=")[0] for a in command[command.index("/usr/sbin/cgprocfs") + 1:] if a.startswith("--")]
        helped = subprocess.run([daemon, "--help"], capture_output=True, text=True, timeout=30).stdout
        unknown = [a for a in given if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(a), helped)]
        cgroup = [m for m in container["volumeMounts"] if m["mountPath"] == "/sys/fs/cgroup"]
        ok = (not unknown and "--keeper-cgroup" in given and spec.get("hostPID") is True and cgroup and
              not cgroup[0].get("readOnly"))
        return ok, ("options unknown to the daemon", unknown, "given", given, "hostPID", spec.get("hostPID"), cgroup)

    return tap.run(tests)


if __name__ == "__main__":
    sys.exit(main())
