"""`jobmachine up --machines DIR`: the files become StateMachine objects, and a bad one is
skipped with its reason, never stopping `up` or keeping the other machines out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from loguru import logger

from engine.app.up import UpOptions, running_local_cluster
from engine.kube.resources import STATE_MACHINES
from engine.settings import EngineSettings
from tests.integration.app.support import wait_until
from tests.kinds import MACHINES


def test_up_applies_the_good_files_and_says_why_it_skips_the_bad_ones(tmp_path: Path) -> None:
    for name in ("kubeflow.yaml", "pytorchjob.yaml"):
        shutil.copy(MACHINES / name, tmp_path / name)
    (tmp_path / "not-yaml.yaml").write_text("spec: [unclosed\n")
    (tmp_path / "refused.yaml").write_text(
        "apiVersion: jobmachine.dev/v1alpha1\nkind: StateMachine\n"
        "metadata: {name: refused}\nspec: {job: 5}\n"
    )
    said: list[str] = []
    sink = logger.add(lambda message: said.append(str(message)), level="ERROR")
    try:
        options = UpOptions(port=0, node_mode="simulate", machines=tmp_path,
                            settings=EngineSettings())
        with running_local_cluster(options) as cluster:
            machines, _ = cluster.client.list(STATE_MACHINES)
            assert sorted(m["metadata"]["name"] for m in machines) == ["kubeflow", "pytorchjob"]
            wait_until(lambda: cluster.engine.machines.governed("PyTorchJob"),
                       lambda governed: governed is not None, what="PyTorchJob governed",
                       timeout_s=30)
    finally:
        logger.remove(sink)

    assert any("not-yaml.yaml: not applied, it cannot be read as YAML" in line for line in said)
    assert any("refused.yaml: StateMachine not applied" in line for line in said)


def test_up_refuses_a_machines_folder_that_does_not_exist(tmp_path: Path) -> None:
    options = UpOptions(port=0, node_mode="simulate", machines=tmp_path / "no-such-folder")
    with pytest.raises(FileNotFoundError, match="no-such-folder"), running_local_cluster(options):
        pass
