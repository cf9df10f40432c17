"""How many perf tests passed, failed, were skipped: counted the way pytest counts, so every
report (terminal, Markdown, JSON) agrees with pytest's own last line."""

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Set

#: pytest's categories in the order its summary line lists them (``_pytest.terminal.KNOWN_TYPES``)
CATEGORIES = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")


def _plural(n: int, word: str) -> str:
    if word == "error" and n != 1:
        return f"{n} errors"
    return f"{n} {word}"


@dataclass
class TestCounts:
    """Perf tests by pytest's outcome categories, and their bounds by gate outcome."""

    __test__ = False  # not a pytest test class, despite the name

    categories: Dict[str, int] = field(default_factory=dict)
    nodeids: Set[str] = field(default_factory=set)
    bounds: Dict[str, int] = field(default_factory=dict)

    def add(self, nodeid: str, category: str) -> None:
        """One test report: ``category`` is what ``pytest_report_teststatus`` gives it ('' for a
        passing setup or teardown, which pytest does not count)."""
        self.nodeids.add(nodeid)
        if category:
            self.categories[category] = self.categories.get(category, 0) + 1

    def add_verdicts(self, results: Iterable[Any]) -> None:
        for r in results:
            for v in r.verdicts:
                self.bounds[v.outcome] = self.bounds.get(v.outcome, 0) + 1

    @property
    def tests(self) -> int:
        return len(self.nodeids)

    def words(self) -> str:
        """'1 failed, 82 passed, 37 skipped' (pytest's order and words)."""
        known = [c for c in CATEGORIES if self.categories.get(c)]
        other = sorted(c for c in self.categories if c not in CATEGORIES and self.categories[c])
        return ", ".join(_plural(self.categories[c], c) for c in known + other) or "no tests ran"

    def bound_words(self) -> str:
        """'2 fail, 1 inconclusive, 412 pass' (gate outcomes, worst first)."""
        from ..gate import verdict as V

        items = sorted(((k, n) for k, n in self.bounds.items() if n), key=lambda kv: V.rank(kv[0]))
        return ", ".join(f"{n} {k}" for k, n in items)

    @property
    def failed(self) -> bool:
        return bool(self.categories.get("failed") or self.categories.get("error"))

    def to_dict(self) -> Dict[str, Any]:
        from ..gate import verdict as V

        out: Dict[str, Any] = {"tests": self.tests}
        out.update({c: self.categories.get(c, 0) for c in CATEGORIES})
        out["bounds"] = {k: self.bounds.get(k, 0) for k in V.OUTCOMES}
        return out


def from_results(results: Iterable[Any]) -> TestCounts:
    """Counts for results that did not come through pytest: each test passed unless the gate
    failed it (used by scripts and the CLI)."""
    c = TestCounts()
    results: List[Any] = list(results)
    for r in results:
        c.add(r.nodeid, "error" if r.error else "failed" if r.failing() else "passed")
    c.add_verdicts(results)
    return c
