"""The pytest face of pytest-jetson: options, ini keys, markers, fixtures and hooks.

Thin on purpose: it turns options, marks and fixtures into calls on the library packages and turns
their verdicts into test outcomes. Everything it calls is usable without pytest.
"""

import os

import pytest

from .errors import ConfigError, JetsonError

# ------------------------------------------------------------------------------------------------
# options and ini keys
# ------------------------------------------------------------------------------------------------


def pytest_addoption(parser):
    group = parser.getgroup("jetson", "performance regression testing on NVIDIA Jetson")
    group.addoption(
        "--jetson-device", dest="jetson_device", default=None, metavar="NAME|auto",
        help="device to test: a name from `pytest-jetson devices` or auto (the detected board, "
        "else a simulated Orin Nano 8GB). Ini: jetson_device.",
    )
    group.addoption(
        "--jetson-simulate", dest="jetson_simulate", action="store_true", default=False,
        help="simulate the device even on a real Jetson board",
    )
    group.addoption(
        "--jetson-backend", dest="jetson_backend", default=None,
        choices=("tensorrt", "onnxruntime", "simulated"),
        help="engine backend (default: tensorrt on a board, simulated elsewhere)",
    )
    group.addoption(
        "--jetson-power-mode", dest="jetson_power_mode", default=None, metavar="MODE",
        help="nvpmodel power mode by name or id (default: the board's current or the profile's default)",
    )
    group.addoption(
        "--jetson-baselines", dest="jetson_baselines", default=None, metavar="DIR",
        help="baseline directory (default: baselines). Ini: jetson_baselines.",
    )
    group.addoption(
        "--jetson-update-baselines", dest="jetson_update_baselines", nargs="?", const="all",
        default=None, choices=("all", "new"), metavar="all|new",
        help="(re)record baselines from this run: all (new and changed, the default) or new only",
    )
    group.addoption(
        "--jetson-prune-baselines", dest="jetson_prune_baselines", action="store_true", default=False,
        help="remove baseline entries that no selected test used",
    )
    group.addoption(
        "--jetson-missing-baseline", dest="jetson_missing_baseline", default=None,
        choices=("skip", "fail"),
        help="what a relative bound does without a baseline: skip it (default) or fail (for gates)",
    )
    group.addoption(
        "--jetson-allow-env-mismatch", dest="jetson_allow_env_mismatch", action="store_true",
        default=False,
        help="compare against baselines recorded under another power mode, JetPack, TensorRT, ...",
    )
    group.addoption(
        "--jetson-inconclusive", dest="jetson_inconclusive", default=None, choices=("pass", "fail"),
        help="outcome of a comparison too noisy to decide: pass with a warning (default) or fail",
    )
    group.addoption(
        "--jetson-confidence", dest="jetson_confidence", default=None, type=float, metavar="LEVEL",
        help="confidence level of the regression test (default 0.99)",
    )
    group.addoption(
        "--jetson-report-json", dest="jetson_report_json", default=None, metavar="PATH",
        help="write every measurement, telemetry summary and verdict to PATH as JSON",
    )
    group.addoption(
        "--jetson-report-md", dest="jetson_report_md", default=None, metavar="PATH",
        help="write a Markdown summary (default: $GITHUB_STEP_SUMMARY when set)",
    )
    group.addoption(
        "--jetson-plots", dest="jetson_plots", default=None, metavar="DIR",
        help="write PNG plots (telemetry timelines, current vs baseline) to DIR (needs the plots extra)",
    )
    group.addoption(
        "--jetson-seed", dest="jetson_seed", default=None, metavar="N",
        help="seed of the simulated device's run-to-run noise (default 0)",
    )
    group.addoption(
        "--jetson-duration", dest="jetson_duration", default=None, metavar="DUR",
        help="override the duration of every perf.measure and process_pool, e.g. 2s",
    )
    group.addoption(
        "--jetson-telemetry", dest="jetson_telemetry", default=None,
        choices=("auto", "jtop", "tegrastats", "sysfs", "nvml", "host", "simulated", "none"),
        help="telemetry source (default auto: the best available)",
    )
    group.addoption(
        "--jetson-telemetry-interval", dest="jetson_telemetry_interval", default=None, metavar="DUR",
        help="telemetry sampling interval (default 100ms, down to 10ms)",
    )
    parser.addini("jetson_device", "device to test (NAME or auto)", default="auto")
    parser.addini("jetson_baselines", "baseline directory", default="baselines")
    parser.addini("jetson_power_mode", "power mode to expect/simulate", default="")
    parser.addini("jetson_seed", "seed of the simulated noise", default="0")
    parser.addini("jetson_telemetry", "telemetry source", default="auto")


# ------------------------------------------------------------------------------------------------
# configuration, header, device
# ------------------------------------------------------------------------------------------------
# (lead) section: configure / header / jetson_device
CONTEXT_KEY = pytest.StashKey()


def _settings_from_config(config):
    from .settings import Settings, parse_optional_duration, parse_seed

    opt = config.getoption
    ini_device = config.getini("jetson_device") or "auto"
    return Settings(
        device=opt("jetson_device") or ini_device,
        simulate=bool(opt("jetson_simulate")),
        backend=opt("jetson_backend"),
        power_mode=opt("jetson_power_mode") or config.getini("jetson_power_mode") or None,
        baselines=opt("jetson_baselines") or config.getini("jetson_baselines") or "baselines",
        update_baselines=opt("jetson_update_baselines"),
        prune_baselines=bool(opt("jetson_prune_baselines")),
        missing_baseline=opt("jetson_missing_baseline") or "skip",
        allow_env_mismatch=bool(opt("jetson_allow_env_mismatch")),
        inconclusive=opt("jetson_inconclusive") or "pass",
        confidence=opt("jetson_confidence") if opt("jetson_confidence") is not None else 0.99,
        report_json=opt("jetson_report_json"),
        report_md=opt("jetson_report_md") or os.environ.get("GITHUB_STEP_SUMMARY") or None,
        plots=opt("jetson_plots"),
        seed=parse_seed(opt("jetson_seed") if opt("jetson_seed") is not None else config.getini("jetson_seed"),
                        "--jetson-seed / ini jetson_seed"),
        duration=parse_optional_duration(opt("jetson_duration"), "--jetson-duration"),
        telemetry=opt("jetson_telemetry") or config.getini("jetson_telemetry") or "auto",
        telemetry_interval=parse_optional_duration(opt("jetson_telemetry_interval"),
                                                   "--jetson-telemetry-interval") or 0.1,
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "perf(**bounds): performance bounds checked after the test, absolute ('>= 900/s', "
        "'<= 15 ms', '<= 1.5 GiB', '<= 10 W') or relative to the stored baseline ('5%').",
    )
    config.addinivalue_line(
        "markers",
        "jetson(*devices, dla=False, tensor_cores=False, power_mode=None): run only on these devices "
        "(names or aliases), on devices with a DLA or tensor cores, or in these power modes; "
        "skipped elsewhere.",
    )
    from .context import Context, default_backend
    from .devices.resolve import resolve_device

    try:
        settings = _settings_from_config(config)
        device = resolve_device(settings)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[CONTEXT_KEY] = Context(
        settings=settings, device=device, backend=default_backend(device, settings.backend)
    )


def jetson_context(config):
    """The session's Context (settings, device, clock, backend)."""
    return config.stash[CONTEXT_KEY]


def pytest_report_header(config):
    ctx = config.stash.get(CONTEXT_KEY, None)
    if ctx is None:
        return None
    line = ctx.device.header_line()
    if ctx.backend != ("simulated" if ctx.device.simulated else "tensorrt"):
        line += f" · backend {ctx.backend}"
    return line


def _device_matches(device, names, dla, tensor_cores):
    from .devices.registry import get

    if names:
        wanted = set()
        for name in names:
            try:
                profile = get(name)
            except ConfigError as exc:
                raise pytest.UsageError(f"@pytest.mark.jetson: {exc}") from None
            wanted.add(profile.id)
        if device.profile.id not in wanted:
            return f"runs on {', '.join(sorted(wanted))}; this session tests {device.profile.id}"
    if dla and not device.profile.has_dla:
        return f"needs a DLA; {device.profile.name} has none"
    if tensor_cores and not device.profile.has_tensor_cores:
        return f"needs tensor cores; {device.profile.name} has none"
    return None


def pytest_collection_modifyitems(config, items):
    ctx = config.stash.get(CONTEXT_KEY, None)
    if ctx is None:
        return
    for item in items:
        for mark in item.iter_markers("jetson"):
            reason = _device_matches(ctx.device, mark.args, mark.kwargs.get("dla", False),
                                     mark.kwargs.get("tensor_cores", False))
            modes = mark.kwargs.get("power_mode")
            if reason is None and modes:
                modes = [modes] if isinstance(modes, str) else list(modes)
                if ctx.device.power_mode.name not in modes:
                    reason = (f"runs in power mode {', '.join(modes)}; this session tests "
                              f"{ctx.device.power_mode.name} (--jetson-power-mode)")
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"jetson: {reason}"))
                break


@pytest.fixture(scope="session")
def jetson_device(pytestconfig):
    """The Device under test: profile, power mode, simulated or real, and its fingerprint."""
    return jetson_context(pytestconfig).device


@pytest.fixture
def telemetry(request):
    """The session's telemetry factory: ``with telemetry.sample(interval="50ms") as t: ...`` then
    ``t.summary`` and ``t.series``. The source follows --jetson-telemetry (default: the best
    available; simulated on a simulated device)."""
    from .telemetry.factory import session_factory

    ctx = jetson_context(request.config)
    return session_factory(ctx.device, ctx.clock, source=ctx.settings.telemetry,
                           interval=ctx.settings.telemetry_interval, seed=ctx.settings.seed)


# ------------------------------------------------------------------------------------------------
# engines, perf recorder, pytest-benchmark
# ------------------------------------------------------------------------------------------------
# (engines) section
RECORDER_KEY = pytest.StashKey()


@pytest.fixture
def perf(request):
    """The recorder: ``perf.measure(engine, duration=...)`` or ``perf.record(measurement)``; the
    perf marks' bounds are checked against what it holds after the test body."""
    from .run.recorder import Recorder

    recorder = Recorder(jetson_context(request.config))
    request.node.stash[RECORDER_KEY] = recorder
    return recorder


def _close_engines(ctx):
    for key, engine in list(ctx.engines.items()):
        if isinstance(key, tuple) and key[:1] == ("trt_engine",):
            try:
                engine.close()
            finally:
                ctx.engines.pop(key, None)


@pytest.fixture
def trt_engine(request):
    """Factory: ``trt_engine(model, precision="fp16", batch=1, dla_core=None, **opts)`` returns an
    engine for a zoo name or an ONNX path, built once per session for the same arguments. The
    backend follows the session (tensorrt on a board, simulated elsewhere, or --jetson-backend)."""
    from .engines import open_engine

    ctx = jetson_context(request.config)

    def factory(model, precision="fp16", batch=1, dla_core=None, **opts):
        key = ("trt_engine", str(model), precision, batch, dla_core,
               tuple(sorted((k, repr(v)) for k, v in opts.items())))
        engine = ctx.engines.get(key)
        if engine is None or getattr(engine, "closed", False):
            if not any(isinstance(k, tuple) and k[:1] == ("trt_engine",) for k in ctx.engines):
                request.config.add_cleanup(lambda: _close_engines(ctx))
            engine = open_engine(model, backend=ctx.backend, device=ctx.device, precision=precision,
                                 batch=batch, dla_core=dla_core,
                                 clock=ctx.clock if ctx.simulated else None, seed=ctx.seed, **opts)
            ctx.engines[key] = engine
        return engine

    return factory


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


# ------------------------------------------------------------------------------------------------
# process pools
# ------------------------------------------------------------------------------------------------
# (pool) section
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


# ------------------------------------------------------------------------------------------------
# perf marker, gate, baselines and reports
# ------------------------------------------------------------------------------------------------
# (gate) section
BOUNDS_KEY = pytest.StashKey()
GATE_KEY = pytest.StashKey()
GATE_ERROR_KEY = pytest.StashKey()


def _gate(config):
    """The session's GateSession (created on first use)."""
    gate = config.stash.get(GATE_KEY, None)
    if gate is None:
        from .gate.session import GateSession

        ctx = jetson_context(config)
        gate = GateSession(ctx.settings, ctx.device, rootdir=str(config.rootpath))
        config.stash[GATE_KEY] = gate
    return gate


def _mark_owner(node):
    if isinstance(node, pytest.Class):
        return f"class {node.name}"
    if isinstance(node, pytest.Module):
        return f"module {node.nodeid}"
    if isinstance(node, pytest.Item):
        return node.name
    return node.nodeid or "conftest"


def _parse_perf_marks(item):
    marks = []
    for node, mark in item.iter_markers_with_node("perf"):
        if mark.args:
            from .errors import BoundError

            raise BoundError(
                f"perf mark on {_mark_owner(node)}: bounds are keyword arguments, e.g. "
                f"@pytest.mark.perf(throughput='>= 900/s'); got positional {mark.args!r}"
            )
        marks.append((_mark_owner(node), dict(mark.kwargs)))
    if not marks:
        return []
    from .gate.bounds import parse_marks  # only suites with perf marks pay for numpy here

    return parse_marks(marks)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """Parse every collected test's perf marks; a malformed bound, an unknown metric or a conflict
    between marks is a collection error of the module (the message points at the bad token)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.outcome != "passed" or not rep.result:
        return
    from .errors import BoundError

    errors = []
    for item in rep.result:
        if not isinstance(item, pytest.Item):
            continue
        try:
            bounds = _parse_perf_marks(item)
        except BoundError as exc:
            errors.append(f"{item.nodeid}:\n{exc}")
            continue
        if bounds:
            item.stash[BOUNDS_KEY] = bounds
    if errors:
        rep.outcome = "failed"
        rep.longrepr = "\n\n".join(errors)
        rep.result = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """After the test body: check the perf bounds on what the test recorded; a failing bound fails
    the test with the gate's message; perf bounds with nothing recorded error at teardown."""
    outcome = yield
    rep = outcome.get_result()
    if call.when == "teardown":
        message = item.stash.get(GATE_ERROR_KEY, None)
        if message and rep.passed:
            rep.outcome = "failed"
            rep.longrepr = message
        return
    if call.when != "call":
        return
    bounds = item.stash.get(BOUNDS_KEY, [])
    recorder = item.stash.get(RECORDER_KEY, None)
    measurements = list(recorder.measurements) if recorder is not None else []
    if not bounds and not measurements:
        return
    from .report.junit import properties

    gate = _gate(item.config)
    result = gate.evaluate(item.nodeid, bounds, measurements, body_passed=rep.passed,
                           test_name=item.name)
    rep.jetson = result.to_dict()
    for name, value in properties(result):
        item.user_properties.append((name, value))
    if not rep.passed:
        return
    if result.error:
        item.stash[GATE_ERROR_KEY] = result.error
        return
    inconclusive = gate.settings.inconclusive
    if result.failing(inconclusive):
        rep.outcome = "failed"
        rep.longrepr = result.failure_text(inconclusive)
    for v in result.verdicts:
        if v.outcome == "inconclusive" and inconclusive == "pass":
            item.warn(pytest.PytestWarning(f"perf bound inconclusive: {v.message}"))
    for note in result.notes:
        item.warn(pytest.PytestWarning(note))


class _GateReporter:
    """Collects the gate's results from every test report (on the xdist controller too, where the
    reports arrive from the workers) and prints and writes the reports at the end."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            gate = _gate(self.config)
            gate.ran.append(report.nodeid)
            data = getattr(report, "jetson", None)
            if data is not None:
                from .gate.session import TestResult

                gate.add(TestResult.from_dict(data))

    def pytest_deselected(self, items):
        if items:
            _gate(self.config).deselected += len(items)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        _gate_terminal_summary(terminalreporter, exitstatus, config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    if CONTEXT_KEY in config.stash and not config.pluginmanager.has_plugin("jetson-gate-reporter"):
        config.pluginmanager.register(_GateReporter(config), "jetson-gate-reporter")


def _gate_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput") or CONTEXT_KEY not in config.stash:
        return
    from .gate.session import partial_selection
    from .report import terminal

    gate = _gate(config)
    tr = terminalreporter
    partial = partial_selection(
        config.args, keyword=config.getoption("keyword", "") or "",
        markexpr=config.getoption("markexpr", "") or "",
        last_failed=bool(config.getoption("lf", False)), deselected=gate.deselected,
    )
    unused = {} if exitstatus in (2, 3, 4) else gate.unused(partial_selection=partial)
    pruned = 0
    if unused and gate.settings.prune_baselines:
        pruned = gate.store.prune(unused)
    lines = terminal.summary(gate.results, gate.device.fingerprint())
    lines += gate.summary_lines(unused, pruned=pruned, partial_selection=partial)
    if lines:
        tr.write_sep("-", "pytest-jetson perf gate")
        for line in lines:
            tr.write_line(line)
    s = gate.settings
    written = []
    try:
        if s.report_json:
            from .report import jsonreport

            jsonreport.write(s.report_json, jsonreport.build(gate.results, gate.settings, gate.device))
            written.append(s.report_json)
        step_summary = s.report_md == os.environ.get("GITHUB_STEP_SUMMARY")
        if s.report_md and (gate.results or not step_summary):
            from .report import markdown

            markdown.write(s.report_md, markdown.render(gate.results, gate.device.fingerprint()),
                           append=step_summary)
            written.append(s.report_md)
        if s.plots:
            from .report import plots

            written += [str(p) for p in plots.write_plots(gate.results, s.plots)]
    except JetsonError as exc:
        tr.write_line(f"pytest-jetson: {exc}", red=True)
    for path in written:
        tr.write_line(f"pytest-jetson: wrote {path}")
