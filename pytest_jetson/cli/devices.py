"""``pytest-jetson devices``: the known Jetson profiles, their specs and nvpmodel power modes.

Without names it prints one row per device; with names (ids or aliases, as ``--jetson-device``
takes them) it prints each device's full sheet: aliases, model strings, the power-mode table,
sources and notes. ``--json`` prints the same selection as data for scripts. ``--detect`` shows
what this machine's files say instead: the board, how it was found, its software and power mode,
and a note for every file that was odd and ignored.
"""

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..devices.catalog import get, profiles
from ..devices.detect import ROOT_ENV, Detection, detect, system_root
from ..devices.profile import PowerMode, Profile
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


#: the widest the one-row-per-device listing gets (terminals and CI logs at 120 columns read it
#: without wrapping)
LISTING_WIDTH = 120
#: where a device's sheet and the detection report wrap their text
WIDTH = 100


def _wrapped(label: str, text: str, label_width: int, width: int) -> List[str]:
    lead = f"  {label:<{label_width}}  "
    return textwrap.wrap(text, width, initial_indent=lead, subsequent_indent=" " * len(lead),
                         break_on_hyphens=False) or [lead.rstrip()]


def summary_lines(selection: List[Profile], width: int = LISTING_WIDTH) -> List[str]:
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
    lines += textwrap.wrap(
        f"{len(selection)} devices. 'pytest-jetson devices NAME' shows one in full (aliases, clocks per "
        f"power mode, sources); '{MISSING}' = not in the public sources.", width)
    return lines


def _facts(p: Profile) -> List[str]:
    return [
        f"  aliases        {', '.join(p.aliases) or MISSING}",
        f"  model strings  {'; '.join(p.model_strings) or MISSING}",
        f"  GPU            {p.gpu_arch}, compute capability {p.compute_capability or MISSING}, "
        f"{_num(p.sm_count)} SMs, {_num(p.cuda_cores)} CUDA cores, {_num(p.tensor_cores)} Tensor Cores, "
        f"L2 {_num(p.l2_cache_bytes and p.l2_cache_bytes // 1024, '{} KiB')}",
        f"  INT8 (dense)   {_num(p.int8_tops_dense, '{:g} TOPS')}",
        f"  DLA            {p.dla_count}" + (f" x {_num(p.dla_max_mhz)} MHz" if p.dla_count else ""),
        f"  CPU            {_num(p.cpu_cores)} cores, {p.cpu_model or MISSING}, up to {_num(p.cpu_max_mhz)} MHz",
        f"  memory         {_memory(p)} {p.memory_type or ''}, {_num(p.memory_bandwidth_gbs)} GB/s".rstrip(),
        f"  precisions     {', '.join(p.precisions)}",
    ]


def _mode_table(p: Profile) -> List[str]:
    header = ("id", "mode", "budget W", "GPU MHz", "SMs on", "EMC MHz", "CPUs", "CPU MHz", "DLA MHz", "")
    rows = []
    for m in p.power_modes:
        budget = "none" if m.budget_w is None and m.name.upper().startswith("MAXN") else _num(m.budget_w)
        rows.append((_num(m.id), m.name, budget, _num(m.gpu_max_mhz), _num(m.gpu_sm_active), _num(m.emc_max_mhz),
                     _num(m.cpu_online), _num(m.cpu_max_mhz), _num(m.dla_max_mhz),
                     "default" if m.name == p.default_power_mode else ""))
    return ["    " + line for line in _table(header, rows, right=(0, 2, 3, 4, 5, 6, 7, 8))]


def _paragraphs(title: str, texts: Sequence[str]) -> List[str]:
    """A titled list of notes, each wrapped with a hanging indent; nothing when there are none."""
    if not texts:
        return []
    lines = [f"  {title}:"]
    for text in texts:
        lines += textwrap.wrap(text, WIDTH, initial_indent="    ", subsequent_indent="      ",
                               break_on_hyphens=False, break_long_words=False)
    return lines


def detail_lines(p: Profile) -> List[str]:
    """One device's whole sheet, power-mode table included."""
    lines = [f"{p.id}: {p.name}  (family {p.family})"] + _facts(p)
    lines.append("  power modes:")
    lines += _mode_table(p)
    lines += _paragraphs("mode notes", [f"{m.name}: {m.notes}" for m in p.power_modes if m.notes])
    lines += _paragraphs("notes", list(p.notes or ()))
    lines += _paragraphs("sources", [f"{k}: {v}" for k, v in (p.sources or {}).items()])
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


def _board(found: Detection) -> str:
    if found.profile is not None:
        return f"{found.profile.name} ({found.profile.id})"
    if found.is_jetson:
        return f"{found.name}: matches no known profile (see the notes)"
    return ("not a Jetson (no NVIDIA module in /proc/device-tree/compatible, no "
            "/etc/nv_tegra_release); --jetson-device auto simulates an Orin Nano 8GB")


def _power_mode(found: Detection) -> str:
    """The running mode, its id and the board's mode table (the default starred)."""
    if found.power_mode is None:
        return "unknown"
    table = ", ".join(f"{name} ({i}){'*' if i == found.default_mode_id else ''}"
                      for i, name in sorted(found.mode_table.items()))
    return f"{found.power_mode} (id {found.power_mode_id}" + (f"; table: {table})" if table else ")")


_FOUND_BY = {"compatible": "part number {} in /proc/device-tree/compatible",
             "model": "the device-tree model string"}
_SUPER = {True: "yes (Super firmware)", False: "no", None: MISSING}
_JETSON_CLOCKS = {True: "on", False: "off", None: "unknown (no GPU devfreq files)"}


def _jetson_rows(found: Detection) -> List[tuple]:
    """What a Jetson's files said, field by field."""
    return [
        ("model", found.model_string or MISSING),
        ("compatible", ", ".join(found.compatible) or MISSING),
        ("Super", _SUPER[found.super_firmware]),
        ("L4T", f"{found.l4t} (JetPack {found.jetpack})" if found.l4t else MISSING),
        ("power mode", _power_mode(found)),
        ("jetson_clocks", _JETSON_CLOCKS[found.jetson_clocks]),
        ("memory", f"{found.memory_bytes / 1024 ** 3:.2f} GiB" if found.memory_bytes else MISSING),
        ("TensorRT", found.tensorrt or MISSING),
    ]


def detect_lines(found: Detection, root: Path) -> List[str]:
    """What detection read, one field a line, wrapped at 100 columns."""
    rows: List[tuple] = [("board", _board(found))]
    if found.matched_by in _FOUND_BY:
        rows.append(("found by", _FOUND_BY[found.matched_by].format(found.part_number)))
    if found.module:
        rows.append(("module", found.module))
    if found.is_jetson:
        rows += _jetson_rows(found)
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
