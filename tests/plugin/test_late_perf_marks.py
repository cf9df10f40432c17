"""Perf bounds are read from a test's final marks, whenever they were added: by a conftest's
``pytest_collection_modifyitems``, by ``request.applymarker`` in a fixture or in the test body. A
bound added late is checked like one written on the test, and a malformed one is the same clear
error as at collection, never a test that passes ungated."""

import pytest

MEASURED = '''
import pytest

def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

IMPOSSIBLE = "throughput='>= 900000/s'"
MALFORMED = "throughput='>= fast'"


def _added_in_modifyitems(project_of, bound):
    p = project_of(MEASURED)
    p.makeconftest(f'''
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.perf({bound}))
''')
    return p


def test_a_bound_added_by_modifyitems_is_checked(project_of):
    r = _added_in_modifyitems(project_of, IMPOSSIBLE).runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*perf bound failed: throughput * violates the bound >= 9e+05/s ('>= 900000/s')*"])


def test_a_malformed_bound_added_by_modifyitems_is_the_collection_error(project_of):
    r = _added_in_modifyitems(project_of, MALFORMED).runpytest("-p", "no:cacheprovider")
    out = r.stdout.str() + r.stderr.str()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "perf mark on test_fast: cannot read bound throughput='>= fast': expected a number here" in out
    assert "test_suite.py::test_fast" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out


FIXTURE = '''
import pytest

@pytest.fixture
def gated(request):
    request.applymarker(pytest.mark.perf({bound}))

def test_fast(gated, trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''

BODY = '''
import pytest

def test_fast(request, trt_engine, perf):
    request.applymarker(pytest.mark.perf({bound}))
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


@pytest.mark.parametrize("source", [FIXTURE, BODY], ids=["fixture", "body"])
def test_a_bound_applied_with_applymarker_is_checked(project_of, source):
    r = project_of(source.format(bound=IMPOSSIBLE)).runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*perf bound failed: throughput * violates the bound >= 9e+05/s ('>= 900000/s')*"])


@pytest.mark.parametrize("source", [FIXTURE, BODY], ids=["fixture", "body"])
def test_a_malformed_bound_applied_with_applymarker_fails_the_test_clearly(project_of, source):
    r = project_of(source.format(bound=MALFORMED)).runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "perf mark on test_fast: cannot read bound throughput='>= fast': expected a number here" in out
    failure = out.split("FAILURES")[-1].split("short test summary")[0].split("warnings summary")[0]
    assert "pytest_jetson" not in failure  # no frame of the plugin in the failure itself


def test_a_bound_applied_in_the_body_with_nothing_measured_is_an_error(project_of):
    r = project_of('''
import pytest

def test_nothing(request):
    request.applymarker(pytest.mark.perf(latency_p50="<= 5 ms"))
''').runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(passed=1, errors=1)
    r.stdout.fnmatch_lines(["*test_nothing has perf bounds but recorded no measurement*"])


def test_a_range_no_value_can_meet_is_a_collection_error(project_of):
    r = project_of('''
import pytest

pytestmark = pytest.mark.perf(throughput="<= 1/s")

@pytest.mark.perf(throughput=">= 900000/s")
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
''').runpytest("-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.INTERRUPTED
    r.stdout.fnmatch_lines(["*ERROR collecting test_suite.py*", "test_suite.py::test_fast:",
                            "perf marks contradict on throughput: throughput='>= 900000/s' (test_fast) and "
                            "throughput='<= 1/s' (module test_suite.py) leave no value that passes*"])
