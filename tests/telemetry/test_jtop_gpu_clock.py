"""The GPU clock the jtop source reads, in MHz, from ``jetson.gpu`` shaped exactly as jetson-stats
produces it, on Thor (NVML path) and before (devfreq path).

jetson-stats 7.2.2, jtop/core/gpu.py:
* devfreq path, ``igpu_read_freq`` (lines 98-130): ``int(cur_freq) // 1000``: kHz.
* NVML path, ``nvml_read_gpu_status`` (lines 278-400): ``freq = {'governor': 'nvml', 'cur':
  <NVML SM clock, MHz>, 'max': <NVML max SM clock, MHz>, 'min': 0}`` (344-349; 0 for a clock NVML
  does not give, 346-348); then, where /sys/class/devfreq/gpu-gpc-0 exists (Thor), each 0 clock is
  filled from devfreq in kHz (``_thor_gpc_freq``, 55-85: ``cur_freq // 1000``), ``governor`` is
  overwritten with devfreq's and ``GPC`` is ``[devfreq cur]`` (363-375); the entry's
  ``power_control`` is ``'nvml'`` (395).
A Thor's devfreq gives ``nvhost_podgov`` and ``max_freq`` 1575000000 Hz (tests/data/boards/
agx-thor-jp70); NVML's SM clock at full speed is 1575 MHz.
"""

import sys
import types

import pytest

from pytest_jetson.telemetry.jtop import JtopSource
from pytest_jetson.telemetry.series import Series
from pytest_jetson.telemetry.summary import summarize

#: nvml_read_gpu_status on a Thor at full clock whose NVML gives the SM clock and its maximum.
THOR_NVML_CLOCKS = {"Thor": {
    "type": "integrated",
    "status": {"load": 99.0, "3d_scaling": None, "railgate": None, "tpc_pg_mask": None, "temperature": 60},
    "freq": {"governor": "nvhost_podgov", "cur": 1575, "max": 1575, "min": 0, "GPC": [1575000]},
    "power_control": "nvml",
}}
#: The same where NVML gives no maximum (nvmlDeviceGetMaxClockInfo not supported): devfreq's, in kHz.
THOR_DEVFREQ_MAX = {"Thor": dict(THOR_NVML_CLOCKS["Thor"], freq={
    "governor": "nvhost_podgov", "cur": 1575, "max": 1575000, "min": 0, "GPC": [1575000]})}
#: igpu_read_freq on an AGX Orin (devfreq, kHz), for contrast.
ORIN_DEVFREQ = {"gpu": {
    "type": "integrated", "status": {"load": 99.0},
    "freq": {"governor": "nvhost_podgov", "cur": 1300500, "max": 1300500, "min": 306000},
    "power_control": "auto",
}}


def _source(gpu):
    src = JtopSource()
    src._jetson = types.SimpleNamespace(gpu=gpu, power={}, memory={}, temperature={}, cpu={})
    return src


@pytest.mark.parametrize("gpu, mhz", [(THOR_NVML_CLOCKS, 1575.0), (THOR_DEVFREQ_MAX, 1575.0),
                                      (ORIN_DEVFREQ, 1300.5)])
def test_the_gpu_clock_reads_in_mhz_whichever_path_jtop_took(gpu, mhz):
    src = _source(gpu)
    assert src.read(0.0).gpu_clock_mhz == pytest.approx(mhz)
    assert src.max_gpu_clock_mhz() == pytest.approx(mhz)


def test_a_thor_at_full_clock_does_not_read_as_throttled():
    src = _source(THOR_DEVFREQ_MAX)
    readings = [src.read(t * 0.1) for t in range(10)]
    summary = summarize(Series.from_readings(readings), source="jtop", interval=0.1,
                        max_gpu_clock_mhz=src.max_gpu_clock_mhz())
    assert summary.throttle_reasons == [] and not summary.throttled


# -- the structures above are what the real jetson-stats 7.2 builds --------------------------------
class _NotSupported(Exception):
    pass


def _fake_pynvml(max_clock):
    def unsupported(*args):
        raise _NotSupported("Not Supported")

    return types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: object(), nvmlDeviceGetName=lambda h: "NVIDIA Thor",
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=99),
        nvmlDeviceGetMemoryInfo=unsupported, nvmlDeviceGetTemperatureV=lambda h, s: 60,
        nvmlDeviceGetPowerUsage=unsupported, nvmlDeviceGetPowerManagementLimit=unsupported,
        nvmlDeviceGetClockInfo=lambda h, c: 1575 if c == 1 else unsupported(),
        nvmlDeviceGetMaxClockInfo=(lambda h, c: max_clock) if max_clock else unsupported,
    )


@pytest.mark.parametrize("max_clock, expected", [(1575, THOR_NVML_CLOCKS), (None, THOR_DEVFREQ_MAX)])
def test_the_structures_are_what_jetson_stats_7_2_builds_on_thor(monkeypatch, tmp_path, max_clock, expected):
    gpu_module = pytest.importorskip("jtop.core.gpu")
    jtop = pytest.importorskip("jtop")
    if not jtop.__version__.startswith("7.2."):
        pytest.skip(f"jetson-stats {jtop.__version__} has no Thor path of 7.2's shape")
    gpc = tmp_path / "gpu-gpc-0"  # the recorded Thor's devfreq node, at full clock
    gpc.mkdir()
    for name, text in {"governor": "nvhost_podgov", "cur_freq": "1575000000", "max_freq": "1575000000",
                       "min_freq": "0"}.items():
        (gpc / name).write_text(text + "\n")
    monkeypatch.setattr(gpu_module, "THOR_GPC", str(gpc))
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(max_clock))
    assert gpu_module.nvml_read_gpu_status() == expected
