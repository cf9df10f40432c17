"""tegrastats: parse_line on real lines from every Jetson family, and the source running a real
(fake) ``tegrastats`` process that prints them."""

import os
import stat
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.errors import ConfigError
from pytest_jetson.telemetry.base import TelemetryWarning
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.select import open_source
from pytest_jetson.telemetry.tegrastats import (
    Cpu,
    Rail,
    Sample,
    TegrastatsSource,
    format_line,
    parse_line,
)

DATA = Path(__file__).parent.parent / "data" / "tegrastats"


def real_lines(name):
    return [x for x in (DATA / name).read_text().splitlines() if x.strip() and not x.startswith("#")]


ALL = [(f.name, i, line) for f in sorted(DATA.glob("*.txt")) for i, line in enumerate(real_lines(f.name))]


@pytest.mark.parametrize("name,i,line", ALL, ids=[f"{n}:{i}" for n, i, _ in ALL])
def test_every_real_line_parses_completely(name, i, line):
    s = parse_line(line)
    assert s.complete
    assert s.ram_used_mb is not None and 0 < s.ram_used_mb <= s.ram_total_mb
    assert s.cpus, "every release prints per-core CPU load"
    assert s.gpu_load_pct is not None or s.gpu_freq_mhz is not None
    # Only the one test-made token of jp7_r39 is unknown; everything NVIDIA prints is read.
    assert s.unknown in ([], ["FUTURE_TOKEN", "value"])
    assert all(t > -100 for t in s.temps_c.values())


def test_tx1_r28_old_names_with_shared_cpu_clock():
    s = parse_line(real_lines("jp3_tx1_r28.txt")[1])
    assert s.cpus == [Cpu(17, 1734), Cpu(11, 1734), Cpu(65, 1734), Cpu(0, 1734)]
    assert (s.emc_load_pct, s.emc_freq_mhz) == (1, 1600)
    assert (s.gpu_load_pct, s.gpu_freq_mhz) == (39, 76)
    assert (s.swap_used_mb, s.swap_total_mb, s.swap_cached_mb) == (873, 8192, 281)
    assert s.rails == [] and s.board_power_mw() is None


def test_tx2_jetpack4_rails_without_units():
    s = parse_line(real_lines("jp4_tx2.txt")[0])
    assert (s.ram_used_mb, s.ram_total_mb) == (4722, 7844)
    assert [r.name for r in s.rails] == ["VDD_IN", "VDD_CPU", "VDD_GPU", "VDD_SOC", "VDD_WIFI", "VDD_DDR"]
    assert s.rails[0] == Rail("VDD_IN", 14025, 14416)
    assert s.board_rail() == "VDD_IN" and s.board_power_mw() == 14025
    assert s.temps_c["BCPU"] == -45 and s.temps_c["thermal"] == 46.4
    assert s.engines["NVENC"] == (None, 716) and s.engines["APE"] == (None, 150)


def test_nano_pom_rails_and_off_cores():
    first, second = (parse_line(x) for x in real_lines("jp4_nano.txt"))
    assert first.board_rail() == "POM_5V_IN" and first.board_power_mw() == 4520
    assert [r.name for r in first.rails] == ["POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"]
    assert second.cpus == [Cpu(22, 518), Cpu(67, 518), Cpu(None, None), Cpu(None, None)]
    assert [c.online for c in second.cpus] == [True, True, False, False]
    assert (second.gpu_load_pct, second.gpu_freq_mhz) == (0, 76)
    # A core that is off does not count as an idle core in the reading's mean CPU load.
    assert second.to_reading(0.0).cpu_util == pytest.approx((22 + 67) / 2)


def test_agx_xavier_jetpack4_board_power_is_the_sum_of_its_rails():
    s = parse_line(real_lines("jp4_agx_xavier.txt")[0])
    assert [r.name for r in s.rails] == ["GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"]
    assert s.board_rail() is None
    assert s.board_power_mw() == 120 + 468 + 937 + 0 + 312 + 1458
    # "CPU 468/450" is a rail, "CPU@40C" a sensor, "CPU [..]" the cores: all three coexist.
    assert s.temps_c["CPU"] == 40 and len(s.cpus) == 2


def test_xavier_nx_jetpack5_milliwatts_and_bracketed_gpu_clock():
    s = parse_line(real_lines("jp5_xavier_nx.txt")[0])
    assert s.time_text == "07-09-2024 13:31:31"
    assert s.rails == [Rail("VDD_IN", 2763, 2846), Rail("VDD_CPU_GPU_CV", 650, 670), Rail("VDD_SOC", 650, 711)]
    assert (s.gpu_load_pct, s.gpu_freq_mhz, s.gpu_gpc_freqs_mhz) == (0, 114, [114])
    assert s.engines["VIC_FREQ"] == (None, 115)
    off = parse_line(real_lines("jp5_xavier_nx.txt")[1])
    assert off.cpus[-2:] == [Cpu(None, None), Cpu(None, None)]


def test_orin_nano_busy_against_idle():
    idle, busy = (parse_line(x) for x in real_lines("jp6_orin_nano.txt"))
    assert (busy.gpu_load_pct, busy.gpu_freq_mhz) == (99, 612)
    assert (busy.emc_load_pct, busy.emc_freq_mhz) == (61, 2133)
    assert busy.board_power_mw() == 16321  # the instantaneous value, not the running average
    assert busy.temps_c["tj"] == 58.312 and idle.temps_c["tj"] == 49.312
    assert busy.engines["NVDEC"] is None
    r = busy.to_reading(12.5)
    assert r.board_power_w == pytest.approx(16.321)
    assert r.memory_bytes == 6712 * 1024 * 1024
    assert r.rails_w["VDD_CPU_GPU_CV"] == pytest.approx(7.104)


def test_orin_nx_gpu_load_without_clock():
    s = parse_line(real_lines("jp6_orin_nx.txt")[0])
    assert (s.gpu_load_pct, s.gpu_freq_mhz) == (0, None)
    assert s.emc_load_pct is None and s.emc_freq_mhz is None
    assert s.temps_c["cv0"] == 41.156 and len(s.temps_c) == 9


def test_agx_orin_skips_placeholder_sensors_and_unconnected_rails():
    s = parse_line(real_lines("jp6_agx_orin.txt")[2])
    assert "CV0" not in s.temps_c and "GPU" not in s.temps_c and "CV2" not in s.temps_c
    assert s.temps_c == {"CPU": 44.562, "Tboard": 32, "SOC2": 40.093, "Tdiode": 33, "SOC0": 41.093,
                         "tj": 44.343, "SOC1": 41.25}
    # Names may repeat (two "NC" channels) and are kept in printed order.
    assert [r.name for r in s.rails] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "NC", "VDDQ_VDD2_1V8AO", "NC"]
    assert s.board_power_mw() == 2340 + 390 + 4025 + 301
    assert "NC" not in s.to_reading(0).rails_w
    first = parse_line(real_lines("jp6_agx_orin.txt")[0])
    assert first.gpu_gpc_freqs_mhz == [0, 0] and first.engines["NVENC"] == (79, 166)
    assert len(first.cpus) == 12 and first.cpus[0] == Cpu(14, 2188)


def test_thor_per_gpc_array_without_load():
    s = parse_line(real_lines("jp7_thor.txt")[1])
    assert s.gpu_load_pct is None
    assert s.gpu_gpc_freqs_mhz == [0, 0, 0] and s.gpu_freq_mhz == 0
    assert s.engines["NVENC0_FREQ"] == (None, 0) and s.engines["VIC"] is None
    assert s.cpus[9] == Cpu(17, 2601)
    assert s.board_power_mw() == 0 + 4923 + 4327


def test_jetpack7_r39_current_max_sensors_and_three_value_rails():
    loaded, idle = (parse_line(x) for x in real_lines("jp7_r39.txt"))
    assert loaded.temps_c["cpu"] == 58.25  # current, not the max after the slash
    assert loaded.rails[0] == Rail("VDD_GPU", 37939, 8660)
    assert loaded.board_rail() == "VIN" and loaded.board_power_mw() == 124486
    assert (loaded.gpu_load_pct, loaded.gpu_gpc_freqs_mhz) == (87, [1574, 1574, 1574])
    assert loaded.cpus[2] == Cpu(None, None)
    assert loaded.unknown == ["FUTURE_TOKEN", "value"]
    assert idle.cpus == [Cpu(0, 2601), Cpu(5, 2601), Cpu(None, None)]
    assert (idle.emc_load_pct, idle.emc_freq_mhz) == (None, 4266)


def test_orin_jetpack5_second_gpc_engine():
    s = parse_line("GR3D_FREQ 99%@917 GR3D2_FREQ 99%@0")
    assert s.gpu_load_pct == 99 and s.gpu_freq_mhz == 917 and s.gpu_gpc_freqs_mhz == [917, 0]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "RAM 4722/78",
        "RAM 1343/7620MB (lfb 157x4MB) SWAP 165/3810MB (cached 3MB) CPU [0%@1497,0%@72",
        "RAM 1343/7620MB CPU [0%@1497,garbage,off] GR3D_FREQ 0%@[305,x] VDD_IN 5251mW/",
        "tegrastats: some banner text",
        "\x00\xff[[[]]]@@@ %%% 12/ /34 @C",
    ],
)
def test_malformed_and_truncated_lines_never_raise(line):
    s = parse_line(line)
    assert isinstance(s, Sample)


def test_a_truncated_line_is_incomplete_and_its_rest_unknown():
    s = parse_line("RAM 4722/78")
    assert not s.complete and s.unknown == ["RAM", "4722/78"] and s.rails == []
    s = parse_line("RAM 1343/7620MB CPU [0%@1497,garbage,off] VDD_IN 5251mW/")
    assert s.complete
    assert s.cpus == [Cpu(0, 1497), Cpu(None, None), Cpu(None, None)]
    assert "CPU:garbage" in s.unknown and "5251mW/" in s.unknown


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_parse_line_never_raises_on_arbitrary_text(text):
    s = parse_line(text)
    assert isinstance(s, Sample)
    assert not any(u.startswith("<parse error") for u in s.unknown)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="RAMSWPCUGD3_FREQ[]%@/mWC0123456789., off", max_size=200))
def test_parse_line_never_raises_on_tegrastats_like_text(text):
    s = parse_line(text)
    assert not any(u.startswith("<parse error") for u in s.unknown)


_name = st.from_regex(r"[A-Z][A-Z0-9_]{1,12}", fullmatch=True).filter(
    lambda n: n not in ("RAM", "SWAP", "IRAM", "CPU", "MTS", "GR3D", "GR3D_FREQ", "GR3D2_FREQ", "EMC", "EMC_FREQ")
)
_int = st.integers(min_value=0, max_value=100000).map(float)
_pct = st.integers(min_value=0, max_value=100).map(float)
_temp = st.integers(min_value=-4000, max_value=12000).map(lambda x: x / 100.0)


@st.composite
def samples(draw):
    total = draw(st.integers(min_value=1, max_value=200000))
    used = draw(st.integers(min_value=0, max_value=total))
    cpus = draw(st.lists(st.one_of(st.just(Cpu(None, None)), st.builds(Cpu, _pct, _int)), min_size=1, max_size=16))
    gpcs = draw(st.one_of(st.just([]), st.lists(st.one_of(st.none(), _int), min_size=1, max_size=4)))
    known_gpcs = [g for g in gpcs if g is not None]
    temps = draw(st.dictionaries(st.from_regex(r"[a-zA-Z][a-zA-Z0-9]{0,8}", fullmatch=True), _temp, max_size=8))
    rails = draw(st.lists(st.builds(Rail, _name, _int, _int), max_size=8))
    return Sample(
        ram_used_mb=float(used), ram_total_mb=float(total),
        swap_used_mb=draw(_int), swap_total_mb=draw(_int), swap_cached_mb=draw(_int),
        cpus=cpus,
        gpu_load_pct=draw(st.one_of(st.none(), _pct)),
        gpu_freq_mhz=(max(known_gpcs) if known_gpcs else None) if gpcs else draw(st.one_of(st.none(), _int)),
        gpu_gpc_freqs_mhz=gpcs,
        emc_load_pct=draw(st.one_of(st.none(), _pct)),
        emc_freq_mhz=draw(st.one_of(st.none(), _int)),
        temps_c=temps,
        rails=rails,
    )


@settings(max_examples=100, deadline=None)
@given(samples())
def test_well_formed_lines_round_trip(sample):
    line = format_line(sample)
    back = parse_line(line)
    assert back.unknown == []
    if not sample.gpu_gpc_freqs_mhz and sample.gpu_load_pct is None and sample.gpu_freq_mhz is None:
        sample.gpu_gpc_freqs_mhz = []
    assert back == sample


# -- the source, with a fake tegrastats executable on PATH ---------------------------------------
FAKE = textwrap.dedent(
    """\
    #!{python}
    # Fake tegrastats for pytest-jetson's tests: prints real lines from a data file at the
    # interval it is given, like the real one, and optionally misbehaves.
    import os, sys, time
    args = sys.argv[1:]
    interval = int(args[args.index("--interval") + 1]) / 1000.0 if "--interval" in args else 1.0
    lines = [x for x in open(os.environ["FAKE_TEGRASTATS_LINES"]).read().splitlines()
             if x.strip() and not x.startswith("#")]
    die_after = int(os.environ.get("FAKE_TEGRASTATS_DIE_AFTER", "0"))
    garbage = os.environ.get("FAKE_TEGRASTATS_GARBAGE")
    n = 0
    while True:
        for line in lines:
            if garbage and n % 3 == 1:
                sys.stdout.write(garbage + "\\n")
            sys.stdout.write(line + "\\n")
            sys.stdout.flush()
            n += 1
            if die_after and n >= die_after:
                sys.exit(3)
            time.sleep(interval)
    """
)


@pytest.fixture
def fake_tegrastats(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "tegrastats"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_TEGRASTATS_LINES", str(DATA / "jp6_orin_nano.txt"))
    return exe


def _wait_for(sampler, n, timeout=10.0):
    import time

    end = time.monotonic() + timeout
    while len(sampler._readings) < n and time.monotonic() < end and sampler._died is None:
        time.sleep(0.02)


def test_auto_picks_tegrastats_when_on_path(fake_tegrastats):
    source, tried = open_source("auto")
    assert source.name == "tegrastats"
    assert tried and tried[0][0] == "jtop"


def test_tegrastats_source_samples_a_real_process(fake_tegrastats):
    source = TegrastatsSource()
    with Sampler(source, interval="20ms") as t:
        _wait_for(t, 8)
    s = t.summary
    assert s.source == "tegrastats" and s.samples >= 8
    assert s.power_basis is None or s.power_basis == "VDD_IN"
    # The data alternates idle (5.251 W) and busy (16.321 W) lines.
    assert s.power_peak_w == pytest.approx(16.321)
    assert 5.251 < s.power_mean_w < 16.321
    assert s.memory_peak_bytes == 6712 * 1024 * 1024
    assert s.temperatures_max_c["tj"] == 58.312
    assert s.gpu_clock_min_mhz == 612  # only loaded samples count for the clock
    assert s.malformed_lines == 0 and s.gaps == []
    assert list(t.series.t) == sorted(t.series.t)
    assert source._proc.poll() is not None, "stopping the sampler ends the tegrastats process"


def test_tegrastats_dying_mid_run_keeps_samples_marks_gap_and_warns(fake_tegrastats, monkeypatch):
    monkeypatch.setenv("FAKE_TEGRASTATS_DIE_AFTER", "4")
    import time

    with pytest.warns(TelemetryWarning, match="tegrastats stopped during the run"):
        with Sampler(TegrastatsSource(), interval="20ms") as t:
            _wait_for(t, 4)
            deadline = time.monotonic() + 5
            while t._died is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.2)
    s = t.summary
    assert s.samples == 4
    assert len(s.gaps) == 1
    gap_start, gap_end = s.gaps[0]
    assert gap_start == pytest.approx(t.series.t[-1]) and gap_end == pytest.approx(t.end_time)
    assert gap_end - gap_start >= 0.2
    assert any("exited (code 3)" in w for w in s.warnings)


def test_malformed_lines_are_skipped_and_counted(fake_tegrastats, monkeypatch):
    monkeypatch.setenv("FAKE_TEGRASTATS_GARBAGE", "RAM 4722/78")
    with pytest.warns(TelemetryWarning, match="could not read"):
        with Sampler(TegrastatsSource(), interval="10ms") as t:
            _wait_for(t, 9)
    s = t.summary
    assert s.samples >= 9
    assert s.malformed_lines >= 2
    assert all(p in (5.251, 16.321) for p in t.series.board_power_w)


def test_interval_below_ten_ms_is_refused():
    with pytest.raises(ConfigError, match="10 ms"):
        Sampler(TegrastatsSource(), interval="5ms")


def test_tegrastats_missing_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "tegrastats not found on PATH" in TegrastatsSource.probe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source, tried = open_source("auto")
    assert ("tegrastats", TegrastatsSource.probe()) in tried


# -- every recorded board tree: tegrastats and sysfs read the same moment -------------------------
from board_trees import ALL as BOARD_TREES  # noqa: E402
from board_trees import PAIRS as BOARD_PAIRS  # noqa: E402
from board_trees import tegrastats_line, tree  # noqa: E402


@pytest.mark.parametrize("name,m", BOARD_PAIRS, ids=BOARD_TREES)
def test_every_board_tree_reads_the_same_through_tegrastats_and_sysfs(name, m, fake_tegrastats, monkeypatch, tmp_path):
    from pytest_jetson.telemetry.sysfs import SysfsSource

    lines = tmp_path / "lines.txt"
    lines.write_text(tegrastats_line(name) + "\n")
    monkeypatch.setenv("FAKE_TEGRASTATS_LINES", str(lines))
    with Sampler(TegrastatsSource(), interval="20ms") as t:
        _wait_for(t, 2)
    ts = t.series
    assert len(ts.t) >= 2
    got = TegrastatsSource()  # one reading, to compare field by field
    reading = parse_line(tegrastats_line(name)).to_reading(0.0)
    fs = SysfsSource(root=str(tree(name))).read(0.0)
    assert got.name == "tegrastats"
    # rails: the same names and, within the INA's whole-mA resolution, the same power
    assert set(reading.rails_w) == set(m["rails_mw"])
    for rail, watts in reading.rails_w.items():
        assert watts * 1000 == pytest.approx(m["rails_mw"][rail]) and fs.rails_w[rail] == pytest.approx(watts, abs=0.01)
    if m["board_rail"] == "VIN" and "VIN" not in reading.rails_w:
        # Thor before L4T 39: tegrastats prints the module rails only, so its board power is their
        # sum; the carrier's INA238 (sysfs, jetson-stats 7.2) sees the whole input.
        assert reading.board_power_w == pytest.approx(sum(reading.rails_w.values()))
        assert fs.board_power_w > 3 * reading.board_power_w
    else:
        assert reading.board_power_w == pytest.approx(fs.board_power_w, abs=0.05)
    assert t.summary.power_mean_w == pytest.approx(reading.board_power_w)
    # GPU: tegrastats prints whole MHz (305 for 306); no clock when run without root (TX2 line)
    if reading.gpu_clock_mhz:
        assert abs(reading.gpu_clock_mhz - fs.gpu_clock_mhz) <= 1.0
    assert reading.gpu_util == fs.gpu_util or (fs.gpu_util is None and name == "agx-thor-jp70")
    if reading.emc_util is not None:
        assert reading.emc_util == pytest.approx(fs.emc_util)
    # temperatures: the same sensors under tegrastats' names
    for zone, printed in m["tegrastats_sensor"].items():
        if zone in fs.temps_c:
            assert reading.temps_c[printed] == fs.temps_c[zone]
    assert not t.summary.throttled and reading.throttle == []
