"""The perf mark's ``stages=``, ``devices=`` and ``backends=`` keywords: what they mean, how marks
merge, and what a mistake says."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.errors import BoundError
from pytest_jetson.gate.bounds import merge, parse_marks, stage_metrics

BACKENDS = ["tensorrt", "onnxruntime", "simulated"]


def one(kwargs, where="test_x"):
    return parse_marks([(where, kwargs)], backends=BACKENDS)


def test_a_stage_bound_is_a_bound_on_that_stage():
    bounds = one({"latency_p99": "<= 33 ms", "stages": {"postprocess": {"latency_mean": "10%"},
                                                       "infer": {"latency_p99": "<= 20 ms"}}})
    by_name = {b.name: b for b in bounds}
    assert sorted(by_name) == ["infer: latency_p99", "latency_p99", "postprocess: latency_mean"]
    assert by_name["latency_p99"].stage is None
    post = by_name["postprocess: latency_mean"]
    assert (post.stage, post.kind, post.tolerance, post.where) == ("postprocess", "relative", pytest.approx(0.1), "test_x")
    infer = by_name["infer: latency_p99"]
    assert (infer.stage, infer.comparator, infer.value) == ("infer", "<=", pytest.approx(0.020))
    assert post.to_dict()["stage"] == "postprocess" and by_name["latency_p99"].to_dict()["stage"] is None


def test_a_stage_has_the_metrics_of_its_latencies():
    assert stage_metrics() == ("latency_mean", "latency_p50", "latency_p90", "latency_p95", "latency_p99",
                               "latency_max")


def test_a_stage_and_the_whole_on_one_metric_do_not_conflict():
    bounds = one({"latency_mean": "5%", "stages": {"infer": {"latency_mean": "10%"}}})
    assert len(bounds) == 2 and bounds[0].key() != bounds[1].key()


def test_marks_merge_per_stage_metric_kind_and_comparator():
    marks = [("test_x", {"stages": {"infer": {"latency_mean": "10%"}}}),
             ("class C", {"stages": {"infer": {"latency_mean": "10.0%", "latency_p99": "<= 9 ms"}}}),
             ("module m", {"stages": {"infer": {"latency_p99": ">= 1 ms"}}})]
    bounds = parse_marks(marks)
    assert [(b.stage, b.metric, b.comparator) for b in bounds] == [
        ("infer", "latency_mean", None), ("infer", "latency_p99", "<="), ("infer", "latency_p99", ">=")]
    assert bounds[0].where == "test_x"  # the nearest mark's, identical ones collapse


def test_two_tolerances_on_one_stage_metric_conflict_naming_the_stage():
    marks = [("test_x", {"stages": {"infer": {"latency_mean": "10%"}}}),
             ("module m", {"stages": {"infer": {"latency_mean": "20%"}}})]
    with pytest.raises(BoundError, match=r"perf marks conflict on infer: latency_mean: latency_mean='10%' "
                                         r"\(test_x\) and latency_mean='20%' \(module m\)"):
        parse_marks(marks)


def test_devices_and_backends_limit_every_bound_of_their_mark():
    bounds = one({"power": "<= 10 W", "stages": {"infer": {"latency_mean": "<= 5 ms"}},
                  "devices": ["orin-nano-8gb", "Orin NX 16GB"], "backends": "simulated"})
    for b in bounds:
        assert b.devices == ("orin-nano-8gb", "orin-nx-16gb")  # profile ids, as @pytest.mark.jetson names them
        assert b.backends == ("simulated",)
        assert b.to_dict()["devices"] == ["orin-nano-8gb", "orin-nx-16gb"]
    unlimited = one({"power": "<= 10 W"})[0]
    assert unlimited.devices == () and unlimited.backends == ()


def test_bounds_limited_to_different_devices_never_conflict():
    marks = [("test_x", {"power": "<= 10 W", "devices": "orin-nano-8gb"}),
             ("test_x", {"power": "<= 25 W", "devices": "agx-orin-64gb"})]
    assert [b.value for b in parse_marks(marks)] == [10.0, 25.0]
    with pytest.raises(BoundError, match="conflict on power"):
        parse_marks([("test_x", {"power": "<= 10 W", "devices": "orin-nano-8gb"}),
                     ("module m", {"power": "<= 25 W", "devices": "orin-nano-8gb"})])


@pytest.mark.parametrize("kwargs, message", [
    ({"stages": ["infer"]}, "stages=['infer'] must be a dict of stage name to bounds, e.g. "
                            "stages={'postprocess': {'latency_mean': '10%'}}"),
    ({"stages": {"": {"latency_mean": "5%"}}}, "a stage name must be a non-empty string"),
    ({"stages": {3: {"latency_mean": "5%"}}}, "a stage name must be a non-empty string (the name given to "
                                              "perf.stage), got 3"),
    ({"stages": {"infer": "5%"}}, "stages['infer']='5%' must be a non-empty dict of metric to bound"),
    ({"stages": {"infer": {}}}, "stages['infer']={} must be a non-empty dict"),
    ({"stages": {"infer": {"throughput": ">= 1/s"}}},
     "stage 'infer' cannot have throughput: a stage has the time metrics of its latencies (latency_mean, "
     "latency_p50, latency_p90, latency_p95, latency_p99, latency_max); its items and duration are the "
     "whole measurement's, so bound throughput outside stages="),
    ({"stages": {"infer": {"memory": "5%"}}}, "stage 'infer' cannot have memory"),
    ({"stages": {"infer": {"latency_p98": "5%"}}}, "stage 'infer': unknown metric 'latency_p98'. Did you mean"),
    ({"stages": {"infer": {"latency_mean": "<= 5"}}}, "perf mark on test_x, stage 'infer': cannot read bound "
                                                      "latency_mean='<= 5': missing unit"),
    ({"stage": {"infer": {"latency_mean": "5%"}}}, "unknown keyword 'stage'. Did you mean 'stages'?"),
    ({"device": "nano"}, "unknown keyword 'device'. Did you mean 'devices'?"),
    ({"devices": 3}, "devices=3 must be a name or a list of names, e.g. devices='orin-nano'"),
    ({"devices": []}, "devices=[] must be a name or a list of names"),
    ({"devices": ["nano", ""]}, "must be a name or a list of names"),
    ({"devices": "orin-nanoo"}, "devices='orin-nanoo': unknown Jetson device 'orin-nanoo'"),
    ({"backends": {"simulated": 1}}, "backends={'simulated': 1} must be a name or a list of names"),
    ({"backends": ["simulated", "trt"]}, "backends=['simulated', 'trt']: 'trt' is not a known engine backend; "
                                         "known: tensorrt, onnxruntime, simulated"),
])
def test_a_mistake_is_a_bound_error_naming_the_mark_and_the_fix(kwargs, message):
    with pytest.raises(BoundError) as info:
        one(kwargs)
    assert str(info.value).startswith("perf mark on test_x")
    assert message in str(info.value)


def test_backend_names_are_checked_only_against_a_known_table():
    assert parse_marks([("t", {"power": "5%", "backends": "my-plugin-backend"})])[0].backends == (
        "my-plugin-backend",)


NAMES = st.text(min_size=1, max_size=20).filter(lambda s: s.strip())


@given(stage=NAMES, metric=st.sampled_from(stage_metrics()),
       tolerance=st.integers(min_value=0, max_value=500))
def test_any_stage_name_and_stage_metric_parse(stage, metric, tolerance):
    (b,) = one({"stages": {stage: {metric: f"{tolerance}%"}}})
    assert (b.stage, b.metric, b.name) == (stage, metric, f"{stage}: {metric}")
    assert b.tolerance == pytest.approx(tolerance / 100)


@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.text()), st.floats(allow_nan=True),
                 st.dictionaries(st.one_of(st.text(), st.integers()),
                                 st.one_of(st.text(), st.integers(), st.dictionaries(st.text(), st.text())))))
def test_any_stages_value_parses_or_is_a_bound_error(value):
    try:
        bounds = one({"stages": value})
    except BoundError as exc:
        assert str(exc).startswith("perf mark on test_x")
    else:
        assert all(b.stage in value for b in bounds)


@given(st.lists(st.tuples(st.sampled_from(["infer", "post"]), st.sampled_from(stage_metrics()),
                          st.sampled_from(["5%", "<= 9 ms", ">= 1 ms"])), max_size=8))
def test_merging_a_mark_with_itself_changes_nothing(rows):
    stages = {}
    for stage, metric, text in rows:
        stages.setdefault(stage, {})[metric] = text
    bounds = one({"stages": stages}) if stages else []
    assert merge(bounds + bounds) == bounds
    assert len({b.key() for b in bounds}) == len(bounds)
