"""Daemon-served files read right by every reader, with no text of one
caller's view reaching another's.

Callers sit in v1 cpusets of this machine: one with one CPU, one with two
(the host's view, where the machine has two). Each file is read the ways
tools read it: read() in several chunk sizes, pread at odd offsets,
sendfile (os.sendfile and busybox cat), tail, head, dd bs=1 and cmp -s.
Expectations come from the cpusets and the host's files in the same run."""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import check, check_equal  # noqa: E402
from test_cpuview import format_cpu_list, parse_cpu_list, read_text, write  # noqa: E402

CPUSET = "/sys/fs/cgroup/cpuset"
TOP = "cgprocfs-served-%d" % os.getpid()
# kernel_max: a file of the mirror, the host's text for every caller.
MIRROR = "sys/devices/system/cpu/kernel_max"


def last_cpu():
    return max(parse_cpu_list(read_text(os.path.join(CPUSET, "cpuset.effective_cpus"))))


def vcpu_list():
    """core_siblings_list of the root cpuset's last CPU (the "one" cpuset's):
    a file of a CPU's directory, its host list restricted to the CPUs shown
    (that CPU alone, or the host's list)."""
    return "sys/devices/system/cpu/cpu%d/topology/core_siblings_list" % last_cpu()


def files():
    return ("proc/cpuinfo", "proc/stat", "sys/devices/system/cpu/online", vcpu_list(), MIRROR)

# Reads every file every way and prints what it got, in JSON: for each file
# and way, the text (cpuinfo without its MHz lines, stat as its line keys:
# both move between two reads).
READ_WAYS = r"""
import json, os, subprocess, sys
root = sys.argv[1]

def norm(name, data):
    text = data.decode()
    if name.endswith("cpuinfo"):
        return "".join(l + "\n" for l in text.splitlines() if not l.startswith("cpu MHz"))
    if name.endswith(("stat", "meminfo", "swaps")):
        return " ".join(l.split()[0] for l in text.splitlines() if l)
    if name.endswith(("uptime", "loadavg")):  # one line of moving numbers
        return "%d fields, %d lines" % (len(text.split()), text.count("\n"))
    return text

def read_chunks(path, n):
    fd = os.open(path, os.O_RDONLY)
    out = b""
    while True:
        b = os.read(fd, n)
        if not b:
            break
        out += b
    os.close(fd)
    return out

def pread_odd(path):
    fd = os.open(path, os.O_RDONLY)
    whole = b""
    off = 0
    step = 7
    while True:
        b = os.pread(fd, step, off)
        if not b:
            break
        whole += b
        off += len(b)
        step = 4093 if step == 7 else 7
    os.close(fd)
    return whole

def sendfile(path):
    r, w = os.pipe()
    src = os.open(path, os.O_RDONLY)
    import threading
    got = []
    t = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(r, 65536), b""))))
    t.start()
    while os.sendfile(w, src, None, 1 << 20) > 0:
        pass
    os.close(w)
    t.join()
    os.close(src)
    os.close(r)
    return got[0]

def sh(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout

res = {}
for name in sys.argv[2:]:
    path = os.path.join(root, name)
    ways = {
        "read 1": read_chunks(path, 1),
        "read 4096": read_chunks(path, 4096),
        "read 1M": read_chunks(path, 1 << 20),
        "pread odd": pread_odd(path),
        "sendfile": sendfile(path),
        "busybox cat": sh(["busybox", "cat", path]),
        "dd bs=1": sh(["dd", "bs=1", "status=none", "if=" + path]),
    }
    whole = ways["read 1M"]
    tail = sh(["tail", "-n", "3", path])
    head = sh(["head", "-c", "100", path])
    # st_size of an open file is its own open's text's length: stat's
    # counters move, so a later open's text can be a digit longer.
    fd = os.open(path, os.O_RDONLY)
    own = os.read(fd, 1 << 20)
    own_size = os.fstat(fd).st_size
    os.close(fd)
    res[name] = {
        "ways": {k: norm(name, v) for k, v in ways.items()},
        "tail": norm(name, tail) if not name.endswith(("cpuinfo", "stat")) else tail.decode().count("\n"),
        "head": head.decode()[:20],
        "whole_head": whole.decode()[:20],
        "size": own_size,
        "len": len(own),
        "path_size": os.stat(path).st_size,
        "processors": whole.decode().count("processor\t:"),
        "cpu_lines": sum(1 for l in whole.decode().splitlines() if l.split()[0].startswith("cpu")) if name.endswith("stat") else 0,
        "cmp": subprocess.run(["cmp", "-s", path, "/dev/stdin"], input=whole).returncode if name.startswith("sys/") else 0,
    }
print(json.dumps(res))
"""

# Reads one file in a loop for a while, alternating read() and sendfile,
# and counts the reads that are not what the reader's cgroup must see:
# cpuinfo and stat by their CPU count (their other lines move), meminfo by
# its MemTotal (kB), the others by their whole text.
MIXED_READER = r"""
import os, sys, time
path, want, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])

def seen(data):
    text = data.decode(errors="replace")
    if path.endswith("meminfo"):
        return "".join(l.split()[1] for l in text.splitlines() if l.startswith("MemTotal:"))
    if path.endswith("cpuinfo"):
        return str(text.count("processor\t:"))
    if path.endswith("stat"):
        return str(sum(1 for l in text.splitlines() if l.startswith("cpu") and l[3:4].isdigit()))
    return text

# The inode a wrong text came from (the class the daemon decided: its
# number's low 52 bits), and the inode of the first right one.
def inode_if_wrong(fd, out):
    return os.fstat(fd).st_ino if out and seen(out) != want else 0

def by_read():
    fd = os.open(path, os.O_RDONLY)
    out = b"".join(iter(lambda: os.read(fd, 65536), b""))
    ino = inode_if_wrong(fd, out)
    os.close(fd)
    return out, ino

def by_sendfile():
    r, w = os.pipe2(os.O_NONBLOCK)
    src = os.open(path, os.O_RDONLY)
    out = b""
    while True:
        n = os.sendfile(w, src, None, 65536)
        while True:
            try:
                b = os.read(r, 65536)
            except BlockingIOError:
                break
            if not b:
                break
            out += b
        if n == 0:
            break
    ino = inode_if_wrong(src, out)
    os.close(src)
    os.close(w)
    os.close(r)
    return out, ino

reads = bad = empty = 0
first_bad = right_ino = ""
end = time.monotonic() + seconds
while time.monotonic() < end:
    way = "sendfile" if reads % 2 else "read"
    data, ino = by_sendfile() if reads % 2 else by_read()
    reads += 1
    if not data:
        empty += 1
    elif seen(data) != want:
        bad += 1
        first_bad = first_bad or "%s gave %r (inode %#x, %.3f s in)" % (way, data[:60], ino, seconds - end + time.monotonic())
    elif not right_ino:
        fd = os.open(path, os.O_RDONLY)
        right_ino = "%#x" % os.fstat(fd).st_ino
        os.close(fd)
print(reads, bad, empty, first_bad + (", a right one's inode %s" % right_ino if first_bad else ""))
"""


def expected(name, cpus):
    """What MIXED_READER must see of name when shown the CPUs cpus."""
    if name.endswith(("cpuinfo", "stat")):
        return str(len(cpus))
    if name == MIRROR:
        return read_text("/" + MIRROR)
    if name.endswith("_list"):
        return format_cpu_list(parse_cpu_list(read_text("/" + name)) & set(cpus)) + "\n"
    return format_cpu_list(cpus) + "\n"


def check_ways(where, name, r):
    """Every way of reading name (READ_WAYS's r) read something, and the same."""
    ways = r["ways"]
    check(all(v for v in ways.values()), "%s, %s: a way read nothing" % (where, name),
          {k: len(v) for k, v in ways.items()})
    check(len(set(ways.values())) == 1, "%s, %s: the ways of reading disagree" % (where, name),
          *["%s: %r" % (k, v[:200]) for k, v in ways.items()])


class Cpusets:
    """TOP/one (one CPU) and TOP/all (every CPU of the root cpuset)."""

    def __init__(self):
        root_cpus = sorted(parse_cpu_list(read_text(os.path.join(CPUSET, "cpuset.effective_cpus"))))
        if len(root_cpus) < 2:
            raise cgtest.Skip("needs 2 CPUs to tell two views apart; the root cpuset has %s" % root_cpus)
        mems = read_text(os.path.join(CPUSET, "cpuset.effective_mems")).strip()
        self.top = os.path.join(CPUSET, TOP)
        os.mkdir(self.top)
        self.made = [self.top]
        write(os.path.join(self.top, "cpuset.cpus"), ",".join(map(str, root_cpus)))
        write(os.path.join(self.top, "cpuset.mems"), mems)
        self.groups = {}
        for name, cpus in (("one", root_cpus[-1:]), ("all", root_cpus)):
            path = os.path.join(self.top, name)
            os.mkdir(path)
            self.made.append(path)
            write(os.path.join(path, "cpuset.cpus"), ",".join(map(str, cpus)))
            write(os.path.join(path, "cpuset.mems"), mems)
            self.groups[name] = (path, cpus)
        self.host_count = len(parse_cpu_list(read_text("/sys/devices/system/cpu/online")))

    def remove(self):
        cgtest.remove_cgroups(reversed(self.made), CPUSET)


def in_cgroup(group, argv, setup=""):
    return cgtest.in_cgroups([group], argv, setup)


BIND_PROC = 'mount --rbind "$MNT/proc" /proc && mount --bind "$MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n'
# A bind of a file of MNT races the readers of other cgroups: their walks
# replace the name's dentry (another class's inode), and a bind whose
# source dentry went meanwhile fails with ENOENT. It is tried again, for
# up to 5 s (a busy machine lost 10 tries in a row).
BIND_FILES = ('bind() { for i in $(seq 100); do mount --bind "$1" "$2" 2>/dev/null && return; sleep 0.05; done; '
              'mount --bind "$1" "$2"; }\n'
              'bind "$MNT/proc/cpuinfo" /proc/cpuinfo && bind "$MNT/proc/stat" /proc/stat && '
              'bind "$MNT/sys/devices/system/cpu" /sys/devices/system/cpu || exit 97\n')


def make_tests(d):
    t, test = cgtest.test_registry()

    def env():  # the mountpoint is known once the daemon serves
        return dict(os.environ, MNT=d.mnt)

    def read_ways(group, root, setup):
        res = cgtest.run(in_cgroup(group, [cgtest.PYTHON, "-c", READ_WAYS, root] + list(files()), setup), env=env())
        out = cgtest.check_ran(res, "the reader")
        return json.loads(out)

    @test("every way of reading (read in 1 B, 4 KiB and 1 MiB chunks, pread at odd offsets, sendfile, busybox cat, "
          "dd bs=1, tail, head, cmp -s) gives the same text, with st_size its length, in a one-CPU cpuset")
    def _():
        cs = Cpusets()
        try:
            group, cpus = cs.groups["one"]
            n = len(cpus)
            for where, root, setup in (("the view bound over /proc", "/", BIND_PROC),
                                       ("MNT from the host", d.mnt, "")):
                got = read_ways(group, root, setup)
                for name, r in got.items():
                    check_ways(where, name, r)
                    check_equal(r["size"], r["len"], "%s, %s: st_size vs the bytes read" % (where, name))
                    if not name.endswith("stat"):  # its counters move between two reads
                        check_equal(r["head"], r["whole_head"], "%s, %s: head -c" % (where, name))
                        check_equal(r["path_size"], r["len"], "%s, %s: st_size of the path" % (where, name))
                    check_equal(r["cmp"], 0, "%s, %s: cmp -s against its own text" % (where, name))
                check_equal(got["proc/cpuinfo"]["processors"], n, "%s: processors in cpuinfo" % where)
                check_equal(got["proc/stat"]["cpu_lines"], n + 1, "%s: cpu lines in stat" % where)
                online = "sys/devices/system/cpu/online"
                check_equal(got[online]["ways"]["read 1"], expected(online, cpus), "%s: online" % where)
                check_equal(got[vcpu_list()]["ways"]["read 1"], expected(vcpu_list(), cpus),
                            "%s: its CPU's core siblings" % where)
        finally:
            cs.remove()

    @test("smaps_rollup and a sysfs file of the mirror read the same every way, sendfile included; the "
          "mirror's st_size is its text's, and cmp -s finds it equal to a copy of the host's file")
    def _():
        sleeper = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
        try:
            smaps = "proc/%d/smaps_rollup" % sleeper.pid
            mirror = "sys/devices/system/cpu/kernel_max"
            res = cgtest.run([cgtest.PYTHON, "-c", READ_WAYS, d.mnt, smaps, mirror])
            got = json.loads(cgtest.check_ran(res, "the reader"))
            # An fstat between the open and the sendfile asks the daemon
            # for the size: it must be that of the text the open stored.
            path = os.path.join(d.mnt, smaps)
            for _ in range(20):
                os.stat(path)
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fstat(fd)
                    r, w = os.pipe()
                    sent = os.sendfile(w, fd, None, 1 << 20)
                    os.close(w)
                    again = os.read(r, 1 << 20)
                    os.close(r)
                finally:
                    os.close(fd)
                check(sent > 0 and b"Rss:" in again, "sendfile of smaps_rollup after fstat sent %d bytes" % sent,
                      again[:300])
        finally:
            sleeper.kill()
            sleeper.wait()
        for name, r in got.items():
            check_ways("MNT", name, r)
            check_equal(r["head"], r["whole_head"], "%s: head -c" % name)
        check("Rss:" in got[smaps]["ways"]["sendfile"], "sendfile of smaps_rollup is not its text",
              got[smaps]["ways"]["sendfile"][:300])
        host = "/" + mirror
        check_equal(got[mirror]["ways"]["read 1M"], read_text(host), "kernel_max through the view")
        # Not sysfs's 4096 (README, "Served files"): GNU cmp -s, which
        # compares sizes first, finds sysfs's own file different from a
        # copy of it, and the view's equal to one.
        check_equal(os.stat(os.path.join(d.mnt, mirror)).st_size, len(read_text(host)), "st_size of kernel_max")
        with tempfile.NamedTemporaryFile("w") as copy:
            copy.write(read_text(host))
            copy.flush()
            rc = subprocess.run(["cmp", "-s", os.path.join(d.mnt, mirror), copy.name]).returncode
        check_equal(rc, 0, "cmp -s of kernel_max, the view's against a copy of the host's")
        tail = subprocess.run(["tail", "-c", "3", os.path.join(d.mnt, mirror)], stdout=subprocess.PIPE).stdout.decode()
        check_equal(tail, read_text(host)[-3:], "tail -c 3 of kernel_max")

    @test("readers in a one-CPU and a two-CPU cpuset mixing read() and sendfile for 5 s never get the other's "
          "text: through MNT, the view bound over /proc, and file-level binds")
    def _():
        cs = Cpusets()
        procs = []
        try:
            setups = (("MNT", None, ""), ("bound over /proc", "/", BIND_PROC), ("file-level binds", "/", BIND_FILES))
            for where, root, setup in setups:
                for name in ("one", "all"):
                    group, cpus = cs.groups[name]
                    for f in files():
                        path = os.path.join(root if root else d.mnt, f)
                        procs.append((where, name, f, subprocess.Popen(
                            in_cgroup(group, [cgtest.PYTHON, "-c", MIXED_READER, path, expected(f, cpus), "5"], setup),
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            wrong, total = [], 0
            for where, name, f, p in procs:
                out, err = p.communicate(timeout=60)
                check_equal(p.returncode, 0, "a reader (%s, %s, %s) failed: %s" % (where, name, f, err.strip()))
                reads, bad, empty = map(int, out.split(maxsplit=3)[:3])
                total += reads
                if bad or empty or not reads:
                    wrong.append("%s, cpuset %s, %s: %d of %d reads wrong, %d empty (first: %s)"
                                 % (where, name, f, bad, reads, empty, out.split(maxsplit=3)[3:]))
            cgtest.diag("%d reads by %d readers" % (total, len(procs)))
            check(not wrong, "readers got another view's text or nothing", *wrong,
                  "the daemon's warnings:", *[l for l in d.log().splitlines() if "warning" in l][-20:])
        finally:
            for *_, p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            cs.remove()

    @test("a pid namespace of its own binds cpuinfo, stat and the CPU directory of the host's view while its "
          "cpuset has every CPU (as runc does before it sets limits), then the cpuset is cut to one CPU: read, "
          "busybox cat (sendfile) and stat show one; given every CPU again, all")
    def _():
        cs = Cpusets()
        probe = ('echo bound; while read what; do grep -c ^processor /proc/cpuinfo; '
                 'busybox cat /proc/cpuinfo | grep -c ^processor; grep -c "^cpu[0-9]" /proc/stat; '
                 'cat /sys/devices/system/cpu/online; echo end; done')
        group, all_cpus = cs.groups["all"]
        n = len(all_cpus)
        cpus = read_text(os.path.join(group, "cpuset.cpus")).strip()
        p = subprocess.Popen(in_cgroup(group, ["unshare", "--pid", "--fork", "sh", "-c", BIND_FILES + probe]),
                             env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            check_equal(os.read(p.stdout.fileno(), 100), b"bound\n", "the binds (%s)" % (p.poll(),))

            def probe_once():
                os.write(p.stdin.fileno(), b"go\n")
                out = b""
                while not out.endswith(b"end\n"):
                    ready = select.select([p.stdout], [], [], 30)[0]
                    check(ready, "the prober said only %r in 30 s" % out, cgtest.describe(
                        cgtest.run(["ps", "-o", "pid,stat,wchan:32,args", "--ppid", str(p.pid)])))
                    chunk = os.read(p.stdout.fileno(), 4096)
                    check(chunk, "the prober closed its output after %r" % out, cgtest.describe(
                        cgtest.run(["ps", "-e", "--forest", "-o", "pid,ppid,stat,wchan:32,args"])))
                    out += chunk
                return out.decode().split()[:-1]

            write(os.path.join(group, "cpuset.cpus"), str(max(parse_cpu_list(cpus))))
            check_equal(probe_once(), ["1", "1", "1", str(max(parse_cpu_list(cpus)))],
                        "cpuinfo read, cpuinfo by sendfile, stat's CPUs, online with one CPU")
            write(os.path.join(group, "cpuset.cpus"), cpus)
            every = str(n)
            check_equal(probe_once(), [every, every, every, format_cpu_list(all_cpus)],
                        "the same with every CPU again")
        finally:
            p.kill()
            p.wait()
            cs.remove()

    return t


def main():
    cgtest.skip_all_unless_runnable()
    if shutil.which("busybox") is None or not os.path.isdir(CPUSET):
        print("1..0 # SKIP needs busybox and the v1 cpuset hierarchy at " + CPUSET)
        return
    cgtest.run_with_daemon(make_tests)


if __name__ == "__main__":
    main()
