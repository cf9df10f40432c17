"""Settings: every option and ini key of the plugin, read once into one frozen value.

The plugin builds ``Settings`` from pytest's config; scripts build it directly. Validation lives
here so a bad value is a usage error before any test runs, naming the option and the fix.
"""

from dataclasses import dataclass
from typing import Optional

from .errors import ConfigError
from .units import parse_duration

UPDATE_MODES = ("all", "new", "force")
MISSING_BASELINE = ("skip", "fail")
INCONCLUSIVE = ("pass", "fail")
TABLES = ("problems", "all", "none")


@dataclass(frozen=True)
class Settings:
    device: str = "auto"
    simulate: bool = False
    backend: Optional[str] = None
    power_mode: Optional[str] = None
    baselines: str = "baselines"
    update_baselines: Optional[str] = None
    prune_baselines: bool = False
    missing_baseline: str = "skip"
    allow_env_mismatch: bool = False
    inconclusive: str = "pass"
    confidence: float = 0.99
    report_json: Optional[str] = None
    report_md: Optional[str] = None
    plots: Optional[str] = None
    seed: int = 0
    duration: Optional[float] = None
    telemetry: str = "auto"
    telemetry_interval: float = 0.1
    #: what the terminal's perf table lists: problems (the default), all, none
    table: str = "problems"
    #: how far a comparison that cannot decide yet extends its measurement, in requested durations
    budget: float = 3.0

    def __post_init__(self) -> None:
        # Backends and sources come from their registries, which plugins extend at start-up.
        if self.backend is not None:
            from .engines.registry import BACKENDS

            BACKENDS.get(self.backend)
        from .telemetry.select import check_name

        check_name(self.telemetry)
        _choice("--jetson-update-baselines", self.update_baselines, UPDATE_MODES, allow_none=True)
        _choice("--jetson-missing-baseline", self.missing_baseline, MISSING_BASELINE)
        _choice("--jetson-inconclusive", self.inconclusive, INCONCLUSIVE)
        _choice("--jetson-table", self.table, TABLES)
        if not 0.5 <= self.confidence < 1:
            raise ConfigError(
                f"--jetson-confidence: {self.confidence!r} is not a confidence level; use a value "
                "between 0.5 and 1, e.g. 0.99"
            )
        check_budget(self.budget, "--jetson-budget")
        if self.duration is not None and self.duration <= 0:
            raise ConfigError(f"--jetson-duration: {self.duration!r} must be a positive duration such as '5s'")
        if not 0.01 <= self.telemetry_interval <= 60:
            raise ConfigError(
                f"--jetson-telemetry-interval: {self.telemetry_interval} s is outside 10ms..60s; "
                "use e.g. '100ms'"
            )


def _choice(option: str, value: Optional[str], allowed, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value not in allowed:
        raise ConfigError(f"{option}: {value!r} is not one of {', '.join(allowed)}")


def check_budget(value: object, what: str) -> float:
    """A measurement budget: a number of requested durations, at least 1 (1: never extend)."""
    try:
        budget = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        budget = float("nan")
    if not 1.0 <= budget <= 100.0:
        raise ConfigError(f"{what}: {value!r} is not a measurement budget; give how many times the "
                          f"requested duration a comparison may measure, from 1 (never extend) "
                          f"to 100, e.g. 3")
    return budget


def parse_seed(value: object, what: str = "--jetson-seed") -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{what}: {value!r} is not an integer seed; use e.g. --jetson-seed 0") from None


def parse_optional_duration(value: object, what: str) -> Optional[float]:
    if value in (None, ""):
        return None
    return parse_duration(value, what)  # type: ignore[arg-type]
