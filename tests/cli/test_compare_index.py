"""``pytest-jetson compare`` keeps an index of the old report and walks the new one a test at a
time: the verdicts are those of comparing both reports whole (``gate.reports.compare_reports``),
no more than one test's measurements are alive while deciding, and a new report changed between
the two passes is a clear error, never verdicts of two different files."""

import gc
import os

import numpy as np

from pytest_jetson.cli import compare
from pytest_jetson.gate import baseline
from pytest_jetson.gate import reports as gate_reports
from pytest_jetson.gate.reports import compare_reports
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import jsonreport
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.settings import Settings

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}
TESTS = 24


class Device:
    def __init__(self, fp):
        self.fp = fp

    def fingerprint(self):
        return dict(self.fp)


def report(path, scales, seed, fp=FP, odd=None):
    """A report of a test per scale; the tests' relative bounds vary, so do their figures."""
    results = []
    for i, scale in enumerate(scales):
        rng = np.random.default_rng(seed + i)
        lat = list(0.01 * scale * rng.lognormal(0, 0.02 + 0.01 * (i % 5), 400 + 50 * (i % 3)))
        m = Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8 * len(lat),
                        precision="int8")
        key = f"tests/perf/test_x.py::test_{i}"
        run_fp = dict(fp, power_mode=odd) if odd and i == 3 else fp  # one test on another power mode
        bounds = [{"metric": "throughput", "kind": "relative", "tolerance": 0.02 * (1 + i % 4)}]
        results.append(TestResult(nodeid=key, keys=[key], measurements=[m],
                                  fingerprint=baseline.fingerprint(m, run_fp), bounds=bounds))
    jsonreport.write(path, jsonreport.build(results, Settings(), Device(fp)))
    return path


def reports(tmp_path):
    old = report(tmp_path / "old.json", [1.0] * TESTS, seed=0)
    # regressions, improvements, noise; the last old test is gone, a new one added
    scales = [1.0 + 0.03 * ((i * 7) % 5 - 2) for i in range(TESTS - 1)] + [1.0, 1.0]
    new = report(tmp_path / "new.json", scales, seed=100, odd="MAXN")
    return old, new


def test_the_verdicts_are_those_of_comparing_the_reports_whole(tmp_path, monkeypatch, capsys):
    old, new = reports(tmp_path)
    decided = []
    real = compare.decide
    monkeypatch.setattr(compare, "decide", lambda *a, **k: decided.append(real(*a, **k)) or decided[-1])
    assert compare.main([str(old), str(new), "-v"]) == 1
    whole = compare_reports(jsonreport.results(jsonreport.load(old)), jsonreport.results(jsonreport.load(new)),
                            recorded=jsonreport.load(old)["created"])
    assert [v.to_dict() for v in decided] == [v.to_dict() for v in whole]
    outcomes = {v.outcome for v in whole}
    assert {"pass", "fail", "skip"} <= outcomes  # the comparison decided something of each kind
    out = capsys.readouterr().out
    assert f"only in {old}: tests/perf/test_x.py::test_{TESTS - 1}" not in out  # present in both
    assert f"only in {new}: tests/perf/test_x.py::test_{TESTS}" in out


def _alive():
    return sum(1 for o in gc.get_objects() if isinstance(o, (Measurement, TestResult)))


def test_no_more_than_one_tests_measurements_are_alive_while_deciding(tmp_path, monkeypatch, capsys):
    old, new = reports(tmp_path)
    counts = []
    real = gate_reports.check_relative

    def counting(*a, **k):
        counts.append(_alive())
        return real(*a, **k)

    before = _alive()
    monkeypatch.setattr(gate_reports, "check_relative", counting)
    assert compare.main([str(old), str(new)]) == 1
    assert len(counts) >= TESTS - 2
    # the test being decided (its result and measurement), not the 2 x 24 of both reports
    assert max(counts) - before <= 2, counts


def test_a_new_report_changed_between_the_passes_is_a_clear_error(tmp_path, monkeypatch, capsys):
    old, new = reports(tmp_path)
    real = compare.family_level
    text = new.read_text()
    renamed = text.replace('::test_1"', '::test_7"')  # the same size: only its bytes differ
    assert renamed != text and len(renamed) == len(text)

    def rewritten_between_passes(*a, **k):
        st = new.stat()
        new.write_text(renamed)
        os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same times
        return real(*a, **k)

    monkeypatch.setattr(compare, "family_level", rewritten_between_passes)
    assert compare.main([str(old), str(new)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"pytest-jetson compare: report {new} changed while it was being read (it is read more than "
                   f"once, a test at a time); run the command again once nothing writes to it\n")
