"""``pytest-jetson explain REPORT [BASE]``: why a test got slower, layer by layer.

REPORT is a JSON report (``--jetson-report-json``) whose measurements carry per-layer profiles.
BASE is another report (its profiles) or a baseline file (the structure its entries keep); without
it, each test is compared with the baseline file the report names, where it can be read, else its
profile is listed alone. Per measurement (``-k`` picks them by a piece of the test id or key), the
layers are printed sorted by their contribution to the change in time per inference, then what
changed in the engine (fusion, reformats, precisions). ``--trex DIR`` writes each profile as the
graph and profile JSON files NVIDIA's engine explorer (TREx) opens.

Exit status: 0, or 2 for unreadable input or a filter that matches nothing.
"""

import argparse
import re
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..engines.layer_profile import LayerProfile, structure
from ..errors import BaselineError
from ..gate.attribution import LayerWhere, layer_where
from ..gate.file_format import read_file
from ..gate.safe_read import loads, read_text
from ..report import jsonreport, trex
from ..report.jsonreport import MAX_REPORT_BYTES
from ..report.render import layer_texts
from ..report.text import Column, table
from .compare import width

#: layers listed per measurement unless ``--top`` says otherwise
TOP = 15


class _Usage(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest-jetson explain", description=(
        "why a test got slower: its per-layer profile against a baseline file or another report, "
        "the layers sorted by their contribution to the change"))
    p.add_argument("report", help="a JSON report written by --jetson-report-json")
    p.add_argument("base", nargs="?", help="another JSON report, or a baseline file "
                   "(default: the baseline file each test of REPORT was gated on)")
    p.add_argument("-k", dest="select", default=None, help="only measurements whose test id or key "
                   "contains this text")
    p.add_argument("--top", type=int, default=TOP, help=f"layers listed per measurement (default {TOP})")
    p.add_argument("--trex", metavar="DIR", default=None, help="write TREx graph and profile JSON files "
                   "per measurement (and per baseline report) into DIR")
    return p


def _measurements(doc: Dict[str, Any], path: Any = "the report") -> List[Tuple[str, str, Dict[str, Any], Optional[str]]]:
    """(nodeid, key, measurement dict, baseline file) of every measurement of a report."""
    out = []
    for t in doc.get("tests") or []:
        if not isinstance(t, dict) or not isinstance(t.get("measurements") or [], list):
            raise _Usage(f"a test of {path} is not a test as --jetson-report-json "
                         f"writes it ({str(t)[:60]}); re-create the report")
        for m in t.get("measurements") or []:
            if not isinstance(m, dict):
                raise _Usage(f"test {t.get('nodeid', '?')}: a measurement of {path} "
                             f"is not an object; re-create the report")
            out.append((str(t.get("nodeid", "")), str(m.get("key") or t.get("nodeid", "")), m,
                        t.get("baseline_file")))
    return out


def _profile(m: Dict[str, Any]) -> Optional[LayerProfile]:
    d = m.get("profile")
    return LayerProfile.from_dict(d) if isinstance(d, dict) else None


def _load_base(path: str) -> Tuple[str, Dict[str, Any]]:
    """("report", doc) or ("baseline", doc) for ``path``."""
    try:
        head = loads(read_text(Path(path), "pass a report or a baseline file", what="file",
                               kind="a report or a baseline file", max_bytes=MAX_REPORT_BYTES) or "null")
    except (BaselineError, ValueError, RecursionError) as exc:
        raise _Usage(str(exc)) from None
    if isinstance(head, dict) and head.get("kind") == jsonreport.KIND:
        return "report", jsonreport.load(path)
    if isinstance(head, dict) and "entries" in head:
        return "baseline", read_file(Path(path))
    raise _Usage(f"{path} is neither a JSON report (--jetson-report-json) nor a baseline file "
                 "(baselines/<device>/<module>.json); pass one of those")


class _Bases:
    """Where each measurement's baseline structure comes from."""

    def __init__(self, base: Optional[str], root: Path) -> None:
        self.kind, self.doc = _load_base(base) if base else ("", {})
        self.label = base or ""
        self.root = root
        self.files: Dict[str, Dict[str, Any]] = {}
        self.profiles = {key: m for _, key, m, _ in _measurements(self.doc, base)} if self.kind == "report" else {}

    def structure(self, key: str, baseline_file: Optional[str]) -> Tuple[Optional[Dict[str, Any]], str]:
        """The baseline structure for ``key`` and where it came from (or why there is none)."""
        if self.kind == "report":
            m = self.profiles.get(key)
            p = _profile(m) if m is not None else None
            if p is None or not p.layers:
                return None, f"{self.label} has no per-layer profile of {key}"
            return structure(p, keep=len(p.layers)), f"{self.label} ({p.source} profile)"
        entries = self.doc.get("entries") if self.kind == "baseline" else self._file(baseline_file)
        if entries is None:
            return None, "no baseline file to compare with (give one as BASE)"
        entry = entries.get(key)
        where = self.label or str(baseline_file)
        if entry is None:
            return None, f"{where} has no entry {key}"
        if not entry.get("structure"):
            return None, (f"the entry of {key} in {where} keeps no engine structure (recorded before "
                          "per-layer profiles, or by a backend without one): re-record it with "
                          "--jetson-update-baselines")
        return entry["structure"], where

    def _file(self, baseline_file: Optional[str]) -> Optional[Dict[str, Any]]:
        if not baseline_file:
            return None
        path = Path(baseline_file)
        path = path if path.is_absolute() else self.root / path
        if baseline_file not in self.files:
            try:
                self.files[baseline_file] = read_file(path).get("entries") or {} if path.exists() else None
            except BaselineError:
                self.files[baseline_file] = None
        return self.files[baseline_file]


def _ms(x: Optional[float]) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def _signed_ms(x: float) -> str:
    return f"{'+' if x >= 0 else '-'}{abs(x) * 1e3:.3f}"


def diff_lines(lw: LayerWhere, top: int, cols: int) -> List[str]:
    """The layers sorted by their contribution to the change, as a table, then the engine's changes."""
    total = lw.change
    rows = []
    for i, x in enumerate([x for x in lw.layers if x.moved][:top], 1):
        prec = x.precision or x.baseline_precision
        if x.status == "precision":
            prec = f"{x.baseline_precision} -> {x.precision}"
        share = f"{100 * x.change / total:.0f}%" if total else "-"
        what = {"added": "new", "removed": "gone"}.get(x.status, "")
        rows.append([str(i), x.name, x.type, prec, _ms(x.baseline), _ms(x.now), _signed_ms(x.change), share,
                     what])
    columns = [Column("#", ">"), Column("layer", elastic=True), Column("type", drop=2), Column("precision"),
               Column("base ms", ">"), Column("now ms", ">"), Column("change", ">"), Column("of change", ">"),
               Column("", drop=1)]
    rel = f", {100 * total / lw.baseline_total:+.1f}%" if lw.baseline_total else ""
    out = [f"all layers: {_ms(lw.baseline_total)} ms -> {_ms(lw.now_total)} ms per inference "
           f"({_signed_ms(total)} ms{rel})"]
    out += table(columns, rows, width=cols) if rows else ["no layer moved by more than 1%"]
    for text in layer_texts(replace(lw, layers=[])):
        out += textwrap.wrap(text, max(cols - 2, 40), subsequent_indent="  ", break_on_hyphens=False,
                             break_long_words=False)
    return out


def profile_lines(p: LayerProfile, top: int, cols: int) -> List[str]:
    """A profile alone: its slowest layers first."""
    rows = [[str(i), x.name, x.type, x.precision, _ms(x.time), f"{100 * x.share:.1f}%", x.bound or x.tactic or ""]
            for i, x in enumerate(p.top(top), 1)]
    columns = [Column("#", ">"), Column("layer", elastic=True), Column("type", drop=2), Column("precision"),
               Column("ms", ">"), Column("share", ">"), Column("bound/tactic", drop=1)]
    return [f"all layers: {_ms(p.total)} ms per inference, {len(p.layers)} layers, {p.reformats} reformats"] \
        + table(columns, rows, width=cols)


def _stem(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("_")[:120] or "measurement"


def explain(args: argparse.Namespace, out: Any) -> int:
    doc = jsonreport.load(args.report)
    bases = _Bases(args.base, Path.cwd())
    chosen = [m for m in _measurements(doc, args.report)
              if args.select is None or args.select.lower() in (m[0] + " " + m[1]).lower()]
    if not chosen:
        raise _Usage(f"no measurement of {args.report} matches -k {args.select!r}" if args.select else
                     f"{args.report} holds no measurement")
    cols = width() - 2  # the lines are indented by two
    trex_dir = Path(args.trex) if args.trex else None
    for _nodeid, key, m, baseline_file in chosen:
        out.write(f"\n{key}\n")
        p = _profile(m)
        if p is None or not p.layers:
            why = "; ".join(p.notes) if p is not None and p.notes else \
                f"the {m.get('backend') or 'its'} backend gave no per-layer profile"
            out.write(f"  no per-layer profile: {why}\n")
            continue
        found, where = bases.structure(key, baseline_file)
        if found is None:
            lines = [f"({where}; the profile alone)"] + profile_lines(p, args.top, cols)
        else:
            lw = layer_where(p, found, top=max(len(p.layers), int(found.get("layers") or 0)) + 1)
            lines = [f"against {where}"] + diff_lines(lw, args.top, cols)
        out.write("".join(f"  {line}\n" for line in lines))
        if trex_dir is not None:
            written = trex.write(trex_dir, _stem(key), p, int(m.get("batch") or 1))
            base_m = bases.profiles.get(key)
            base_p = _profile(base_m) if base_m is not None else None
            if base_p is not None and base_p.layers:
                written += trex.write(trex_dir, _stem(key) + ".base", base_p, int(base_m.get("batch") or 1))
            out.write("".join(f"  wrote {path}\n" for path in written))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return explain(args, sys.stdout)
    except _Usage as exc:
        sys.stderr.write(f"pytest-jetson explain: {exc}\n")
        return 2
