"""The host machine, when real engines run on it instead of a Jetson (``--jetson-backend
onnxruntime`` on a laptop or a CI runner): its CPU, which names its baselines.

A host's numbers belong to its CPU, so its baselines live under ``baselines/host-<cpu>-<backend>/``
beside the boards' (``baselines/orin-nano-8gb/``): a project records and gates both.
"""

import os
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

# Words CPU vendors put in model names that say nothing about the chip.
_NOISE = re.compile(r"\((R|TM|C)\)|\bCPU\b|\bProcessor\b|\b\d+-Core\b|@\s*[\d.]+\s*[GM]Hz|\bwith\b.*$",
                    re.IGNORECASE)


def cpu_model(root: str = "/") -> str:
    """The CPU's model name: ``/proc/cpuinfo`` on Linux, ``sysctl`` on macOS, else what
    ``platform`` knows."""
    try:
        text = (Path(root) / "proc" / "cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            fields.setdefault(key.strip().lower(), value.strip())
    for key in ("model name", "hardware", "cpu model", "processor"):
        value = fields.get(key, "")
        if value and not value.isdigit():
            return value
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                                 text=True, timeout=5)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def slug(text: str) -> str:
    """'Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz' -> 'intel-xeon-platinum-8370c'."""
    words = _NOISE.sub(" ", text)
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")[:48].strip("-") or "cpu"


@dataclass(frozen=True)
class Host:
    """The machine real engines run on when there is no board."""

    cpu: str
    cores: Optional[int]
    system: str

    @classmethod
    def detect(cls, root: str = "/") -> "Host":
        return cls(cpu=cpu_model(root), cores=os.cpu_count(), system=platform.system() or "unknown")

    @property
    def id(self) -> str:
        return f"host-{slug(self.cpu)}"

    def describe(self) -> str:
        cores = f", {self.cores} cores" if self.cores else ""
        return f"{self.cpu}{cores}"

    def fingerprint(self) -> Dict[str, Any]:
        return {"device": self.id, "cpu": self.cpu, "cores": self.cores, "os": self.system}
