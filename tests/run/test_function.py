"""perf.measure(fn): a user's function measured by the harness like an engine."""

import itertools
import json
import traceback

import numpy as np
import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.context import Context
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines.base import Engine
from pytest_jetson.errors import ConfigError
from pytest_jetson.run.function import FunctionWorkload
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.run.recorder import Recorder
from pytest_jetson.settings import Settings


class StepEngine(Engine):
    """An engine on a virtual clock taking a fixed time per call."""

    backend = "scripted"

    def __init__(self, clock, step=0.01):
        super().__init__()
        self.name = self.model = "step"
        self.precision = "fp16"
        self.clock = clock
        self.step = step

    def _infer(self, batch):
        self.clock.advance(self.step)


def _sim_context(**kw):
    return Context.create(Settings(telemetry="none", **kw), simulated("orin-nano"))


def test_a_function_is_measured_and_recorded_with_its_name_and_items():
    perf = Recorder()
    calls = []

    def decode(x=None):
        calls.append(x)

    m = perf.measure(decode, items=4, iterations=50, warmup=0)
    assert perf.measurements == [m]
    assert m.name == m.model == "test_a_function_is_measured_and_recorded_with_its_name_and_items.<locals>.decode"
    assert m.batch == 4 and m.items == 200 and m.iterations == 50
    assert len(calls) == 50 and calls[0] is None  # no inputs: called with no argument
    assert m.clock == "wall" and m.precision == "" and m.backend == "host"
    assert m.environment["batch"] == 4 and m.environment["model"] == m.name
    assert m.extra["timing"]["host_scale"] == 1.0
    assert m.extra["function"] == m.name


def test_name_overrides_the_qualified_name():
    m = Recorder().measure(lambda: None, iterations=3, warmup=0, name="pipeline")
    assert m.name == "pipeline"


def test_inputs_are_cycled_one_per_call_and_fetched_outside_the_call():
    seen = []
    frames = np.arange(3 * 2).reshape(3, 2)
    m = Recorder().measure(lambda x: seen.append(int(x[0])), inputs=frames, iterations=7, warmup=0)
    assert seen == [0, 2, 4, 0, 2, 4, 0]
    assert m.extra["inputs"] == 3


def test_a_generator_of_inputs_is_read_lazily():
    made = []

    def frames():
        for i in itertools.count():
            made.append(i)
            yield i

    seen = []
    Recorder().measure(seen.append, inputs=frames(), iterations=5, warmup=0)
    assert seen == [0, 1, 2, 3, 4]
    assert len(made) == 5  # an endless generator: never materialised


def test_an_iterator_that_runs_out_is_a_clear_error():
    with pytest.raises(ConfigError, match="ran out after 2 inputs"):
        Recorder().measure(lambda x: None, inputs=iter([1, 2]), iterations=5, warmup=0)


def test_input_fetch_is_not_timed():
    clock = SimClock()

    def slow_inputs():
        while True:
            clock.advance(1.0)  # fetching costs a virtual second
            yield 0

    w = FunctionWorkload(lambda x: clock.advance(0.01), inputs=slow_inputs(), clock=clock)
    lat, ends = [], []
    w._run_fed(clock.now(), None, 5, lat, ends)
    assert lat == pytest.approx([0.01] * 5)


@pytest.mark.parametrize("items", [0, -1, 2.5, "4", True, [2]])
def test_items_must_be_a_positive_whole_number(items):
    with pytest.raises(ConfigError, match=r"items=.* is not a positive whole number"):
        Recorder().measure(lambda: None, items=items, iterations=1, warmup=0)


def test_items_and_inputs_are_for_functions_not_engines():
    ctx = _sim_context()
    with pytest.raises(ConfigError, match="items= is for functions"):
        Recorder(ctx).measure(StepEngine(ctx.clock), items=4, iterations=1)


def test_an_engine_still_goes_the_engine_way():
    ctx = _sim_context()
    m = Recorder(ctx).measure(StepEngine(ctx.clock), iterations=10, warmup=0)
    assert m.latencies == pytest.approx([0.01] * 10)
    assert m.precision == "fp16" and "timing" not in m.extra and m.stages == {}


def test_something_neither_engine_nor_callable_is_a_clear_error():
    with pytest.raises(ConfigError, match="takes an engine .* or a function to call, not int"):
        Recorder().measure(42)


def test_a_raising_function_records_nothing_and_shows_its_own_frame_first():
    perf = Recorder()

    def postprocess():
        raise ValueError("bad box")

    with pytest.raises(ValueError, match="bad box") as info:
        perf.measure(postprocess, iterations=3, warmup=0)
    assert perf.measurements == []
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    # the recorder's frame (hidden from pytest by __tracebackhide__), then the function's own
    assert frames[-1] == "postprocess"
    assert not any(name in ("timed_run", "_run_back_to_back", "until", "fixed") for name in frames)


def test_on_the_virtual_clock_engine_time_inside_the_function_is_the_call_time():
    ctx = _sim_context()
    engine = StepEngine(ctx.clock, step=0.02)

    def pipeline():
        engine.infer()
        engine.infer()

    m = Recorder(ctx).measure(pipeline, iterations=20, warmup=0)
    assert m.clock == "virtual" and m.backend == "simulated"
    # two engine calls plus a little host Python, scaled: never less than the engines' time
    assert min(m.latencies) >= 0.04
    assert m.extra["timing"]["host_scaled_s"] < 0.01
    assert m.extra["timing"]["simulated_s"] == pytest.approx(0.04, rel=0.1)


def test_duration_mode_stops_on_the_virtual_clock():
    ctx = _sim_context()
    engine = StepEngine(ctx.clock, step=0.01)
    m = Recorder(ctx).measure(engine.infer, duration="1s", warmup="0.1s")
    assert m.duration == pytest.approx(1.0, abs=0.02)
    assert 90 <= m.iterations <= 100


def test_a_function_measurement_round_trips_through_json():
    ctx = _sim_context()
    engine = StepEngine(ctx.clock)
    perf = Recorder(ctx)

    def pipeline():
        with perf.stage("infer"):
            engine.infer()

    m = perf.measure(pipeline, iterations=5, warmup=0)
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.extra["timing"] == m.extra["timing"]
    assert back.stages["infer"].latencies == pytest.approx(m.stages["infer"].latencies)


def test_the_gates_extension_extends_a_function_measurement():
    ctx = _sim_context()
    engine = StepEngine(ctx.clock, step=0.01)
    asked = []

    def extend(so_far, measured):
        asked.append(measured)
        return 1.0 if measured < 2 else None

    m = Recorder(ctx).measure(engine.infer, duration="0.5s", warmup=0, extend=extend)
    assert asked == [1.0, 2.0]
    assert m.duration == pytest.approx(1.0, abs=0.02)


def test_a_loop_of_its_own_prepares_then_calls():
    seen = []
    w = FunctionWorkload(seen.append, inputs=["a", "b"])
    assert w.prepare() == "a"
    w.call()  # the readied input
    w.call()  # nothing readied: fetched now
    w.call("z")  # given
    assert seen == ["a", "b", "z"] and w.calls == 3
