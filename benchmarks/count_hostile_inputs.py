"""The bad inputs of issue 29's table (items 1-13), each run in a real process with a timeout and its
outcome sorted: clear (a refusal naming the thing, or the outcome the input calls for),
INTERNALERROR, raw traceback, hang, accepted silently (exit 0 where the input should be refused
or the bound should fail), wrong (a run that exits as it should but leaves the wrong result),
file harmed (a sentinel's bytes, inode or type changed, or a special file replaced), orphans
(processes a pool left behind), unclear (refused without naming the thing).

Run from outside the checkout: ``cd /tmp && PYTHONPATH=<checkout> python
<checkout>/benchmarks/count_hostile_inputs.py [ITEM ...]`` (item numbers, default all; the
report readers of item 11 are ``count_hostile_reports.py``, run from here and counted as they
are). About 150 pytest sessions: 10 to 15 minutes on two cores."""

import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 45
#: address space of each session: an input that makes a session allocate without bound fails here
#: instead of taking the machine with it
MEMORY = 4 * 1024 ** 3
DEVICE = "orin-nano-8gb"
BASE = ["-q", "-p", "no:cacheprovider", "--jetson-device", "orin-nano"]
OUTCOMES = ("clear", "INTERNALERROR", "traceback", "hang", "accepted", "wrong", "harmed", "orphans", "unclear")

MEASURE = 'perf.measure(trt_engine("resnet18"), duration="0.05s", warmup="0s")'
SUITE = f'''
import pytest

@pytest.mark.perf(latency_mean="10%")
def test_fast(trt_engine, perf):
    {MEASURE}
'''
PLAIN = f'''
def test_fast(trt_engine, perf):
    {MEASURE}
'''


class Case(NamedTuple):
    item: int
    name: str
    argv: Sequence[str]
    #: error: refused naming ``names``; fail: the bound fails (exit 1); pass / skip: exit 0 with one
    #: test passed / skipped; either: exit 0 or a clear error; warn: exit 0 naming ``names``
    expect: str
    names: Sequence[str] = ()
    setup: Optional[Callable[[Path], None]] = None
    suite: str = SUITE
    conftest: str = ""
    #: paths (relative to the project, or absolute) whose state must not change
    sentinels: Sequence[str] = ()
    #: run by the CLI (``pytest_jetson.cli``) rather than pytest
    cli: bool = False
    #: a last look at the project after the run: a finding in words, or None
    verify: Optional[Callable[[Path, str], Optional[str]]] = None
    #: the largest file the session may write (RLIMIT_FSIZE, bytes; 0: no limit): a full disk
    fsize: int = 0


# ---------------------------------------------------------------------------------------------- helpers

def _fifo(rel: str) -> Callable[[Path], None]:
    return lambda p: os.mkfifo(str(p / rel))


def _dir(rel: str) -> Callable[[Path], None]:
    return lambda p: (p / rel).mkdir(parents=True)


def _link(rel: str, target: str) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).symlink_to(target.replace("{p}", str(p)))
    return make


def _write(rel: str, text: str) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).write_text(text)
    return make


def _rm(rel: str) -> Callable[[Path], None]:
    def remove(p: Path) -> None:
        target = p / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(str(target))
        elif os.path.lexists(str(target)):
            target.unlink()
    return remove


def _all(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        for s in steps:
            s(p)
    return make


def _outside(p: Path) -> Path:
    """A file outside the project (the project is ``<tmp>/project``)."""
    return p.parent / "outside.txt"


def _state(path: Path) -> Tuple:
    try:
        st = os.lstat(str(path))
    except FileNotFoundError:
        return ("absent",)
    body = b""
    if stat.S_ISREG(st.st_mode):
        body = path.read_bytes()
    link = os.readlink(str(path)) if stat.S_ISLNK(st.st_mode) else ""
    return (stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev, link, body)


def _limit(fsize: int = 0) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        if fsize:
            # a write past the limit fails with EFBIG, as on a full disk, instead of killing the process
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        os.setsid()
    return limit


def _env(p: Path) -> Dict[str, str]:
    env = dict(os.environ, PYTEST_JETSON_SYSROOT=str(p / "empty-root"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [x for x in env.get("PYTHONPATH", "").split(os.pathsep) if x])
    return env


def _run(p: Path, argv: Sequence[str], cli: bool = False, timeout: float = TIMEOUT,
         fsize: int = 0) -> Tuple[Optional[int], str]:
    cmd = [sys.executable, "-m", "pytest_jetson.cli", *argv] if cli else [sys.executable, "-m", "pytest", *BASE, *argv]
    proc = subprocess.Popen(cmd, cwd=str(p), env=_env(p), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=_limit(fsize))
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out.decode(errors="replace")
    return proc.returncode, out.decode(errors="replace")


#: files a writer may create beside /dev/null (SQLite's rollback journal and write-ahead log)
DEV_NULL_SIBLINGS = ("/dev/null-journal", "/dev/null-wal", "/dev/null-shm")


def _restore_dev_null() -> None:
    """Put a real /dev/null back if a run replaced it (the machine needs it), and remove what a
    run left beside it."""
    for sibling in DEV_NULL_SIBLINGS:
        if os.path.lexists(sibling):
            os.unlink(sibling)
    try:
        if stat.S_ISCHR(os.lstat("/dev/null").st_mode):
            return
        os.unlink("/dev/null")
    except FileNotFoundError:
        pass
    os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod("/dev/null", 0o666)


# ---------------------------------------------------------------------------------------------- the cases

def _item1() -> List[Case]:
    """Report targets that are no regular file the plugin may write."""
    cases = []
    targets = [
        ("/dev/null", "/dev/null", None, "error"),
        ("FIFO", "target", _fifo("target"), "error"),
        ("directory", "target", _dir("target"), "error"),
        ("pyproject.toml", "pyproject.toml", None, "error"),
        ("test file", "test_suite.py", None, "error"),
        ("link inside the project", "target", _all(_write("kept.txt", "kept\n"), _link("target", "kept.txt")),
         "either"),
        ("link outside the project", "target", _link("target", "{p}/../outside.txt"), "error"),
        ("dangling link outside", "target", _link("target", "/nonexistent-dir/x.json"), "error"),
        ("link to a new file outside", "target", _link("target", "{p}/../new-outside"), "error"),
        ("path through a file", "pyproject.toml/r.json", None, "error"),
    ]
    for option in ("--jetson-report-json", "--jetson-report-md", "--jetson-history"):
        for what, path, setup, expect in targets:
            names = [] if path == "/dev/null" else [path.split("/")[0]]
            names = names or ["/dev/null"]
            cases.append(Case(1, f"{option} {what}", [option, path, "test_suite.py"], expect, names, setup,
                              sentinels=[path.split("/")[0] if not path.startswith("/") else path, "kept.txt",
                                         "../outside.txt", "../new-outside", "pyproject.toml", "test_suite.py"]))
    for what, path, setup, expect in [("/dev/null", "/dev/null", None, "error"),
                                       ("a file", "pyproject.toml", None, "error"),
                                       ("FIFO", "target", _fifo("target"), "error"),
                                       ("link outside", "target", _link("target", "{p}/.."), "error")]:
        cases.append(Case(1, f"--jetson-plots {what}", ["--jetson-plots", path, "test_suite.py"], expect,
                          [path], setup, sentinels=[path, "pyproject.toml", "../outside.txt"]))
    # a trace that cannot be written is a note, never a failed test (report/trace.py)
    for what, setup, names in [("traces dir a FIFO", _fifo(".jetson-traces"), [".jetson-traces"]),
                               ("traces dir a file", _write(".jetson-traces", "x\n"), [".jetson-traces"]),
                               ("traces dir a link outside", _link(".jetson-traces", "{p}/.."), ["outside"])]:
        cases.append(Case(1, f"--jetson-trace all, {what}", ["--jetson-trace", "all", "test_suite.py"], "warn",
                          names, setup, sentinels=[".jetson-traces", "../outside.txt"]))
    return cases


def _item2() -> List[Case]:
    """Perf bounds added after collection."""
    modify = '''
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.perf({bound}))
'''
    fixture = f'''
import pytest

@pytest.fixture
def gated(request):
    request.applymarker(pytest.mark.perf({{bound}}))

def test_fast(gated, trt_engine, perf):
    {MEASURE}
'''
    body = f'''
import pytest

def test_fast(request, trt_engine, perf):
    request.applymarker(pytest.mark.perf({{bound}}))
    {MEASURE}
'''
    cases = []
    for bound, expect, names in [("throughput='>= 900000/s'", "fail", ["perf bound failed"]),
                                 ("latency_mean='<= 1us'", "fail", ["perf bound failed"]),
                                 ("throughput='>= fast'", "error", ["throughput"]),
                                 ("latency_mean='10 parsecs'", "error", ["latency_mean"]),
                                 ("thruput='>= 1/s'", "error", ["thruput"]),
                                 ("throughput='>= 1/s'", "pass", [])]:
        cases.append(Case(2, f"modifyitems {bound}", ["test_suite.py"], expect, names, suite=PLAIN,
                          conftest=modify.format(bound=bound)))
        cases.append(Case(2, f"applymarker in fixture {bound}", ["test_suite.py"], expect, names,
                          suite=fixture.format(bound=bound)))
        cases.append(Case(2, f"applymarker in body {bound}", ["test_suite.py"], expect, names,
                          suite=body.format(bound=bound)))
    return cases


# item 4: one number in a recorded baseline file
def _metric_edit(pattern: str, literal: str) -> Callable[[str], str]:
    return lambda text: re.sub(pattern, lambda m: m.group(1) + literal, text, count=1)


BASELINE_EDITS: Dict[str, Callable[[str], str]] = {
    "400-digit value": _metric_edit(r'("latency_mean": \{[^}]*"value": )[-0-9.e+]+', "9" * 400),
    "se_log 1e308": _metric_edit(r'("latency_mean": \{[^}]*"se_log": )[-0-9.e+]+', "1e308"),
    "value 1e400": _metric_edit(r'("throughput": \{[^}]*"value": )[-0-9.e+]+', "1e400"),
    "value NaN": _metric_edit(r'("throughput": \{[^}]*"value": )[-0-9.e+]+', "NaN"),
    "value -Infinity": _metric_edit(r'("latency_mean": \{[^}]*"value": )[-0-9.e+]+', "-Infinity"),
    "n 400 digits": _metric_edit(r'("latency_mean": \{[^}]*"n": )[0-9]+', "7" * 400),
    "df 1e308": _metric_edit(r'("throughput": \{[^}]*"df": )[0-9]+', "1e308"),
    "duplicate key": _metric_edit(r'("latency_mean": \{)', '"value": 1, '),
    "sample 1e308": _metric_edit(r'("latency": \[)', "1e308, "),
    "value a string": _metric_edit(r'("throughput": \{[^}]*"value": )[-0-9.e+]+', '"fast"'),
}


def _baseline_edit(edit: Callable[[str], str]) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        f = p / "baselines" / DEVICE / "test_suite.py.json"
        text = f.read_text()
        new = edit(text)
        assert new != text
        f.write_text(new)
    return make


def _item4() -> List[Case]:
    cases = []
    for name, edit in BASELINE_EDITS.items():
        setup = _baseline_edit(edit)
        cases.append(Case(4, f"gate run, {name}", ["test_suite.py"], "error", ["test_suite.py.json"], setup))
        cases.append(Case(4, f"=force, {name}", ["--jetson-update-baselines=force", "test_suite.py"], "either",
                          ["test_suite.py.json"], setup))
        cases.append(Case(4, f"show, {name}", ["show", "baselines"], "error", ["test_suite.py.json"], setup,
                          cli=True))
        cases.append(Case(4, f"diff, {name}", ["diff", "good-baselines", "baselines"], "error",
                          ["test_suite.py.json"], _all(lambda p: shutil.copytree(str(p / "baselines"),
                                                                                 str(p / "good-baselines")), setup),
                          cli=True))
    return cases


def _item5() -> List[Case]:
    cases = []
    for spelling, expect, names in [("'15W'", "pass", []), ("'15w'", "pass", []), ("'MODE_15W'", "pass", []),
                                    ("'0'", "pass", []), ("0", "pass", []), ("['7W', 0]", "pass", []),
                                    ("'7W'", "skip", []), ("1", "skip", []),
                                    ("15", "error", ["15"]), ("'bogus'", "error", ["bogus"]),
                                    ("1.5", "error", ["1.5"]), ("True", "error", ["True"]), ("''", "error", ["power_mode"]),
                                    ("[]", "either", ["power_mode"]), ("{'15W': 1}", "error", ["power_mode"])]:
        suite = f'''
import pytest

@pytest.mark.jetson(power_mode={spelling})
def test_fast(trt_engine, perf):
    {MEASURE}
'''
        cases.append(Case(5, f"power_mode={spelling}", ["test_suite.py"], expect, names, suite=suite))
    for kw in ("dlaa=True", "dla='yes'", "tensor_cores=1", "power='15W'"):
        suite = f'''
import pytest

@pytest.mark.jetson({kw})
def test_fast(trt_engine, perf):
    {MEASURE}
'''
        cases.append(Case(5, f"jetson({kw})", ["test_suite.py"], "error", [kw.split("=")[0]], suite=suite))
    return cases


def _item6() -> List[Case]:
    """A model file replaced between recording and gating (a shared cache another job rewrote)."""
    cases = []
    suite = '''
import pytest

@pytest.mark.perf(throughput="5%")
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("model.onnx"), duration="0.05s", warmup="0s")
'''
    for before, after in (("resnet18", "resnet50"), ("resnet50", "resnet18"), ("resnet18", "mobilenet_v2")):
        cases.append(Case(6, f"model.onnx {before} replaced by {after}", ["--jetson-table", "all", "test_suite.py"],
                          "either", ["model_sha256"], _swap_model(before, after), suite=suite, verify=_not_compared))
    return cases


def _not_compared(p: Path, out: str) -> Optional[str]:
    """A changed model is never judged against the old model's baseline without a word."""
    if re.search(r"digest|changed|another model|not compared|no baseline", out, re.I):
        return None
    return "judged against the other model's baseline with no word of the change"


def _swap_model(before: str, after: str) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        (p / "model.onnx").write_bytes(_ZOO[before])
        rc, out = _run(p, ["--jetson-update-baselines", "test_suite.py"])
        if rc != 0:
            raise RuntimeError(f"recording with {before} failed: {out[-400:]}")
        (p / "model.onnx").write_bytes(_ZOO[after])
    return make


_ZOO: Dict[str, bytes] = {}


def _item7() -> List[Case]:
    rec = ["--jetson-update-baselines", "test_suite.py"]
    cases = [
        Case(7, "disk full (writes past 1 KB fail)", rec, "error", ["test_suite.py.json"], _rm("baselines"), fsize=1024),
        Case(7, "disk full, =force another seed over a recorded file",
             ["--jetson-update-baselines=force", "--jetson-seed", "7", "test_suite.py"],
             "error", ["test_suite.py.json"], None, fsize=1024),
        Case(7, "device directory is a file", rec, "error", [DEVICE], _write(f"baselines/{DEVICE}", "x\n"),
             sentinels=[f"baselines/{DEVICE}"]),
        Case(7, "device directory is a FIFO", rec, "error", [DEVICE], _all(_dir("baselines"), _fifo(f"baselines/{DEVICE}")),
             sentinels=[f"baselines/{DEVICE}"]),
        Case(7, "baselines directory is a file", rec, "error", ["baselines"], _write("baselines", "x\n"),
             sentinels=["baselines"]),
        Case(7, "baselines under /proc (cannot be created)", ["--jetson-baselines", "/proc/1/baselines", *rec], "error",
             ["/proc/1/baselines"]),
        Case(7, "baselines file is a directory", rec, "error", ["test_suite.py.json"],
             _dir(f"baselines/{DEVICE}/test_suite.py.json")),
        Case(7, "baselines file is /dev/null link", rec, "error", ["test_suite.py.json"],
             _link(f"baselines/{DEVICE}/test_suite.py.json", "/dev/null"), sentinels=["/dev/null"]),
        Case(7, "device directory a link outside (written, with a warning)", rec, "warn", ["outside the project"],
             _link(f"baselines/{DEVICE}", "{p}/.."),
             sentinels=[f"baselines/{DEVICE}"]),
    ]
    # each starts from a project with no baselines recorded yet
    return cases[:2] + [c._replace(setup=_all(_rm("baselines"), c.setup) if c.setup else _rm("baselines"))
                        for c in cases[2:]]


def _item8() -> List[Case]:
    lock = f"baselines/{DEVICE}/.test_suite.py.json.lock"
    # another seed, re-recorded by force: every entry is written, so the lock is taken
    rec = ["--jetson-update-baselines=force", "--jetson-seed", "7", "test_suite.py"]
    out = []
    for what, target in [("outside file", "{p}/../outside.txt"), ("pyproject.toml", "{p}/pyproject.toml"),
                         ("/dev/null", "/dev/null"), ("dangling", "{p}/../nothing-here")]:
        out.append(Case(8, f"lock a link to {what}", rec, "error", [".test_suite.py.json.lock"],
                        _all(_rm(lock), _link(lock, target)),
                        sentinels=[lock, "../outside.txt", "pyproject.toml", "/dev/null"]))
    out.append(Case(8, "lock a FIFO", rec, "error", [".test_suite.py.json.lock"],
                    _all(_rm(lock), _fifo(lock)), sentinels=[lock]))
    out.append(Case(8, "lock a directory", rec, "error", [".test_suite.py.json.lock"], _all(_rm(lock), _dir(lock)),
                    sentinels=[lock]))
    return out


def _pipe_suite(ident: str) -> str:
    return f'''
import pytest

@pytest.mark.perf(latency_mean="10%")
@pytest.mark.parametrize("x", [1, 2], ids=[{ident!r}, "plain"])
def test_p(x, trt_engine, perf):
    {MEASURE}
'''


def _item9() -> List[Case]:
    cases = []
    for ident in ("a|b", "|", "a||b", "x|resnet18-fp16-b1", "end|"):
        def kept(p: Path, out: str, ident: str = ident) -> Optional[str]:
            f = p / "baselines" / DEVICE / "test_suite.py.json"
            if not f.exists():
                return "baseline file gone"
            entries = json.loads(f.read_text())["entries"]
            missing = [k for k in (f"test_suite.py::test_p[{ident}]", "test_suite.py::test_p[plain]")
                       if not any(e == k or e.startswith(k + "|") for e in entries)]
            md = (p / "r.md").read_text() if (p / "r.md").exists() else ""
            if missing:
                return f"entries pruned: {missing}; kept {sorted(entries)}"
            if ident.replace("|", "\\|") not in md and ident not in md:
                return "Markdown row does not carry the id"
            return None

        def record(p: Path) -> None:
            rc, out = _run(p, ["--jetson-update-baselines", "test_suite.py"])
            if rc != 0:
                raise RuntimeError(out[-400:])
        cases.append(Case(9, f"id {ident!r} under --jetson-prune-baselines",
                          ["--jetson-update-baselines", "--jetson-prune-baselines", "--jetson-report-md", "r.md",
                           "--jetson-table", "all", "test_suite.py"], "pass2", [], record, suite=_pipe_suite(ident),
                          verify=kept))
    return cases


def _item10() -> List[Case]:
    cases = []
    for opt in ("1e308", "1e6s", "inf", "nan", "-1s", "0s", "1e400s"):
        cases.append(Case(10, f"--jetson-duration {opt}", ["--jetson-duration", opt, "test_suite.py"], "error",
                          ["--jetson-duration"]))
    for kw in ('duration="1e6s"', 'duration="1e308s"', 'iterations=10**12', 'iterations=10**7',
               'warmup="1e7s"', 'warmup="inf"', 'duration="nan"', 'iterations=-1', 'iterations=2.5'):
        suite = f'''
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), {kw}{', warmup="0s"' if 'warmup' not in kw else ''})
'''
        # the largest count allowed runs (inside the timeout and the memory cap); the rest are refused
        allowed = kw == "iterations=10**7"
        cases.append(Case(10, f"perf.measure({kw})", ["test_suite.py"], "pass" if allowed else "error",
                          [] if allowed else [kw.split("=")[0]], suite=suite))
    return cases


def _item12() -> List[Case]:
    cases = []
    for hook, body in [("pytest_jetson_backends(config)", "return None"),
                       ("pytest_jetson_backends(config)", "return [1]"),
                       ("pytest_jetson_backends(config)", "return 'simulated'"),
                       ("pytest_jetson_backends(config)", "raise SystemExit(3)"),
                       ("pytest_jetson_telemetry_sources(config)", "return {'a': 1}"),
                       ("pytest_jetson_telemetry_sources(config)", "return [object()]"),
                       ("pytest_jetson_metrics(config)", "return [object()]"),
                       ("pytest_jetson_metrics(config)", "return 5"),
                       ("pytest_jetson_fingerprint(config, device)", "return {'firmware': 10**400}"),
                       ("pytest_jetson_fingerprint(config, device)", "return {'device': 'other'}"),
                       ("pytest_jetson_fingerprint(config, device)", "return 'x'"),
                       ("pytest_jetson_fingerprint(config, device)", "raise MemoryError()"),
                       ("pytest_jetson_fingerprint(config, device)", "return {'x': float('inf')}"),
                       ("pytest_jetson_fingerprint(config, device)", "import time; time.sleep(0); return {'a': [[[[]]]] * 3, 'b': {'c': None}}")]:
        # pluggy drops a None result: a hook that adds nothing is fine
        expect = "pass" if body.startswith("import time") or body == "return None" else "error"
        cases.append(Case(12, f"{hook.split('(')[0]}: {body}", ["--jetson-update-baselines", "--jetson-report-json",
                                                                "r.json", "test_suite.py"],
                          expect, [hook.split("(")[0]], conftest=f"def {hook}:\n    {body}\n"))
    return cases


CUSTOM_OP = '''
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])
node = helper.make_node("Frobnicate", ["x"], ["y"], name="custom", domain="com.example")
m = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                      opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
onnx.save(m, "custom.onnx")
'''


def _item13() -> List[Case]:
    t = ["test_suite.py"]
    cases = [Case(13, f"--jetson-seed {v}", ["--jetson-seed", v, *t], "error", ["--jetson-seed"])
             for v in ("-1", str(2 ** 70), "abc", "1.5")]
    cases += [Case(13, f"--jetson-telemetry-interval {v}", ["--jetson-telemetry-interval", v, *t], "error",
                   ["--jetson-telemetry-interval"]) for v in ("0", "1ms", "-1s", "nan", "1e308")]
    cases += [Case(13, f"--jetson-budget {v}", ["--jetson-budget", v, *t], "error", ["--jetson-budget"])
              for v in ("0", "-1", "nan", "inf", "True")]
    cases += [Case(13, f"--jetson-confidence {v}", ["--jetson-confidence", v, *t], "error", ["--jetson-confidence"])
              for v in ("1.5", "0", "nan")]
    for kw, names in [("budget=True", ["budget"]), ("budget=0", ["budget"]), ("budget='x'", ["budget"]),
                      ("throughput=['>= 900000/s', '<= 1/s']", ["must be a string"]),
                      ("latency_mean=('<= 1ms', '>= 1s')", ["must be a string"])]:
        suite = f'''
import pytest

@pytest.mark.perf({kw})
def test_fast(trt_engine, perf):
    {MEASURE}
'''
        cases.append(Case(13, f"perf({kw})", t, "error", names, suite=suite))
    two_marks = f'''
import pytest

@pytest.mark.perf(throughput='>= 900000/s')
@pytest.mark.perf(throughput='<= 1/s')
def test_fast(trt_engine, perf):
    {MEASURE}
'''
    cases.append(Case(13, "two marks >= 900000/s and <= 1/s", t, "error", ["contradict"], suite=two_marks))
    module_and_test = f'''
import pytest

pytestmark = pytest.mark.perf(latency_mean='>= 1s')

@pytest.mark.perf(latency_mean='<= 1ms')
def test_fast(trt_engine, perf):
    {MEASURE}
'''
    cases.append(Case(13, "module mark >= 1s, test mark <= 1ms", t, "error", ["contradict"], suite=module_and_test))
    late = "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n" \
           "        item.add_marker(pytest.mark.perf(throughput='<= 1/s'))\n"
    cases.append(Case(13, "test mark >= 900000/s, modifyitems <= 1/s", t, "error", ["contradict"],
                      suite=two_marks.replace("@pytest.mark.perf(throughput='<= 1/s')\n", ""), conftest=late))
    for what, setup in [("FIFO", _fifo("model.onnx")), ("directory", _dir("model.onnx")),
                        ("link to /dev/zero", _link("model.onnx", "/dev/zero")),
                        ("empty file", _write("model.onnx", "")), ("text", _write("model.onnx", "not a model\n"))]:
        suite = '''
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("model.onnx"), duration="0.05s", warmup="0s")
'''
        cases.append(Case(13, f".onnx a {what}", t, "error", ["model.onnx"], setup, suite=suite,
                          sentinels=["model.onnx"]))
    custom = '''
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("custom.onnx"), duration="0.05s", warmup="0s")
'''

    def make_custom(p: Path) -> None:
        subprocess.run([sys.executable, "-c", CUSTOM_OP], cwd=str(p), check=True, env=_env(p))
    cases.append(Case(13, "custom op model (com.example.Frobnicate)", t, "warn", ["Frobnicate"], make_custom,
                      suite=custom))
    meminfo = _write("empty-root/proc/meminfo", "MemTotal: lots kB\nMemAvailable: -5 kB\n\x00\x01garbage\n")
    cases.append(Case(13, "garbage meminfo, preflight", ["preflight"], "error", ["meminfo"], meminfo, cli=True))
    return cases


def _item3() -> List[Case]:
    return []  # pools run through tests/orphans.py, counted in run_pools


ITEMS: Dict[int, Callable[[], List[Case]]] = {1: _item1, 2: _item2, 4: _item4, 5: _item5, 6: _item6, 7: _item7,
                                              8: _item8, 9: _item9, 10: _item10, 12: _item12, 13: _item13}


# ---------------------------------------------------------------------------------------------- running

def _sort(case: Case, rc: Optional[int], out: str, harmed: bool, finding: Optional[str]) -> str:
    if rc is None:
        return "hang"
    if harmed:
        return "harmed"
    if "INTERNALERROR" in out:
        return "INTERNALERROR"
    if "Traceback" in out:
        return "traceback"
    named = all(n.lower() in out.lower() for n in case.names)
    if case.expect == "error":
        if rc == 0:
            return "accepted"
        return "clear" if named else "unclear"
    if case.expect == "fail":
        if rc == 0:
            return "accepted"
        return "clear" if rc == 1 and named else "unclear"
    if case.expect in ("pass", "pass2"):
        if rc != 0:
            return "unclear"
        if case.expect == "pass" and not re.search(r"\b1 passed", out):
            return "wrong"
        return "wrong" if finding else "clear"
    if case.expect == "skip":
        return "clear" if rc == 0 and re.search(r"\b1 skipped", out) else ("unclear" if rc else "wrong")
    if case.expect == "warn":
        if rc != 0:
            return "unclear"
        return "clear" if named else "accepted"
    # either
    if finding:
        return "wrong"
    return "clear" if rc == 0 or named else "unclear"


def run_case(template: Path, case: Case) -> Tuple[str, str]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "project"
        shutil.copytree(str(template), str(p), symlinks=True)
        (p.parent / "outside.txt").write_text("outside, must stay\n")
        (p / "test_suite.py").write_text(case.suite)
        if case.conftest:
            (p / "conftest.py").write_text(case.conftest)
        if case.setup:
            case.setup(p)
        paths = [Path(s) if s.startswith("/") else p / s for s in case.sentinels]
        paths += [Path(x) for x in ("/dev/null",) + DEV_NULL_SIBLINGS]
        before = [_state(x) for x in paths]
        rc, out = _run(p, case.argv, cli=case.cli, fsize=case.fsize)
        harmed = [str(x) for x, b in zip(paths, before) if _state(x) != b]
        _restore_dev_null()
        finding = case.verify(p, out) if case.verify and rc is not None else None
        outcome = _sort(case, rc, out, bool(harmed), finding)
        if harmed:
            out += f"\n[harmed: {', '.join(harmed)}]"
        if finding:
            out += f"\n[{finding}]"
        return outcome, out


def run_pools() -> List[Tuple[str, str, str]]:
    """Item 3: pools under ``timeout`` and group kills (tests/orphans.py), a few runs each."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from orphans import signal_group_and_count, start_parent, timeout_run, wait_for

    results = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i, helper in enumerate((True, "detached", "double-fork")):
            for kind in ("timeout", "group SIGKILL", "group SIGTERM"):
                if kind == "timeout":
                    r = timeout_run(tmp, {"child": helper}, seconds=4.0 + i, timeout=5.0)
                else:
                    proc, token = start_parent(tmp, {"child": helper})
                    wait_for(token, 6)
                    time.sleep(0.5 * i)
                    sig = signal.SIGKILL if kind.endswith("KILL") else signal.SIGTERM
                    r = signal_group_and_count(proc, token, sig, timeout=5.0)
                outcome = "orphans" if r["left"] else "clear"
                results.append((f"pool, helper {helper}, {kind}", outcome,
                                f"{len(r['left'])} left after {r['seconds']:.1f}s"))
    return results


def run_reports() -> Dict[str, int]:
    """Item 11: the report readers' own counter."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "count_hostile_reports.py")], cwd=tempfile.gettempdir(),
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=1800)
    print(run.stdout.rstrip())
    counts = {}
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    m = re.match(r"inputs tried: (\d+); (.*)", last)
    if m:
        for part in m.group(2).split(", "):
            k, v = part.split(": ")
            counts[{"passed": "accepted", "traceback": "traceback"}.get(k, k)] = int(v)
    else:
        print(run.stderr[-2000:])
    return counts


def make_template(where: Path) -> Path:
    """A project with a recorded baseline of SUITE, copied for each case."""
    where.mkdir(parents=True)
    (where / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (where / "test_suite.py").write_text(SUITE)
    rc, out = _run(where, ["--jetson-update-baselines", "test_suite.py"])
    if rc != 0:
        raise SystemExit(f"recording the template baseline failed:\n{out}")
    from pytest_jetson.models import zoo
    for name in ("resnet18", "resnet50", "mobilenet_v2"):
        _ZOO[name] = Path(zoo.path(name)).read_bytes()
    return where


def main(argv: Sequence[str]) -> int:
    wanted = [int(a) for a in argv] or list(range(1, 14))
    table: Dict[int, Dict[str, int]] = {}
    findings: List[str] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        template = make_template(Path(d) / "template")
        for item in wanted:
            counts = table.setdefault(item, {})
            if item == 11:
                counts.update(run_reports())
                continue
            if item == 3:
                rows = run_pools()
            else:
                rows = []
                for case in ITEMS[item]():
                    try:
                        outcome, out = run_case(template, case)
                    except Exception as e:  # a case that could not be set up is the script's fault
                        outcome, out = "unclear", f"setup failed: {type(e).__name__}: {e}"
                    rows.append((case.name, outcome, out))
            for name, outcome, out in rows:
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome != "clear":
                    tail = [line for line in out.strip().splitlines() if line.strip()][-4:]
                    findings.append(f"[{item}] {name}: {outcome}\n" + "\n".join(f"      {x[:200]}" for x in tail))
                print(f"{item:2} {name[:70]:70} {outcome}", flush=True)
    print(f"\n{'item':>4} {'tried':>5} " + " ".join(f"{o[:9]:>9}" for o in OUTCOMES))
    total = {o: 0 for o in OUTCOMES}
    for item, counts in sorted(table.items()):
        print(f"{item:>4} {sum(counts.values()):>5} " + " ".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES))
        for o in OUTCOMES:
            total[o] += counts.get(o, 0)
    print(f"{'all':>4} {sum(total.values()):>5} " + " ".join(f"{total[o]:>9}" for o in OUTCOMES))
    print(f"\n{time.monotonic() - t0:.0f} s\n\nfindings (not a clear error or the correct outcome):")
    print("\n".join(findings) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
