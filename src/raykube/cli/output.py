"""Human output: progress and errors on stderr (rich), results on stdout so scripts can capture them."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def progress(message: str) -> None:
    err.print(f"[dim]•[/dim] {escape(message)}")


def success(message: str) -> None:
    err.print(f"[green]✓[/green] {escape(message)}")


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` (possibly several lines) and exit with ``code``."""
    first, _, rest = message.partition("\n")
    err.print(f"[bold red]error:[/bold red] {escape(first)}")
    if rest:
        err.print(escape(rest))
    raise typer.Exit(code)
