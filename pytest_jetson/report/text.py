"""Plain-text layout shared by the terminal summary and the CLI: a natural sort key and tables that
fit the terminal's width.

A table's columns say how they give way when the terminal is narrow: optional columns are dropped
(in the order given), then the elastic column is shortened in the middle with an ellipsis, so a
test id keeps its file and its parameters.
"""

import re
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

ELLIPSIS = "…"


def natural_key(text: Any) -> Tuple[Any, ...]:
    """Sort key that orders numbers inside text by value: b1, b2, b16 (not b1, b16, b2)."""
    parts = re.split(r"(\d+)", str(text))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.lower()) for p in parts if p != "")


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, the middle elided; the end (a test's parameters)
    keeps a little more than the start."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    tail = (width - 1) * 3 // 5
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + text[len(text) - tail:]


@dataclass(frozen=True)
class Column:
    title: str
    align: str = "<"  # "<" or ">"
    drop: int = 0  # 0: always kept; else dropped when narrow, lowest first
    elastic: bool = False  # shortened (in the middle) when the table is still too wide


def table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int = 0,
          indent: str = "") -> List[str]:
    """The table as lines no longer than ``width`` (0: no limit), header and a rule first.

    A row of one cell (a group heading such as a test id) spans the table and is shortened to
    the width on its own."""
    cols = list(range(len(columns)))
    body = [list(r) for r in rows if len(r) == len(columns)]

    def widths(keep: List[int]) -> List[int]:
        return [max([len(columns[i].title)] + [len(str(r[i])) for r in body]) for i in keep]

    def total(ws: List[int]) -> int:
        return len(indent) + sum(ws) + 2 * (len(ws) - 1)

    keep = cols
    ws = widths(keep)
    if width:
        for i in sorted((i for i in cols if columns[i].drop), key=lambda i: columns[i].drop):
            if total(ws) <= width:
                break
            keep = [k for k in keep if k != i]
            ws = widths(keep)
        over = total(ws) - width
        elastic = [n for n, i in enumerate(keep) if columns[i].elastic]
        if over > 0 and elastic:
            n = elastic[0]
            ws[n] = max(len(columns[keep[n]].title), ws[n] - over, 8)

    def line(cells: Sequence[str]) -> str:
        out = []
        for n, i in enumerate(keep):
            cell = shorten(str(cells[i]), ws[n])
            out.append(cell.rjust(ws[n]) if columns[i].align == ">" else cell.ljust(ws[n]))
        return (indent + "  ".join(out)).rstrip()

    lines = [line([c.title for c in columns]), indent + "  ".join("-" * w for w in ws)]
    for r in rows:
        if len(r) == 1:
            lines.append(shorten(str(r[0]), width) if width else str(r[0]))
        else:
            lines.append(line(r))
    return lines
