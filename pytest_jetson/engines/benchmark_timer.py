"""pytest-benchmark on the simulated device: time ``benchmark(engine.infer, batch)`` on the virtual
clock, and the Jetson fields of pytest-benchmark's ``machine_info``.

pytest-benchmark times with a wall-clock timer chosen when its fixture is made. A simulated
``infer`` costs microseconds of real time but advances the virtual clock by the simulated latency,
so the fixture must read the engine's clock instead. The switch happens per call, only when the
function benchmarked is the ``infer`` (or any bound method) of an engine on a virtual clock, so
benchmarks of anything else keep the wall clock. This relies on two private names of
pytest-benchmark (``_raw``/``_raw_pedantic`` and the ``_precisions`` cache); where they are
missing the fixture is left untouched.
"""

from typing import Any, Dict, Optional

#: The virtual clock moves in whole simulated iterations; a nanosecond stands in for its
#: resolution so pytest-benchmark does not spin trying to measure it (it never moves on its own).
VIRTUAL_PRECISION = 1e-9


class VirtualTimer:
    """A timer callable reading a virtual clock, named for pytest-benchmark's JSON."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.__name__ = "pytest_jetson.virtual_clock"

    def __call__(self) -> float:
        return self.clock.now()

    def __repr__(self) -> str:
        return "pytest_jetson.virtual_clock"


def virtual_engine_of(function: Any) -> Optional[Any]:
    """The engine behind ``engine.infer`` (any bound method) when its clock is virtual."""
    owner = getattr(function, "__self__", None)
    clock = getattr(owner, "clock", None)
    if clock is not None and getattr(clock, "kind", None) == "virtual":
        return owner
    return None


def _use_clock(fixture: Any, engine: Any) -> None:
    timer = VirtualTimer(engine.clock)
    type(fixture)._precisions[timer] = VIRTUAL_PRECISION
    fixture._timer = timer
    info = getattr(fixture, "extra_info", None)
    if isinstance(info, dict):
        info["jetson"] = {
            "clock": "virtual", "engine": getattr(engine, "name", None),
            "backend": getattr(engine, "backend", None), "model": getattr(engine, "model", None),
            "precision": getattr(engine, "precision", None), "batch": getattr(engine, "batch", None),
        }


def install(fixture: Any) -> bool:
    """Make a pytest-benchmark fixture time simulated engines on their virtual clock.

    Returns False (and changes nothing) when the fixture lacks the internals this needs.
    """
    if getattr(fixture, "_jetson_virtual_timer", False):
        return True
    precisions = getattr(type(fixture), "_precisions", None)
    if not isinstance(precisions, dict) or not hasattr(fixture, "_timer"):
        return False
    patched = False
    for attr in ("_raw", "_raw_pedantic"):
        original = getattr(fixture, attr, None)
        if original is None:
            continue

        def wrapper(function: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            engine = virtual_engine_of(function)
            if engine is not None:
                _use_clock(fixture, engine)
            return __original(function, *args, **kwargs)

        setattr(fixture, attr, wrapper)
        patched = True
    fixture._jetson_virtual_timer = patched
    return patched


def machine_info(context: Any) -> Dict[str, Any]:
    """The Jetson fields pytest-benchmark's ``machine_info`` gets (under the key ``jetson``)."""
    device = context.device
    info: Dict[str, Any] = dict(device.fingerprint())
    info.update(name=device.name, backend=context.backend)
    if getattr(device, "model_string", None):
        info["model_string"] = device.model_string
    if context.simulated:
        info["seed"] = context.seed
    return info
