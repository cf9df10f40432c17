"""A ``|`` in a parametrize id is part of the test's node id, not the separator of a measurement's
name in its baseline key: such a test's entries are its own when unused entries are reported and
pruned, and its rows are labelled with its name in the terminal and the Markdown report. Keys are
written as before, so stored baseline files read the same."""

import json

from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.gate.keys import entry_keys, key_label, key_test, split_key

PLAIN = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@given(ident=PLAIN.filter(lambda s: "]|" not in s), names=st.lists(PLAIN, min_size=1, max_size=3),
       cls=st.booleans())
def test_a_key_splits_back_into_its_test_and_measurement(ident, names, cls):
    nodeid = f"tests/test_x.py::{'TestX::' if cls else ''}test_y[{ident}]"
    for key, name in zip(entry_keys(nodeid, names), names):
        test, label = split_key(key)
        assert test == nodeid and key_test(key) == nodeid
        assert label == ("" if len(names) == 1 else key_label(key)) and (len(names) == 1 or label.startswith(name))


@given(name=PLAIN)
def test_an_unparametrized_test_keeps_everything_after_the_first_bar_as_the_name(name):
    assert split_key(f"t.py::test_y|{name}") == ("t.py::test_y", name)


def test_the_collected_node_ids_decide_any_id():
    odd = "t.py::test_y[a]|b]"  # an id holding ']|' reads as the test's only when collected
    assert split_key(odd, {odd}) == (odd, "")
    assert split_key(odd + "|pre", {odd}) == (odd, "pre")


def test_keys_stored_before_read_the_same():
    for key, parts in {"t.py::test_a": ("t.py::test_a", ""), "t.py::test_a|m#0": ("t.py::test_a", "m#0"),
                       "t.py::test_a[resnet-fp16]|pre": ("t.py::test_a[resnet-fp16]", "pre"),
                       "t.py::TestC::test_a[x]": ("t.py::TestC::test_a[x]", "")}.items():
        assert split_key(key) == parts


HELPER = '''
import numpy as np
from pytest_jetson.run.measurement import Measurement

def mk(name="m", n=500):
    lat = list(0.01 * np.random.default_rng(0).lognormal(0, 0.05, n))
    return Measurement(name=name, batch=1, latencies=lat, duration=float(sum(lat)), items=n, precision="fp16")
'''

SUITE = '''
import pytest
from perfhelp import mk

@pytest.mark.parametrize("mode", ["a|b"])
@pytest.mark.perf(throughput=">= 1/s")
def test_one(perf, mode):
    perf.record(mk())

@pytest.mark.parametrize("mode", ["c|d"])
@pytest.mark.perf(throughput=">= 1e9/s")
def test_two(perf, mode):
    perf.record(mk("pre"))
    perf.record(mk("post"))
'''


def test_a_bar_in_a_parametrize_id_is_never_pruned_nor_mislabelled(project_of):
    p = project_of(SUITE)
    p.syspathinsert()
    p.makepyfile(perfhelp=HELPER)
    args = ("-p", "no:cacheprovider", "--jetson-device", "orin-nano")
    p.runpytest(*args, "--jetson-update-baselines")
    path = p.path / "baselines" / "orin-nano-8gb" / "test_suite.py.json"
    stored = sorted(json.loads(path.read_text())["entries"])
    assert stored == ["test_suite.py::test_one[a|b]", "test_suite.py::test_two[c|d]|post",
                      "test_suite.py::test_two[c|d]|pre"]
    r = p.runpytest(*args, "--jetson-prune-baselines", "--jetson-report-md", "gate.md")
    out = r.stdout.str()
    assert "unused entr" not in out  # neither reported nor pruned
    assert sorted(json.loads(path.read_text())["entries"]) == stored
    # each failing row names its test whole and its measurement
    r.stdout.fnmatch_lines(["perf bound failed: [[]pre[]] throughput *", "test_suite.py::test_two[[]c|d[]]",
                            "  [[]post[]]"])
    md = (p.path / "gate.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| `test_suite.py::test_two")]
    assert rows and all(r.startswith("| `test_suite.py::test_two[c\\|d]` | throughput [pre] ") for r in rows)
    assert "[d]]" not in md and "[d]|" not in md
