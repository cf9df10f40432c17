"""The fingerprint fields a baseline is compared on (``FINGERPRINT``), in a module of their own:
the plugin checks a plugin's fields against them at start-up, without the gate's statistics."""

from typing import Dict, Tuple

#: The fingerprint fields a baseline is compared on, and what each belongs to: "environment"
#: (must match) or "workload" (compared across, and the change said). The plugin's version is
#: neither; fields plugins and the host add (``Context.compared_keys``) are environment.
FINGERPRINT: Dict[str, str] = {
    "device": "environment", "power_mode": "environment", "jetson_clocks": "environment",
    "jetpack": "environment", "tensorrt": "environment", "simulated": "environment",
    "backend": "environment", "fan_profile": "environment",
    "model": "workload", "precision": "workload", "batch": "workload", "resolution": "workload",
    "accelerator": "workload", "processes": "workload",
    # the measured model file's content: a cached or user ONNX replaced under the same name
    "model_sha256": "workload",
}
ENVIRONMENT_KEYS: Tuple[str, ...] = tuple(k for k, part in FINGERPRINT.items() if part == "environment")
WORKLOAD_KEYS: Tuple[str, ...] = tuple(k for k, part in FINGERPRINT.items() if part == "workload")
#: Every field a baseline is compared on.
COMPARED_KEYS: Tuple[str, ...] = ENVIRONMENT_KEYS + WORKLOAD_KEYS
