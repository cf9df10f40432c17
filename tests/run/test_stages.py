"""perf.stage: named stages of a measured function, their errors, NVTX ranges and GPU syncs."""

import sys
import types

import pytest

import pytest_jetson
from pytest_jetson.clock import SimClock
from pytest_jetson.errors import ConfigError
from pytest_jetson.run import gpu_sync, stages
from pytest_jetson.run.function import FunctionWorkload
from pytest_jetson.run.recorder import Recorder
from pytest_jetson.run.stages import ACTIVE, Stage, StageLog


def _run(fn, iterations=10, clock=None, board=False):
    """Measure ``fn`` on a fresh virtual clock (no host scaling: only what ``fn`` advances)."""
    clock = clock or SimClock()
    w = FunctionWorkload(fn, clock=clock, board=board)
    token = ACTIVE.set(w.stages)
    try:
        lat, ends = [], []
        w.timed_run(1, clock.now(), None, iterations, lat, ends, None)
    finally:
        ACTIVE.reset(token)
    return w, lat


def test_stage_times_are_summed_per_call_and_only_calls_where_it_ran_count():
    clock = SimClock()
    n = [0]

    def pipeline():
        n[0] += 1
        with pytest_jetson.stage("pre"):
            clock.advance(0.001)
        for _ in range(3):
            with pytest_jetson.stage("post"):
                clock.advance(0.002)
        if n[0] % 2:
            with pytest_jetson.stage("sometimes"):
                clock.advance(0.004)

    w, lat = _run(pipeline, iterations=10, clock=clock)
    per = w.stages.per_stage(1, 10)
    assert per["pre"] == pytest.approx([0.001] * 10)
    assert per["post"] == pytest.approx([0.006] * 10)
    assert per["sometimes"] == pytest.approx([0.004] * 5)


def test_measurement_stages_cover_the_measured_calls_only():
    perf = Recorder()
    calls = [0]

    def pipeline():
        calls[0] += 1
        with perf.stage("post"):
            pass
        if calls[0] == 1:  # the first warm-up call runs a stage the measured ones do not
            with perf.stage("warm"):
                pass

    m = perf.measure(pipeline, iterations=20, warmup="0.001s")
    assert set(m.stages) == {"post"}
    post = m.stages["post"]
    assert post.iterations == 20 and post.extra["calls"] == 20 and post.extra["of_calls"] == 20
    assert (post.batch, post.items, post.duration, post.clock) == (m.batch, m.items, m.duration, m.clock)
    assert all(s <= t for s, t in zip(post.latencies, m.latencies))


def test_the_decorator_form_times_every_call():
    clock = SimClock()

    @pytest_jetson.stage("decode")
    def decode(k):
        clock.advance(0.001 * k)
        return k

    assert decode.__name__ == "decode"
    w, _ = _run(lambda: decode(1) + decode(2), iterations=4, clock=clock)
    assert w.stages.per_stage(1, 4)["decode"] == pytest.approx([0.003] * 4)


def test_outside_a_measurement_a_stage_does_nothing():
    with pytest_jetson.stage("post") as s:
        with pytest_jetson.stage("post"):  # not even the nesting check: nothing is recorded
            pass
    assert s._log is None


def test_nested_stages_of_other_names_are_allowed():
    clock = SimClock()

    def pipeline():
        with pytest_jetson.stage("outer"):
            clock.advance(0.001)
            with pytest_jetson.stage("inner"):
                clock.advance(0.002)

    w, _ = _run(pipeline, iterations=2, clock=clock)
    per = w.stages.per_stage(1, 2)
    assert per["outer"] == pytest.approx([0.003] * 2) and per["inner"] == pytest.approx([0.002] * 2)


@pytest.mark.parametrize("name", ["", "  ", None, 3, b"post"])
def test_a_stage_name_must_be_a_non_empty_string(name):
    with pytest.raises(ConfigError, match=r"perf.stage\(.*\): a stage's name must be a non-empty string"):
        pytest_jetson.stage(name)


def test_a_stage_nested_under_its_own_name_is_an_error_naming_it():
    def pipeline():
        with pytest_jetson.stage("post"):
            with pytest_jetson.stage("post"):
                pass

    with pytest.raises(ConfigError, match=r"perf.stage\('post'\) entered while it is already open"):
        _run(pipeline, iterations=1)


def test_the_same_stage_object_entered_twice_is_an_error():
    s = pytest_jetson.stage("post")

    def pipeline():
        with s:
            with s:
                pass

    with pytest.raises(ConfigError, match=r"perf.stage\('post'\) entered while it is already open"):
        _run(pipeline, iterations=1)


def test_the_same_stage_object_may_be_used_again_once_closed():
    s = pytest_jetson.stage("post")

    def pipeline():
        with s:
            pass
        with s:
            pass

    w, _ = _run(pipeline, iterations=3)
    assert w.stages.per_stage(1, 3)["post"] == [0.0, 0.0, 0.0]


def test_a_stage_left_open_when_the_call_returns_is_an_error():
    def pipeline():
        pytest_jetson.stage("post").__enter__()

    with pytest.raises(ConfigError, match=r"perf.stage\('post'\) was still open"):
        _run(pipeline, iterations=1)


def test_a_stage_left_by_an_exception_lets_it_through_with_a_note():
    perf = Recorder()

    def pipeline():
        with perf.stage("nms"):
            raise KeyError("class 91")

    with pytest.raises(KeyError) as info:
        perf.measure(pipeline, iterations=2, warmup=0)
    assert info.value.args == ("class 91",)
    assert any("perf.stage('nms')" in note for note in getattr(info.value, "__notes__", []))
    assert perf.measurements == []


def test_recursion_into_a_decorated_stage_is_nesting_under_its_own_name():
    @pytest_jetson.stage("walk")
    def walk(n):
        return walk(n - 1) if n else 0

    with pytest.raises(ConfigError, match="'walk'"):
        _run(lambda: walk(2), iterations=1)


# -- NVTX ranges and device syncs on a board ----------------------------------------------------------
class Recording:
    """Stands in for a GPU library's sync and for nvtx: records the order of events."""

    def __init__(self, clock):
        self.events = []
        self.clock = clock

    def sync(self):
        self.clock.advance(0.005)  # the stage's queued GPU work finishes here
        self.events.append(("sync", self.clock.now()))


def test_a_stage_ends_after_the_sync_so_queued_gpu_work_counts(monkeypatch):
    clock = SimClock()
    rec = Recording(clock)
    log = StageLog(clock, board=True)
    monkeypatch.setattr(log, "nvtx", None)
    s = Stage("post", sync=rec.sync)
    token = ACTIVE.set(log)
    try:
        with s:
            clock.advance(0.001)  # enqueue
    finally:
        ACTIVE.reset(token)
    assert log.current["post"] == pytest.approx(0.006)  # the sync ran before the end read


def test_on_a_board_the_default_sync_is_the_imported_librarys(monkeypatch):
    clock = SimClock()
    rec = Recording(clock)
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, synchronize=rec.sync)
    for name in ("cupy", "pycuda.driver", "cuda.bindings.runtime", "cuda.cudart"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert gpu_sync.choose(None, board=True) == rec.sync
    assert gpu_sync.choose(None, board=False) is None  # the simulator and hosts: none
    assert gpu_sync.choose(False, board=True) is None
    log = StageLog(clock, board=True)
    log.nvtx = None
    token = ACTIVE.set(log)
    try:
        with Stage("post"):
            pass
    finally:
        ACTIVE.reset(token)
    assert rec.events and log.current["post"] == pytest.approx(0.005)


def test_the_sync_finders_use_the_libraries_real_names(monkeypatch):
    called = []
    for name in ("torch", "cupy", "pycuda.driver", "cuda.bindings.runtime", "cuda.cudart"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert gpu_sync.imported_syncs() == []
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(deviceSynchronize=lambda: called.append("cupy")))
    driver = types.ModuleType("pycuda.driver")
    driver.Context = types.SimpleNamespace(get_current=lambda: object(), synchronize=lambda: called.append("pycuda"))
    cudart = types.ModuleType("cuda.bindings.runtime")
    cudart.cudaDeviceSynchronize = lambda: called.append("cuda-python") or (0,)
    torch = types.ModuleType("torch")  # imported, but CUDA never initialised: no sync, no context made
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: False, synchronize=lambda: called.append("torch"))
    for name, module in (("cupy", cupy), ("pycuda.driver", driver), ("cuda.bindings.runtime", cudart), ("torch", torch)):
        monkeypatch.setitem(sys.modules, name, module)
    gpu_sync.device_sync()()
    assert called == ["cupy", "pycuda", "cuda-python"]


def test_the_pycuda_surface_has_the_names_the_finder_uses():
    import json
    from pathlib import Path

    surfaces = Path(__file__).resolve().parents[1] / "conformance" / "surfaces"
    for path in surfaces.glob("pycuda-*.json"):
        names = json.loads(path.read_text())
        text = json.dumps(names)
        assert '"Context.synchronize"' in text and '"Context.get_current"' in text, path.name


def test_on_a_board_a_stage_is_an_nvtx_range(monkeypatch):
    ranges = []
    nvtx = types.SimpleNamespace(push_range=lambda message: ranges.append(("push", message)),
                                 pop_range=lambda: ranges.append(("pop",)))
    monkeypatch.setattr(stages, "_NVTX", [nvtx])
    clock = SimClock()
    log = StageLog(clock, board=True)
    log._default_sync = None
    log.board = False  # no GPU library here
    token = ACTIVE.set(log)
    try:
        with Stage("pre"):
            with Stage("resize"):
                pass
    finally:
        ACTIVE.reset(token)
    assert ranges == [("push", "pre"), ("push", "resize"), ("pop",), ("pop",)]
    assert StageLog(clock, board=False).nvtx is None  # the simulator: no ranges


def test_without_the_nvtx_package_a_board_has_no_ranges(monkeypatch):
    monkeypatch.setattr(stages, "_NVTX", [])
    monkeypatch.setattr(stages.importlib.util, "find_spec", lambda name: None)
    assert StageLog(SimClock(), board=True).nvtx is None


def test_the_stage_of_pytest_jetson_is_perf_stage():
    assert pytest_jetson.stage is stages.stage
    assert isinstance(Recorder().stage("x"), Stage)
    with pytest.raises(ConfigError, match="sync=3"):
        pytest_jetson.stage("x", sync=3)


def test_on_a_board_a_gpu_library_imported_late_is_still_synchronised(monkeypatch):
    for name in ("torch", "cupy", "pycuda.driver", "cuda.bindings.runtime", "cuda.cudart"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    clock = SimClock()
    rec = Recording(clock)
    log = StageLog(clock, board=True)
    log.nvtx = None
    token = ACTIVE.set(log)
    try:
        with Stage("pre"):
            pass  # no GPU library yet
        torch = types.ModuleType("torch")
        torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, synchronize=rec.sync)
        monkeypatch.setitem(sys.modules, "torch", torch)
        with Stage("post"):
            pass
    finally:
        ACTIVE.reset(token)
    assert len(rec.events) == 1 and log.current["post"] == pytest.approx(0.005)


def test_a_long_pipeline_keeps_its_stage_times_in_8_byte_columns():
    # a dict and a tuple per call held a million-call pipeline's stages in about 300 MB
    import tracemalloc

    clock = SimClock()

    def pipeline():
        with pytest_jetson.stage("pre"):
            clock.advance(0.001)
        with pytest_jetson.stage("infer"):
            clock.advance(0.002)

    _run(pipeline, iterations=10)  # imports and first-use caches outside the window
    tracemalloc.start()
    try:
        w, _ = _run(pipeline, iterations=20_000)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_call = w.stages.per_stage(0, 10**9)
    assert [len(per_call[s]) for s in ("pre", "infer")] == [20_000, 20_000]
    # two stages: a call index and seconds each (32 bytes), the latencies and end times (16)
    assert held / 20_000 < 100
