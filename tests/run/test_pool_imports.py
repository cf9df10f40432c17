"""What a pool worker imports: a worker measuring an engine that needs neither numpy nor the model
zoo imports neither (each costs every worker's start-up, once per pool); nor hashlib (OpenSSL) for
hashes it never takes, nor multiprocessing's semaphores and shared memory (the pool's barriers
are its parent's messages)."""

import textwrap

from pytest_jetson.run.pool import run_pool

HEAVY = ("numpy", "pytest_jetson.models.zoo", "filelock", "hashlib", "multiprocessing.synchronize",
         "multiprocessing.sharedctypes")

ENGINE = textwrap.dedent(f"""
    import sys

    from pytest_jetson.clock import WallClock
    from pytest_jetson.engines.base import Engine


    class HostEngine(Engine):
        '''An engine of plain Python on the wall clock, as a user's host-side backend is.'''

        backend = "host"

        def __init__(self):
            super().__init__()
            self.name, self.model, self.precision, self.clock = "host-fp32-b1", "host", "fp32", WallClock()

        def _infer(self, batch):
            return sum(range(100))

        def measurement_extra(self, batch):
            # called by the harness once the window is over, in the worker
            return {{"heavy_modules": sorted(m for m in {HEAVY!r} if m in sys.modules)}}


    def open_host(model, **options):
        return HostEngine()
""")


def test_a_pool_worker_of_a_host_engine_imports_no_numpy_zoo_file_locks_hashlib_or_semaphores(tmp_path, monkeypatch):
    (tmp_path / "host_engine.py").write_text(ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers inherit the parent's sys.path
    m = run_pool(("host", {"engine_factory": "host_engine:open_host"}), processes=2, backend="onnxruntime",
                 duration="0.05s", warmup=0)
    assert [w.extra["heavy_modules"] for w in m.workers] == [[], []]
    assert all(w.iterations > 0 and w.latency_p50 is not None for w in m.workers)
