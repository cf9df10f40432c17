"""The TensorRT plan cache: build once, load many times, never load a plan built for something else.

A plan is only valid for the TensorRT version and the GPU that built it, and for the ONNX file
and build options it was built from. The GPU is named by the *module* (the device tree's
``compatible`` string on a Jetson, e.g. ``nvidia,p3768-0000+p3767-0005``; the SoC's profile id
without one), its SM count and compute capability: pycuda's device name says "Orin" for every
Orin module, and a cache shared between an AGX Orin and an Orin Nano must not hand one the
other's tactics. All of these go into the cache key (the file name), and again into a small
header written in front of the plan, so a plan that was copied, renamed or built by another
TensorRT is caught by the header check and rebuilt instead of being handed to the runtime. A
plan whose bytes do not match the header's hash (a truncated write, a disk error) is rebuilt
with a warning.

The header also keeps what the build was like (power mode, build seconds, where layers ran):
a plan built in another power mode is still used (tactics differ a little, the plan is valid),
with a note saying so.

File layout: ``MAGIC`` + 4-byte big-endian header length + JSON header + plan bytes.
"""

import hashlib
import json
import stat
import struct
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..fileio import lock as fileio_lock
from ..fileio import write_atomic
from ..models import zoo
from ..models.reference import resolve

MAGIC = b"PYTEST-JETSON-TRT-PLAN\n"
HEADER_VERSION = 2
_CHUNK = 1 << 20


class PlanCacheWarning(UserWarning):
    """A cached plan was stale, foreign or corrupt and is being rebuilt."""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def external_data(path: Path) -> "Tuple[List[str], List[str]]":
    """(locations inside the model's folder, locations outside it) of the weights the ONNX file
    keeps in external-data files; both empty when the graph cannot be read (its parser says why).
    Outside is ``../``, an absolute path or a link that resolves out of the folder."""
    inside: List[str] = []
    outside: List[str] = []
    try:
        import onnx

        proto = onnx.load(str(path), load_external_data=False)
    except Exception:
        return inside, outside
    locations = {entry.value for init in proto.graph.initializer for entry in init.external_data
                 if entry.key == "location"}
    base = Path(path).parent.resolve()
    for loc in sorted(locations):
        (inside if base in (base / loc).resolve().parents else outside).append(loc)
    return inside, outside


def onnx_digest(path: Path) -> str:
    """Hash of the ONNX file plus its external-data files (weights stored beside the graph).
    Weights named outside the model's folder are no part of it and are never read."""
    h = hashlib.sha256(file_sha256(path).encode())
    folder = path.parent
    for loc in external_data(path)[0]:
        data = folder / loc
        if data.is_file():
            h.update(loc.encode())
            h.update(file_sha256(data).encode())
    return h.hexdigest()


_DIGESTS: Dict[Tuple[str, int, int, int], str] = {}


def model_digest(engine: Any) -> Optional[str]:
    """The sha256 of the model file ``engine`` measures (an ONNX with its external data, or a
    plan), so a baseline recorded on other bytes under the same name reads as a workload change;
    None when it measures no file (a simulated zoo model). Kept per file state: a suite measuring
    one large model hashes it once."""
    path = getattr(engine, "path", None)
    if path is None:
        try:
            ref = resolve(getattr(engine, "model", None) or "")
        except Exception:
            return None
        path = ref.path
    if path is None:
        return None
    try:
        real = Path(path).resolve()
        st = real.stat()
    except (OSError, RuntimeError, TypeError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    state = (str(real), st.st_size, st.st_mtime_ns, st.st_ino)
    digest = _DIGESTS.get(state)
    if digest is None:
        try:
            digest = onnx_digest(real) if real.suffix.lower() == ".onnx" else file_sha256(real)
        except OSError:
            return None
        _DIGESTS[state] = digest
    return digest


def default_cache_dir() -> Path:
    """``engines`` under the model zoo's cache root (``$PYTEST_JETSON_CACHE``, else the user's
    cache dir)."""
    return Path(zoo.cache_dir()) / "engines"


def read_compatible(root: Path = Path("/")) -> Optional[str]:
    """The board's first device-tree ``compatible`` entry (``nvidia,p3768-0000+p3767-0005``):
    the carrier board and module part numbers, so one SKU differs from another."""
    for rel in ("proc/device-tree/compatible", "sys/firmware/devicetree/base/compatible"):
        try:
            data = (Path(root) / rel).read_bytes()
        except OSError:
            continue
        entries = [e.decode("utf-8", "replace").strip() for e in data.split(b"\x00") if e.strip()]
        if entries:
            return entries[0]
    return None


def module_identity(device: Any = None, gpu_name: str = "", root: Path = Path("/")) -> str:
    """What names this GPU in a plan key: the device tree's compatible string on a Jetson, else
    the detected board's profile id, else the GPU's name (a discrete GPU: ``gpu:NVIDIA H100``)."""
    compatible = read_compatible(root)
    if compatible:
        return compatible
    profile = getattr(device, "profile", None)
    if profile is not None and not getattr(device, "simulated", True):
        return f"jetson:{profile.id}"
    return f"gpu:{gpu_name or 'unknown'}"


@dataclass(frozen=True)
class PlanKey:
    """Everything a plan depends on. ``digest`` names the cache file."""

    onnx_sha256: str
    tensorrt: str
    module: str
    sm_count: int
    compute_capability: str
    options: Dict[str, Any]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "onnx_sha256": self.onnx_sha256, "tensorrt": self.tensorrt, "module": self.module,
            "sm_count": int(self.sm_count), "compute_capability": self.compute_capability,
            "options": dict(self.options),
        }

    @property
    def gpu(self) -> str:
        return f"{self.module} ({self.sm_count} SMs, sm {self.compute_capability})"

    @property
    def digest(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()


def plan_path(cache_dir: Path, label: str, key: PlanKey) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:80]
    return Path(cache_dir) / f"{safe}-{key.digest[:20]}.plan"


def timing_cache_path(cache_dir: Path, key: PlanKey) -> Path:
    """One timing cache per TensorRT version and GPU: tactics timed once serve every build."""
    ident = f"{key.tensorrt}|{key.module}|{key.sm_count}|{key.compute_capability}"
    tag = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return Path(cache_dir) / f"timing-{tag}.cache"


def encode(key: PlanKey, plan: bytes, built: Optional[Dict[str, Any]] = None) -> bytes:
    """The cache file for ``plan``; ``built`` is what the build was like (power mode, seconds,
    placement), kept for notes and metrics when the plan is loaded again."""
    header = dict(key.to_dict(), header_version=HEADER_VERSION, digest=key.digest,
                  plan_sha256=hashlib.sha256(plan).hexdigest(), plan_bytes=len(plan),
                  created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), built=dict(built or {}))
    blob = json.dumps(header, sort_keys=True, default=str).encode()
    return MAGIC + struct.pack(">I", len(blob)) + blob + plan


class StalePlan(Exception):
    """Why a cached file cannot be used (internal: the caller warns and rebuilds)."""


def decode(data: bytes, key: PlanKey) -> bytes:
    """The plan in ``data`` if it was built for ``key``; raises StalePlan saying why not."""
    return decode_with_header(data, key)[0]


def decode_with_header(data: bytes, key: PlanKey) -> "Tuple[bytes, Dict[str, Any]]":
    """(plan, header) of ``data`` if it was built for ``key``; raises StalePlan saying why not."""
    if not data.startswith(MAGIC):
        raise StalePlan("it has no pytest-jetson header (a foreign or corrupt file)")
    off = len(MAGIC)
    if len(data) < off + 4:
        raise StalePlan("its header is truncated")
    (n,) = struct.unpack(">I", data[off:off + 4])
    try:
        header = json.loads(data[off + 4:off + 4 + n].decode())
    except (UnicodeDecodeError, ValueError):
        raise StalePlan("its header is not readable JSON") from None
    if header.get("header_version") != HEADER_VERSION:
        raise StalePlan(f"its header version is {header.get('header_version')!r}, not {HEADER_VERSION}")
    if header.get("tensorrt") != key.tensorrt:
        raise StalePlan(f"it was built by TensorRT {header.get('tensorrt')}, this is TensorRT {key.tensorrt}")
    theirs = (header.get("module"), header.get("sm_count"), header.get("compute_capability"))
    if theirs != (key.module, key.sm_count, key.compute_capability):
        raise StalePlan(
            f"it was built for {theirs[0]} ({theirs[1]} SMs, sm {theirs[2]}), this is {key.gpu}"
        )
    if header.get("digest") != key.digest:
        raise StalePlan("it was built from another ONNX file or with other build options")
    plan = data[off + 4 + n:]
    if len(plan) != header.get("plan_bytes") or hashlib.sha256(plan).hexdigest() != header.get("plan_sha256"):
        raise StalePlan("its plan bytes do not match the header's hash (truncated or corrupt)")
    return plan, header


def load(path: Path, key: PlanKey, what: str) -> Optional[bytes]:
    """The cached plan at ``path`` for ``key``, or None (missing; or stale: warned, to rebuild)."""
    found = load_with_header(path, key, what)
    return None if found is None else found[0]


def load_with_header(path: Path, key: PlanKey, what: str) -> "Optional[Tuple[bytes, Dict[str, Any]]]":
    """(plan, header) cached at ``path`` for ``key``, or None (missing; or stale: warned)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"{what}: cannot read the cached plan {str(path)!r} ({exc}); rebuilding it",
                      PlanCacheWarning, stacklevel=3)
        return None
    try:
        return decode_with_header(data, key)
    except StalePlan as why:
        warnings.warn(f"{what}: the cached plan {str(path)!r} cannot be used: {why}; rebuilding it",
                      PlanCacheWarning, stacklevel=3)
        return None


def store(path: Path, key: PlanKey, plan: bytes, built: Optional[Dict[str, Any]] = None) -> None:
    write_atomic(path, encode(key, plan, built))


def lock(path: Path) -> Any:
    """A file lock around building one plan (pytest-xdist workers and pools build it once)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return fileio_lock(str(path) + ".lock")  # never through a link
