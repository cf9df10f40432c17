"""Seeded run-to-run noise: what turns one predicted latency into realistic per-iteration samples.

Three effects a real board shows and the gate's statistics must cope with:
- jitter: lognormal, so the right tail is longer than the left (a kernel can be late, not early);
- rare outliers: an OS interrupt, a page fault, a clock switch: 1.5x-4x one iteration;
- slow thermal drift: the module warms over minutes and latency creeps up a few percent.
Everything is drawn from one ``numpy.random.Generator`` seeded by ``seed``: same seed, same calls,
same numbers. All of it is vectorised: 10,000 iterations cost well under a millisecond.
"""

from typing import Any, Optional

import numpy as np


class LatencyNoise:
    """Per-iteration latency samples around a base latency.

    ``jitter``: sigma of the lognormal multiplier (about the coefficient of variation);
    ``outlier_rate``: probability per iteration of an outlier, scaled by U(``outlier_low``,
    ``outlier_high``); ``drift``: fractional slow-down reached after long runs, approached with time
    constant ``drift_tau`` seconds (simulated).
    """

    def __init__(self, seed: Optional[int] = 0, jitter: float = 0.015, outlier_rate: float = 0.002,
                 outlier_low: float = 1.5, outlier_high: float = 4.0, drift: float = 0.03,
                 drift_tau: float = 180.0) -> None:
        if jitter < 0 or drift < 0 or not 0 <= outlier_rate <= 1 or drift_tau <= 0:
            raise ValueError("LatencyNoise: jitter, drift >= 0, 0 <= outlier_rate <= 1, drift_tau > 0")
        self.seed = seed
        self.jitter = float(jitter)
        self.outlier_rate = float(outlier_rate)
        self.outlier_low = float(outlier_low)
        self.outlier_high = float(outlier_high)
        self.drift = float(drift)
        self.drift_tau = float(drift_tau)
        self._rng = np.random.default_rng(seed)

    def drift_factor(self, t: Any) -> np.ndarray:
        """Thermal slow-down multiplier at simulated time ``t`` seconds into the run."""
        t = np.maximum(np.asarray(t, float), 0.0)
        return 1.0 + self.drift * (1.0 - np.exp(-t / self.drift_tau))

    def sample(self, base_latency: float, n: int, t_start: float = 0.0, wait: float = 0.0) -> np.ndarray:
        """``n`` latencies (s) for iterations starting at simulated time ``t_start``.

        ``wait``: mean extra time per iteration spent waiting for other processes' GPU time slices
        (drawn uniformly between none and twice the mean), as ``Prediction.latency - latency_alone``.
        """
        n = int(n)
        if n <= 0:
            return np.zeros(0)
        base = float(base_latency)
        if not np.isfinite(base) or base <= 0:
            raise ValueError(f"base latency must be a positive number of seconds, not {base_latency!r}")
        rng = self._rng
        s = self.jitter
        x = np.exp(s * rng.standard_normal(n) - 0.5 * s * s)
        u = rng.random(n)
        hit = u < self.outlier_rate
        if hit.any():
            # Reuse the uniform draw so the stream stays one draw per iteration per effect.
            scale = self.outlier_low + (self.outlier_high - self.outlier_low) * (u[hit] / self.outlier_rate)
            x[hit] *= scale
        lat = base * x
        if wait > 0:
            lat += rng.uniform(0.0, 2.0 * wait, n)
        if self.drift > 0:
            # Elapsed time per iteration: the base latency is accurate enough for a minutes-long drift.
            t = t_start + base * np.arange(n)
            lat *= self.drift_factor(t)
        return lat

    def sample_prediction(self, prediction: Any, n: int, t_start: float = 0.0) -> np.ndarray:
        """Samples for a ``Prediction``: its single-process latency plus time-slice waits."""
        alone = float(getattr(prediction, "latency_alone", 0.0) or prediction.latency)
        wait = max(0.0, float(prediction.latency) - alone)
        return self.sample(alone, n, t_start=t_start, wait=wait)
