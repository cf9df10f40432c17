"""The ``pytest-jetson`` command: one module per subcommand in this package, each with ``main(argv)``.

Subcommands are imported only when run, so ``pytest-jetson devices`` never loads onnx or numpy-
heavy simulation code it does not need. The domain packages export functions and never import
this package.
"""

import difflib
import importlib
import os
import sys
from typing import Dict, List, Optional

from .. import __version__
from ..errors import JetsonError

#: name -> one-line help; the code is ``pytest_jetson.cli.<name>.main``.
COMMANDS: Dict[str, str] = {
    "devices": "list the known devices and their power modes",
    "preflight": "check the board is ready for the perf gate (mode, clocks, idle)",
    "models": "list the model zoo: parameters, MACs, inputs",
    "sweep": "predict a grid of configurations; Pareto front of latency vs energy",
    "calibrate": "the simulator against published results: error per row and MAPE",
    "compare": "compare two JSON reports; exit 1 on regressions",
    "show": "list the stored baselines",
    "diff": "what changed between two baseline directories or git revisions",
    "plot": "draw figures from JSON reports (scaling, Pareto front, measurements, comparison)",
    "history": "trends over past runs (JSON reports, history stores): steps and slow drifts",
    "export": "a JSON report in the Bencher Metric Format or for github-action-benchmark",
    "ab": "measure a base revision beside the head on this board, interleaved, and compare",
    "explain": "why a test got slower: its per-layer profile against a baseline or another report",
}


def _usage() -> str:
    lines = ["usage: pytest-jetson COMMAND [ARGS...]", "", "commands:"]
    width = max(map(len, COMMANDS))
    for name, text in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {text}")
    lines.append("")
    lines.append("Run 'pytest-jetson COMMAND --help' for a command's options.")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        print(f"pytest-jetson {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        print(f"pytest-jetson: unknown command {name!r}.{hint}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        return int(importlib.import_module(f"{__name__}.{name}").main(rest) or 0)
    except JetsonError as exc:
        print(f"pytest-jetson {name}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file the user named that cannot be read or written: say which, no traceback
        print(f"pytest-jetson {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `pytest-jetson ... | head` closed the pipe: not an error. Point stdout at devnull so the
        # interpreter's last flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

