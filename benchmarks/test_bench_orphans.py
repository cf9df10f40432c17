"""What pools leave behind when the whole process group is killed, as ``timeout``, a CI runner
cancelling a job and ``kill -- -PGID`` do, each worker with a helper process of its own: in its
group, in a session of its own (``start_new_session``) or detached by a double fork.

Run: python3 -m pytest benchmarks/test_bench_orphans.py --benchmark-only -s
(``JETSON_BENCH_ORPHAN_RUNS=N``: N runs of each kind, default 4; the figures in the closing note
of the issue used 10.)

Each run starts a parent running a 2-worker pool (in a session of its own, so the signal reaches
its group alone), waits until its helpers run and then a seeded random moment (or, for
``timeout``, a random limit of 3 to 6 s from the start), and then:
``timeout`` (SIGTERM to the group it leads, SIGKILL a second later), a SIGKILL to the group, or a
SIGTERM to the group. ``extra_info`` holds, per kind, the runs, the processes left behind (goal:
none) and how long the last one took to go. The random-moment kills of the parent alone are
benchmarks/test_bench_pool.py::test_bench_no_orphans_at_random_moments.
"""

import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")
# tests/orphans.py and the fake engines (tests/fakes); spawned workers inherit this path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc")

RUNS = int(os.environ.get("JETSON_BENCH_ORPHAN_RUNS", "4"))
HELPERS = (True, "detached", "double-fork")


def test_bench_no_orphans_when_the_group_is_killed(benchmark, tmp_path):
    from orphans import signal_group_and_count, start_parent, timeout_run, wait_for

    rng = random.Random(29)
    results = []

    def campaign():
        for i in range(RUNS):
            for kind in ("timeout", "group SIGKILL", "group SIGTERM"):
                helper = HELPERS[(i + len(results)) % len(HELPERS)]
                if kind == "timeout":
                    r = timeout_run(tmp_path, {"child": helper}, seconds=rng.uniform(3.0, 6.0), timeout=5.0)
                else:
                    proc, token = start_parent(tmp_path, {"child": helper})
                    wait_for(token, 6)  # the parent, its reaper, the workers and their helpers run
                    time.sleep(rng.uniform(0.0, 1.5))
                    sig = signal.SIGKILL if kind.endswith("KILL") else signal.SIGTERM
                    r = signal_group_and_count(proc, token, sig, timeout=5.0)
                r.update(kind=kind, helper=str(helper))
                results.append(r)

    benchmark.pedantic(campaign, rounds=1, iterations=1)
    summary = {}
    for kind in ("timeout", "group SIGKILL", "group SIGTERM"):
        rs = [r for r in results if r["kind"] == kind]
        summary[kind] = {"runs": len(rs), "runs_with_orphans": sum(1 for r in rs if r["left"]),
                         "orphans": sum(len(r["left"]) for r in rs),
                         "seconds_to_none_left_max": float(np.max([r["seconds"] for r in rs]))}
    benchmark.extra_info.update(summary)
    print("\n" + "\n".join(f"{k}: {v}" for k, v in summary.items()))
    assert sum(len(r["left"]) for r in results) == 0, [r for r in results if r["left"]]
