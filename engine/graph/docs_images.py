"""The committed pictures of the shipped machines in `docs/images/`, made or checked.

`python -m engine.graph.docs_images` rewrites them; `--check` only says which
differ from a fresh render (exit 1), which is what CI and the docs test run,
so a machine cannot change without its picture changing in the same commit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.graph.render import render_file

# picture file -> machine file, both relative to the repository root
DOCS_IMAGES: dict[str, str] = {
    "docs/images/job.svg": "machines/job.yaml",
    "docs/images/kubeflow.svg": "machines/kubeflow.yaml",
    "docs/images/pytorchjob.svg": "machines/pytorchjob.yaml",
    "docs/images/tfjob.svg": "machines/tfjob.yaml",
    "docs/images/xgboostjob.svg": "machines/xgboostjob.yaml",
    "docs/images/paddlejob.svg": "machines/paddlejob.yaml",
    "docs/images/jaxjob.svg": "machines/jaxjob.yaml",
    "docs/images/mpijob.svg": "machines/mpijob.yaml",
    "docs/images/batch-job.svg": "machines/batch-job.yaml",
    "docs/images/batch-cronjob.svg": "machines/batch-cronjob.yaml",
    "docs/images/jobset.svg": "machines/jobset.yaml",
    "docs/images/replicaset.svg": "machines/replicaset.yaml",
    "docs/images/replicationcontroller.svg": "machines/replicationcontroller.yaml",
    "docs/images/trainjob.svg": "machines/trainjob.yaml",
    "docs/images/deployment.svg": "machines/deployment.yaml",
}


def fresh_images(root: Path) -> dict[Path, bytes]:
    """Every docs picture as it renders now (both levels, SVG)."""
    return {
        root / image: render_file(root / machine, level="all", fmt="svg")
        for image, machine in DOCS_IMAGES.items()
    }


def stale_images(root: Path) -> list[Path]:
    """The docs pictures that are missing or differ from a fresh render."""
    return [
        path
        for path, data in fresh_images(root).items()
        if not path.is_file() or path.read_bytes() != data
    ]


def write_images(root: Path) -> list[Path]:
    """Rewrite the pictures that changed; returns them."""
    changed = []
    for path, data in fresh_images(root).items():
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.graph.docs_images", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root")
    parser.add_argument("--check", action="store_true", help="only report stale pictures")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_images(args.root)
        for path in stale:
            print(f"{path}: differs from a fresh render; run python -m engine.graph.docs_images")
        return 1 if stale else 0
    for path in write_images(args.root):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
