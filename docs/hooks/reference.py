"""MkDocs hook: the reference pages' tables, rendered from the tables the code itself reads.

A page asks for a table with a marker line ``<!-- reference: NAME -->``; the marker is replaced
by Markdown made from the package at build time, so the metrics, options, units, hooks, CLI
subcommands and JSON report schema in the site are the ones the installed code has. An unknown
name fails the build (``mkdocs build --strict`` runs in CI).
"""

import ast
import contextlib
import importlib
import io
import os
import re
import sys
import textwrap
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_jetson"
MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.MULTILINE)

# the checkout's package, whatever is installed
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cell(text):
    # a pipe ends a cell, except inside a code span (where a backslash would show)
    parts = " ".join(str(text).split()).split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def metrics():
    from pytest_jetson.metrics import METRICS

    rows = []
    for m in METRICS.values():
        rows.append((f"`{m.name}`", m.unit, m.worse, m.description, m.source, m.hint))
    return _table(("metric", "unit", "worse when", "what it is", "measured by", "when it is missing"), rows)


def units():
    from pytest_jetson.metrics import EXAMPLES, METRICS, UNITS

    rows = []
    for dim, table in UNITS.items():
        names = ", ".join(f"`{m.name}`" for m in METRICS.values() if m.dimension == dim)
        rows.append((dim, " ".join(f"`{u}`" for u in table), f"`{EXAMPLES[dim]}`", names or "(none yet)"))
    return _table(("dimension", "units (the first is the base unit)", "example", "metrics"), rows)


class _Option:
    """One option as the OPTIONS table has it, when read back from pytest's own parser."""

    def __init__(self, opt, ini):
        attrs = opt.attrs()
        self.flag = opt.names()[0]
        self.ini = attrs.get("dest") if attrs.get("dest") in ini else None
        self.help = attrs.get("help", "")
        self.default = attrs.get("default")
        if self.default is None and self.ini:
            self.default = ini[self.ini][-1] or None
        self.choices = attrs.get("choices")
        self.metavar = attrs.get("metavar")


def _options_from_parser():
    from _pytest.config.argparsing import Parser

    from pytest_jetson import plugin

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Parser() is pytest's own, private-ish; its API is stable
        parser = Parser()
    plugin.pytest_addoption(parser)
    ini = dict(parser._inidict)  # name -> (help, type, default)
    return [_Option(opt, ini) for group in parser._groups for opt in group.options]


def _options():
    try:
        from pytest_jetson.options import OPTIONS
    except ImportError:  # before the options table: read what the plugin registers
        return _options_from_parser()
    return list(OPTIONS.values()) if isinstance(OPTIONS, dict) else list(OPTIONS)


def options():
    rows = []
    for o in _options():
        flag = f"`{o.flag}`"
        if o.choices:
            flag = f"`{o.flag} {'|'.join(map(str, o.choices))}`"
        elif o.metavar:
            sep = "" if str(o.metavar).startswith("=") else " "
            flag = f"`{o.flag}{sep}{o.metavar}`"
        ini = f"`{o.ini}`" if o.ini else ""
        default = "" if o.default in (None, False, "") else f"`{o.default}`"
        rows.append((flag, ini, default, o.help))
    return _table(("option", "ini key", "default", "meaning"), rows)


def _docstrings(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return ast.get_docstring(tree), [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def hooks():
    doc, functions = _docstrings(PACKAGE / "hookspecs.py")
    out = [doc or ""]
    for fn in functions:
        args = ", ".join(a.arg for a in fn.args.args)
        out += ["", f"### `{fn.name}({args})`", "", ast.get_docstring(fn) or ""]
    return "\n".join(out)


def _help_of(name):
    module = importlib.import_module(f"pytest_jetson.cli.{name}")
    buf = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            module.main(["--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return buf.getvalue().rstrip()


def cli():
    from pytest_jetson.cli import COMMANDS

    out = [_table(("command", "what it does"), [(f"[`{n}`](#{n})", t) for n, t in COMMANDS.items()])]
    for name in COMMANDS:
        out += ["", f"## {name}", "", "```text", _help_of(name), "```"]
    return "\n".join(out)


def json_report():
    doc, _ = _docstrings(PACKAGE / "report" / "jsonreport.py")
    head, _, schema = doc.partition("::")
    body, _, tail = schema.strip("\n").partition("\n\n")
    while tail and tail.startswith(" "):  # the schema block may hold blank lines
        more, _, tail = tail.partition("\n\n")
        body += "\n\n" + more
    return "\n".join([head.strip() + ":", "", "```text", textwrap.dedent(body), "```", "", tail.strip()])


RENDERERS = {"metrics": metrics, "units": units, "options": options, "hooks": hooks, "cli": cli,
             "json-report": json_report}


def on_page_markdown(markdown, page, config, files):
    def render(match):
        name = match.group(1)
        if name not in RENDERERS:
            raise KeyError(f"{page.file.src_path}: no reference table called {name!r} ({', '.join(RENDERERS)})")
        return RENDERERS[name]()

    return MARKER.sub(render, markdown)
