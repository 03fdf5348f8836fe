"""Where the files that ship beside the package live: machines/ and examples/ of the checkout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shipped_dir(name: str) -> Path:
    """The checkout's `name` folder; a clear error when jobmachine runs from elsewhere."""
    path = shipped_dir_if_present(name)
    if path is None:
        raise FileNotFoundError(
            f"no {name}/ folder beside the engine package ({ROOT / name}): install jobmachine "
            f"from its checkout (pip install -e .) or pass the folder explicitly"
        )
    return path


def shipped_dir_if_present(name: str) -> Path | None:
    """The checkout's `name` folder, or None where jobmachine runs without its checkout
    (the shipped machines and CRDs are then simply not among the places looked in)."""
    path = ROOT / name
    return path if path.is_dir() else None
