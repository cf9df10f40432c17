"""Engines that behave, or misbehave, on purpose: for testing pools without a real model.

Pass ``engine_factory="fakes.pools:open_fake"`` in a workload's options (``tests/`` on
``sys.path``, as pytest puts it for the tests beside it; spawned workers inherit it)::

    run_pool(("fake", {"engine_factory": "fakes.pools:open_fake",
                       "fault": "segfault", "fault_worker": 1}), processes=3, backend="onnxruntime")

Every worker's engine sleeps ``delay`` seconds per ``infer`` (``work="spin"``: burns the CPU
instead, like CPU inference). The worker whose index is ``fault_worker`` (default every worker)
misbehaves as ``fault`` says: ``raise-on-load``, ``hang-on-load``, ``raise`` / ``segfault`` /
``kill`` (SIGKILL, as the OOM killer) / ``exit`` / ``hang`` / ``hang-native`` (stuck in a C call
that holds the GIL, as a driver call can be) after ``fault_after`` inferences of the timed window
(warm-up calls do not count). It prints a line first so tests can check that the worker's last
output is reported. ``child=True``: every worker starts a child process of its own when it opens
its engine (as a library's helper process would), which sleeps until it is killed; ``child=
"detached"`` starts it in a session of its own (``start_new_session``, out of the worker's
process group), ``child="double-fork"`` as a daemon does (fork, ``setsid``, fork again, the middle
process exits: the helper's parent is gone before the pool ends).
"""

import os
import sys
import time
from typing import Any, Optional

from pytest_jetson.clock import WallClock
from pytest_jetson.engines.base import Engine
from pytest_jetson.errors import ModelError
from pytest_jetson.run.worker import window_started

WORKER_ENV = "PYTEST_JETSON_POOL_WORKER"

FAULTS = ("raise-on-load", "hang-on-load", "raise", "segfault", "kill", "exit", "hang", "hang-native")


def worker_index() -> Optional[int]:
    value = os.environ.get(WORKER_ENV)
    return None if value is None else int(value)


class FakeEngine(Engine):
    backend = "fake"

    def __init__(self, model: str, precision: str, batch: int, delay: float, work: str,
                 fault: Optional[str], fault_after: int) -> None:
        super().__init__()
        self.model = model
        self.name = f"{model}-{precision}-b{batch}"
        self.precision = precision
        self.batch = self.max_batch = batch
        self.delay = float(delay)
        self.work = work
        self.fault = fault
        self.fault_after = fault_after
        self.clock = WallClock()
        self.memory_bytes = 1 << 20
        self.calls = 0

    def infer(self, batch: Optional[int] = None) -> Any:
        if window_started():
            self.calls += 1
            if self.fault is not None and self.calls > self.fault_after:
                self._misbehave()
        if self.work == "spin":
            end = time.perf_counter() + self.delay
            while time.perf_counter() < end:
                pass
        elif self.delay > 0:
            time.sleep(self.delay)
        return None

    def _misbehave(self) -> None:
        print(f"fake engine {self.name}: about to {self.fault} after {self.calls - 1} calls", flush=True)
        if self.fault == "raise":
            raise RuntimeError(f"fake engine {self.name}: injected failure")
        if self.fault == "segfault":
            import ctypes

            ctypes.string_at(0)
        if self.fault == "kill":
            # what the kernel's OOM killer does
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault == "exit":
            os._exit(7)
        if self.fault == "hang":
            while True:
                time.sleep(3600)
        if self.fault == "hang-native":
            import ctypes

            # a PyDLL call keeps the GIL: no Python thread of this process runs again
            ctypes.PyDLL(None).sleep(3600)



def _daemon() -> int:
    """A helper detached the classic way; returns its pid once it runs."""
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read)
        os.setsid()
        helper = os.fork()
        if helper == 0:
            os.close(write)
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)"])
        os.write(write, str(helper).encode())
        os._exit(0)
    os.close(write)
    pid = int(os.read(read, 32) or b"0")
    os.close(read)
    os.waitpid(middle, 0)
    return pid


def open_fake(model: Any, *, backend: str = "fake", device: Any = None, seed: int = 0, processes: int = 1,
              precision: str = "fp16", batch: int = 1, delay: float = 0.001, work: str = "sleep",
              fault: Optional[str] = None, fault_worker: Optional[int] = None, fault_after: int = 0,
              load_s: float = 0.0, child: Any = False, **_: Any) -> FakeEngine:
    """Open a FakeEngine (the signature of ``open_engine``, plus the knobs above)."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"fault={fault!r} is not one of {', '.join(FAULTS)}")
    mine = fault_worker is None or fault_worker == worker_index()
    if load_s:
        time.sleep(load_s)
    if child:
        import subprocess

        if child == "double-fork":
            pid = _daemon()
            print(f"fake engine {model}: started daemon {pid}", flush=True)
        else:
            proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                    start_new_session=child == "detached")
            print(f"fake engine {model}: started child process {proc.pid}", flush=True)
    if mine and fault == "raise-on-load":
        print(f"fake engine {model}: cannot load", file=sys.stderr, flush=True)
        raise ModelError(f"fake model {model!r}: injected load failure")
    if mine and fault == "hang-on-load":
        print(f"fake engine {model}: hanging while loading", flush=True)
        while True:
            time.sleep(3600)
    in_window = fault if (mine and fault in ("raise", "segfault", "kill", "exit", "hang", "hang-native")) else None
    return FakeEngine(str(model), precision, batch, delay, work, in_window, fault_after)
