"""Settings: every option and ini key of the plugin, read once into one frozen value.

One field per row of ``options.OPTIONS`` (a test keeps them in step). The plugin builds
``Settings`` from pytest's config; scripts build it directly. Validation lives here so a bad value
is a usage error before any test runs, naming the option and the fix. Which backends and telemetry
sources exist is the session's to say (plugins add them), so their names are checked where the
session's tables are known, not here.
"""

from dataclasses import dataclass
from typing import Optional

from .errors import ConfigError
from .options import OPTIONS, check_budget, parse_optional_duration, parse_seed

__all__ = ["Settings", "check_budget", "parse_optional_duration", "parse_seed"]


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
    #: what the JSON report keeps of the samples: summary (the baselines' summary) or all
    report_samples: str = "summary"
    report_md: Optional[str] = None
    plots: Optional[str] = None
    #: the SQLite history store each run is appended to (None: none)
    history: Optional[str] = None
    seed: int = 0
    duration: Optional[float] = None
    telemetry: str = "auto"
    telemetry_interval: float = 0.1
    #: whether measurements get a per-layer profile (--jetson-layer-profile): on or off
    layer_profile: str = "on"
    #: what the terminal's perf table lists: problems (the default), all, none
    table: str = "problems"
    #: how far a comparison that cannot decide yet extends its measurement, in requested durations
    budget: float = 3.0
    #: which tests leave a trace (--jetson-trace): fail, all, or None (none)
    trace: Optional[str] = None

    def __post_init__(self) -> None:
        for option in OPTIONS:
            if option.choices:
                _choice(option.flag, getattr(self, option.field), option.choices,
                        allow_none=option.default is None)
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
