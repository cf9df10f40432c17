"""``pytest-jetson devices``: the known Jetson profiles, their specs and nvpmodel power modes.

Without names it prints one row per device; with names (ids or aliases, as ``--jetson-device``
takes them) it prints each device's full sheet: aliases, model strings, the power-mode table,
sources and notes. ``--json`` prints the same selection as data for scripts. ``--detect`` shows
what this machine's files say instead: the board, how it was found, its software and power mode,
and a note for every file that was odd and ignored.
"""

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..devices.detect import ROOT_ENV, Detection, detect, system_root
from ..devices.profile import PowerMode, Profile
from ..devices.registry import get, profiles
from ..errors import JetsonError

# A field the public sources do not give is None in the data; the table shows it as a dash so
# a reader sees "unknown", never a made-up zero.
MISSING = "-"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pytest-jetson devices",
        description="List the known Jetson devices: specs and nvpmodel power modes.",
    )
    p.add_argument("names", nargs="*",
                   help="devices to show in full (ids or aliases, e.g. orin-nano, thor); default: all, one row each")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--detect", action="store_true",
                   help=f"show what this machine's files say (the board, its software, odd files); "
                        f"reads ${ROOT_ENV} instead of / when set")
    return p


def _num(value: Any, fmt: str = "{:g}") -> str:
    return MISSING if value is None else fmt.format(value)


def _memory(p: Profile) -> str:
    gib = p.memory_bytes / 1024 ** 3
    return f"{gib:g} GiB"


def _modes(p: Profile) -> str:
    """Mode names in nvpmodel order; the default is starred."""
    return " ".join(m.name + ("*" if m.name == p.default_power_mode else "") for m in p.power_modes)


def _extra_mode_keys(p: Profile) -> Dict[str, Dict[str, Any]]:
    """Per-mode keys the data carries beyond ``PowerMode`` (``gpu_sm_active``, ``sources``), by mode
    name. The loader ignores unknown keys, so they are read back from the profile's file."""
    if not p.path:
        return {}
    try:
        data = json.loads(Path(p.path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    known = set(PowerMode.__dataclass_fields__)
    return {str(m.get("name")): {k: v for k, v in m.items() if k not in known}
            for m in data.get("power_modes", []) if isinstance(m, dict)}


def mode_to_dict(mode: PowerMode, extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    out = mode.to_dict()
    out.update(extra or {})
    return out


def profile_to_dict(p: Profile) -> Dict[str, Any]:
    """A profile as plain data in the profile-file schema (``load_profile`` reads it back)."""
    extra = _extra_mode_keys(p)
    return {
        "id": p.id,
        "name": p.name,
        "family": p.family,
        "aliases": list(p.aliases),
        "model_strings": list(p.model_strings),
        "gpu": {
            "arch": p.gpu_arch,
            "compute_capability": p.compute_capability,
            "sm_count": p.sm_count,
            "cuda_cores": p.cuda_cores,
            "tensor_cores": p.tensor_cores,
            "l2_cache_bytes": p.l2_cache_bytes,
            "int8_tops_dense": p.int8_tops_dense,
        },
        "dla": {"count": p.dla_count, "max_mhz": p.dla_max_mhz},
        "cpu": {"cores": p.cpu_cores, "model": p.cpu_model, "max_mhz": p.cpu_max_mhz},
        "memory": {"bytes": p.memory_bytes, "bandwidth_gbs": p.memory_bandwidth_gbs, "type": p.memory_type},
        "precisions": list(p.precisions),
        "default_power_mode": p.default_power_mode,
        "power_modes": [mode_to_dict(m, extra.get(m.name)) for m in p.power_modes],
        "sources": dict(p.sources),
        "notes": list(p.notes),
    }


def _table(header: Sequence[str], rows: List[Sequence[str]], right: Sequence[int] = ()) -> List[str]:
    lines = [tuple(header)] + [tuple(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for i, line in enumerate(lines):
        cells = [c.rjust(w) if j in right else c.ljust(w) for j, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


#: the widest a listing gets (terminals and CI logs at 120 columns read it without wrapping)
WIDTH = 120


def _wrapped(label: str, text: str, label_width: int, width: int) -> List[str]:
    import textwrap

    lead = f"  {label:<{label_width}}  "
    return textwrap.wrap(text, width, initial_indent=lead, subsequent_indent=" " * len(lead),
                         break_on_hyphens=False) or [lead.rstrip()]


def summary_lines(selection: List[Profile], width: int = WIDTH) -> List[str]:
    """One row per device: what a user needs to pick a ``--jetson-device`` and a power mode;
    then each device's power modes and aliases, wrapped to ``width``."""
    header = ("device", "name", "GPU", "CC", "SMs", "cores", "TCs", "DLA", "memory", "GB/s", "modes")
    rows = []
    for p in selection:
        rows.append((
            p.id, p.name, p.gpu_arch, p.compute_capability or MISSING, _num(p.sm_count), _num(p.cuda_cores),
            _num(p.tensor_cores), str(p.dla_count), _memory(p), _num(p.memory_bandwidth_gbs),
            str(len(p.power_modes)),
        ))
    lines = _table(header, rows, right=(4, 5, 6, 7, 8, 9, 10))
    label = max(len(p.id) for p in selection)
    lines.append("")
    lines.append("power modes, in nvpmodel order (* default; --jetson-power-mode takes the name or the id):")
    for p in selection:
        lines += _wrapped(p.id, _modes(p), label, width)
    lines.append("")
    lines.append("aliases (any of these, or the id, names the device in --jetson-device):")
    for p in selection:
        lines += _wrapped(p.id, ", ".join(p.aliases) or MISSING, label, width)
    lines.append("")
    import textwrap

    lines += textwrap.wrap(
        f"{len(selection)} devices. 'pytest-jetson devices NAME' shows one in full (aliases, clocks per "
        f"power mode, sources); '{MISSING}' = not in the public sources.", width)
    return lines


def detail_lines(p: Profile) -> List[str]:
    """One device's whole sheet, power-mode table included."""
    lines = [f"{p.id}: {p.name}  (family {p.family})"]
    lines.append(f"  aliases        {', '.join(p.aliases) or MISSING}")
    lines.append(f"  model strings  {'; '.join(p.model_strings) or MISSING}")
    lines.append(
        f"  GPU            {p.gpu_arch}, compute capability {p.compute_capability or MISSING}, "
        f"{_num(p.sm_count)} SMs, {_num(p.cuda_cores)} CUDA cores, {_num(p.tensor_cores)} Tensor Cores, "
        f"L2 {_num(p.l2_cache_bytes and p.l2_cache_bytes // 1024, '{} KiB')}"
    )
    lines.append(f"  INT8 (dense)   {_num(p.int8_tops_dense, '{:g} TOPS')}")
    lines.append(f"  DLA            {p.dla_count}" + (f" x {_num(p.dla_max_mhz)} MHz" if p.dla_count else ""))
    lines.append(f"  CPU            {_num(p.cpu_cores)} cores, {p.cpu_model or MISSING}, up to {_num(p.cpu_max_mhz)} MHz")
    lines.append(f"  memory         {_memory(p)} {p.memory_type or ''}, {_num(p.memory_bandwidth_gbs)} GB/s".rstrip())
    lines.append(f"  precisions     {', '.join(p.precisions)}")
    lines.append("  power modes:")
    header = ("id", "mode", "budget W", "GPU MHz", "SMs on", "EMC MHz", "CPUs", "CPU MHz", "DLA MHz", "")
    rows = []
    for m in p.power_modes:
        budget = "none" if m.budget_w is None and m.name.upper().startswith("MAXN") else _num(m.budget_w)
        sms = m.gpu_sm_active
        rows.append((_num(m.id), m.name, budget, _num(m.gpu_max_mhz), _num(sms), _num(m.emc_max_mhz),
                     _num(m.cpu_online), _num(m.cpu_max_mhz), _num(m.dla_max_mhz),
                     "default" if m.name == p.default_power_mode else ""))
    lines.extend("    " + line for line in _table(header, rows, right=(0, 2, 3, 4, 5, 6, 7, 8)))
    import textwrap

    def para(text: str) -> List[str]:
        return textwrap.wrap(text, WIDTH, initial_indent="    ", subsequent_indent="      ",
                             break_on_hyphens=False, break_long_words=False)

    notes = [f"{m.name}: {m.notes}" for m in p.power_modes if m.notes]
    if notes:
        lines.append("  mode notes:")
        for n in notes:
            lines += para(n)
    if p.notes:
        lines.append("  notes:")
        for n in p.notes:
            lines += para(n)
    if p.sources:
        lines.append("  sources:")
        for k, v in p.sources.items():
            lines += para(f"{k}: {v}")
    return lines


def _generation(p: Profile) -> tuple:
    # Compute capability orders the GPU generations (5.3 Nano ... 11.0 Thor); within one, the
    # smaller module first and the Super firmware right after its base module.
    try:
        cc = float(p.compute_capability or "inf")
    except ValueError:
        cc = float("inf")
    return (cc, p.cuda_cores or 0, p.memory_bytes, p.id)


def select(names: Optional[Sequence[str]] = None) -> List[Profile]:
    """The profiles named (ids or aliases, duplicates dropped), or all of them oldest GPU first."""
    if not names:
        return sorted(profiles().values(), key=_generation)
    chosen: List[Profile] = []
    for name in names:
        p = get(name)
        if p not in chosen:
            chosen.append(p)
    return chosen


WIDTH = 100


def detection_to_dict(found: Detection, root: Path) -> Dict[str, Any]:
    return {
        "root": str(root), "is_jetson": found.is_jetson,
        "profile": found.profile.id if found.profile else None, "matched_by": found.matched_by,
        "part_number": found.part_number, "module": found.module, "model": found.model_string,
        "compatible": list(found.compatible), "super_firmware": found.super_firmware,
        "l4t": found.l4t, "jetpack": found.jetpack, "power_mode": found.power_mode,
        "power_mode_id": found.power_mode_id, "default_power_mode_id": found.default_mode_id,
        "mode_table": {str(k): v for k, v in sorted(found.mode_table.items())},
        "jetson_clocks": found.jetson_clocks, "memory_bytes": found.memory_bytes,
        "tensorrt": found.tensorrt, "notes": list(found.notes),
    }


def detect_lines(found: Detection, root: Path) -> List[str]:
    """What detection read, one field a line, wrapped at 100 columns."""
    rows: List[tuple] = []
    if found.profile is not None:
        rows.append(("board", f"{found.profile.name} ({found.profile.id})"))
    elif found.is_jetson:
        rows.append(("board", f"{found.name}: matches no known profile (see the notes)"))
    else:
        rows.append(("board", "not a Jetson (no NVIDIA module in /proc/device-tree/compatible, no "
                              "/etc/nv_tegra_release); --jetson-device auto simulates an Orin Nano 8GB"))
    if found.matched_by == "compatible":
        rows.append(("found by", f"part number {found.part_number} in /proc/device-tree/compatible"))
    elif found.matched_by == "model":
        rows.append(("found by", "the device-tree model string"))
    if found.module:
        rows.append(("module", found.module))
    if found.is_jetson:
        rows.append(("model", found.model_string or MISSING))
        rows.append(("compatible", ", ".join(found.compatible) or MISSING))
        rows.append(("Super", {True: "yes (Super firmware)", False: "no", None: MISSING}[found.super_firmware]))
        rows.append(("L4T", f"{found.l4t} (JetPack {found.jetpack})" if found.l4t else MISSING))
        table = ", ".join(f"{name} ({i}){'*' if i == found.default_mode_id else ''}"
                          for i, name in sorted(found.mode_table.items()))
        mode = "unknown" if found.power_mode is None else f"{found.power_mode} (id {found.power_mode_id}"
        if found.power_mode is not None:
            mode += f"; table: {table})" if table else ")"
        rows.append(("power mode", mode))
        rows.append(("jetson_clocks", {True: "on", False: "off", None: "unknown (no GPU devfreq files)"}[found.jetson_clocks]))
        rows.append(("memory", f"{found.memory_bytes / 1024 ** 3:.2f} GiB" if found.memory_bytes else MISSING))
        rows.append(("TensorRT", found.tensorrt or MISSING))
    rows.append(("root", f"{root}" + (f" (${ROOT_ENV})" if str(root) != "/" else "")))
    lines: List[str] = []
    for key, value in rows:
        lines += textwrap.wrap(value, WIDTH, initial_indent=f"{key:<12} ", subsequent_indent=" " * 13) or [key]
    if not found.notes:
        lines.append(f"{'notes':<12} none")
    for i, note in enumerate(found.notes):
        lines += textwrap.wrap(note, WIDTH, initial_indent=f"{'notes' if i == 0 else '':<12} - ",
                               subsequent_indent=" " * 15)
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.detect:
        root = system_root()
        found = detect(root)
        text = (json.dumps(detection_to_dict(found, root), indent=2) if args.json
                else "\n".join(detect_lines(found, root)))
        print(text)
        return 0
    try:
        selection = select(args.names)
    except JetsonError as exc:
        print(f"pytest-jetson devices: {exc}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps([profile_to_dict(p) for p in selection], indent=2)
    elif args.names:
        text = "\n\n".join("\n".join(detail_lines(p)) for p in selection)
    else:
        text = "\n".join(summary_lines(selection))
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # `pytest-jetson devices | head` closes the pipe early; that is not an error. Point stdout
        # at devnull so the interpreter's final flush does not raise again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
