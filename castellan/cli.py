"""Entry point of the `castellan` command.

Each subcommand lives in its own module under castellan/commands and is imported only when needed,
so that `castellan score` never loads the renderer or the web server.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand name -> module under castellan.commands that registers it.
COMMANDS: dict[str, str] = {
    "score": "score",
    "check-move": "check_move",
    "mat": "mat",
    "calibrate": "calibrate",
    "serve": "serve",
    "render": "render",
    "synth": "synth",
}

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="castellan",
        description="Castellan Referee: score and adjudicate Castellan castles from photos or castellan/1 JSON.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            # A cheap placeholder keeps `castellan --help` complete without importing every module.
            subparsers.add_parser(name, add_help=False)
            continue
        module = importlib.import_module(f"castellan.commands.{module_name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only=chosen)
    args = parser.parse_args(argv)
    return int(args.func(args) or EXIT_OK)


if __name__ == "__main__":
    sys.exit(main())
