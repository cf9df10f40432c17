"""What each GPU architecture can do per SM per cycle, by precision, and how many bytes a value takes.

Rates are dense multiply-accumulates (MACs) per SM per cycle, from the architectures' published
peaks: Maxwell/Pascal have no tensor cores and Nano/TX2 no fast int8 (TensorRT runs int8 there
as fp16); Volta's tensor cores run fp16 at 512 and int8 at twice that (AGX Xavier's GPU: 11 TFLOPS
fp16, 22 TOPS int8 over 8 SMs at 1377 MHz); Ampere (Orin, A100-style SM: 1024 fp16 MACs/SM/cycle,
which the Orin Nano's measured 9.7 TFLOP/s at 612 MHz on 8 SMs confirms) adds tf32, bf16 and int8
on tensor cores; Blackwell (Thor) adds fp8 and fp4.
"""

from typing import Dict, Optional, Tuple

from ..errors import ConfigError

#: Bytes per stored value for a precision (weights and activations).
BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "int8": 1, "fp8": 1, "fp4": 0.5}

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8", "fp8", "fp4")

_ALIASES = {
    "float32": "fp32", "float": "fp32", "single": "fp32",
    "float16": "fp16", "half": "fp16", "amp": "fp16",
    "bfloat16": "bf16", "tensorfloat32": "tf32",
    "fp8e4m3": "fp8", "e4m3": "fp8",
}

# name -> (cuda-core MACs/SM/cycle per precision, tensor-core MACs/SM/cycle per precision, DLA)
# DLA entries: MACs per DLA core per cycle (NVDLA v1 on Xavier: 2048 int8 / 1024 fp16 as
# 11.4 dense TOPS over two cores at 1.395 GHz gives; NVDLA v2 on Orin twice that).
ARCH: Dict[str, Dict[str, Dict[str, float]]] = {
    "maxwell": {
        "cuda": {"fp32": 128, "fp16": 256},
        "tensor": {},
        "dla": {},
    },
    "pascal": {
        "cuda": {"fp32": 128, "fp16": 256},
        "tensor": {},
        "dla": {},
    },
    "volta": {
        "cuda": {"fp32": 64, "fp16": 128, "int8": 256},
        "tensor": {"fp16": 512, "int8": 1024},
        "dla": {"fp16": 1024, "int8": 2048},
    },
    "ampere": {
        "cuda": {"fp32": 128, "tf32": 128, "fp16": 256, "bf16": 256, "int8": 512},
        "tensor": {"tf32": 512, "fp16": 1024, "bf16": 1024, "int8": 2048},
        "dla": {"fp16": 2048, "int8": 4096},
    },
    "blackwell": {
        "cuda": {"fp32": 128, "tf32": 128, "fp16": 256, "bf16": 256, "int8": 512, "fp8": 512},
        "tensor": {"tf32": 2048, "fp16": 4096, "bf16": 4096, "int8": 8192, "fp8": 8192, "fp4": 16384},
        "dla": {},
    },
}

#: Architectures whose TensorRT has no int8 speed-up: int8 engines run as fp16.
NO_FAST_INT8 = ("maxwell", "pascal")
#: Architectures whose tensor cores run TF32 (TensorRT enables it for fp32 unless told not to).
TF32_ARCHS = ("ampere", "blackwell")


def arch_key(gpu_arch: str) -> str:
    """'Ampere (sm_87)' -> 'ampere'; unknown names fall back to ampere (the newest common one)."""
    text = str(gpu_arch or "").lower()
    for key in ARCH:
        if key in text:
            return key
    return "ampere"


def normalise_precision(precision: str) -> str:
    p = str(precision).strip().lower().replace("-", "").replace("_", "")
    return _ALIASES.get(p, p)


def effective_precision(arch: str, precision: str, device_precisions: Tuple[str, ...],
                        device_name: str, tf32: bool = False,
                        harness_name: str = "") -> Tuple[str, Optional[str]]:
    """The precision the engine really runs at on this device, and a note when it differs.

    ``tf32``: the harness builds fp32 engines with TensorRT's TF32 flag left on (its default).
    Raises ``ConfigError`` for a precision the device cannot run at all.
    """
    p = normalise_precision(precision)
    listed = tuple(normalise_precision(x) for x in device_precisions) or tuple(ARCH[arch]["cuda"])
    if p == "int8" and arch in NO_FAST_INT8:
        return "fp16", (f"{device_name} ({arch}) has no int8 tensor cores or dp4a path in TensorRT: "
                        "int8 runs as fp16, as TensorRT does")
    if p not in PRECISIONS or p not in listed:
        raise ConfigError(
            f"precision {precision!r} is not available on {device_name}; "
            f"choose one of {', '.join(listed)}"
        )
    if p == "fp32" and arch in TF32_ARCHS:
        if tf32:
            return "tf32", (f"fp32 on {arch}: TensorRT runs convolutions and matrix products in TF32 "
                            f"unless its TF32 builder flag is cleared (trtexec --noTF32); the "
                            f"{harness_name or 'chosen'} harness leaves it on, so this is a TF32 engine")
        return "fp32", (f"fp32 on {arch}: the {harness_name or 'chosen'} harness clears the TF32 flag (as "
                        "this plugin's TensorRT backend does, trtexec --noTF32, or tf32=False), so the engine "
                        "runs true fp32 on CUDA cores (precision 'tf32' gives the tensor-core engine)")
    rates = ARCH[arch]
    if p not in rates["cuda"] and p not in rates["tensor"]:
        fallback = "fp16" if BYTES.get(p, 4) <= 2 and "fp16" in rates["cuda"] else "fp32"
        return fallback, (f"{device_name} ({arch}) has no {p} units: modelled as {fallback}")
    return p, None


def rate(arch: str, unit: str, precision: str) -> float:
    """MACs per SM (or per DLA core) per cycle; 0 when the unit cannot run that precision."""
    return float(ARCH[arch][unit].get(precision, 0.0))
