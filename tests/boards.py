"""Real-looking copies of the files a Jetson board has, written under a fake root directory.

Detection reads ``/proc/device-tree/model``, ``/etc/nv_tegra_release``, ``/etc/nvpmodel.conf``,
``/var/lib/nvpmodel/status``, ``/proc/meminfo`` and the GPU devfreq files; these builders write
what those files hold on each board (device-tree strings end in a NUL byte, as on a board).
"""

from pathlib import Path
from typing import Dict, Optional

ORIN_NANO_CONF = """\
< PARAM TYPE=FILE NAME=CPU_ONLINE >
CORE_0 /sys/devices/system/cpu/cpu0/online
< POWER_MODEL ID=0 NAME=15W >
CPU_ONLINE CORE_0 1
GPU MAX_FREQ 624750000
< POWER_MODEL ID=1 NAME=7W >
CPU_ONLINE CORE_0 1
GPU MAX_FREQ 408000000
< PM_CONFIG DEFAULT=0 >
"""

ORIN_NANO_SUPER_CONF = """\
< POWER_MODEL ID=0 NAME=15W >
GPU MAX_FREQ 612000000
< POWER_MODEL ID=1 NAME=25W >
GPU MAX_FREQ 918000000
< POWER_MODEL ID=2 NAME=MAXN_SUPER >
GPU MAX_FREQ 1020000000
< PM_CONFIG DEFAULT=1 >
"""

AGX_ORIN_CONF = """\
< POWER_MODEL ID=0 NAME=MAXN >
< POWER_MODEL ID=1 NAME=MODE_15W >
< POWER_MODEL ID=2 NAME=MODE_30W >
< POWER_MODEL ID=3 NAME=MODE_50W >
< PM_CONFIG DEFAULT=2 >
"""

NANO_CONF = """\
< POWER_MODEL ID=0 NAME=MAXN >
< POWER_MODEL ID=1 NAME=5W >
< PM_CONFIG DEFAULT=0 >
"""

BOARDS: Dict[str, Dict[str, object]] = {
    "orin-nano": dict(
        model="NVIDIA Jetson Orin Nano Developer Kit",
        release="# R36 (release), REVISION: 3.0, GCID: 36191598, BOARD: generic, EABI: aarch64, "
        "DATE: Mon May  6 17:34:21 UTC 2024\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n",
        conf=ORIN_NANO_CONF, mode=0, mem_kb=7_620_352, gpu="17000000.ga10b", trt=(8, 6, 2),
    ),
    "orin-nano-super": dict(
        model="NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
        release="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
        "DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\n",
        conf=ORIN_NANO_SUPER_CONF, mode=2, mem_kb=7_620_352, gpu="17000000.gpu", trt=(10, 3, 0),
    ),
    "agx-orin": dict(
        model="NVIDIA Jetson AGX Orin Developer Kit",
        release="# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, "
        "DATE: Tue Aug  1 19:57:35 UTC 2023\n",
        conf=AGX_ORIN_CONF, mode=0, mem_kb=64_335_148, gpu="17000000.ga10b", trt=(8, 5, 2),
    ),
    "nano": dict(
        model="NVIDIA Jetson Nano Developer Kit",
        release="# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref, EABI: aarch64, "
        "DATE: Sat Feb 19 17:05:08 UTC 2022\n",
        conf=NANO_CONF, mode=1, mem_kb=4_059_272, gpu="57000000.gpu", trt=(8, 2, 1),
    ),
}


def write_board(root: Path, board: str, *, mode: Optional[int] = None, clocks: bool = False,
                release: Optional[str] = None, model: Optional[bytes] = None) -> Path:
    spec = BOARDS[board]
    files = {
        "proc/device-tree/model": model if model is not None else str(spec["model"]).encode() + b"\x00",
        "etc/nv_tegra_release": (release if release is not None else str(spec["release"])).encode(),
        "etc/nvpmodel.conf": str(spec["conf"]).encode(),
        "var/lib/nvpmodel/status": f"pmode:{spec['mode'] if mode is None else mode:04d} fmode:quiet\n".encode(),
        "proc/meminfo": f"MemTotal:       {spec['mem_kb']} kB\nMemFree:         1000000 kB\n".encode(),
    }
    major, minor, patch = spec["trt"]  # type: ignore[misc]
    files["usr/include/aarch64-linux-gnu/NvInferVersion.h"] = (
        f"#define NV_TENSORRT_MAJOR {major} //!< TensorRT major version.\n"
        f"#define NV_TENSORRT_MINOR {minor} //!< TensorRT minor version.\n"
        f"#define NV_TENSORRT_PATCH {patch} //!< TensorRT patch version.\n"
    ).encode()
    devfreq = f"sys/class/devfreq/{spec['gpu']}"
    files[f"{devfreq}/max_freq"] = b"624750000\n"
    files[f"{devfreq}/min_freq"] = b"624750000\n" if clocks else b"306000000\n"
    for rel, data in files.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return Path(root)
