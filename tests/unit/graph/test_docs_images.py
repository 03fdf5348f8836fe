"""The committed pictures in docs/images/ are what the shipped machines render to now."""

from __future__ import annotations

from engine.graph.docs_images import DOCS_IMAGES, main, stale_images, write_images
from tests.unit.graph.conftest import REPO


def test_committed_pictures_match_a_fresh_render():
    stale = stale_images(REPO)
    assert stale == [], (
        f"stale pictures {[str(p.relative_to(REPO)) for p in stale]}: "
        "run `python -m engine.graph.docs_images` and commit the result"
    )


def test_every_shipped_machine_has_a_picture():
    machines = {p.relative_to(REPO).as_posix() for p in (REPO / "machines").glob("*.yaml")}
    assert set(DOCS_IMAGES.values()) == machines


def test_check_mode_reports_a_changed_picture(tmp_path, capsys):
    (tmp_path / "machines").mkdir()
    for machine in DOCS_IMAGES.values():
        (tmp_path / machine).write_bytes((REPO / machine).read_bytes())
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert len(write_images(tmp_path)) == len(DOCS_IMAGES)
    assert main(["--root", str(tmp_path), "--check"]) == 0
    picture = tmp_path / "docs" / "images" / "job.svg"
    picture.write_bytes(picture.read_bytes().replace(b"Created", b"Made"))
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert "job.svg: differs from a fresh render" in capsys.readouterr().out
