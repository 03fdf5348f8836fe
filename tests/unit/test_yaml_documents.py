"""engine.yaml_documents reads what yaml.safe_load reads, and no more."""

from __future__ import annotations

import pytest
import yaml

from engine import yaml_documents
from tests.kinds import MACHINES, REPO


def test_the_shipped_files_read_as_safe_load_reads_them() -> None:
    for path in [*sorted((REPO / "crds").glob("*.yaml")), *sorted(MACHINES.glob("*.yaml"))]:
        text = path.read_text()
        assert yaml_documents.load_all(text) == list(yaml.safe_load_all(text)), path


def test_it_builds_no_python_objects() -> None:
    with pytest.raises(yaml.YAMLError):
        yaml_documents.load("!!python/object/apply:os.system ['true']")
    assert yaml_documents.load("") is None
    assert yaml_documents.load_all("a: 1\n---\n---\nb: [x]\n") == [{"a": 1}, None, {"b": ["x"]}]
