"""The Linux end of the process runtime: Pod sandboxes, containers, ``exec`` and ``port-forward`` inside them.

This file is run as a standalone script (``python -S nstools.py COMMAND SPEC``) and imports nothing but the
standard library, so a container's monitor costs a bare interpreter and nothing of raykube. The runtime imports it
as a module too, for :func:`setns` and the process-identity helpers.

Commands:

``pause SPEC``
    The Pod sandbox (the "pause container"): new network, UTS, IPC and mount namespaces; the hostname; a tmpfs per
    ``emptyDir: {medium: Memory}`` volume and for ``/dev/shm``, mounted only inside its own mount namespace; then it
    becomes ``sleep`` and holds the namespaces until it is killed. Nothing is mounted on the host, so nothing is left
    behind: the namespaces and their mounts go when their last process does.
``run SPEC``
    One container: joins the sandbox's namespaces, takes a private copy of its mount namespace and a new PID
    namespace, builds the root filesystem (an overlay of the host's ``/`` with a tmpfs upper layer, so the container
    writes nothing to the host; ``/dev``, ``/sys``, a fresh ``/proc``, the volumes, ``/etc/hosts``,
    ``/etc/resolv.conf`` and ``/etc/hostname``), then forks: the child chroots and execs the command as PID 1 of its
    PID namespace (when it exits the kernel kills whatever it left); the parent stays as the container's monitor,
    writes its output in the CRI log format and records the exit status.
``exec CONTAINER_DIR NAME [ARGS...]`` (also reached as a symlink named after the command, see the runtime)
    ``kubectl exec``: runs a command in a running container's namespaces, root and working directory, with the
    container's environment.
``port-forward PAUSE_PID PORT``
    ``kubectl port-forward``: connects to ``localhost:PORT`` inside the Pod's network namespace and copies bytes
    between that connection and stdin/stdout.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as dt
import json
import os
import selectors
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

# Each line of a CRI log is at most this long; longer output is split into partial ("P") lines, as the kubelet does.
CRI_MAX_LINE = 16 * 1024
EXEC_TARGET_ENV = "RAYKUBE_EXEC_CONTAINER"

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc  # noqa: PLW0603 - loaded once, on first use
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def setns(fd: int, nstype: int) -> None:
    _check(libc().setns(fd, nstype), f"setns({nstype:#x})")


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), f"unshare({flags:#x})")


def mount(source: str, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(
        libc().mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source} on {target} ({fstype or 'bind'})",
    )


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(libc().sethostname(raw, len(raw)), "sethostname")


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the PID, an identity
    that survives PID reuse. None if there is no such process (or it is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid: int, started: int) -> bool:
    return pid > 0 and start_time(pid) == started


def now_rfc3339() -> str:
    """RFC 3339 with nanoseconds in UTC, as the CRI log format and the Kubernetes API write times."""
    t = dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond * 1000:09d}Z"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


# ------------------------------------------------------------------------------------------------------------- pause
def pause(spec: dict[str, Any]) -> None:
    unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNS)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    sethostname(spec["hostname"])
    for tmpfs in spec.get("tmpfs", []):
        Path(tmpfs["path"]).mkdir(parents=True, exist_ok=True)
        options = "mode=1777" + (f",size={tmpfs['sizeBytes']}" if tmpfs.get("sizeBytes") else "")
        mount("tmpfs", tmpfs["path"], "tmpfs", MS_NOSUID | MS_NODEV, options)
    ready = Path(spec["readyFile"])
    _write_json(ready, {"pid": os.getpid(), "startTime": start_time(os.getpid())})
    os.execv("/bin/sleep", ["raykube-pause", "infinity"])


# ------------------------------------------------------------------------------------------------------------- run
def _join(pid: int, kinds: tuple[tuple[str, int], ...]) -> None:
    fds = [(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY), flag) for name, flag in kinds]
    for fd, flag in fds:
        setns(fd, flag)
        os.close(fd)


def _bind(source: str, target: Path, *, read_only: bool = False, recursive: bool = True) -> None:
    if Path(source).is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.touch()
    mount(source, str(target), None, MS_BIND | (MS_REC if recursive else 0))
    if read_only:
        mount("none", str(target), None, MS_BIND | MS_REMOUNT | MS_RDONLY | (MS_REC if recursive else 0))


_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def _make_dev(dev: Path) -> None:
    """A container's own ``/dev`` (a tmpfs with the usual device nodes bound in, as runc makes it), so nothing a
    container creates under ``/dev`` lands in the host's."""
    dev.mkdir(parents=True, exist_ok=True)
    mount("tmpfs", str(dev), "tmpfs", MS_NOSUID, "mode=755,size=65536k")
    for name in _DEVICES:
        (dev / name).touch()
        mount(f"/dev/{name}", str(dev / name), None, MS_BIND)
    (dev / "pts").mkdir()
    mount("/dev/pts", str(dev / "pts"), None, MS_BIND | MS_REC)
    (dev / "shm").mkdir(mode=0o1777)
    (dev / "mqueue").mkdir()
    for link, target in (
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        (dev / link).symlink_to(target)


def _inside(root: Path, path: str) -> Path:
    """``path`` of the container, as a path of the host below ``root``: symlinks on the way are followed as the
    container would see them (``/var/run`` -> ``/run`` stays inside ``root``), never out into the host."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    resolved = root
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if resolved != root:
                resolved = resolved.parent
            continue
        candidate = resolved / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise OSError(f"too many levels of symbolic links in {path}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                resolved = root
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        resolved = candidate
    return resolved


def _prepare_root(spec: dict[str, Any]) -> Path:
    layer, root = Path(spec["layerDir"]), Path(spec["rootDir"])
    layer.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    mount("tmpfs", str(layer), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    (layer / "upper").mkdir()
    (layer / "work").mkdir()
    mount("overlay", str(root), "overlay", 0, f"lowerdir=/,upperdir={layer / 'upper'},workdir={layer / 'work'}")
    _make_dev(root / "dev")
    _bind("/sys", root / "sys", read_only=True)
    if spec.get("tmp"):  # the container's own empty /tmp, as in an image, not the host's
        Path(spec["tmp"]).mkdir(parents=True, exist_ok=True)
        Path(spec["tmp"]).chmod(0o1777)
        _bind(spec["tmp"], _inside(root, "/tmp"))
    for path in spec.get("hostPaths", []):  # the image's files (its venv, its Python) at their own paths
        _bind(path, _inside(root, path), read_only=True)
    if spec.get("shm"):
        _bind(spec["shm"], _inside(root, "/dev/shm"))
    for item in spec.get("mounts", []):
        _bind(item["source"], _inside(root, item["target"]), read_only=bool(item.get("readOnly")))
    for name, source in spec.get("etc", {}).items():
        _bind(source, _inside(root, f"/etc/{name}"), recursive=False)
    for directory in spec.get("mkdirs", []):
        _inside(root, directory).mkdir(parents=True, exist_ok=True)
    for hidden in spec.get("hide", []):  # the sandbox's own state (its PKI, say) is none of the container's business
        target = _inside(root, hidden)
        if target.is_dir():
            mount("tmpfs", str(target), "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
    return root


class _CriLog:
    """The container's stdout and stderr, line by line, in the CRI log format (``<time> <stream> <F|P> <text>``)."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.pending = {"stdout": bytearray(), "stderr": bytearray()}

    def _emit(self, stream: str, data: bytes, tag: str) -> None:
        self.log.write(f"{now_rfc3339()} {stream} {tag} ".encode() + data + b"\n")

    def feed(self, stream: str, chunk: bytes) -> None:
        pending = self.pending[stream]
        pending.extend(chunk)
        while (newline := pending.find(b"\n")) >= 0:
            line = bytes(pending[:newline])
            del pending[: newline + 1]
            while len(line) > CRI_MAX_LINE:
                self._emit(stream, line[:CRI_MAX_LINE], "P")
                line = line[CRI_MAX_LINE:]
            self._emit(stream, line, "F")
        while len(pending) >= CRI_MAX_LINE:
            self._emit(stream, bytes(pending[:CRI_MAX_LINE]), "P")
            del pending[:CRI_MAX_LINE]

    def close(self, stream: str) -> None:
        if self.pending[stream]:
            self._emit(stream, bytes(self.pending[stream]), "F")
            self.pending[stream].clear()


def _child(spec: dict[str, Any], root: Path, out_w: int, err_w: int, errpipe_w: int) -> None:
    """PID 1 of the container: never returns."""
    try:
        mount("proc", str(root / "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        os.chroot(str(root))
        workdir = spec.get("workingDir") or "/"
        Path(workdir).mkdir(parents=True, exist_ok=True)
        os.chdir(workdir)
        os.setsid()
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        argv = spec["argv"]
        os.execvpe(argv[0], argv, spec["env"])
    except BaseException as exc:
        message = str(exc)
        if isinstance(exc, FileNotFoundError) and "argv" in spec:
            message = f'exec: "{spec["argv"][0]}": executable file not found in $PATH'
        elif isinstance(exc, PermissionError):
            message = f'exec: "{spec["argv"][0]}": permission denied'
        os.write(errpipe_w, message.encode(errors="replace")[:4000])
    os._exit(127)


def run(spec: dict[str, Any]) -> None:  # noqa: PLR0912, PLR0915 - one monitor loop, kept in one piece
    state = Path(spec["stateDir"])
    log_path = Path(spec["logFile"])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.touch()
    for ignored in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(ignored, signal.SIG_IGN)  # the monitor outlives its container; the runtime signals the container
    try:
        _join(int(spec["pausePid"]), (("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS), ("net", CLONE_NEWNET)))
        _join(int(spec["pausePid"]), (("mnt", CLONE_NEWNS),))
        unshare(CLONE_NEWNS | CLONE_NEWPID)
        mount("none", "/", None, MS_REC | MS_PRIVATE)
        root = _prepare_root(spec)
    except OSError as exc:
        _write_json(state / "exit.json", {"startError": f"creating the container: {exc}", "finishedAt": now_rfc3339()})
        return
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    errpipe_r, errpipe_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        for fd in (out_r, err_r, errpipe_r):
            os.close(fd)
        _child(spec, root, out_w, err_w, errpipe_w)
    started_at = now_rfc3339()
    for fd in (out_w, err_w, errpipe_w):
        os.close(fd)
    _write_json(state / "started.json", {"pid": pid, "startTime": start_time(pid), "startedAt": started_at})
    # One thread only: after unshare(CLONE_NEWPID) this process may not create threads.
    failure = b""
    status: int | None = None
    names = {out_r: "stdout", err_r: "stderr", errpipe_r: "start"}
    with log_path.open("ab", buffering=0) as log, selectors.DefaultSelector() as selector:
        cri = _CriLog(log)
        for fd in names:
            selector.register(fd, selectors.EVENT_READ)
        while names or status is None:
            if status is None:
                reaped, wait_status = os.waitpid(pid, os.WNOHANG)
                if reaped:
                    status = wait_status
            if not names:
                if status is None:
                    _, status = os.waitpid(pid, 0)
                break
            for key, _ in selector.select(timeout=0.5 if status is None else 2.0):
                chunk = os.read(key.fd, 65536)
                stream = names[key.fd]
                if chunk:
                    if stream == "start":
                        failure += chunk
                    else:
                        cri.feed(stream, chunk)
                    continue
                if stream != "start":
                    cri.close(stream)
                selector.unregister(key.fd)
                os.close(key.fd)
                del names[key.fd]
            if status is not None and names and not selector.select(timeout=0):
                # PID 1 is gone, so the kernel killed the rest of its PID namespace; whatever still holds the
                # pipes (nothing should) does not keep the container "running".
                break
    finished_at = now_rfc3339()  # the loop above ends only once the status is known
    if failure:
        _write_json(
            state / "exit.json",
            {"startError": failure.decode(errors="replace"), "startedAt": started_at, "finishedAt": finished_at},
        )
        return
    signum = int(os.WTERMSIG(status)) if os.WIFSIGNALED(status) else 0
    code = 128 + signum if signum else int(os.WEXITSTATUS(status))
    _write_json(
        state / "exit.json",
        {"exitCode": code, "signal": signum, "startedAt": started_at, "finishedAt": finished_at},
    )


# ------------------------------------------------------------------------------------------------------------- exec
def container_pid(container_dir: Path) -> int:
    started = json.loads((container_dir / "started.json").read_text())
    pid, start = int(started["pid"]), int(started["startTime"])
    if (container_dir / "exit.json").exists() or not alive(pid, start):
        raise ProcessLookupError("container is not running")
    return pid


def exec_in(container_dir: Path, argv: list[str]) -> None:
    """Replace this process with ``argv`` run inside the container (nsenter does the namespace work)."""
    try:
        pid = container_pid(container_dir)
    except (OSError, ValueError, KeyError) as exc:
        sys.stderr.write(f"error: cannot exec in the container ({container_dir.name}): {exc}\n")
        sys.exit(126)
    env = json.loads((container_dir / "env.json").read_text())
    nsenter = "/usr/bin/nsenter" if Path("/usr/bin/nsenter").exists() else "nsenter"
    flags = ["--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd"]
    os.execvpe(nsenter, [nsenter, f"--target={pid}", *flags, "--", *argv], env)


# ----------------------------------------------------------------------------------------------------- port-forward
def port_forward(pause_pid: int, port: int) -> None:
    _join(pause_pid, (("net", CLONE_NEWNET),))
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as exc:
        sys.stderr.write(f"error: connecting to localhost:{port} in the Pod: {exc}\n")
        sys.exit(1)
    conn.settimeout(None)

    def upstream() -> None:
        with contextlib.suppress(OSError):
            while data := os.read(0, 65536):
                conn.sendall(data)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    try:
        while data := conn.recv(65536):
            os.write(1, data)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    name = Path(argv[0]).name
    if name not in ("nstools.py", "nstools"):  # reached through a symlink named after a command: kubectl exec
        target = os.environ.get(EXEC_TARGET_ENV)
        if not target:
            sys.stderr.write(f"error: {name}: not a container of the process runtime ({EXEC_TARGET_ENV} unset)\n")
            sys.exit(126)
        exec_in(Path(target), [name, *argv[1:]])
    if len(argv) < 2:
        sys.stderr.write(__doc__ or "")
        sys.exit(2)
    command, rest = argv[1], argv[2:]
    if command == "pause":
        pause(json.loads(Path(rest[0]).read_text()))
    elif command == "run":
        run(json.loads(Path(rest[0]).read_text()))
    elif command == "exec":
        exec_in(Path(rest[0]), rest[1:])
    elif command == "port-forward":
        port_forward(int(rest[0]), int(rest[1]))
    else:
        sys.stderr.write(f"unknown command {command!r}\n")
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
