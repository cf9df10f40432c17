"""The ``host`` source: CPU and memory of this process and its children. Always available.

It measures no power and no GPU. On Linux it reads ``/proc`` directly, because at 100 Hz the
cost of the sampler itself matters; elsewhere it uses psutil. The list of child processes is
refreshed once a second, not on every sample.
"""

import os
import time
from typing import Dict, List, Optional, Tuple

from .base import Reading, Source
from .openfiles import OpenFiles

CHILD_REFRESH_S = 1.0


def _proc_children(pid: int) -> Optional[List[int]]:
    """Direct children from /proc/PID/task/*/children; None when the kernel lacks the file."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: List[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            continue
    return out


class HostSource(Source):
    """Process-tree CPU (percent of one core, summed over processes) and resident memory."""

    name = "host"
    memory_scope = "process tree RSS"

    def __init__(self, pid: Optional[int] = None, children: bool = True) -> None:
        self.pid = pid or os.getpid()
        self.children = children
        self._tree: List[int] = [self.pid]
        self._tree_at = -1e9
        self._last: Dict[int, float] = {}
        self._last_t: Optional[float] = None
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._procfs = os.path.exists(f"/proc/{self.pid}/stat")
        self._psutil: Dict[int, object] = {}
        self._open = OpenFiles()  # /proc/<pid>/stat by pid

    def stop(self) -> None:
        self._open.close_all()

    def start(self, interval: float) -> None:
        self._last, self._last_t = {}, None
        self._tree_at = -1e9

    # -- the process tree ------------------------------------------------------------------
    def _refresh_tree(self, now: float) -> None:
        if not self.children or now - self._tree_at < CHILD_REFRESH_S:
            return
        self._tree_at = now
        if self._procfs:
            tree, todo = [self.pid], [self.pid]
            while todo:
                kids = _proc_children(todo.pop())
                if kids is None:
                    break
                tree.extend(kids)
                todo.extend(kids)
            else:
                for gone in set(self._open.keys()) - set(tree):
                    self._open.close(gone)
                self._tree = tree
                return
        import psutil

        try:
            proc = psutil.Process(self.pid)
            self._tree = [self.pid] + [c.pid for c in proc.children(recursive=True)]
        except psutil.Error:
            self._tree = [self.pid]

    # -- one process -----------------------------------------------------------------------
    def _read_proc(self, pid: int) -> Optional[Tuple[float, float]]:
        """(cpu seconds, rss bytes) of one process, None when it is gone."""
        # The stat file stays open: an open and a close a sample are most of this source's cost
        stat = self._open.pread(pid, f"/proc/{pid}/stat", 4096)
        if not stat:
            self._open.close(pid)
            return None
        # Field 2 (comm) may hold spaces; fields after the last ')' are fixed.
        fields = stat[stat.rfind(b")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / self._tick
        rss = int(fields[21]) * self._page
        return cpu, float(rss)

    def _read_psutil(self, pid: int) -> Optional[Tuple[float, float]]:
        import psutil

        try:
            proc = self._psutil.get(pid)
            if proc is None:
                proc = self._psutil[pid] = psutil.Process(pid)
            with proc.oneshot():  # type: ignore[attr-defined]
                t = proc.cpu_times()  # type: ignore[attr-defined]
                return t.user + t.system, float(proc.memory_info().rss)  # type: ignore[attr-defined]
        except psutil.Error:
            self._psutil.pop(pid, None)
            return None

    def read(self, now: float) -> Reading:
        self._refresh_tree(time.perf_counter())
        read_one = self._read_proc if self._procfs else self._read_psutil
        cpu_now: Dict[int, float] = {}
        rss = 0.0
        for pid in self._tree:
            got = read_one(pid)
            if got is None:
                continue
            cpu_now[pid], r = got
            rss += r
        util: Optional[float] = None
        if self._last_t is not None and now > self._last_t:
            used = sum(c - self._last.get(pid, c) for pid, c in cpu_now.items())
            util = max(0.0, 100.0 * used / (now - self._last_t))
        self._last, self._last_t = cpu_now, now
        return Reading(t=now, memory_bytes=rss, cpu_util=util)

    def collect(self, now: float) -> List[Reading]:
        return [self.read(now)]
