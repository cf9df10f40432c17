"""The package's layering, read from the source (tests/layering.py): data flows one way between
the sub-packages, nothing below the plugin imports pytest, and imports sit at the top of their
module, where a reader sees the real graph, except where importing late is the point."""

from layering import cycles, graph, imports, unit

#: optional or heavy dependencies, imported where they are used so that importing the plugin or a
#: library module stays cheap and works without them (numpy: a run without perf tests loads none)
LAZY_DEPENDENCIES = {"tensorrt", "pycuda", "cuda", "onnxruntime", "jtop", "pynvml", "matplotlib",
                     "numpy", "onnx", "psutil"}

#: the plugin's face imports the gate, the measurements and the reports in the hooks that use them
FACE = {"pytest_jetson/plugin.py"}

#: imports made late on purpose: they load numpy or the gate, which a run without perf tests must
#: not (a run that asks only for the Markdown report or plots included), they are a table row's
#: implementation, which the table read at start-up need not load, or they cost a command that
#: never uses them
ON_PURPOSE = {
    ("pytest_jetson/context.py", "pytest_jetson.telemetry.factory"),  # numpy
    ("pytest_jetson/telemetry/sources.py", "pytest_jetson.telemetry.sim_sensors"),  # numpy
    # the plugin makes its test counts at start-up; only the perf results need the gate's verdicts
    ("pytest_jetson/report/counts.py", "pytest_jetson.gate"),
    ("pytest_jetson/report/files.py", "pytest_jetson.report.jsonreport"),  # numpy, through the gate
    # importlib.metadata: about 20 ms that `pytest-jetson devices` would pay for nothing
    ("pytest_jetson/devices/detect.py", "importlib"),
    # importlib.metadata again: `pytest-jetson models` and every pool worker import the table
    ("pytest_jetson/engines/backends.py", "importlib"),
    # a pool worker loads the harness once its output goes to its log (faulthandler on), so a
    # failure there is its reported error, not a death before its code ran
    ("pytest_jetson/run/worker.py", "pytest_jetson.run.harness"),
    # a pool worker of a host engine needs none of these (numpy, the model zoo, filelock): each
    # is a cost of every worker's start-up, paid only where a model file is resolved or checked,
    # a measurement read back, or telemetry sampled (the board's counters and their readers)
    ("pytest_jetson/engines/base.py", "pytest_jetson.engines.cache"),
    ("pytest_jetson/engines/base.py", "pytest_jetson.fileio"),
    ("pytest_jetson/engines/base.py", "pytest_jetson.models"),
    ("pytest_jetson/run/measurement.py", "pytest_jetson.telemetry.series"),
    ("pytest_jetson/run/measurement.py", "pytest_jetson.telemetry.summary"),
    ("pytest_jetson/run/window.py", "pytest_jetson.telemetry.throttle_counters"),
    # hashing a layer profile: a pool worker imports the module for its profile and never hashes
    ("pytest_jetson/engines/layer_profile.py", "hashlib"),
    # a worker flushes C's buffers only as it exits; the tracker is started only where a pool is
    ("pytest_jetson/run/worker.py", "ctypes"),
    ("pytest_jetson/run/pool_procs.py", "multiprocessing"),
} | {("pytest_jetson/telemetry/sources.py", f"pytest_jetson.telemetry.{source}")
     for source in ("jtop", "tegrastats", "sysfs", "nvml", "host")
} | {("pytest_jetson/engines/backends.py", f"pytest_jetson.engines.{backend}")
     for backend in ("simulated", "onnxruntime", "tensorrt")}

FOUND = list(imports())


def test_no_cycles_between_the_sub_packages():
    edges = graph(FOUND)
    assert "settings" in edges and "devices" in edges  # the graph was read
    assert cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle_through_three_layers():
    edges = {"devices": {"settings"}, "settings": {"engines"}, "engines": {"devices", "sim"}, "sim": set()}
    assert cycles(edges) == [["devices", "engines", "settings"]]


def test_settings_and_devices_import_neither_engines_nor_telemetry():
    edges = graph(FOUND)
    for low in ("settings", "options", "devices", "named_table"):
        assert not edges.get(low, set()) & {"engines", "telemetry", "sim", "run", "gate", "plugin"}, low


def test_nothing_below_the_plugin_imports_pytest():
    users = {i.path for i in FOUND if i.module.split(".")[0] in ("pytest", "_pytest")}
    assert users == {"pytest_jetson/plugin.py", "pytest_jetson/hookspecs.py"}


def test_imports_sit_at_the_top_of_their_module():
    late = [i for i in FOUND if i.in_function
            and i.module.split(".")[0] not in LAZY_DEPENDENCIES
            and i.path not in FACE
            and (i.path, i.module) not in ON_PURPOSE]
    assert late == [], "\n".join(f"{i.path}:{i.line} imports {i.module} inside a function" for i in late)


def test_the_exceptions_name_imports_that_exist():
    late = {(i.path, i.module) for i in FOUND if i.in_function}
    assert ON_PURPOSE <= late
    assert unit("pytest_jetson/devices/resolve.py") == "devices" and unit("numpy") is None
