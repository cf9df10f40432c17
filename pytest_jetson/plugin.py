"""The pytest face of pytest-jetson: options, ini keys, markers, fixtures and hooks.

Thin on purpose: it turns options, marks and fixtures into calls on the library packages and turns
their verdicts into test outcomes. Everything it calls is usable without pytest. The session's
state lives in two objects: the ``Context`` (settings, device, backend, clock, engines, telemetry)
and the ``PerfSession`` registered below (the gate, the results, the files written at the end).
The session's tables of backends and telemetry sources (the built-in rows plus the plugins') live
in ``config.stash`` and travel in the Context.

The gate, the measurements and the reports (all but the test counts every session keeps) are
imported inside the hooks and fixtures that use them: a run without perf tests loads neither them
nor numpy.
"""

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from . import hookspecs, metrics
from .context import Context
from .devices.catalog import get as get_profile
from .devices.catalog import profiles as all_profiles
from .devices.resolve import resolve_device
from .engines import open_engine
from .engines.backends import BACKENDS, Backend
from .errors import BoundError, ConfigError, JetsonError
from .options import BY_FIELD, BY_INI, INI_KEYS, OPTIONS, parser_arguments, read
from .report.counts import TestCounts
from .settings import Settings, check_budget
from .telemetry.select import check_name
from .telemetry.sources import SOURCES, SourceContext, SourceSpec

CONTEXT_KEY = pytest.StashKey()
BOUNDS_KEY = pytest.StashKey()
RECORDER_KEY = pytest.StashKey()
ERROR_KEY = pytest.StashKey()
BUDGET_KEY = pytest.StashKey()
#: the perf marks the stashed bounds were read from (``read_bounds``)
MARKS_READ_KEY = pytest.StashKey()
#: the session's tables: the built-in rows plus the plugins' (``_register_extensions``)
BACKENDS_KEY = pytest.StashKey()
SOURCES_KEY = pytest.StashKey()
METRICS_KEY = pytest.StashKey()  # names of the plugins' metrics, removed at unconfigure
SESSION_NAME = "jetson-perf-session"
TRACE_NAME = "jetson-traces"
#: the environment variable a test re-run under nsys carries (``report.trace.CHILD_ENV``)
NSYS_CHILD_ENV = "PYTEST_JETSON_NSYS_CHILD"


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(hookspecs)


# -- options and ini keys --------------------------------------------------------------------------
def pytest_addoption(parser):
    group = parser.getgroup("jetson", "performance regression testing on NVIDIA Jetson")
    for option in OPTIONS:
        group.addoption(option.flag, **parser_arguments(option))
    for key in INI_KEYS:
        parser.addini(key, BY_INI[key].ini_help, default=BY_INI[key].ini_default)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """``--jetson-update-baselines`` takes its value only after '=': a bare one followed by a
    path (``--jetson-update-baselines tests/perf``) records all and keeps the path a path. The
    early parse has already read the path as the option's value: give it back before the initial
    conftests are looked up from the paths, and spell the option out for the final parse."""
    for i, arg in enumerate(args):
        if arg == "--jetson-update-baselines":
            args[i] = "--jetson-update-baselines=all"
    ns = early_config.known_args_namespace
    swallowed = getattr(ns, "jetson_update_baselines", None)
    if swallowed is not None and swallowed not in BY_FIELD["update_baselines"].choices and not any(
            a.startswith("--jetson-update-baselines=") and a != "--jetson-update-baselines=all" for a in args):
        ns.jetson_update_baselines = "all"
        ns.file_or_dir = list(getattr(ns, "file_or_dir", None) or []) + [swallowed]


# -- configuration, header, device -----------------------------------------------------------------
def _settings_from_config(config):
    return Settings(**read(config.getoption, config.getini, config))


def _plugin_name(config, impl):
    name = impl.plugin_name or ""
    plugin = impl.plugin
    path = getattr(plugin, "__file__", None)
    if path:
        try:
            return os.path.relpath(path, str(config.rootpath))
        except ValueError:
            return path
    return name


def _call_hook(config, impl, hook, kwargs):
    """One implementation of a ``pytest_jetson_*`` hook, called with the arguments it names; an
    exception it raises is a ConfigError naming the plugin, the hook and where it raised (a
    usage error at start-up, not an internal error that loses the session)."""
    try:
        return impl.function(**{a: kwargs[a] for a in impl.argnames if a in kwargs})
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:  # sys.exit() in a hook is the hook's error too
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            path = tb.tb_frame.f_code.co_filename
            try:
                path = os.path.relpath(path, str(config.rootpath))
            except ValueError:
                pass
            where = f" (at {path}:{tb.tb_lineno})"
        raise ConfigError(f"{_plugin_name(config, impl)}: {hook} raised {type(exc).__name__}: {exc}; "
                          f"fix the hook{where}") from None


def _returned_rows(config, impl, hook):
    """What one implementation of a ``pytest_jetson_*`` table hook returned, as a list."""
    value = _call_hook(config, impl, hook, {"config": config})
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{_plugin_name(config, impl)}: {hook} returned {_short(value)}, not a list; "
                          "return a list of rows, e.g. [row]")
    return list(value)


def _short(value):
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return f"a {type(value).__name__} ({name!r})"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _register_extensions(config):
    """The session's tables of backends and telemetry sources: the built-in rows, then those of
    the ``pytest_jetson_*`` hooks, each named after the plugin that added it; kept in
    ``config.stash`` (the built-in tables are never changed, so nothing outlives the session).
    The plugins' metrics join the metric table until unconfigure."""
    for key, hook, builtin, row in ((BACKENDS_KEY, "pytest_jetson_backends", BACKENDS, Backend),
                                    (SOURCES_KEY, "pytest_jetson_telemetry_sources", SOURCES, SourceSpec)):
        added = []
        for impl in getattr(config.hook, hook).get_hookimpls():
            who = _plugin_name(config, impl)
            for item in _returned_rows(config, impl, hook):
                if not isinstance(item, row):
                    raise ConfigError(f"{who}: {hook} returned {_short(item)}, not a "
                                      f"{row.__module__.rsplit('.', 1)[0]}.{row.__name__}")
                if item.plugin == "pytest-jetson":
                    item = dataclasses.replace(item, plugin=who)
                added.append(item)
        config.stash[key] = builtin.extended(added)

    # Metrics are read by every formatter through the one module table, so a plugin's rows join
    # it for the session and leave it at unconfigure (all or none, metrics.register_plugins).
    rows = ((_plugin_name(config, impl), _returned_rows(config, impl, "pytest_jetson_metrics"))
            for impl in config.hook.pytest_jetson_metrics.get_hookimpls())
    config.stash[METRICS_KEY] = metrics.register_plugins(rows)


def _unregister_metrics(config):
    for name in config.stash.get(METRICS_KEY, ()):
        metrics.unregister(name)
    config.stash[METRICS_KEY] = []


def _check_names(config, settings):
    """The backend and telemetry source named on the command line are rows of the session's
    tables (a ConfigError lists the known ones otherwise)."""
    if settings.backend is not None:
        config.stash[BACKENDS_KEY].get(settings.backend)
    check_name(settings.telemetry, config.stash[SOURCES_KEY])


def _extra_fingerprint(config, device):
    """The plugins' fingerprint fields: a dict of JSON values named by strings, checked here
    since they are written into every baseline and report at the session's end."""
    hook = "pytest_jetson_fingerprint"
    extra = {}
    impls = config.hook.pytest_jetson_fingerprint.get_hookimpls()
    if not impls:
        return extra
    from .gate.fields import FINGERPRINT
    from .gate.safe_read import JSONProblem, loads

    builtin = set(FINGERPRINT) | set(device.fingerprint()) | {"backend_version", "cpu", "cores", "os"}
    for impl in impls:
        who = _plugin_name(config, impl)
        fields = _call_hook(config, impl, hook, {"config": config, "device": device}) or {}
        if not isinstance(fields, dict):
            raise ConfigError(f"{who}: {hook} must return a dict of fingerprint fields, not "
                              f"{type(fields).__name__}")
        for k, v in fields.items():
            if not isinstance(k, str):
                raise ConfigError(f"{who}: {hook} returned a field named {k!r} ({type(k).__name__}); "
                                  f"name fields with strings")
            if k in builtin:
                raise ConfigError(f"{who}: {hook} returned the field {k!r}, which pytest-jetson records "
                                  f"itself; name the plugin's field otherwise (e.g. {'x_' + k!r})")
            try:
                loads(json.dumps(v, allow_nan=False))  # as strictly as a baseline is read back
            except JSONProblem as exc:
                raise ConfigError(f"{who}: {hook} returned field {k!r} = {_short(v)}: {exc}; every baseline "
                                  f"recorded with it would be refused when read") from None
            except (TypeError, ValueError, RecursionError):
                raise ConfigError(f"{who}: {hook} returned field {k!r} = {_short(v)}, not a JSON value (a "
                                  f"string, a finite number, true/false or null, or a list or dict of "
                                  f"them)") from None
        extra.update(fields)
    return extra


def _check_available(ctx):
    """A backend or telemetry source named on the command line that cannot run here is a usage
    error now, not one failure per test."""
    s = ctx.settings
    if s.backend:
        why = ctx.backend_spec.available()
        if why:
            raise ConfigError(f"--jetson-backend {s.backend}: {why}")
    if s.telemetry not in ("auto", "none"):
        why = ctx.sources.get(s.telemetry).available(SourceContext(device=ctx.device, clock=ctx.clock, seed=ctx.seed))
        if why:
            raise ConfigError(f"--jetson-telemetry {s.telemetry}: telemetry source {s.telemetry} is not "
                              f"available here: {why}; or use --jetson-telemetry auto")


def _check_report_paths(config, settings):
    """A report asked for where none may go (a device, a pipe, a directory, a link out of the
    project, another file than a report of ours) is a usage error now, before any test runs in
    vain; the same check runs again when the reports are written."""
    if not (settings.report_json or settings.report_md or settings.plots or settings.history):
        return
    from .gate.keys import project_root
    from .report.files import check_paths

    refused = check_paths(settings, project_root(config.rootpath))
    if refused:
        raise ConfigError("\n".join(refused))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "perf(**bounds): performance bounds checked after the test, absolute ('>= 900/s', "
        "'<= 15 ms', '<= 1.5 GiB', '<= 10 W') or relative to the stored baseline ('5%'). Every test "
        "that uses perf, trt_engine or process_pool carries it: -m perf runs only them, "
        "-m 'not perf' leaves them out.",
    )
    config.addinivalue_line(
        "markers",
        "jetson(*devices, dla=False, tensor_cores=False, power_mode=None): run only on these devices "
        "(names or aliases), on devices with a DLA or tensor cores, or in these power modes; "
        "skipped elsewhere.",
    )
    try:
        _register_extensions(config)
        settings = _settings_from_config(config)
        _check_names(config, settings)
        _check_report_paths(config, settings)
        device = resolve_device(settings.device, simulate=settings.simulate, power_mode=settings.power_mode)
        ctx = Context.create(settings, device, extra_fingerprint=_extra_fingerprint(config, device),
                             backends=config.stash[BACKENDS_KEY], sources=config.stash[SOURCES_KEY])
        _check_available(ctx)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[CONTEXT_KEY] = ctx
    config.pluginmanager.register(PerfSession(config, ctx), SESSION_NAME)
    if os.environ.get(NSYS_CHILD_ENV):
        config.pluginmanager.register(NvtxTest(), TRACE_NAME)
    elif settings.trace:
        config.pluginmanager.register(TraceSession(config, ctx), TRACE_NAME)


def pytest_unconfigure(config):
    traces = config.pluginmanager.get_plugin(TRACE_NAME)
    if traces is not None:
        config.pluginmanager.unregister(traces, TRACE_NAME)
    session = config.pluginmanager.get_plugin(SESSION_NAME)
    try:
        if session is not None:
            session.close()
            config.pluginmanager.unregister(session, SESSION_NAME)
    finally:
        _unregister_metrics(config)


def jetson_context(config):
    """The session's Context (settings, device, backend, clock, engines, telemetry)."""
    return config.stash[CONTEXT_KEY]


def pytest_report_header(config):
    ctx = config.stash.get(CONTEXT_KEY, None)
    if ctx is None:
        return None
    return ctx.header_lines()


def _profiles(names):
    wanted = []
    for name in names:
        try:
            profile = get_profile(name)
        except ConfigError as exc:
            raise pytest.UsageError(f"@pytest.mark.jetson: {exc}") from None
        if profile.id not in wanted:
            wanted.append(profile.id)
    return wanted


#: the ``jetson`` mark's keywords (its positional arguments are devices)
JETSON_MARK_KEYWORDS = ("dla", "power_mode", "tensor_cores")


def _mark_modes(value):
    """The power modes a ``jetson`` mark names: one (a name or an nvpmodel id) or a list of them,
    each read later by the profile's own parser, as ``--jetson-power-mode`` is."""
    values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int)) or not str(v).strip():
            raise ConfigError(f"power_mode={value!r} is not a power mode; give a name such as '15W', an "
                              f"nvpmodel id such as 0, or a list of them")
    return values


def _mode_on(profile, value):
    """The mode of ``profile`` that ``value`` names, or None where it has no such mode."""
    try:
        return profile.power_mode(value, option="@pytest.mark.jetson(power_mode=...)")
    except ConfigError:
        return None


def check_jetson_mark(mark, device):
    """A ``jetson`` mark's keywords as the session reads them: an unknown keyword, a flag that
    is not a bool or a power mode no board has is a ConfigError (a mark that cannot match would
    skip its test, and with it its perf bounds, forever)."""
    unknown = sorted(set(mark.kwargs) - set(JETSON_MARK_KEYWORDS))
    if unknown:
        raise ConfigError(f"unknown keyword {unknown[0]!r}; it takes {', '.join(JETSON_MARK_KEYWORDS)} "
                          f"(and devices as positional arguments)")
    for flag in ("dla", "tensor_cores"):
        if flag in mark.kwargs and not isinstance(mark.kwargs[flag], bool):
            raise ConfigError(f"{flag}={mark.kwargs[flag]!r} must be True or False")
    if mark.kwargs.get("power_mode") is None:
        return
    for v in _mark_modes(mark.kwargs["power_mode"]):
        if any(_mode_on(p, v) for p in (device.profile, *all_profiles().values())):
            continue
        hint = " (a number is an nvpmodel id; a budget is written '15W')" if isinstance(v, int) else ""
        listing = ", ".join(f"{m.name} (id {m.id})" if m.id is not None else m.name
                            for m in device.profile.power_modes)
        raise ConfigError(f"power mode {v!r} is a mode of no Jetson board{hint}; {device.profile.name}'s "
                          f"modes are: {listing}; the mark reads modes as --jetson-power-mode does (a name "
                          f"in any case, MODE_30W as 30W, or an nvpmodel id)")


def _skip_reason(device, marks):
    """Why a test's ``jetson`` marks exclude this session, or None. Every mark must hold; the
    reason names the first mismatch in the order a reader looks: the board, what it has, its
    power mode."""
    for mark in marks:
        if mark.args:
            wanted = _profiles(mark.args)
            if device.profile.id not in wanted:
                return f"runs on {', '.join(wanted)}; this session tests {device.profile.id}"
    for mark in marks:
        if mark.kwargs.get("dla", False) and not device.profile.has_dla:
            return f"needs a DLA; {device.profile.name} has none"
        if mark.kwargs.get("tensor_cores", False) and not device.profile.has_tensor_cores:
            return f"needs tensor cores; {device.profile.name} has none"
    for mark in marks:
        if mark.kwargs.get("power_mode") is None:
            continue
        named = []
        for v in _mark_modes(mark.kwargs["power_mode"]):
            mode = _mode_on(device.profile, v)
            if mode is not None and mode.name == device.power_mode.name:
                break
            named.append(mode.name if mode is not None else f"{v} (no mode of {device.profile.name})")
        else:
            return (f"runs in power mode {', '.join(named)}; this session tests "
                    f"{device.power_mode.name} (--jetson-power-mode)")
    return None


#: fixtures that make a test a performance test (``-m perf`` selects it, ``-m "not perf"`` leaves it out)
PERF_FIXTURES = ("perf", "trt_engine", "process_pool")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test that measures with ``perf`` (before ``-m`` selects); the ``jetson`` marks
    are read once every plugin has added its own (``PerfSession.pytest_collection_modifyitems``)."""
    for item in items:
        if item.get_closest_marker("perf") is None and any(
                f in getattr(item, "fixturenames", ()) for f in PERF_FIXTURES):
            item.add_marker(pytest.mark.perf)


def skip_excluded(device, items):
    """Skip the tests whose ``jetson`` marks exclude ``device``, saying why in words; a mark that
    cannot be read (one added after collection, where its check did not see it) is a usage error
    naming the test."""
    for item in items:
        marks = list(item.iter_markers("jetson"))
        if not marks:
            continue
        try:
            for mark in marks:
                check_jetson_mark(mark, device)
            reason = _skip_reason(device, marks)
        except ConfigError as exc:
            raise pytest.UsageError(f"{item.nodeid}: jetson mark: {exc}") from None
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"jetson: {reason}"))


# -- fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def jetson_device(pytestconfig):
    """The Device under test: profile, power mode, simulated or real, and its fingerprint."""
    return jetson_context(pytestconfig).device


@pytest.fixture
def telemetry(request):
    """The session's telemetry factory: ``with telemetry.sample(interval="50ms") as t: ...`` then
    ``t.summary`` and ``t.series``. The source follows --jetson-telemetry (default: the best
    available; simulated on a simulated device)."""
    from .telemetry.factory import TelemetryFactory

    ctx = jetson_context(request.config)
    # `none` still gives a factory, of a source that samples nothing, so the fixture always works
    return ctx.telemetry or TelemetryFactory(ctx.device, ctx.clock, source="none")


@pytest.fixture
def perf(request):
    """The recorder: ``perf.measure(engine, duration=..., rate=...)``, ``perf.max_rate(engine,
    latency_p99=...)`` or ``perf.record(measurement)``; the perf marks' bounds are checked against
    what it holds after the test body."""
    from .gate.bounds import parse
    from .run.arrival import stream_seed
    from .run.recorder import Recorder

    ctx = jetson_context(request.config)
    recorder = Recorder(ctx)
    session = request.config.pluginmanager.get_plugin(SESSION_NAME)
    if session is not None:
        recorder.extension = session.extension_for(request.node)
        recorder.golden = session.golden_for(request.node)
    # perf.max_rate's bounds read as the marks' do; its arrivals seeded by the session and test
    recorder.parse_bound = parse
    recorder.seed = stream_seed(getattr(ctx, "seed", 0), request.node.nodeid)
    request.node.stash[RECORDER_KEY] = recorder
    return recorder


@pytest.fixture
def trt_engine(request):
    """Factory: ``trt_engine(model, precision="fp16", batch=1, dla_core=None, **opts)`` returns an
    engine for a zoo name or an ONNX path, built once per session for the same arguments. The
    backend follows the session (tensorrt on a board, simulated elsewhere, or --jetson-backend)."""
    ctx = jetson_context(request.config)

    def factory(model, precision="fp16", batch=1, dla_core=None, **opts):
        key = ("trt_engine", str(model), precision, batch, dla_core,
               tuple(sorted((k, repr(v)) for k, v in opts.items())))
        return ctx.engine(key, lambda: open_engine(
            model, backend=ctx.backend, device=ctx.device, precision=precision, batch=batch,
            dla_core=dla_core, clock=ctx.clock, seed=ctx.seed, backends=ctx.backends, **opts))

    return factory


@pytest.fixture
def process_pool(request):
    """Factory running N inference processes over one shared window; returns a PoolMeasurement
    (record it with ``perf.record(...)``)::

        process_pool("resnet50", processes=4, precision="int8", batch=1, duration="5s")
        process_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {"processes": 2})])

    A single model runs in 4 processes unless ``processes=`` says otherwise. Real processes on
    tensorrt/onnxruntime; the simulator's contention model on a simulated device."""
    from .run.pool import run_pool
    from .run.pool_spec import is_single

    context = jetson_context(request.config)

    def pool(workloads, processes=None, *, duration="5s", warmup="1s", backend=None, deadline=None,
             telemetry=None, seed=None, **options):
        if processes is None and is_single(workloads):
            processes = 4
        return run_pool(workloads, context=context, processes=processes, duration=duration,
                        warmup=warmup, backend=backend, deadline=deadline, telemetry=telemetry,
                        seed=seed, **options)

    return pool


@pytest.fixture(autouse=True)
def _jetson_benchmark_clock(request):
    """``benchmark(engine.infer, batch)`` on a simulated engine times on the virtual clock."""
    if "benchmark" in request.fixturenames:
        from .engines import benchmark_timer

        try:
            benchmark_timer.install(request.getfixturevalue("benchmark"))
        except pytest.FixtureLookupError:
            pass  # pytest-benchmark disabled (-p no:benchmark) and nobody else defines it


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config, machine_info):
    ctx = config.stash.get(CONTEXT_KEY, None)
    if ctx is not None:
        from .engines import benchmark_timer

        machine_info["jetson"] = benchmark_timer.machine_info(ctx)


# -- perf marks ------------------------------------------------------------------------------------
def _mark_owner(node):
    if isinstance(node, pytest.Class):
        return f"class {node.name}"
    if isinstance(node, pytest.Module):
        return f"module {node.nodeid}"
    if isinstance(node, pytest.Item):
        return node.name
    return node.nodeid or "conftest"


def _parse_perf_marks(item):
    """The bounds of ``item``'s perf marks as they stand now, and the nearest mark's budget (None
    where no mark gives one). Raises BoundError for a malformed bound or conflicting marks."""
    marks = []
    budget = None
    for node, mark in item.iter_markers_with_node("perf"):
        if mark.args:
            raise BoundError(
                f"perf mark on {_mark_owner(node)}: bounds are keyword arguments, e.g. "
                f"@pytest.mark.perf(throughput='>= 900/s'); got positional {mark.args!r}"
            )
        kwargs = dict(mark.kwargs)
        if "budget" in kwargs:
            value = kwargs.pop("budget")
            if budget is None:  # the nearest mark's
                try:
                    budget = check_budget(value, f"perf mark on {_mark_owner(node)}: budget")
                except ConfigError as exc:
                    raise BoundError(str(exc)) from None
        marks.append((_mark_owner(node), kwargs))
    if not marks:
        return [], budget
    from .gate.bounds import parse_marks

    backends = item.config.stash.get(BACKENDS_KEY, None)
    return parse_marks(marks, backends=backends.names() if backends is not None else None), budget


def read_bounds(item):
    """Read ``item``'s perf bounds from its marks as they stand now into its stash; again only
    when a mark was added since (a conftest's ``pytest_collection_modifyitems``, or
    ``request.applymarker`` in a fixture or the test). Raises BoundError as ``_parse_perf_marks``."""
    marks = tuple(id(mark) for mark in item.iter_markers("perf"))
    if item.stash.get(MARKS_READ_KEY, None) == marks:
        return
    for key in (BOUNDS_KEY, BUDGET_KEY):
        if key in item.stash:
            del item.stash[key]
    bounds, budget = _parse_perf_marks(item)
    if bounds:
        item.stash[BOUNDS_KEY] = bounds
    if budget is not None:
        item.stash[BUDGET_KEY] = budget
    item.stash[MARKS_READ_KEY] = marks  # (not after an error: it is raised at every read)


def _bound_error(item, exc):
    return f"{item.nodeid}:\n{exc}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """Parse every collected test's perf marks; a malformed bound, an unknown metric or a conflict
    between marks is a collection error of the module (the message points at the bad token)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.outcome != "passed" or not rep.result:
        return
    errors = []
    for item in rep.result:
        if not isinstance(item, pytest.Item):
            continue
        try:
            read_bounds(item)
        except BoundError as exc:
            errors.append(_bound_error(item, exc))
    if errors:
        rep.outcome = "failed"
        rep.longrepr = "\n\n".join(errors)
        rep.result = []


# -- the plugin's own errors -----------------------------------------------------------------------
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _internal(entry):
    path = str(getattr(entry, "path", None) or entry.frame.code.path)
    return os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep)


def _hide_internal_frames(item, call, rep):
    """An error pytest-jetson raised on purpose (a ``JetsonError``: a worker, an engine, a
    telemetry source, a baseline, a usage) is reported with the user's frames only: its message
    says what went wrong and the fix, and the plugin's frames would bury it."""
    excinfo = call.excinfo
    if excinfo is None or not rep.failed or not isinstance(excinfo.value, JetsonError):
        return
    config = item.config
    if config.getoption("fulltrace", False):
        return
    # pytest's own pruning first (from the test function on, __tracebackhide__), then ours
    if hasattr(item, "_traceback_filter"):  # pytest >= 7.4
        traceback = item._traceback_filter(excinfo)
    elif hasattr(item, "_prunetraceback"):
        item._prunetraceback(excinfo)
        traceback = excinfo.traceback
    else:
        traceback = excinfo.traceback
    kept = traceback.filter(lambda entry: not _internal(entry))
    if not len(kept):
        rep.longrepr = f"{type(excinfo.value).__name__}: {excinfo.value}"
        return
    excinfo.traceback = kept
    style = config.getoption("tbstyle", "auto")
    rep.longrepr = excinfo.getrepr(
        funcargs=True, abspath=False, showlocals=config.getoption("showlocals", False),
        style="long" if style in ("auto", None) else style, tbfilter=False, truncate_locals=True)


# -- the session: gate, results, files -------------------------------------------------------------
class PerfSession:
    """The gate of this pytest session. It decides each test's bounds right after its body (on an
    xdist worker, where the test ran), collects every result (on the controller too, from the
    workers' reports), and at session finish writes the baselines and reports, once."""

    def __init__(self, config, ctx):
        self.config = config
        self.ctx = ctx
        self._gate = None
        self._project = None
        self._keys = {}
        self.results = []
        self.ran = []
        self.deselected = 0
        self.lines = []
        self.errors = []
        self.counts = TestCounts()
        self._gpu_metrics = None

    @property
    def worker(self):
        return hasattr(self.config, "workerinput")

    def gate(self):
        """The GateSession, made on first use: a run without perf tests never loads the gate."""
        if self._gate is None:
            from .gate.checks import COMPARED_KEYS
            from .gate.session import GateSession

            ctx = self.ctx
            self._gate = GateSession(ctx.settings, ctx.fingerprint(), ctx.baseline_id,
                                     rootdir=str(self.project()),
                                     compared_keys=COMPARED_KEYS + ctx.compared_keys())
        return self._gate

    def project(self):
        """The project the tests belong to (its baselines, keys and report paths start there),
        whatever rootdir this invocation picked."""
        if self._project is None:
            from .gate.keys import project_root

            self._project = project_root(self.config.rootpath)
        return self._project

    def key(self, nodeid):
        """The baseline key of a node id: the same however pytest was invoked."""
        key = self._keys.get(nodeid)
        if key is None:
            # the module's part once per module: resolving its path for each of thousands of
            # tests was most of what an xdist controller did after its workers had finished
            module, sep, rest = nodeid.partition("::")
            prefix = self._keys.get(module)
            if prefix is None:
                from .gate.keys import baseline_key

                prefix = self._keys[module] = baseline_key(self.config.rootpath, module, self.project())
            key = self._keys[nodeid] = prefix + sep + rest
        return key

    def close(self):
        self.ctx.close()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        """A ``jetson`` mark the session cannot read (an unknown keyword, a power mode no board
        has) is a collection error of its module, naming the test, the keyword and the fix."""
        outcome = yield
        rep = outcome.get_result()
        if rep.outcome != "passed" or not rep.result:
            return
        errors = []
        for item in rep.result:
            if not isinstance(item, pytest.Item):
                continue
            for mark in item.iter_markers("jetson"):
                try:
                    check_jetson_mark(mark, self.ctx.device)
                except ConfigError as exc:
                    errors.append(f"{item.nodeid}:\njetson mark on {item.name}: {exc}")
                    break
        if errors:
            rep.outcome = "failed"
            rep.longrepr = "\n\n".join(errors)
            rep.result = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        """Skip the tests whose ``jetson`` marks exclude this session's device, and read the perf
        bounds again where marks were added: last, so that a mark another plugin's or a
        conftest's hook added is read too. A malformed bound added there is a usage error with
        the collection error's message."""
        errors = []
        for item in items:
            try:
                read_bounds(item)
            except BoundError as exc:
                errors.append(_bound_error(item, exc))
        if errors:
            raise pytest.UsageError("\n\n".join(errors))
        skip_excluded(self.ctx.device, items)

    # -- the family of comparisons ---------------------------------------------------------------
    def pytest_collection_finish(self, session):
        """Count the session's relative comparisons once the selection is final: the gate divides
        its error rate among them (on each xdist worker too: each collects the whole suite). A
        bound limited to other devices or backends is never compared here, so it is not counted."""
        marked = [item.stash[BOUNDS_KEY] for item in session.items if BOUNDS_KEY in item.stash]
        if not any(b.relative for bounds in marked for b in bounds):
            return
        from .gate.family import family_size

        n = family_size(marked, device=self.ctx.fingerprint().get("device"), backend=self.ctx.backend)
        if n:
            self.gate().plan(n, budget=self.ctx.settings.budget)

    def extension_for(self, item):
        """The ``extend`` factory of ``item``'s recorder: the first measurement of a test with
        relative bounds and a stored baseline grows until its comparisons decide."""

        def factory(index):
            # the bounds as the test's marks stand when it measures (a mark may come later)
            bounds = item.stash.get(BOUNDS_KEY, [])
            if index != 0 or not any(b.relative for b in bounds):
                return None
            return self.gate().extension(self.key(item.nodeid), bounds, item.stash.get(BUDGET_KEY, None))

        return factory

    def golden_for(self, item):
        """``golden(name) -> Path``: where ``item``'s golden outputs live, beside its baselines."""

        def golden(name):
            from .gate.outputs import golden_path

            return golden_path(self.gate().store.directory, self.key(item.nodeid), name)

        return golden

    def _output_verdicts(self, item, checks, result):
        """The verdicts of the test's ``perf.check_outputs`` calls, added to its result."""
        from .gate.outputs import verdicts

        s, gate = self.ctx.settings, self.gate()
        try:
            result.verdicts += verdicts(checks, self.key(item.nodeid), update=s.update_baselines,
                                        missing_baseline=s.missing_baseline, display=gate.display)
        except (OSError, JetsonError) as exc:
            result.error = f"output check of {item.name}: {exc}"

    # -- per test --------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        """Read the bounds again if a fixture added a perf mark (``request.applymarker``), so
        that the test's measurements extend for them; an error is reported after the body."""
        try:
            read_bounds(item)
        except BoundError:
            pass

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """After the test body: check the perf bounds on what the test recorded. A failing bound
        fails the test with its verdicts as the report (no traceback); perf bounds with nothing
        recorded error at teardown. An error of pytest-jetson's own (a worker, an engine, a
        telemetry source, a baseline, a usage) shows the user's frames and the message, not the
        plugin's internals (``--fulltrace`` shows everything)."""
        outcome = yield
        rep = outcome.get_result()
        _hide_internal_frames(item, call, rep)
        if call.when == "teardown":
            message = item.stash.get(ERROR_KEY, None)
            if message and rep.passed:
                rep.outcome = "failed"
                rep.longrepr = message
            return
        if call.when != "call":
            return
        try:
            read_bounds(item)  # the final marks: the test body may have added one
        except BoundError as exc:
            if rep.passed or rep.skipped:
                rep.outcome = "failed"
                rep.longrepr = _bound_error(item, exc)
            return
        bounds = item.stash.get(BOUNDS_KEY, [])
        recorder = item.stash.get(RECORDER_KEY, None)
        if recorder is not None:
            del item.stash[RECORDER_KEY]  # pytest keeps every item to the end: not its samples too
        measurements = list(recorder.measurements) if recorder is not None else []
        checks = list(getattr(recorder, "output_checks", None) or [])
        if not bounds and not measurements and not checks:
            return
        from .gate.verdict import fails
        from .report import render
        from .report.junit import properties

        self._say_why_no_gpu_metrics(bounds, measurements)
        result = self.gate().evaluate(self.key(item.nodeid), bounds, measurements, body_passed=rep.passed,
                                      test_name=item.name)
        if checks and rep.passed:
            self._output_verdicts(item, checks, result)
        rep.jetson = result
        for name, value in properties(result):
            item.user_properties.append((name, value))
        if not rep.passed:
            return
        if result.error:
            item.stash[ERROR_KEY] = result.error
            return
        policy = self.ctx.settings.inconclusive
        if result.failing(policy):
            rep.outcome = "failed"
            rep.longrepr = render.failure_section(result, policy)
        for v in result.verdicts:
            if v.outcome_row.needs_look and not fails(v.outcome, policy):  # passes, needs a look
                item.warn(pytest.PytestWarning(render.warning(v)))
        for note in result.notes:
            item.warn(pytest.PytestWarning(note))

    def _say_why_no_gpu_metrics(self, bounds, measurements):
        """On a board, a bound on GPU activity is not measurable: say why in this machine's terms
        (nsys missing, or without GPU metrics here; ``gate.scope`` reads it)."""
        ctx = self.ctx
        if ctx.device.simulated or ctx.host is not None or not any(
                metrics.METRICS[b.metric].source == metrics.GPU_METRICS_SOURCE for b in bounds):
            return
        if self._gpu_metrics is None:
            from .report.trace import nsys_support

            support = nsys_support()
            self._gpu_metrics = support.why or (
                f"the timed window does not run under Nsight Systems ({support.path} samples GPU metrics "
                "here: --jetson-trace=all records them in the test's nsys report)")
        for m in measurements:
            m.extra.setdefault("gpu_metrics", self._gpu_metrics)

    @pytest.hookimpl(trylast=True)  # on a worker: after xdist has sent the report
    def pytest_runtest_logreport(self, report):
        if self.worker:
            # the controller counts, keeps and writes; the report a worker keeps (its terminal's
            # statistics) holding the whole result would grow with the worker's share of the suite
            report.__dict__.pop("jetson", None)
            return
        if "perf" in report.keywords or getattr(report, "jetson", None) is not None:
            if self.config.pluginmanager.get_plugin("terminalreporter") is None:
                self._count(report)
            else:  # counted at the end from the terminal's own statistics (``_count_perf_tests``)
                self.counts.nodeids.add(report.nodeid)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.ran.append(report.nodeid)
            result = getattr(report, "jetson", None)
            if result is not None:
                self.results.append(self._kept(result))
                report.jetson = self.results[-1]

    def _count(self, report, category=None):
        if category is None:
            status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
            category = status[0] if status else report.outcome
        self.counts.add(report.nodeid, category if isinstance(category, str) else category[0])

    def _count_perf_tests(self):
        """The perf tests' reports by the category the terminal gave each: asking pytest again for
        every report was a tenth of an xdist controller's work."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        stats = getattr(tr, "stats", None)
        if not isinstance(stats, dict):
            return
        perf = self.counts.nodeids
        for category, reports in stats.items():
            for rep in reports:
                if getattr(rep, "when", None) in ("setup", "call", "teardown") and getattr(rep, "nodeid", None) in perf:
                    self._count(rep, category)

    def _kept(self, result):
        """A judged result as the session keeps it to its end (``jsonreport.kept``: its report
        test, a few KB), after every hook that adds to it (a trace's link) has run; whole where
        plots draw every sample."""
        s = self.ctx.settings
        if s.plots:
            return result
        from .report.jsonreport import kept

        return kept(result, s.report_samples, s.confidence)

    # -- the pytest-xdist boundary: the one place a result is serialised (besides report files) --
    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_to_serializable(self, config, report):
        outcome = yield
        data = outcome.get_result()
        result = data.get("jetson") if isinstance(data, dict) else None
        if result is not None and hasattr(result, "to_json"):
            # as the session keeps it, one string (every sample only where a plot needs it): a
            # nested dict costs execnet more than the test it describes
            from .report.jsonreport import kept_text

            s = self.ctx.settings
            data["jetson"] = result.to_json() if s.plots else kept_text(result, s.report_samples, s.confidence)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_from_serializable(self, config, data):
        outcome = yield
        report = outcome.get_result()
        data = getattr(report, "jetson", None)
        if isinstance(data, str):
            from .report.jsonreport import from_text

            report.jetson = from_text(data)
        elif isinstance(data, dict):
            from .report.jsonreport import result_of

            report.jetson = result_of(data)

    def pytest_deselected(self, items):
        self.deselected += len(items)

    # -- the end ---------------------------------------------------------------------------------
    def _touches_baselines(self):
        """Whether the session must look at the baselines at all: it recorded perf results, was
        asked to record or prune, or ran a module that has a baseline file."""
        s = self.ctx.settings
        if self.results or s.update_baselines or s.prune_baselines:
            return True
        root = Path(s.baselines)
        if not root.is_absolute():
            root = self.project() / root
        directory = root / self.ctx.baseline_id
        if not directory.is_dir():
            return False
        from .gate.keys import baseline_path

        return any(baseline_path(directory, self.key(n)).exists() for n in set(self.ran))

    def _fail_on_lost_baselines(self, session, summary):
        """Baselines this session measured but could not write (a full disk, a read-only
        directory) fail it: exit status 1, as for a failed test, since what the run was for is
        lost and a recording job must not go on as if it had recorded (4 is for command lines,
        3 for crashes). A worse status already set is kept."""
        if not summary.errors:
            return
        n = len(summary.errors)
        self.errors.append(f"pytest-jetson: {n} baseline file{'s' if n != 1 else ''} could not be written "
                           f"(above); this session fails so that its results are not taken as recorded")
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Write the baselines and the reports, once, on the controller. A Ctrl-C meanwhile ends
        it with a line and exit status 2 (each file is whole: written atomically, or not at all),
        not a traceback."""
        if self.worker:
            return
        try:
            self._finish(session, exitstatus)
        except KeyboardInterrupt:
            self.errors.append("pytest-jetson: interrupted while writing the session's baselines and reports; "
                               "every file is whole (the old one or the new one) and those not reached were "
                               "not written: run again to write them")
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            if self.config.pluginmanager.get_plugin("terminalreporter") is None:
                sys.stderr.write(self.errors[-1] + "\n")

    def _finish(self, session, exitstatus):
        s = self.ctx.settings
        self._count_perf_tests()
        if self._touches_baselines():
            from .gate.session import partial_selection
            from .report import render

            gate = self.gate()
            gate.results = self.results
            config = self.config
            partial = partial_selection(
                config.args, keyword=config.getoption("keyword", "") or "",
                markexpr=config.getoption("markexpr", "") or "",
                last_failed=bool(config.getoption("lf", False)), deselected=self.deselected)
            failed = int(exitstatus) in (2, 3, 4)
            summary = gate.finish([self.key(n) for n in self.ran], partial_selection=partial,
                                  failed_session=failed)
            self.lines += render.baseline_summary(summary)
            self._fail_on_lost_baselines(session, summary)
        self.counts.add_verdicts(self.results)
        lost = 0
        target = {"id": self.ctx.baseline_id, "title": self.ctx.describe(), "backend": self.ctx.backend}
        provenance = None
        if s.report_json or s.report_md or s.plots or s.history:
            from .provenance import commit_info, machine_info

            provenance = {"commit": commit_info(self.config.rootpath), "machine": machine_info()}
        if s.report_json or s.report_md or s.plots:
            from .report.files import write_reports

            written, errors = write_reports(self.results, s, self.ctx.fingerprint(), counts=self.counts,
                                            target=target, provenance=provenance, root=str(self.project()))
            self.lines += [f"pytest-jetson: wrote {p}" for p in written]
            self.errors += [f"pytest-jetson: {e}" for e in errors]
            lost += len(errors)
        if s.history and not self._append_history(target, provenance):
            lost += 1
        self._fail_on_lost_reports(session, lost)
        if self.config.pluginmanager.get_plugin("terminalreporter") is None:
            for line in self.errors:
                sys.stderr.write(line + "\n")

    def _append_history(self, target, provenance):
        """This run into the ``--jetson-history`` store; a store that cannot take it is an error
        line (the reports are written already) and False."""
        from .report import history_store

        path = self.ctx.settings.history
        try:
            run = history_store.append_session(path, self.results, self.ctx.fingerprint(), target, provenance,
                                               summary=self.counts.to_dict(), root=self.project())
        except JetsonError as exc:
            self.errors.append(f"pytest-jetson: --jetson-history: {exc}")
            return False
        self.lines.append(f"pytest-jetson: appended run {run} to the history store {path}")
        return True

    def _fail_on_lost_reports(self, session, n):
        """Reports asked for but not written (a full disk, a directory gone or read-only) fail the
        session as lost baselines do: a CI step that publishes or compares them must stop here,
        not go on with a stale file or none. A worse status already set is kept."""
        if not n:
            return
        self.errors.append(f"pytest-jetson: {n} report file{'s' if n != 1 else ''} could not be written (above); "
                           f"this session fails so that a missing report is not taken as written: free "
                           f"space or choose a writable path, and run again")
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if self.worker:
            return
        tr = terminalreporter
        table = []
        if self.results or self.counts.tests:
            from .report import render, terminal

            table = terminal.summary(self.results, self.counts, title=self.ctx.describe(),
                                     width=tr._tw.fullwidth, show=self.ctx.settings.table)
            if table:
                table += render.workload_notes(self.results)
        if table or self.lines:
            tr.write_sep("-", "pytest-jetson perf gate")
            for line in table + self.lines:
                tr.write_line(line)
        for line in self.errors:
            tr.write_line(line, red=True)


# -- traces on demand (--jetson-trace) ---------------------------------------------------------------
class NvtxTest:
    """In a test re-run under nsys: the test body is an NVTX range named after the test (its
    ``perf.stage`` spans are ranges inside it), when the nvtx package is installed."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        import importlib
        import importlib.util

        nvtx = importlib.import_module("nvtx") if importlib.util.find_spec("nvtx") else None
        if nvtx is not None:
            nvtx.push_range(message=item.nodeid)
        try:
            yield
        finally:
            if nvtx is not None:
                nvtx.pop_range()


class TraceSession:
    """``--jetson-trace=fail|all``: a trace of each failing or every perf test (``report.trace``),
    written when the test's outcome is known (after the gate), linked from the JSON report (each
    measurement's ``extra["trace"]``), the JUnit properties (``jetson_trace``) and the terminal."""

    def __init__(self, config, ctx):
        self.config = config
        self.ctx = ctx
        self.windows = {}
        self.written = []
        self.notes = []
        self._nsys = None

    def project(self):
        from .gate.keys import project_root

        return project_root(self.config.rootpath)

    def directory(self):
        from .report.trace import trace_dir

        return trace_dir(self.ctx.settings.report_json, Path(self.config.invocation_params.dir))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        """Keep the test's stage spans and its span of virtual time (the simulated board only)."""
        clock = self.ctx.clock
        if getattr(clock, "kind", None) != "virtual":
            yield
            return
        from .run.stages import SPANS

        spans = []
        token = SPANS.set(spans)
        start = clock.now()
        try:
            yield
        finally:
            SPANS.reset(token)
            self.windows[item.nodeid] = (start, clock.now(), spans)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if call.when != "call":
            return
        window = self.windows.pop(item.nodeid, None)
        result = getattr(rep, "jetson", None)
        if result is None or (self.ctx.settings.trace == "fail" and not rep.failed):
            return
        path, note = self._record(item, window, result)
        for name, value in (("jetson_trace", path), ("jetson_trace_note", note)):
            if value:
                rep.user_properties.append((name, str(value)))
                item.user_properties.append((name, str(value)))
        if path:
            for m in result.measurements:
                m.extra["trace"] = str(path)

    def _record(self, item, window, result):
        from .report import trace

        directory = self.directory()
        if window is not None:
            start, end, spans = window
            loads = [rec for rec in getattr(self.ctx.clock, "loads", []) if rec[1] > start and rec[0] < end]
            doc = trace.chrome_trace(trace.Window(start, end, spans, loads, result.measurements), item.nodeid,
                                     device=self.ctx.device.name)
            return trace.write(doc, directory, item.nodeid, root=self.project())
        if self.ctx.device.simulated or self.ctx.host is not None:
            return None, f"no trace of {item.nodeid}: real engines on the host have no timeline to record"
        return self._nsys_rerun(item, directory, result)

    def _nsys_rerun(self, item, directory, result=None):
        """On a board: the test re-run alone under Nsight Systems."""
        import subprocess

        from .report import trace

        if self._nsys is None:
            self._nsys = trace.nsys_support()
        support = self._nsys
        if support.path is None:
            return None, f"no trace of {item.nodeid}: {support.why}"
        s = self.ctx.settings
        args = [f"--jetson-device={s.device}", f"--jetson-seed={s.seed}"]
        args += [f"--jetson-{k.replace('_', '-')}={v}" for k, v in
                 (("power_mode", s.power_mode), ("backend", s.backend), ("duration", s.duration)) if v]
        output = Path(directory) / trace.file_name(item.nodeid, "")
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(trace.nsys_command(support, item.nodeid, output, args, python=sys.executable),
                                  cwd=str(self.config.invocation_params.dir), capture_output=True, text=True,
                                  timeout=900, env=dict(os.environ, **{NSYS_CHILD_ENV: "1"}))
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"no trace of {item.nodeid}: the re-run under nsys failed ({exc})"
        report = output.with_name(output.name + ".nsys-rep")
        if done.returncode not in (0, 1) or not report.exists():
            tail = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
            return None, f"no trace of {item.nodeid}: nsys exited with {done.returncode} ({tail[0][:200]})"
        read = trace.read_gpu_metrics(support, report)
        for i, m in enumerate(getattr(result, "measurements", ())):
            if read.by_measurement.get(i):  # sampled in the re-run, beside this run's figures
                m.extra["gpu_metrics_nsys"] = read.by_measurement[i]
        return report, read.note or None

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return  # (the teardown report carries the test's properties again)
        for name, value in getattr(report, "user_properties", ()):
            if name == "jetson_trace":
                self.written.append((report.nodeid, value))
            elif name == "jetson_trace_note":
                self.notes.append(value)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if hasattr(config, "workerinput") or not (self.written or self.notes):
            return
        tr = terminalreporter
        tr.write_sep("-", "pytest-jetson traces")
        if self.written:
            tr.write_line(f"{len(self.written)} trace(s) in {self.directory()} (open .json in ui.perfetto.dev, "
                          ".nsys-rep in Nsight Systems)")
            for nodeid, path in self.written:
                tr.write_line(f"  {nodeid}: {path}")
        for note in self.notes:
            tr.write_line(f"pytest-jetson: {note}", yellow=True)
