"""The ``jetson`` mark's power_mode reads every spelling ``--jetson-power-mode`` reads (one
parser: the profile's), and a mark it cannot read is a collection error, never a test skipped
forever or an internal error: a skipped perf test is an ungated test."""

import pytest


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    return pytester


SPELLINGS = '''
import pytest

@pytest.mark.jetson(power_mode="15W")
def test_name():
    pass

@pytest.mark.jetson(power_mode="15w")
def test_lower_case():
    pass

@pytest.mark.jetson(power_mode="MODE_15W")
def test_nvpmodel_name():
    pass

@pytest.mark.jetson(power_mode="0")
def test_id_text():
    pass

@pytest.mark.jetson(power_mode=0)
def test_id():
    pass

@pytest.mark.jetson(power_mode=5)
def test_number_that_is_no_id_here():
    pass

@pytest.mark.jetson(power_mode=["7W", 0])
def test_list():
    pass

@pytest.mark.jetson(power_mode="fastest")
def test_fastest():
    pass

@pytest.mark.jetson(power_mode=1)
def test_other_mode_by_id():
    pass

@pytest.mark.jetson(power_mode="MAXN")
def test_another_boards_mode():
    pass
'''


def test_every_spelling_the_option_reads_selects_the_mode(host):
    host.makepyfile(test_modes=SPELLINGS)
    r = host.runpytest("-p", "no:cacheprovider", "-rs", "-v", "--jetson-device", "orin-nano",
                       "--jetson-power-mode", "15W")
    r.assert_outcomes(passed=7, skipped=3)
    out = r.stdout.str()
    assert "INTERNALERROR" not in out
    for name in ("name", "lower_case", "nvpmodel_name", "id_text", "id", "list", "fastest"):
        assert f"test_{name} PASSED" in out
    r.stdout.fnmatch_lines_random([
        "*test_modes.py:*: jetson: runs in power mode 5 (no mode of Jetson Orin Nano 8GB); this session tests 15W*",
        "*test_modes.py:*: jetson: runs in power mode 7W; this session tests 15W (--jetson-power-mode)*",
        "*test_modes.py:*: jetson: runs in power mode MAXN (no mode of Jetson Orin Nano 8GB); this session tests 15W*",
    ])


def test_the_same_spellings_select_the_other_mode(host):
    host.makepyfile(test_modes=SPELLINGS)
    r = host.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano", "--jetson-power-mode", "7w")
    r.assert_outcomes(passed=2, skipped=8)  # the list and id 1


@pytest.mark.parametrize("mark, message", [
    ('dlaa=True', "unknown keyword 'dlaa'; it takes dla, power_mode, tensor_cores"),
    ('power_mode="15WW"', "power mode '15WW' is a mode of no Jetson board; Jetson Orin Nano 8GB's modes are: "
                          "15W (id 0), 7W (id 1)*"),
    ('power_mode=15', "power mode 15 is a mode of no Jetson board (a number is an nvpmodel id; a budget is "
                      "written '15W')*"),
    ('power_mode=True', "power_mode=True is not a power mode; give a name such as '15W', an nvpmodel id "
                        "such as 0, or a list of them"),
    ('power_mode=1.5', "power_mode=1.5 is not a power mode*"),
    ('dla="yes"', "dla='yes' must be True or False"),
])
def test_a_mark_it_cannot_read_is_a_collection_error_naming_the_test(host, mark, message):
    host.makepyfile(test_bad=f'''
import pytest

@pytest.mark.jetson({mark})
def test_x():
    pass
''')
    r = host.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano")
    assert r.ret == pytest.ExitCode.INTERRUPTED
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["*ERROR collecting test_bad.py*", "test_bad.py::test_x:",
                            f"jetson mark on test_x: {message}*"])
    assert "INTERNALERROR" not in r.stdout.str() and "Traceback" not in r.stdout.str()


def test_a_mark_added_after_collection_is_read_the_same(host):
    host.makeconftest('''
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.jetson(power_mode=15))
''')
    host.makepyfile(test_late="def test_x():\n    pass\n")
    r = host.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: test_late.py::test_x: jetson mark: power mode 15 is a mode of no Jetson board*"])
