"""Where a DLA build's layers ran, read from TensorRT's build log.

TensorRT prints two layouts. 8.x (and 10.x) prints ``---------- Layers Running on DLA ----------``
with one ``[DlaLayer] {ForeignNode[...]}`` message per DLA subgraph, then the GPU heading with
one ``[GpuLayer] TYPE: name + name`` message per GPU layer. 7.x prints ``--------------- Layers
running on DLA:`` followed by one message of ``{a,b}, {c,d},`` groups, then the GPU heading and
one message of comma-separated names; 10.15's cuDLA sample mixes the two (old headings, tagged
entries). A section ends at the first message that is not one of its entries, so the
``[MemUsageChange]`` lines that follow are not read as GPU layers.
"""

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

_HEAD = re.compile(r"^\s*-+\s*Layers\s+running\s+on\s+(DLA|GPU)\b\s*:?\s*-*\s*$", re.IGNORECASE)
_TAGGED = re.compile(r"^\s*\[(DlaLayer|GpuLayer)\]\s*(.*?)\s*,?\s*$")
_GROUP = re.compile(r"\{[^{}]*\}")
_KIND = re.compile(r"^[A-Z_0-9]+:\s+")  # "SHUFFLE: " before an 8.x GPU layer's name
# characters that may stand next to a layer name inside a fused entry ("a + b", "PWN(a, b)")
_BEFORE = " (,:{["
_AFTER = " ),}]"


@dataclass
class Sections:
    """The entries of the log's DLA and GPU sections (None when the log has no such heading)."""

    dla: List[str]
    gpu: List[str]


def _lines(messages: List[str]) -> List[str]:
    return [line for msg in messages for line in str(msg).splitlines() or [""]]


def _untagged_entries(line: str, section: str) -> List[str]:
    if section == "DLA":
        return _GROUP.findall(line)
    return [p.strip() for p in line.split(",") if p.strip()]


def _read(line: str, section: str, first: bool, found: Sections) -> bool:
    """Adds the line's entries to its section; False when the line ends the section."""
    target = found.dla if section == "DLA" else found.gpu
    tagged = _TAGGED.match(line)
    if tagged and (tagged.group(1) == "DlaLayer") == (section == "DLA"):
        target.append(tagged.group(2))
        return True
    if first and line.strip() and not line.lstrip().startswith("["):
        target.extend(_untagged_entries(line, section))  # 7.x: the whole section in one message
    return False


def read_sections(messages: List[str]) -> Optional[Sections]:
    """The DLA and GPU sections' entries; None when no heading is in the log."""
    found = Sections([], [])
    seen = False
    section: Optional[str] = None
    first = False
    for line in _lines(messages):
        head = _HEAD.match(line)
        if head:
            section, first, seen = head.group(1).upper(), True, True
        elif section is not None:
            if not _read(line, section, first, found):
                section = None
            first = False
    return found if seen else None


def _gpu_name(entry: str) -> str:
    return _KIND.sub("", entry, count=1)


def names_in(entry: str, name: str) -> bool:
    """Whether ``name`` is one of the layers of ``entry`` (whole names only: ``Conv_1`` is not in
    ``Conv_10``)."""
    text = _gpu_name(entry)
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if (start == 0 or text[start - 1] in _BEFORE) and (end == len(text) or text[end] in _AFTER):
            return True
        start = text.find(name, start + 1)
    return False


def placement_counts(messages: List[str], layer_names: List[str]) -> Optional[Tuple[List[str], int]]:
    """(the network's layers that ran on the GPU, the number of DLA subgraphs), from the log's
    sections; None when the log has none."""
    sections = read_sections(messages)
    if sections is None:
        return None
    on_gpu = [n for n in layer_names if n and any(names_in(e, n) for e in sections.gpu)]
    return on_gpu, len(sections.dla)
