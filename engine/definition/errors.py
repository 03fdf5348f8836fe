"""Problems found in machine definitions, each tied to a place in a YAML file.

Every stage (loading, checking, compiling) reports `Diagnostic`s rather than
raising on the first problem, so `jobmachine validate` can list them all with
the FILE:LINE:COL form editors and CI annotations understand.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Position:
    """A place in a file; `line` and `column` are 1-based.

    `path` is the data path of the node written there (`spec`, `job`, `transitions`,
    3, ...), so a definition stored as an API object, which has no lines, is still
    located exactly: by field path, as the API server locates its errors.
    """

    file: str
    line: int
    column: int
    path: tuple[str | int, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @property
    def field_path(self) -> str:
        """`spec.job.transitions[3].when`: the path as Kubernetes writes field paths."""
        return format_field_path(self.path)


@dataclass(frozen=True)
class Diagnostic:
    """One problem (error) or doubt (warning) at a position."""

    position: Position
    severity: Severity
    message: str

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        return f"{self.position}: {self.severity}: {self.message}"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.position.file, self.position.line, self.position.column, self.message)


def error(position: Position, message: str) -> Diagnostic:
    return Diagnostic(position, "error", message)


def warning(position: Position, message: str) -> Diagnostic:
    return Diagnostic(position, "warning", message)


class DefinitionError(Exception):
    """Machine definitions that cannot be used; carries every diagnostic found."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics: tuple[Diagnostic, ...] = tuple(
            sorted(diagnostics, key=Diagnostic.sort_key)
        )
        errors = [d for d in self.diagnostics if d.is_error]
        summary = "\n".join(str(d) for d in errors) or "invalid machine definition"
        super().__init__(summary)


def sorted_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted by file, line, column; exact duplicates dropped."""
    return sorted(set(diagnostics), key=Diagnostic.sort_key)


def format_field_path(path: Iterable[str | int]) -> str:
    """A data path as Kubernetes field paths read: `spec.job.transitions[3].when`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def name_list(names: Iterable[str]) -> str:
    """`a, b, c` for messages that list the valid names (in the order given)."""
    return ", ".join(names) or "(none)"


def nearest_hint(name: str, names: Iterable[str]) -> str:
    """` (did you mean 'index'?)` when one of `names` is close to a misspelt `name`, else ''."""
    nearest = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean '{nearest[0]}'?)" if nearest else ""
