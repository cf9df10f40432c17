"""The ``pytest-jetson`` command: each subcommand lives beside the package it belongs to.

Subcommands are imported only when run, so ``pytest-jetson devices`` never loads onnx or numpy-
heavy simulation code it does not need.
"""

import importlib
import sys
from typing import Dict, List, Optional, Tuple

#: name -> (module, function, one-line help)
COMMANDS: Dict[str, Tuple[str, str, str]] = {
    "devices": ("pytest_jetson.devices.cli", "main", "list the known devices and their power modes"),
    "preflight": ("pytest_jetson.devices.preflight", "main",
                  "check the board is ready for the perf gate (mode, clocks, idle)"),
    "models": ("pytest_jetson.models.cli", "main", "list the model zoo: parameters, MACs, inputs"),
    "sweep": ("pytest_jetson.sim.cli", "sweep_main",
              "predict a grid of configurations; Pareto front of latency vs energy"),
    "calibrate": ("pytest_jetson.sim.cli", "calibrate_main",
                  "the simulator against published results: error per row and MAPE"),
    "compare": ("pytest_jetson.gate.cli", "compare_main",
                "compare two JSON reports; exit 1 on regressions"),
    "show": ("pytest_jetson.gate.cli", "show_main", "list the stored baselines"),
    "plot": ("pytest_jetson.report.figures", "main", "draw the research's figures from a JSON report"),
}


def _usage() -> str:
    lines = ["usage: pytest-jetson COMMAND [ARGS...]", "", "commands:"]
    width = max(map(len, COMMANDS))
    for name, (_, _, text) in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {text}")
    lines.append("")
    lines.append("Run `pytest-jetson COMMAND --help` for a command's options.")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        from . import __version__

        print(f"pytest-jetson {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        print(f"pytest-jetson: unknown command {name!r}.{hint}\n\n{_usage()}", file=sys.stderr)
        return 2
    module, func, _ = COMMANDS[name]
    from .errors import JetsonError

    try:
        return int(getattr(importlib.import_module(module), func)(rest) or 0)
    except JetsonError as exc:
        print(f"pytest-jetson {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
