"""The ``mgpu-io`` command line (typer and rich only; every command is one library call)."""

from mgpu_io.cli.app import app, run

__all__ = ["app", "run"]
