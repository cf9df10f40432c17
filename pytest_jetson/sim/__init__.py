"""The simulated Jetson: a calibrated analytic model of DNN inference on each board.

``predict`` gives one configuration's throughput, latency, memory, power and energy from the
device profile and the network's graph; ``sweep`` evaluates a grid of configurations at once;
``noise.LatencyNoise`` turns a predicted latency into seeded per-iteration samples.
"""

from .predict import OutOfMemory, Prediction, predict
from .sweep import SweepResult, sweep

__all__ = ["OutOfMemory", "Prediction", "SweepResult", "predict", "sweep"]
