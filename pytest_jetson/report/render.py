"""The one renderer: gate verdicts (data, ``gate.verdict``) and the session's baseline summary
into words. The terminal, Markdown, JUnit, the CLI and a failing test's report section all speak
through these functions; none of them parses text.

One sign convention everywhere: a change is "x% worse" or "x% better" in the metric's own bad
direction (``metrics.METRICS[...].worse``), never a bare signed number.
"""

import math
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..gate import verdict as V
from ..gate.keys import key_label
from ..metrics import METRICS, format_percent, format_value

RECORD_HINT = "record with --jetson-update-baselines"


def subject(v: Any) -> str:
    """What a verdict's bound is on: ``latency_p99``, or a stage's ``postprocess: latency_mean``."""
    stage = getattr(v, "stage", None)
    return f"{stage}: {v.metric}" if stage is not None else v.metric


def label(outcome: str) -> str:
    """The outcome as tables show it (failures in capitals)."""
    return V.outcome(outcome).label


def change_text(worse: Optional[float], precision: int = 1) -> str:
    """'12.3% worse', '4.0% better' or 'no change'."""
    if worse is None:
        return "-"
    if abs(worse) < 0.5 * 10 ** (-precision - 2):
        return "no change"
    return f"{abs(worse) * 100:.{precision}f}% {'worse' if worse > 0 else 'better'}"


def _pct(x: float, precision: int = 1) -> str:
    return f"{abs(x) * 100:.{precision}f}%"


def worse_interval(ci: Optional[Tuple[float, float]], precision: int = 1) -> str:
    """An interval of the change in the one sign convention: '20.1%..23.9% worse',
    '0.5% better..0.2% worse'."""
    if ci is None:
        return ""
    lo, hi = sorted(ci)
    zero = 0.5 * 10 ** (-precision - 2)
    if lo >= zero or hi <= -zero:  # one side of "no change"
        word = "worse" if lo > 0 else "better"
        a, b = (lo, hi) if lo > 0 else (hi, lo)
        return f"{_pct(a, precision)}..{_pct(b, precision)} {word}"
    left = f"{_pct(lo, precision)} better" if lo <= -zero else _pct(0, precision)
    right = f"{_pct(hi, precision)} worse" if hi >= zero else _pct(0, precision)
    return f"{left}..{right}"


def resolution(ci: Optional[Tuple[float, float]]) -> Optional[float]:
    """What a measurement resolves: half its confidence interval (None without one)."""
    if ci is None:
        return None
    half = abs(ci[1] - ci[0]) / 2
    return half if half > 0 else None


def value_text(metric: str, value: Optional[float], ci: Optional[Tuple[float, float]] = None) -> str:
    """A measured value at the precision its interval resolves (the metric's own format without
    one; rates then keep about four significant digits)."""
    res = resolution(ci)
    if res is None and value and METRICS.get(metric) is not None and METRICS[metric].dimension == "rate":
        res = 10.0 ** (math.floor(math.log10(abs(value))) - 2)  # three significant digits
    return format_value(metric, value, resolution=res)


def percent_level(confidence: float) -> str:
    """A confidence level with the digits that tell it from 100% (99%, 99.9987%)."""
    if not 0 < confidence < 1:
        return f"{confidence * 100:.3g}%"
    digits = max(3, int(-math.log10(1 - confidence)) + 2)
    return f"{confidence * 100:.{digits}g}%"


def interval(metric: str, ci: Optional[Tuple[float, float]], confidence: Optional[float]) -> str:
    """' (99% CI 805..819/s)', or '' without an interval."""
    if ci is None or confidence is None:
        return ""
    res = resolution(ci)
    lo, hi = format_value(metric, ci[0], resolution=res), format_value(metric, ci[1], resolution=res)
    unit_lo, unit_hi = _unit_of(lo), _unit_of(hi)
    if unit_lo and unit_lo == unit_hi:
        lo = lo[: len(lo) - len(unit_lo)]
    return f" ({percent_level(confidence)} CI {lo}..{hi})"


def _unit_of(text: str) -> str:
    i = len(text)
    while i and not (text[i - 1].isdigit() or text[i - 1] == "."):
        i -= 1
    return text[i:]


def _p(p: Optional[float]) -> str:
    if p is None:
        return "-"
    if p < 1e-300:
        return "p<1e-300"
    if p < 1e-4:
        return f"p={p:.0e}"
    return f"p={p:.2g}"


#: Hex characters of a model's sha256 a message shows (files told apart; the stored value keeps 64).
SHOWN_DIGEST = 12


def _fmt_env(key: str, value: Any) -> str:
    if key == "model_sha256" and isinstance(value, str):
        return "+".join(d[:SHOWN_DIGEST] for d in value.split("+"))  # a pool of models: one each
    if key == "simulated" and isinstance(value, bool):
        return "simulated" if value else "real"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "-" if value is None else str(value)


def env_diffs(diffs: Sequence[Sequence[Any]]) -> str:
    return "; ".join(f"{k}: {_fmt_env(k, a)} (baseline) vs {_fmt_env(k, b)} (now)" for k, a, b in diffs)


def workload_change(diffs: Sequence[Sequence[Any]]) -> str:
    """What runs that changed since the baseline: 'precision fp16 -> fp32, batch 1 -> 8'."""
    return ", ".join(f"{k} {_fmt_env(k, a)} -> {_fmt_env(k, b)}" for k, a, b in diffs)


def baseline_line(v: V.Verdict) -> str:
    if not v.baseline_file:
        return ""
    env = v.baseline_env or {}
    bits = [str(env.get("device") or "?")]
    bits += [str(env[k]) for k in ("power_mode", "precision") if env.get(k)]
    if env.get("batch") is not None:
        bits.append(f"batch {env['batch']}")
    bits.append("simulated" if env.get("simulated") else "real")
    when = f" recorded {v.baseline_recorded[:10]}" if v.baseline_recorded else ""
    return f"baseline: {v.baseline_file}{when} ({', '.join(bits)})"


def why_not_compared(v: V.Verdict) -> str:
    """Why a bound was not checked (no_baseline, env_mismatch, not_measured, not_applicable): the
    same words for every bound they hold for (a metric the backend cannot measure is named in
    them), so reports can say it once."""
    if v.kind == "outputs":
        return v.detail
    if v.reason == "env_mismatch":
        text = f"baseline not compared, recorded under another environment: {env_diffs(v.env_diffs)}"
        if v.workload_diffs:
            text += f" (what runs changed too: {workload_change(v.workload_diffs)})"
        return text
    if v.reason in ("not_measured", "not_applicable"):
        return v.detail
    return f"{v.detail}; {RECORD_HINT}"


def headline(v: V.Verdict) -> str:
    """The one-line statement of a verdict: what was measured against what, and the decision."""
    if v.kind == "outputs":
        return output_lines(v)[0]
    m = v.metric
    value = f"{subject(v)} {value_text(m, v.value, v.ci)}{interval(m, v.ci, v.confidence)}"
    reason = v.reason
    if reason == "cannot_check":
        return f"{subject(v)} {v.bound!r} cannot be checked: {v.detail.splitlines()[0] if v.detail else ''}"
    if reason in ("not_measured", "not_applicable"):
        return f"{subject(v)} {v.bound!r} not checked: {v.detail}"
    if v.kind == "absolute":
        verb = "meets" if reason == "bound_met" else "violates"
        return f"{value} {verb} the bound {v.comparator} {format_value(m, v.threshold)} ({v.bound!r})"
    tol = f"tolerance {format_percent(v.tolerance or 0.0)}"
    if reason in ("no_baseline", "env_mismatch"):
        return f"{subject(v)} {v.bound}: {why_not_compared(v)}"
    shown = reason if reason != "recorded" else (v.previous or "")
    change = change_text(v.worse)
    against = f"the baseline {value_text(m, v.baseline, v.ci)}"
    head = (f"{value} equals {against}" if change == "no change"
            else f"{value} is {change} than {against}")
    words = {
        "regression": "a regression past the",
        "inconclusive": "too noisy to tell a change within the tolerance from a regression;",
        "improvement": "an improvement; within the",
        "within_tolerance": "within the",
    }.get(shown, "")
    if v.basis == "values":
        decided = "decided on the values (no samples to test significance)"
    elif v.basis == "spread":
        decided = (f"no within-run error: tested against the run-to-run spread, {_p(v.p_value)}, "
                   f"{percent_level(v.confidence or 0)} CI of the change {worse_interval(v.worse_ci)}")
    else:
        decided = f"{_p(v.p_value)}, {percent_level(v.confidence or 0)} CI of the change {worse_interval(v.worse_ci)}"
    text = f"{head} ({words} {tol}; {decided})" if words else f"{head} ({tol}; {decided})"
    if v.workload_diffs:  # the change that explains the figures comes first
        text = f"{workload_change(v.workload_diffs)}: {text}"
    if reason == "recorded":
        text = f"baseline recorded by this run (the comparison was {shown.replace('_', ' ')}): {text}"
    return text


def message(v: V.Verdict) -> str:
    """A verdict in full: the headline, then what to do and where the baseline came from."""
    if v.kind == "outputs":
        return "\n".join(output_lines(v))
    lines = [headline(v)]
    if v.reason == "cannot_check" and v.detail and "\n" in v.detail:
        lines += ["  " + x.strip() for x in v.detail.splitlines()[1:]]
    if v.reason == "inconclusive":
        floor = (f"; this noise decides tolerances from {format_percent(v.min_tolerance)}"
                 if v.min_tolerance is not None and math.isfinite(v.min_tolerance) else "")
        lines.append(f"  measure longer (perf.measure(duration=...)) or fix the noise{floor}")
    if v.reason == "env_mismatch":
        lines.append("  re-record with --jetson-update-baselines, or compare anyway with "
                     "--jetson-allow-env-mismatch")
    elif v.workload_diffs and v.reason != "recorded":
        lines.append(workload_advice(v))
    if v.env_ignored and v.env_diffs:
        lines.append(f"  compared despite environment differences (--jetson-allow-env-mismatch): "
                     f"{env_diffs(v.env_diffs)}")
    base = baseline_line(v)
    if base and v.kind == "relative":
        lines.append("  " + base)
    return "\n".join(lines)


def workload_advice(v: V.Verdict) -> str:
    """What a comparison across a workload change means: the figures are the change's cost, not
    another environment's; storing the new workload's baseline is a decision."""
    what = workload_change(v.workload_diffs)
    if V.fails(v.outcome):
        return (f"  what runs changed since the baseline ({what}) and the change costs this much: "
                f"revert it, or, if the cost is accepted, store the new baseline with "
                f"--jetson-update-baselines")
    return (f"  what runs changed since the baseline ({what}); the baseline keeps the old workload "
            f"until --jetson-update-baselines stores the new one")


def workload_notes(results: Sequence[Any]) -> List[str]:
    """The workload changes a session compared across, once per change: a change that passes is
    said too, since its baseline still holds the old workload."""
    by_change: Dict[str, List[str]] = {}
    for r in results:
        for v in r.verdicts:
            if v.workload_diffs and v.reason not in ("env_mismatch", "recorded"):
                tests = by_change.setdefault(workload_change(v.workload_diffs), [])
                if r.nodeid not in tests:
                    tests.append(r.nodeid)
    lines = []
    for change, tests in by_change.items():
        where = tests[0] if len(tests) == 1 else f"{len(tests)} tests"
        lines.append(f"what runs changed since the baseline: {change} in {where} (compared across the "
                     f"change; --jetson-update-baselines stores the new workload's baseline)")
    return lines


def _tag(v: V.Verdict) -> str:
    return f"[{key_label(v.measurement)}] " if key_label(v.measurement) else ""


def failure_section(result: Any, inconclusive: str = "pass") -> str:
    """What a failing perf test shows instead of a traceback: where its time moved, stage by stage
    (when it has stages), each failing verdict in full, then the other bounds in a line."""
    bad = result.failing(inconclusive)
    lines = where_lines(result)
    for v in bad:
        lead = "output check failed: " if v.kind == "outputs" else v.outcome_row.lead
        lines.append(lead + _tag(v) + message(v))
    others = [v for v in result.verdicts if v not in bad]
    if others:
        lines.append("other bounds: " + "; ".join(
            f"{_tag(v)}{subject(v)} {v.bound!r} {label(v.outcome)}" for v in others))
    lines += [f"note: {n}" for n in getattr(result, "notes", None) or []]
    return "\n".join(lines)


_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def _time_unit(largest: float) -> Tuple[float, str]:
    return next(((f, u) for f, u in _TIME_UNITS if abs(largest) >= f), _TIME_UNITS[-1])


def _signed(x: float, unit: Tuple[float, str]) -> str:
    text = f"{abs(x) / unit[0]:.1f}"
    return f"{'-' if x < 0 else '+'}{text} {unit[1]}"


def _signed_pct(x: Optional[float]) -> str:
    return "" if x is None else f" ({'-' if x < 0 else '+'}{abs(x) * 100:.0f}%)"


def where_text(w: Any) -> str:
    """Where one measurement's time moved (``gate.attribution.Where``), the stage that explains most
    first: 'postprocess +4.1 ms (+48%) explains 87% of the slowdown of +4.7 ms (+21%); preprocess
    +0.2 ms (+3%); infer -0.0 ms (-0%)'."""
    # the unit the whole's time reads in, so a change of 1 ms in a 12 ms pipeline reads "+1.0 ms"
    unit = _time_unit(max([abs(s.change) for s in w.stages] + [w.baseline or 0.0]) or 1e-3)
    whole = "" if w.change is None else f"{_signed(w.change, unit)}{_signed_pct(w.relative)}"
    parts = []
    for i, s in enumerate(w.stages):
        part = f"{s.stage} {_signed(s.change, unit)}{_signed_pct(s.relative)}"
        if i == 0 and s.share is not None and w.change is not None:
            what = "slowdown" if w.change > 0 else "speed-up"
            part += f" explains {s.share * 100:.0f}% of the {what} of {whole}"
            whole = ""
        parts.append(part)
    if whole:
        parts.append(f"mean latency {whole}")
    return "; ".join(parts)


def _layer_part(x: Any, unit: Tuple[float, str]) -> str:
    rel = x.change / x.baseline if x.baseline else None
    text = f"{x.name} {_signed(x.change, unit)}{_signed_pct(rel) if x.now is not None else ''}"
    status = x.status
    if status == "added":
        return text + " (new)"
    if status == "removed":
        return text + " (gone)"
    if status == "precision":
        return text + f" ({x.baseline_precision} -> {x.precision})"
    return text


def layer_texts(lw: Any, top: int = 3) -> List[str]:
    """Where an engine's time moved layer by layer (``gate.attribution.LayerWhere``): the layers
    that moved most, then what changed in the engine's structure, then the notes."""
    moved = [x for x in lw.layers if x.moved][:top]
    unit = _time_unit(max([abs(x.change) for x in moved] + [abs(lw.change)]) or 1e-3)
    out = []
    if moved:
        rel = lw.change / lw.baseline_total if lw.baseline_total else None
        out.append("layers: " + "; ".join(_layer_part(x, unit) for x in moved)
                   + f" (time per inference, all layers {_signed(lw.change, unit)}{_signed_pct(rel)})")
    changes = []
    if lw.graph_changed:
        fused = f": {lw.fused_differently} layer(s) fused differently" if lw.fused_differently else ""
        changes.append(f"the engine graph changed{fused} ({lw.counts[0]} -> {lw.counts[1]} layers)")
    if lw.reformats[0] != lw.reformats[1]:
        changes.append(f"reformats {lw.reformats[0]} -> {lw.reformats[1]}")
    if lw.precision_changes:
        shown = ", ".join(f"{n} {a} -> {b}" for n, a, b in lw.precision_changes[:2])
        more = f" and {len(lw.precision_changes) - 2} more" if len(lw.precision_changes) > 2 else ""
        changes.append(f"precision changed: {shown}{more}")
    elif any(a != b for a, b in lw.precisions.values()):
        changes.append("layers per precision " + ", ".join(
            f"{p} {a} -> {b}" for p, (a, b) in lw.precisions.items() if a != b))
    if changes:
        out.append("; ".join(changes))
    return out + [f"layers: {n}" for n in lw.notes]


def where_lines(result: Any, width: int = 100) -> List[str]:
    """The opening of a failing test's report: per measurement with stages, the stages ordered by
    how much of the change in mean latency they explain; with a per-layer profile, the layers whose
    time moved most and what changed in the engine; wrapped at ``width``."""
    out: List[str] = []
    wrap = lambda text: textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False,  # noqa: E731
                                      break_long_words=False)
    for w in getattr(result, "where", None) or []:
        tag = f"[{key_label(w.measurement)}] " if key_label(w.measurement) else ""
        if w.stages:
            out += wrap(f"{tag}stages: {where_text(w)} (mean time per call, against the baseline)")
        if w.layers is not None:
            for text in layer_texts(w.layers):
                out += wrap(tag + text)
    return out


def warning(v: V.Verdict) -> str:
    """The pytest warning of a verdict that passes but needs attention (inconclusive)."""
    return f"perf bound inconclusive: {_tag(v)}{message(v)}"


# -- output checks -------------------------------------------------------------------------------
def _g(x: Any) -> str:
    return "-" if x is None else f"{x:.4g}"


def _at(where: Any) -> str:
    return "[" + ", ".join(str(i) for i in where) + "]" if where is not None else ""


def _cos(x: float) -> str:
    """A similarity near 1 as its distance from 1 ('1 - 3.1e-07'), where the digits are."""
    return f"1 - {1 - x:.2g}" if 0 < 1 - x < 1e-4 else f"{x:.6g}"


def output_lines(v: V.Verdict) -> List[str]:
    """An output check (a verdict of kind "outputs", ``gate.outputs``) in lines: which output
    against what, the decision, then its numbers: the largest errors and where, the share out of
    tolerance, the cosine similarity, the top-k agreement, the shapes and dtypes."""
    c = v.outputs or {}
    name = c.get("name") or v.metric.split(":", 1)[-1]
    against = v.baseline_file or "the reference"
    if v.reason == "outputs_unchecked":
        return [v.detail]
    if not c:  # recorded or no reference: nothing compared
        return [v.detail]
    if c.get("reason"):
        head = f"{c['reason']} (against {against})"
    else:
        verb = "matches" if v.reason == "outputs_match" or (v.previous == "outputs_match") else "differs from"
        head = f"output {name!r} {verb} {against} ({v.bound})"
    if v.reason == "outputs_recorded":
        head = f"golden outputs recorded by this run (the check was {(v.previous or '').replace('_', ' ')}): {head}"
    lines = [head]
    if c.get("max_abs") is not None:
        size, bad = c.get("size") or 0, c.get("mismatched") or 0
        share = f"{bad} of {size} elements ({bad / size * 100:.3g}%) out of tolerance" if size else ""
        lines.append(f"  {share}; max abs error {_g(c['max_abs'])} at {_at(c.get('where_abs'))} "
                     f"({_g(c.get('actual_at'))} vs {_g(c.get('reference_at'))}); "
                     f"max rel error {_g(c.get('max_rel'))} at {_at(c.get('where_rel'))}; "
                     f"mean abs error {_g(c.get('mean_abs'))}")
        tol = c.get("tolerance") or {}
        cos = f"cosine similarity {_cos(c['cosine'])}" if c.get("cosine") is not None else ""
        if cos and tol.get("cosine") is not None:
            cos += f" (least {tol['cosine']:g})"
        topk = ""
        if c.get("topk") is not None and tol.get("topk"):
            k, least = tol["topk"]
            topk = f"top-{k} agreement {c['topk'] * 100:.3g}% (least {least * 100:g}%)"
        extra = "; ".join(x for x in (cos, topk) if x)
        if extra:
            lines.append("  " + extra)
        specials = [f"{what} {n} in the output, {m} in the reference"
                    for what, (n, m) in (("NaN", c.get("nan") or (0, 0)), ("inf", c.get("inf") or (0, 0))) if n or m]
        if specials:
            lines.append("  " + "; ".join(specials))
        if c.get("failed"):
            lines.append(f"  out of tolerance: {', '.join(c['failed'])}")
    shape = tuple(c.get("shape") or ())
    if c.get("shape") is not None and not c.get("reason"):
        lines.append(f"  shape {shape} {c.get('dtype')}, as the reference")
    return lines


# -- the session's baselines -------------------------------------------------------------------
def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _plural_entries(n: int) -> str:
    return f"entr{'y' if n == 1 else 'ies'}"


def _written_lines(summary: Any) -> List[str]:
    if summary.written:
        files = sorted({f for f, _ in summary.written})
        return [f"baselines: wrote {_entries(len(summary.written))} to {', '.join(files)}"]
    if summary.update and not summary.errors:  # a file that failed is not "nothing to write"
        return ["baselines: nothing to write (no entry new or changed beyond noise)"]
    return []


def _unused_lines(summary: Any, n_unused: int) -> List[str]:
    if summary.pruned:
        lines = [f"baselines: pruned {summary.pruned} unused {_plural_entries(summary.pruned)}"]
    else:
        lines = [f"baselines: {n_unused} unused {_plural_entries(n_unused)} (no selected test used them; "
                 f"remove with --jetson-prune-baselines):"]
    for path, keys in summary.unused.items():
        lines += [f"  {path}: {k}" for k in keys]
    n_kept = sum(len(v) for v in (getattr(summary, "kept", None) or {}).values())
    if summary.prune and n_kept:
        lines.append(f"baselines: kept {n_kept} unused {_plural_entries(n_kept)} that no collected module "
                     f"accounts for (a moved or deleted module, another rootdir): remove them by hand "
                     f"if they are stale")
    return lines


def baseline_summary(summary: Any) -> List[str]:
    """What the end of the session did to the baselines, in lines."""
    lines = _written_lines(summary) + [f"baselines: could not write {err}" for err in summary.errors]
    n_unused = sum(len(v) for v in summary.unused.values())
    if n_unused:
        lines += _unused_lines(summary, n_unused)
    elif summary.prune and summary.partial_selection:
        lines.append("baselines: not pruned: the run selected part of the suite (-k, -m, node ids or --lf)")
    lines += [f"pytest-jetson: {note}" for note in getattr(summary, "notes", None) or []]
    return lines
