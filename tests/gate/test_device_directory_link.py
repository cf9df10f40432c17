"""A device directory of the baselines that is a link out of the project (``baselines/orin-nano-8gb
-> /shared/...``) is reported as the baselines directory itself is: what is written through it is
not reviewed with the code it gates."""

SUITE = '''
def test_fast(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


def test_a_linked_device_directory_outside_the_project_is_reported(project_of, tmp_path):
    p = project_of(SUITE)
    elsewhere = tmp_path / "shared-baselines"
    elsewhere.mkdir()
    (p.path / "baselines").mkdir()
    (p.path / "baselines" / "orin-nano-8gb").symlink_to(elsewhere, target_is_directory=True)
    for args in (["--jetson-update-baselines"], []):
        r = p.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano", *args)
        r.assert_outcomes(passed=1)
        text = " ".join(r.stdout.str().split())
        assert (f"the baselines directory baselines/orin-nano-8gb is a link to {elsewhere.resolve()}, outside "
                f"the project {p.path.resolve()}") in text
    assert (elsewhere / "test_suite.py.json").exists()


def test_a_linked_device_directory_inside_the_project_says_nothing(project_of):
    p = project_of(SUITE)
    (p.path / "store").mkdir()
    (p.path / "baselines").mkdir()
    (p.path / "baselines" / "orin-nano-8gb").symlink_to(p.path / "store", target_is_directory=True)
    r = p.runpytest("-p", "no:cacheprovider", "--jetson-device", "orin-nano", "--jetson-update-baselines")
    r.assert_outcomes(passed=1)
    assert "outside the project" not in r.stdout.str()
    assert (p.path / "store" / "test_suite.py.json").exists()
