"""Subcommands of `castellan`. Each module defines `register(subparsers)`, which adds its parser and
sets `func(args) -> int` as the handler; castellan.cli lists the modules."""
