"""The real jetson-stats service (``jtop.service.JtopServer``) running over a recorded board tree.

The service reads absolute paths (/sys, /proc, /etc/nv_tegra_release, /etc/nvpmodel.conf, ...)
and must run as root on an aarch64 Jetson. This module runs it in a child process whose view of
those paths is the board tree: the board's paths are remapped at the Python boundary (``open``,
``os.stat``, ``os.listdir``, ...), the host's own files stay as they are (``/proc/uptime`` is the
clock the service stamps its data with, so it stays live), ``platform.machine()`` answers
``aarch64``, the root and group checks pass, and NVIDIA's ``nvpmodel`` and ``jetson_clocks`` are
the fakes in ``tests/fakes/bin`` reading the same tree. Everything else, from reading the sysfs
files to the multiprocessing manager the client talks to, is jetson-stats' own code.

Used by the tests::

    service = JtopService(tree, tmp_path)         # starts it; .socket is where it listens
    ...                                            # point jtop.service.JTOP_PIPE at service.socket
    service.pause() / service.resume()             # SIGSTOP/SIGCONT the service's reader
    service.stop()

Run alone: ``python tests/jtop_service.py TREE SOCKET CONFIG_DIR [--version X.Y.Z]``.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
FAKE_BIN = HERE / "fakes" / "bin"
#: Absolute paths that are the board's, not the host's.
BOARD_PREFIXES = ("/sys/", "/proc/", "/etc/nv_tegra_release", "/etc/nvpmodel", "/etc/fstab",
                  "/var/lib/nvpmodel/", "/dev/i2c", "/usr/local/cuda/")
#: Host paths that stay live inside those prefixes.
HOST_PATHS = ("/proc/uptime", "/proc/self/", "/proc/thread-self/", "/proc/sys/")
#: NVIDIA tools the service runs by absolute path.
TOOLS = {"/usr/bin/jetson_clocks": str(FAKE_BIN / "jetson_clocks")}


def _install(tree: str, config_dir: str) -> None:
    """Point this process's view of the board's paths at ``tree`` (child process only)."""
    import builtins
    import io
    import platform
    import subprocess as sp

    def remap(path):
        if isinstance(path, int):
            return path
        raw = os.fspath(path)
        text = raw.decode() if isinstance(raw, bytes) else raw
        if text in TOOLS:
            return TOOLS[text]
        if not text.startswith("/") or text.startswith(tree) or text.startswith(HOST_PATHS):
            return path
        if text.startswith(BOARD_PREFIXES) or text in ("/sys", "/proc"):
            mapped = tree + text
            return mapped.encode() if isinstance(raw, bytes) else mapped
        return path

    def wrap1(fn):
        def inner(path, *args, **kwargs):
            return fn(remap(path), *args, **kwargs)
        inner.__wrapped__ = fn
        return inner

    builtins.open = io.open = wrap1(io.open)
    for name in ("open", "stat", "lstat", "listdir", "scandir", "access", "readlink", "statvfs"):
        setattr(os, name, wrap1(getattr(os, name)))

    base_popen = sp.Popen

    class Popen(base_popen):  # type: ignore[misc, valid-type]
        def __init__(self, args, *a, **kw):
            if isinstance(args, (list, tuple)) and args:
                args = [remap(args[0])] + list(args[1:])
            super().__init__(args, *a, **kw)

    sp.Popen = Popen
    platform.machine = lambda: "aarch64"
    if os.getuid() != 0:
        os.getuid = lambda: 0  # the service refuses to start without root
        os.chown = lambda *a, **k: None

    import jtop.core.config as config

    config.get_config_service = lambda data_folder=None: config_dir


def serve(tree: str, socket: str, config_dir: str, version: Optional[str]) -> None:
    import multiprocessing

    # The service's processes must inherit this view of the board (Python 3.14 no longer forks
    # by default).
    multiprocessing.set_start_method("fork", force=True)
    os.environ["PYTEST_JETSON_SYSROOT"] = tree
    os.environ["PATH"] = f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    _install(tree.rstrip("/"), config_dir)
    import grp

    import jtop.service as service

    service.JTOP_PIPE = socket
    service.getgrnam = lambda name: grp.getgrgid(os.getgid())
    if version is not None:
        # A service left running from another jetson-stats release answers with its version.
        real = service.get_var
        service.get_var = lambda regex: version if regex is service.VERSION_RE else real(regex)
    server = service.JtopServer(force=True)
    server.start()
    Path(socket).with_name("reader.pid").write_text(str(server.pid))
    try:
        server.join()
    finally:
        server.close()


class JtopService:
    """The service over ``tree`` (copied, so nvpmodel -m and jetson_clocks can write), listening
    on a socket under ``workdir``."""

    def __init__(self, tree: Path, workdir: Path, version: Optional[str] = None, timeout: float = 30.0) -> None:
        self.workdir = Path(workdir)
        self.tree = self.workdir / "tree"
        shutil.copytree(tree, self.tree, symlinks=True)
        self.socket = str(self.workdir / "jtop.sock")
        config_dir = self.workdir / "config"
        config_dir.mkdir()
        self.log = open(self.workdir / "service.log", "w")
        cmd = [sys.executable, str(Path(__file__).resolve()), str(self.tree), self.socket, str(config_dir)]
        if version:
            cmd += ["--version", version]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not (self.workdir / "reader.pid").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the jtop service did not start:\n{self.output()}")
            time.sleep(0.05)

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.workdir / "service.log").read_text(errors="replace")

    def reader_pid(self) -> int:
        """The service's reader process (the one that reads the board's files on a timer), as
        the service wrote it beside its socket."""
        return int((self.workdir / "reader.pid").read_text())

    def pause(self) -> None:
        """Stop the service's reader: the multiprocessing manager keeps answering with the last
        data it holds, as on a board whose jtop service stalls."""
        os.kill(self.reader_pid(), signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.reader_pid(), signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        if os.path.exists(self.socket):
            os.unlink(self.socket)


if __name__ == "__main__":
    argv = sys.argv[1:]
    version = None
    if "--version" in argv:
        i = argv.index("--version")
        version = argv[i + 1]
        del argv[i:i + 2]
    serve(argv[0], argv[1], argv[2], version)
