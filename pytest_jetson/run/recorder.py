"""The ``perf`` recorder: what a test measured, in order, for the gate to check afterwards."""

from typing import Any, List

from .measurement import Measurement


class Recorder:
    """Collects the Measurements of one test. ``measure`` runs the harness; ``record`` takes a
    Measurement made elsewhere (a pool, a script, a file)."""

    def __init__(self, context: Any = None) -> None:
        self.context = context
        self.measurements: List[Measurement] = []

    def record(self, measurement: Measurement) -> Measurement:
        if not isinstance(measurement, Measurement):
            raise TypeError(
                f"perf.record() takes a Measurement (from perf.measure or process_pool), "
                f"not {type(measurement).__name__}"
            )
        self.measurements.append(measurement)
        return measurement

    @property
    def last(self) -> Measurement:
        return self.measurements[-1]
