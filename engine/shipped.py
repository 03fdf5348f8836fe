"""Where the files that ship beside the package live: machines/ and examples/ of the checkout."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shipped_dir(name: str) -> Path:
    """The checkout's `name` folder; a clear error when jobmachine runs from elsewhere."""
    path = ROOT / name
    if not path.is_dir():
        raise FileNotFoundError(
            f"no {name}/ folder beside the engine package ({path}): install jobmachine from its "
            f"checkout (pip install -e .) or pass the folder explicitly"
        )
    return path
