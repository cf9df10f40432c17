"""The plugin's own benchmarks: outside ``pytest tests``, run by ``pytest benchmarks``.

Their sizes are smoke sizes unless an environment variable asks for more (each module's docstring
names its own: ``JETSON_BENCH_TRIALS``, ``JETSON_BENCH_SEEDS``, ``JETSON_BENCH_ROUNDS``, ...), so
``pytest benchmarks`` is what CI runs and the figures in the docs come from the larger settings.

pytest-benchmark's default table has ten columns in one unit for every benchmark (300 columns wide
once a pool's seconds sit beside the parser's microseconds, written as microseconds). Unless the
command line chooses, the table here keeps the median and the number of rounds behind it, and
has one table per module and order of magnitude (a module's microseconds apart from its
seconds), so that it fits 100 columns.
"""

import sys
from collections import defaultdict
from pathlib import Path

import pytest

COLUMNS = ["median", "rounds"]
GROUP_BY = "module"

# the test helpers the benchmarks share with the tests (tests/orphans.py, tests/fakes/...)
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _given(config, flag):
    return any(a == flag or a.startswith(flag + "=") for a in config.invocation_params.args)


def pytest_configure(config):
    # pytest-benchmark reads these in its own pytest_configure, which runs last
    if not hasattr(config.option, "benchmark_columns"):
        return
    if not _given(config, "--benchmark-columns"):
        config.option.benchmark_columns = list(COLUMNS)
    if not _given(config, "--benchmark-group-by"):
        config.option.benchmark_group_by = GROUP_BY


@pytest.hookimpl(tryfirst=True)
def pytest_benchmark_group_stats(config, benchmarks, group_by):
    if group_by != GROUP_BY:
        return None  # pytest-benchmark's own groupings
    from pytest_benchmark.utils import time_unit

    groups = defaultdict(list)
    for bench in benchmarks:
        prefix, _ = time_unit(bench["min"])  # the table's unit follows its fastest row
        groups[f"{bench['fullname'].split('::')[0]}, {prefix}s"].append(bench)
    for members in groups.values():
        members.sort(key=lambda b: b["name"])
    return sorted(groups.items())

