"""THE table of the plugin's options: one row per ``--jetson-*`` option, with its ini key, the
``Settings`` field it fills, its help, default and choices, and how its text is read.

``pytest_addoption`` declares the options and ini keys from it, the plugin reads them into
``Settings`` through it, ``Settings`` validates its choices from it, the JSON report's settings
block lists the rows marked ``reported`` and the documentation's options reference is generated
from it. An option added here and as a ``Settings`` field is wired everywhere.
"""

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from .errors import ConfigError
from .units import LONGEST_MEASUREMENT_S, parse_duration


def check_budget(value: object, what: str) -> float:
    """A measurement budget: a number of requested durations, at least 1 (1: never extend)."""
    try:
        budget = float("nan") if isinstance(value, bool) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        budget = float("nan")
    if not 1.0 <= budget <= 100.0:
        raise ConfigError(f"{what}: {value!r} is not a measurement budget; give how many times the "
                          f"requested duration a comparison may measure, from 1 (never extend) "
                          f"to 100, e.g. 3")
    return budget


#: seeds numpy and every tool that reads a report take: 0 to 2**32 - 1
MAX_SEED = 2 ** 32 - 1


def parse_seed(value: object, what: str = "--jetson-seed") -> int:
    try:
        seed = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{what}: {value!r} is not an integer seed; use e.g. --jetson-seed 0") from None
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"{what}: {seed} is not a seed; seeds are whole numbers from 0 to {MAX_SEED} "
                          f"(numpy's), e.g. --jetson-seed 0")
    return seed


def parse_optional_duration(value: object, what: str) -> Optional[float]:
    if value in (None, ""):
        return None
    return parse_duration(value, what)  # type: ignore[arg-type]


def parse_measure_duration(value: object, what: str) -> Optional[float]:
    """A duration that overrides every measurement's: at most ``LONGEST_MEASUREMENT_S``."""
    if value in (None, ""):
        return None
    return parse_duration(value, what, at_most=LONGEST_MEASUREMENT_S)  # type: ignore[arg-type]


def _step_summary(config: Any) -> Optional[str]:
    return os.environ.get("GITHUB_STEP_SUMMARY")


def _table_for_verbosity(config: Any) -> str:
    return "all" if (config.getoption("verbose", 0) or 0) > 0 else "problems"


@dataclass(frozen=True)
class Option:
    """One option.

    ``flag``: the command-line option; ``field``: the ``Settings`` field (and ``jetson_<field>``
    pytest's dest); ``ini``: the ini key that sets it when the option is not given (None: none);
    ``default``: the value when neither is given; ``choices``: the values it accepts (None: any;
    ``parser_choices`` False leaves their check to ``Settings``, for options whose value argparse
    must not judge); ``parse(text, what)``: reads the given text (``what`` names the option, and
    the ini key, in errors); ``fallback(config)``: where the value comes from when neither the
    option nor the ini key is given, before the default; ``reported``: listed in the JSON report's
    settings.
    """

    flag: str
    field: str
    help: str
    default: Any = None
    ini: Optional[str] = None
    ini_help: str = ""
    choices: Optional[Tuple[str, ...]] = None
    parser_choices: bool = True
    metavar: Optional[str] = None
    flag_only: bool = False  # a switch: given or not
    const: Optional[str] = None  # the value of the option given without one
    type: Optional[Callable[[str], Any]] = None
    parse: Optional[Callable[[Any, str], Any]] = None
    fallback: Optional[Callable[[Any], Any]] = None
    reported: bool = False

    @property
    def dest(self) -> str:
        return f"jetson_{self.field}"

    @property
    def what(self) -> str:
        """How errors name where the value came from."""
        return f"{self.flag} / ini {self.ini}" if self.ini and self.parse else self.flag

    @property
    def ini_default(self) -> str:
        if self.default is None:
            return ""
        return format(self.default, "g") if isinstance(self.default, float) else str(self.default)

    def unset(self, raw: Any) -> bool:
        # a parsed option takes any text it is given (an empty one is its parser's to judge)
        return raw is None if self.parse else raw in (None, "")

    def value(self, given: Any, ini: Any = None, config: Any = None) -> Any:
        """The setting from what the command line ``given``, the ``ini`` key's text and the
        ``fallback``, in that order; the default when none of them says."""
        raw = given
        if self.unset(raw) and self.ini:
            raw = ini
        if self.unset(raw) and self.fallback is not None:
            raw = self.fallback(config)
        value = self.parse(raw, self.what) if self.parse else raw
        if self.flag_only:
            return bool(value)
        return self.default if value is None or value == "" else value


OPTIONS: Tuple[Option, ...] = (
    Option("--jetson-device", "device", default="auto", metavar="NAME|auto", ini="jetson_device",
           ini_help="device to test (NAME or auto)",
           help="device to test: a name or alias that 'pytest-jetson devices' lists, or auto (the "
                "detected board, else a simulated Orin Nano 8GB). Ini: jetson_device."),
    Option("--jetson-simulate", "simulate", default=False, flag_only=True,
           help="simulate the device even on a real Jetson board"),
    Option("--jetson-backend", "backend", metavar="NAME", reported=True,
           help="engine backend: tensorrt, onnxruntime (real inference on the host CPU), simulated or "
                "one a plugin adds (default: tensorrt on a board, simulated elsewhere)"),
    Option("--jetson-power-mode", "power_mode", metavar="MODE", ini="jetson_power_mode",
           ini_help="power mode to expect/simulate",
           help="nvpmodel power mode by name or id (default: the board's current or the profile's default)"),
    Option("--jetson-baselines", "baselines", default="baselines", metavar="DIR", ini="jetson_baselines",
           ini_help="baseline directory", reported=True,
           help="baseline directory (default: baselines). Ini: jetson_baselines."),
    Option("--jetson-update-baselines", "update_baselines", const="all", metavar="=all|=new|=force",
           choices=("all", "new", "force"), parser_choices=False, reported=True,
           help="(re)record baselines from this run: =all (new entries, and metrics that changed "
                "significantly; the default), =new (new entries only) or =force (every entry as "
                "measured now); write the value with '=', a following word is a path"),
    Option("--jetson-prune-baselines", "prune_baselines", default=False, flag_only=True,
           help="remove baseline entries that no selected test used"),
    Option("--jetson-missing-baseline", "missing_baseline", default="skip", choices=("skip", "fail"),
           reported=True,
           help="what a relative bound does without a baseline: skip it (default) or fail (for gates)"),
    Option("--jetson-allow-env-mismatch", "allow_env_mismatch", default=False, flag_only=True, reported=True,
           help="compare against baselines recorded under another power mode, JetPack, TensorRT, ..."),
    Option("--jetson-inconclusive", "inconclusive", default="pass", choices=("pass", "fail"), reported=True,
           help="outcome of a comparison too noisy to decide: pass with a warning (default) or fail"),
    Option("--jetson-confidence", "confidence", default=0.99, type=float, metavar="LEVEL", reported=True,
           help="confidence level of the regression test (default 0.99)"),
    Option("--jetson-budget", "budget", default=3.0, metavar="TIMES", ini="jetson_budget",
           ini_help="measurement budget, in requested durations", parse=check_budget,
           help="how long a comparison that cannot decide yet may measure, in times the requested "
                "duration (default 3; 1 never extends). The perf mark's budget= sets it per test. "
                "Ini: jetson_budget."),
    Option("--jetson-report-json", "report_json", metavar="PATH",
           help="write every measurement, telemetry summary and verdict to PATH as JSON"),
    Option("--jetson-report-samples", "report_samples", default="summary", choices=("summary", "all"),
           reported=True,
           help="what the JSON report keeps of each measurement's samples: summary (default: the "
                "baselines' summary, 20 quantiles and each metric's value and error) or all (every "
                "sample; the report is gzip-compressed when its path ends in .gz)"),
    Option("--jetson-report-md", "report_md", metavar="PATH", fallback=_step_summary,
           help="write a Markdown summary (default: $GITHUB_STEP_SUMMARY when set)"),
    Option("--jetson-history", "history", metavar="PATH", ini="jetson_history",
           ini_help="SQLite history store each run is appended to",
           help="append this run (commit, device, every test's metrics with their intervals) to the "
                "SQLite history store at PATH, created when absent; 'pytest-jetson history PATH' reads "
                "it. Ini: jetson_history."),
    Option("--jetson-plots", "plots", metavar="DIR",
           help="write PNG plots (telemetry timelines, current vs baseline) to DIR (needs the plots extra)"),
    Option("--jetson-seed", "seed", default=0, metavar="N", ini="jetson_seed",
           ini_help="seed of the simulated noise", parse=parse_seed, reported=True,
           help="seed of the simulated device's run-to-run noise (default 0)"),
    Option("--jetson-duration", "duration", metavar="DUR", parse=parse_measure_duration, reported=True,
           help="override the duration of every perf.measure and process_pool, e.g. 2s"),
    Option("--jetson-telemetry", "telemetry", default="auto", metavar="SOURCE", ini="jetson_telemetry",
           ini_help="telemetry source", reported=True,
           help="telemetry source: auto (default: the best available), jtop, tegrastats, sysfs, nvml, "
                "host, simulated, none, or one a plugin adds"),
    Option("--jetson-telemetry-interval", "telemetry_interval", default=0.1, metavar="DUR",
           parse=parse_optional_duration,
           help="telemetry sampling interval (default 100ms, down to 10ms)"),
    Option("--jetson-trace", "trace", choices=("fail", "all"), reported=True,
           help="record a trace of each failing (fail) or every (all) perf test: on the simulated board a "
                "Perfetto/Chrome trace JSON of its timeline, on a board an Nsight Systems report of a re-run; "
                "written beside --jetson-report-json (jetson-traces/), else to .jetson-traces/"),
    Option("--jetson-layer-profile", "layer_profile", default="on", choices=("on", "off"), reported=True,
           help="per-layer profile of every measurement, from a pass of its own after the timed window "
                "(TensorRT's IProfiler, onnxruntime's profiler, the simulator's prediction): on (default) "
                "or off (no profiling pass: faster, and no layer attribution in verdicts)"),
    Option("--jetson-table", "table", default="problems", choices=("problems", "all", "none"),
           fallback=_table_for_verbosity,
           help="the perf gate's table: problems (failed, errored, inconclusive bounds; the default), "
                "all (every bound; also with -v) or none"),
)

#: the ini keys, in the order ``pytest --help`` has always listed them
INI_KEYS: Tuple[str, ...] = ("jetson_device", "jetson_baselines", "jetson_power_mode", "jetson_seed",
                             "jetson_telemetry", "jetson_budget", "jetson_history")
BY_INI = {o.ini: o for o in OPTIONS if o.ini}
BY_FIELD = {o.field: o for o in OPTIONS}

#: the settings the JSON report records, in the table's order
REPORTED_FIELDS: Tuple[str, ...] = tuple(o.field for o in OPTIONS if o.reported)


def parser_arguments(option: Option) -> dict:
    """The keyword arguments of pytest's ``addoption`` for ``option``."""
    kwargs: dict = {"dest": option.dest, "help": option.help}
    if option.flag_only:
        kwargs.update(action="store_true", default=False)
        return kwargs
    kwargs["default"] = None
    if option.const is not None:
        kwargs.update(nargs="?", const=option.const)
    if option.choices and option.parser_choices:
        kwargs["choices"] = option.choices
    if option.metavar:
        kwargs["metavar"] = option.metavar
    if option.type is not None:
        kwargs["type"] = option.type
    return kwargs


def read(get_option: Callable[[str], Any], get_ini: Callable[[str], Any], config: Any = None) -> dict:
    """Every option's value by ``Settings`` field, from the command line (``get_option(dest)``),
    the ini file (``get_ini(key)``) and the fallbacks (which read ``config``)."""
    return {o.field: o.value(get_option(o.dest), get_ini(o.ini) if o.ini else None, config)
            for o in OPTIONS}
