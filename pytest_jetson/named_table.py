"""A named table of pluggable things (engine backends, telemetry sources).

Each entry is a frozen dataclass with at least ``name``, ``open`` (how to make one) and
``plugin`` (who registered it). The registry refuses a second entry under a taken name and an
entry without an opener, naming the plugin that tried, so a conftest that collides with a
built-in fails at start-up instead of silently replacing it.

The built-in tables are filled once, at import, and never changed after: a session's table is
``BUILTIN.extended(rows the plugins add)``, a new table that the session keeps (the plugin in
``config.stash``) and hands to whoever looks a name up.
"""

import difflib
from typing import Dict, Generic, Iterable, Iterator, List, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, option: str, items: Iterable[T] = ()) -> None:
        self.what = what
        self.option = option
        self._items: Dict[str, T] = {}
        for item in items:
            self.register(item)

    def extended(self, items: Iterable[T]) -> "Registry[T]":
        """A new table: this one's entries, then ``items``; this one stays as it is."""
        table: Registry[T] = Registry(self.what, self.option, self)
        for item in items:
            table.register(item)
        return table

    def register(self, item: T) -> T:
        name = getattr(item, "name", None)
        plugin = getattr(item, "plugin", None) or "an unnamed plugin"
        article = "an" if self.what[:1] in "aeiou" else "a"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{plugin} registered {article} {self.what} without a name ({item!r}); "
                              f"give it name='...'")
        if name in self._items or name in ("auto", "none"):  # the clash first: it is the fix to make
            owner = getattr(self._items.get(name), "plugin", "pytest-jetson")
            raise ConfigError(f"{plugin} registered the {self.what} {name!r}, but {owner} already "
                              f"registers one under that name; pick another name")
        if not callable(getattr(item, "open", None)):
            raise ConfigError(f"{plugin} registered the {self.what} {name!r} without an opener; give "
                              f"it open=<a function that returns the {self.what}>")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self._items), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{self.option}: {name!r} is not a known {self.what}.{hint} "
                              f"Known: {', '.join(self._items)}") from None

    def names(self) -> List[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))
