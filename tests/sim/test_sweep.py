"""sweep: the same numbers as predict, for a whole grid, with Pareto and best-mode queries."""

import numpy as np
import pytest

from pytest_jetson.devices import catalog
from pytest_jetson.devices.profile import PowerMode
from pytest_jetson.errors import ConfigError
from pytest_jetson.sim import predict, sweep
from pytest_jetson.sim.sweeps import FIELDS

DEV = "agx-orin-64gb"


@pytest.fixture(scope="module")
def grid():
    return sweep(DEV, "resnet50", precisions=["int8", "fp16"], batches=[1, 8, 32], processes=[1, 2, 4],
                 power_modes="all", accelerators=["gpu", "gpu+dla"])


def test_every_row_matches_predict(grid):
    rows = grid.to_rows()
    # 4 modes x 2 precisions x 3 batches x (3 gpu + 2 gpu+dla process counts)
    assert len(rows) == 4 * 2 * 3 * 5
    for r in rows[::7]:
        p = predict(DEV, "resnet50", r["precision"], r["batch"], processes=r["processes"],
                    power_mode=r["power_mode"], accelerator=r["accelerator"])
        for key in ("throughput", "latency", "latency_p99", "memory", "power", "energy", "gpu_clock_mhz",
                    "gpu_util", "emc_util"):
            assert r[key] == pytest.approx(getattr(p, key), rel=1e-9), key
        assert r["bound"] == p.bound and r["oom"] is False
        assert set(FIELDS) <= set(r)


def test_pareto_front_is_not_dominated(grid):
    front = grid.pareto("latency", "energy").to_rows()
    rows = [r for r in grid.to_rows() if not r["oom"]]
    assert front
    for f in front:
        assert not any(r["latency"] < f["latency"] and r["energy"] < f["energy"] for r in rows)
    lat = [f["latency"] for f in front]
    energy = [f["energy"] for f in front]
    assert lat == sorted(lat) and energy == sorted(energy, reverse=True)
    for r in rows:  # everything off the front is matched or beaten by a front point
        assert any(f["latency"] <= r["latency"] and f["energy"] <= r["energy"] for f in front)


def test_best_mode_under_a_latency_budget(grid):
    best = grid.best_mode(max_latency="5ms")
    feasible = [r for r in grid.to_rows() if r["latency"] <= 5e-3 and not r["oom"]]
    assert best["latency"] <= 5e-3
    assert best["energy"] == min(r["energy"] for r in feasible)
    assert grid.best_mode(max_latency=1e-9) is None
    assert grid.best_mode(max_latency=0.005) == best


def test_out_of_memory_rows_are_flagged_and_left_out():
    res = sweep("orin-nano-8gb", "resnet50", precisions=["fp32"], batches=[64], processes=[1, 64])
    rows = res.to_rows()
    assert [r["oom"] for r in rows] == [False, True]
    assert all(not r["oom"] for r in res.pareto().to_rows())
    assert res.best_mode()["processes"] == 1


def test_synthetic_power_modes_and_the_clock_axis():
    modes = [PowerMode(name=f"f{f}", id=None, budget_w=None, gpu_max_mhz=float(f), emc_max_mhz=3200.0,
                       cpu_online=8, cpu_max_mhz=2000.0) for f in (300, 600, 900, 1200)]
    res = sweep(DEV, "resnet50", precisions=["int8"], batches=[8], power_modes=modes)
    thr = res.column("throughput")
    assert list(res.column("power_mode")) == ["f300", "f600", "f900", "f1200"]
    assert np.all(np.diff(thr) > 0)


def test_sweep_rejects_bad_lists():
    with pytest.raises(ConfigError, match="batch"):
        sweep(DEV, "resnet50", batches=[0])
    with pytest.raises(ConfigError, match="no DLA"):
        sweep("orin-nano", "resnet50", accelerators=["dla"])
    with pytest.raises(ConfigError, match="power mode"):
        sweep(DEV, "resnet50", power_modes=["MODE_99W"])
    with pytest.raises(ConfigError, match="no column"):
        sweep(DEV, "resnet50").column("speed")


def test_default_mode_and_profile_listing():
    res = sweep("orin-nano", "mobilenet_v2")
    assert len(res) == 1
    assert res.to_rows()[0]["power_mode"] == catalog.get("orin-nano").default_power_mode
