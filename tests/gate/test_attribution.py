"""Where a measurement's time moved against its baseline, stage by stage: the stage that explains
most of the whole's change comes first."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.gate.attribution import MIN_MOVE, StageShift, Where, where
from pytest_jetson.gate.checks import BaselineRef
from pytest_jetson.gate.stats import MetricStats
from pytest_jetson.run.measurement import Measurement

OVERHEAD = 0.0005


def measured(means, n=10):
    total = sum(means.values()) + OVERHEAD
    m = Measurement("p", 1, [total] * n, total * n, n)
    m.stages = {s: Measurement(s, 1, [v] * n, total * n, n) for s, v in means.items()}
    return m


def ref(means):
    stages = {s: BaselineRef(metrics={"latency_mean": MetricStats(value=v)}) for s, v in means.items()}
    whole = MetricStats(value=sum(means.values()) + OVERHEAD)
    return BaselineRef(metrics={"latency_mean": whole}, stages=stages)


BASE = {"pre": 0.002, "infer": 0.006, "post": 0.004}


def test_the_stage_that_moved_comes_first_with_its_share():
    w = where(measured(dict(BASE, post=0.006, pre=0.0022)), ref(BASE), key="k")
    assert [s.stage for s in w.stages] == ["post", "pre", "infer"]
    post = w.stages[0]
    assert post.change == pytest.approx(0.002) and post.relative == pytest.approx(0.5)
    assert post.share == pytest.approx(0.002 / 0.0022)
    assert w.change == pytest.approx(0.0022) and w.measurement == "k"
    assert sum(s.share for s in w.stages) == pytest.approx(1.0)


def test_a_speed_up_is_explained_by_the_stage_that_got_faster():
    w = where(measured(dict(BASE, infer=0.003, post=0.0041)), ref(BASE))
    assert w.change < 0
    assert [s.stage for s in w.stages][0] == "infer" and w.stages[0].share == pytest.approx(0.003 / 0.0029)


def test_without_a_measurable_change_of_the_whole_stages_have_no_share():
    # one stage moved one way, another the other: the whole stays put
    w = where(measured(dict(BASE, pre=0.001, post=0.005)), ref(BASE))
    assert abs(w.change) < MIN_MOVE * w.baseline
    assert all(s.share is None for s in w.stages)
    assert {s.stage for s in w.stages[:2]} == {"pre", "post"}  # ordered by how far they moved


def test_nothing_to_say_without_stages_in_common():
    assert where(measured(BASE), ref({"other": 0.001})) is None
    assert where(measured({}), ref(BASE)) is None
    assert where(measured(BASE), BaselineRef(metrics={})) is None


def test_only_stages_both_have_are_compared_and_a_baseline_without_a_mean_gives_no_share():
    b = ref({"pre": 0.002, "infer": 0.006})
    del b.metrics["latency_mean"]
    w = where(measured(BASE), b)
    assert {s.stage for s in w.stages} == {"pre", "infer"}
    assert w.change is None and all(s.share is None for s in w.stages)


def test_it_round_trips_as_json_data():
    w = where(measured(dict(BASE, post=0.005)), ref(BASE), key="k|m")
    assert Where.from_dict(w.to_dict()) == w
    assert StageShift.from_dict({"stage": "s", "now": 1, "baseline": 2}) == StageShift("s", 1.0, 2.0)


@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(1e-4, 1e-2), min_size=1),
       st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(0.5, 2.0)))
def test_shares_add_up_to_the_stages_part_of_the_change_and_come_in_order(base, scale):
    now = {s: v * scale.get(s, 1.0) for s, v in base.items()}
    w = where(measured(now), ref(base))
    shares = [s.share for s in w.stages]
    if shares[0] is None:
        assert abs(w.change) < MIN_MOVE * w.baseline
        assert [abs(s.change) for s in w.stages] == sorted((abs(s.change) for s in w.stages), reverse=True)
    else:
        # the stages are the whole here (plus a constant overhead): their shares make all of it
        assert sum(shares) == pytest.approx(1.0, rel=1e-6)
        assert shares == sorted(shares, reverse=True)
