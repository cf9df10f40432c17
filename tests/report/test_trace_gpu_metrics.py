"""GPU metrics read back from an Nsight Systems report exported to SQLite: sm_active,
tensor_active, issue_active and dram_util over the whole report and inside each perf.measure's
NVTX range, from tables with NVIDIA's documented schema (tests/fakes/nsys_sqlite.py says where
each comes from); every way it cannot be read is a note, never an exception.

What this cannot show without a board: an Orin's own nsys export (its metric names and sampling)."""

import subprocess
from pathlib import Path

import pytest
from fakes import nsys_sqlite

from pytest_jetson.report import trace
from pytest_jetson.run.stages import MEASURE_RANGE

SM, ISSUE, TENSOR, DRAM_R, DRAM_W, CLOCK = 1, 2, 3, 4, 5, 0


def _samples(start, end, step, sm, tensor, issue, read, write):
    return [(t, {SM: sm, TENSOR: tensor, ISSUE: issue, DRAM_R: read, DRAM_W: write, CLOCK: 1300})
            for t in range(start, end, step)]


@pytest.mark.parametrize("schema", sorted(nsys_sqlite.SCHEMAS))
@pytest.mark.parametrize("registered", [False, True])
def test_each_measurement_gets_the_means_sampled_inside_its_range(tmp_path, schema, registered):
    # the concurrency study's shape: SMs busy, tensor cores and issue slots much less so
    samples = (_samples(0, 1000, 100, 0, 0, 0, 1, 1) + _samples(1000, 2000, 100, 80, 20, 30, 25, 10)
               + _samples(2000, 3000, 100, 90, 30, 40, 30, 10))
    ranges = [(1000, 1999, MEASURE_RANGE.format(index=0, what="resnet50-int8-b8")),
              (2000, 2999, MEASURE_RANGE.format(index=1, what="pipeline")),
              (0, 3000, "test_suite.py::test_x")]
    path = nsys_sqlite.make(tmp_path / "r.sqlite", schema, samples, ranges, registered=registered)
    got = trace.gpu_metrics(path)
    assert got.note == ""
    assert got.by_measurement[0] == {"sm_active": 80.0, "tensor_active": 20.0, "issue_active": 30.0,
                                     "dram_util": 35.0}
    assert got.by_measurement[1] == {"sm_active": 90.0, "tensor_active": 30.0, "issue_active": 40.0,
                                     "dram_util": 40.0}
    assert got.whole["sm_active"] == pytest.approx((0 + 80 + 90) / 3, abs=0.01)


def test_only_the_gpu_with_the_most_samples_counts(tmp_path):
    path = tmp_path / "r.sqlite"
    nsys_sqlite.make(path, "3.28.1", _samples(0, 1000, 100, 50, 10, 20, 5, 5), type_id=1)
    import sqlite3

    db = sqlite3.connect(str(path))  # a second GPU with fewer samples and other values
    db.execute("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (2, 1, 'other', 1, 'SMs Active [Throughput %]')")
    db.execute("INSERT INTO GPU_METRICS VALUES (0, 0, 2, 1, 99)")
    db.commit()
    db.close()
    assert trace.gpu_metrics(path).whole["sm_active"] == 50.0


def test_a_report_without_gpu_metrics_or_some_of_them_is_a_note(tmp_path):
    bare = tmp_path / "bare.sqlite"
    import sqlite3

    sqlite3.connect(str(bare)).executescript("CREATE TABLE StringIds (id INTEGER, value TEXT);")
    got = trace.gpu_metrics(bare)
    assert not got.whole and "holds no GPU metrics" in got.note
    partial = nsys_sqlite.make(tmp_path / "p.sqlite", "userguide", [(0, {1: 70})],
                               metrics={1: "SMs Active [Throughput %]"})
    got = trace.gpu_metrics(partial)
    assert got.whole == {"sm_active": 70.0}
    assert "no tensor_active, issue_active, dram_util" in got.note
    assert "could not be read" in trace.gpu_metrics(tmp_path / "missing.sqlite").note


class _Done:
    def __init__(self, returncode, stderr=""):
        self.returncode, self.stderr, self.stdout = returncode, stderr, ""


def test_the_report_is_exported_beside_itself_and_read(tmp_path):
    report = tmp_path / "test_x.nsys-rep"
    report.write_bytes(b"rep")
    support = trace.NsysSupport("/opt/nsys/bin/nsys", ("0",))
    seen = []

    def run(cmd, **kw):
        seen.append(cmd)
        out = Path(next(a for a in cmd if a.startswith("--output=")).split("=", 1)[1])
        nsys_sqlite.make(out, "3.28.1", _samples(0, 500, 100, 60, 15, 25, 10, 10),
                         [(0, 499, MEASURE_RANGE.format(index=0, what="e"))])
        return _Done(0)

    got = trace.read_gpu_metrics(support, report, run=run)
    assert seen[0][:4] == ["/opt/nsys/bin/nsys", "export", "--type", "sqlite"] and seen[0][-1] == str(report)
    assert (tmp_path / "test_x.sqlite").exists()
    assert got.by_measurement[0]["tensor_active"] == 15.0 and not got.note


@pytest.mark.parametrize("run, said", [
    (lambda cmd, **kw: _Done(1, "Error: cannot open report"), "export to SQLite failed (Error: cannot open report)"),
    (lambda cmd, **kw: (_ for _ in ()).throw(subprocess.TimeoutExpired(cmd, 1)), "nsys export could not run"),
])
def test_an_export_that_fails_is_a_note(tmp_path, run, said):
    support = trace.NsysSupport("/opt/nsys/bin/nsys", ("0",))
    got = trace.read_gpu_metrics(support, tmp_path / "t.nsys-rep", run=run)
    assert not got.whole and said in got.note


def test_nsys_without_gpu_metrics_here_reads_nothing_and_says_why(tmp_path):
    support = trace.NsysSupport("/opt/nsys/bin/nsys", (), why="nsys samples GPU metrics on no GPU of this board")
    got = trace.read_gpu_metrics(support, tmp_path / "t.nsys-rep", run=lambda *a, **k: pytest.fail("ran"))
    assert not got.whole and "no GPU of this board" in got.note


def test_a_measurement_on_a_board_is_an_nvtx_range_the_reader_finds(monkeypatch, tmp_path):
    from pytest_jetson.run import stages

    pushed = []

    class FakeNvtx:  # the nvtx package's push_range/pop_range
        @staticmethod
        def push_range(message):
            pushed.append(("push", message))

        @staticmethod
        def pop_range():
            pushed.append(("pop",))

    monkeypatch.setattr(stages, "_NVTX", [FakeNvtx])
    with stages.measure_range(3, "yolov8n-int8-b1", board=True):
        pass
    with stages.measure_range(4, "off the board", board=False):
        pass
    assert pushed == [("push", "perf.measure 3: yolov8n-int8-b1"), ("pop",)]
    path = nsys_sqlite.make(tmp_path / "r.sqlite", "3.28.1", _samples(0, 300, 100, 75, 15, 25, 20, 5),
                            [(0, 299, pushed[0][1])])
    assert trace.gpu_metrics(path).by_measurement[3]["sm_active"] == 75.0
