"""A Kubernetes node's kubelet, the few calls of it that start pods: a
client of containerd's CRI plugin (the runtime.v1 gRPC service on
containerd's socket) through python3-grpcio, its messages written here
with the field numbers of k8s.io/cri-api's api.proto (runtime/v1), no
generated code. Run in the systemd lane's guest by runtimes.py."""

import grpc

SOCKET = "unix:///run/containerd/containerd.sock"
SERVICE = "/runtime.v1.RuntimeService/"
# NamespaceOption's modes
POD, CONTAINER, NODE = 0, 1, 2

# ------------------------------------------------------ protobuf, by hand --


def _varint(n):
    n &= (1 << 64) - 1  # int64s as two's complement
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(num, value):
    """A length-delimited field (string, bytes, or an encoded message)."""
    data = value.encode() if isinstance(value, str) else value
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def message(num, *parts):
    return string(num, b"".join(parts))


def integer(num, value):
    """A varint field (int64, uint32, bool, enum); 0 is left out, as proto3 does."""
    return _varint(num << 3) + _varint(int(value)) if value else b""


def strings(num, values):
    return b"".join(string(num, v) for v in values)


def mapping(num, d):
    return b"".join(message(num, string(1, k), string(2, v)) for k, v in d.items())


def fields(data):
    """The fields of an encoded message: {number: [values]} (bytes for
    length-delimited ones, ints for varints)."""
    out, pos = {}, 0

    def varint():
        nonlocal pos
        n = shift = 0
        while True:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while pos < len(data):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 2:
            n = varint()
            value, pos = data[pos:pos + n], pos + n
        else:
            size = 8 if wire == 1 else 4
            value, pos = data[pos:pos + size], pos + size
        out.setdefault(num, []).append(value)
    return out


# ------------------------------------------------------------- the calls --

_channel = None


def call(method, request, timeout=180):
    global _channel
    if _channel is None:
        _channel = grpc.insecure_channel(SOCKET)
    return fields(_channel.unary_unary(SERVICE + method)(request, timeout=timeout))


def version():
    got = call("Version", b"")
    return " ".join(v.decode() for n in sorted(got) for v in got[n] if isinstance(v, bytes))


def namespaces(pid_mode):
    """NamespaceOption: the node's network (no CNI here), pid_mode's pids."""
    return integer(1, NODE) + integer(2, pid_mode)


def pod_config(name, uid, cgroup_parent, annotations, pid_mode, privileged=False, log_dir=""):
    """PodSandboxConfig as kubelet fills it for a pod of the systemd
    cgroup driver (its slice under kubepods), on the node's network (and
    so its hostname); privileged if any of its containers is; its
    containers' logs in log_dir if given."""
    security = message(1, namespaces(pid_mode)) + integer(6, privileged)
    return (message(1, string(1, name), string(2, uid), string(3, "default"))
            + (string(3, log_dir) if log_dir else b"")
            + mapping(7, annotations)
            + message(8, string(1, cgroup_parent), message(2, security)))


def run_pod(config, handler):
    """RunPodSandbox: the sandbox's id."""
    return call("RunPodSandbox", message(1, config) + string(2, handler))[1][0].decode()


# Mount.propagation
PRIVATE, HOST_TO_CONTAINER, BIDIRECTIONAL = 0, 1, 2


def create_container(pod_id, config, name, image, argv, memory, cpu_quota, pid_mode, mounts=(),
                     privileged=False):
    """CreateContainer of image running argv, with kubelet's resources
    (memory limit = swap limit, cpu quota per 100 ms; none where 0) and
    mounts of (target, source) read-only or (target, source, propagation)
    read-write, as kubelet gives hostPath volumes: its id."""
    resources = (integer(1, 100000 if cpu_quota else 0) + integer(2, cpu_quota) + integer(3, 512)
                 + integer(4, memory) + integer(10, memory))
    security = integer(2, privileged) + message(3, namespaces(pid_mode))
    binds = b"".join(message(7, string(1, m[0]), string(2, m[1]), integer(3, len(m) == 2),
                             integer(5, m[2] if len(m) > 2 else PRIVATE)) for m in mounts)
    container = (message(1, string(1, name)) + message(2, string(1, image)) + strings(3, argv[:1])
                 + strings(4, argv[1:]) + binds + string(11, name + ".log")
                 + message(15, message(1, resources) + message(2, security)))
    return call("CreateContainer", string(1, pod_id) + message(2, container) + message(3, config))[1][0].decode()


def start_container(cid):
    call("StartContainer", string(1, cid))


def exec_sync(cid, argv, timeout=60):
    """ExecSync: {"rc", "out"} (stdout, then stderr)."""
    got = call("ExecSync", string(1, cid) + strings(2, argv) + integer(3, timeout), timeout=timeout + 30)
    out = b"".join(got.get(1, [])) + b"".join(got.get(2, []))
    return {"rc": got.get(3, [0])[0], "out": out.decode(errors="replace")}


def stop_container(cid, grace):
    """StopContainer: SIGTERM, and SIGKILL grace seconds later (kubelet's
    terminationGracePeriodSeconds)."""
    call("StopContainer", string(1, cid) + integer(2, grace), timeout=grace + 60)


def remove_pod(pod_id):
    call("StopPodSandbox", string(1, pod_id))
    call("RemovePodSandbox", string(1, pod_id))
