"""2-node TrainJobs on `torch-distributed` and `xgboost-distributed`, posted by the Kubeflow
SDK, really train.

`TrainerClient().train(CustomTrainer(func=..., num_nodes=2))` against `jobmachine up` in
process mode: each node's command is the SDK's `bash -c` script, which writes the function
to a file and runs it with torchrun. torchrun reads the PET_* variables the TrainJob machine
gives (PET_NNODES=2, PET_NODE_RANK from the completion index, PET_MASTER_ADDR
`<trainjob>-node-0-0.<trainjob>`, which resolves for both pods through the JobSet's headless
Service, PET_MASTER_PORT 29500); the two ranks meet there, initialise gloo on the CPU and fit
one linear model by DistributedDataParallel, each on its half of the data. The SDK's
`wait_for_job_status` sees Complete and `get_job_logs` returns each rank's result line.

On `xgboost-distributed` the SDK runs the function with python; node 0 starts XGBoost's
tracker at DMLC_TRACKER_URI (the same name) and DMLC_TRACKER_PORT (29500, as for torch), and
both nodes join it as DMLC_TASK_ID of DMLC_NUM_WORKER and grow the same trees.

Every TrainJob listens on port 29500 and process-mode pods share the host's network, so
this module and the demo's TrainJob (test_real_examples.py) take turns at it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.app.up import LocalCluster, UpOptions, local_settings, running_local_cluster
from tests.integration.kubeflow_sdk.support import (  # noqa: F401 (sdk: needs_sdk's fixture)
    needs_sdk,
    run_sdk,
    sdk,
)
from tests.real.support import trainer_port_turn

_TORCHRUN = Path(sys.executable).parent / "torchrun"
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or not _TORCHRUN.exists(),
    reason="no torch here: the TrainJob example needs pip install -e '.[real]' (torch==2.13.0)")
needs_unshare = pytest.mark.skipif(
    shutil.which("unshare") is None,
    reason="the nodes reach each other by name through the pods' hosts files, which need "
           "unshare (util-linux)")

pytestmark = [pytest.mark.real, pytest.mark.slow, needs_torch, needs_unshare, needs_sdk]

TRAIN = '''
def train_linear_model():
    """Fit y = 2x - 1 by DistributedDataParallel over gloo, each rank on its half."""
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ranks = torch.tensor([float(rank)])
    dist.all_reduce(ranks)
    generator = torch.Generator().manual_seed(7)
    x = torch.rand(512, 1, generator=generator)
    y = 2 * x - 1
    mine = slice(rank * 512 // world, (rank + 1) * 512 // world)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(200):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
        loss.backward()
        optimiser.step()
    weight, bias = model.module.weight.item(), model.module.bias.item()
    both = torch.tensor([weight, bias])
    dist.all_reduce(both)
    same = torch.allclose(both / world, torch.tensor([weight, bias]))
    ok = same and abs(weight - 2) < 0.05 and abs(bias + 1) < 0.05
    print(f"result: torch rank {rank} of {world} (node {os.environ['PET_NODE_RANK']}, master "
          f"{os.environ['MASTER_ADDR']}): rank sum {ranks.item():g}, 200 steps, loss "
          f"{loss.item():.5f}, weight {weight:.3f}, bias {bias:.3f}, the same on every rank "
          f"({'ok' if ok else 'WRONG'})", flush=True)
    # Every rank done before any tears gloo down: a rank whose peer closed its connection
    # first can abort at exit (terminate called without an active exception), and its
    # node's restart then waits for a rendezvous the other node has left.
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


name = client.train(runtime="torch-distributed",
                    trainer=CustomTrainer(func=train_linear_model, num_nodes=2))
job = client.wait_for_job_status(name, polling_interval=1, timeout=600)
emit({"name": name, "status": job.status,
      "logs": {step: list(client.get_job_logs(name, step=step)) for step in ("node-0", "node-1")}})
'''

TRAIN_XGBOOST = '''
def train_boosted_trees():
    """Node 0 runs XGBoost's tracker at DMLC_TRACKER_URI:DMLC_TRACKER_PORT; every node joins
    it as task DMLC_TASK_ID of DMLC_NUM_WORKER and trains on its rows: one model."""
    import hashlib
    import os
    import time

    import numpy as np
    import xgboost as xgb
    from xgboost import collective
    from xgboost.tracker import RabitTracker

    host, port = os.environ["DMLC_TRACKER_URI"], int(os.environ["DMLC_TRACKER_PORT"])
    task, workers = int(os.environ["DMLC_TASK_ID"]), int(os.environ["DMLC_NUM_WORKER"])
    tracker = None
    deadline = time.monotonic() + 120
    while task == 0 and tracker is None:
        try:
            tracker = RabitTracker(n_workers=workers, host_ip=host, port=port, sortby="task",
                                   timeout=120)
        except xgb.core.XGBoostError as error:  # the port of an earlier run still closing
            if "Address already in use" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(2)
    if tracker is not None:
        tracker.start()
    draw = np.random.default_rng(0)
    x = draw.normal(size=(2000, 8))
    y = (x @ draw.normal(size=8) > 0).astype(float)
    with collective.CommunicatorContext(dmlc_communicator="rabit", dmlc_tracker_uri=host,
                                        dmlc_tracker_port=port, dmlc_task_id=f"{task:05d}",
                                        dmlc_retry=9, dmlc_timeout=120):
        rank, world = collective.get_rank(), collective.get_world_size()
        mine = xgb.DMatrix(x[rank:1500:world], label=y[rank:1500:world])
        booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist",
                             "max_depth": 3, "nthread": 1}, mine, 20)
        accuracy = float(np.mean((booster.predict(xgb.DMatrix(x[1500:])) > 0.5) == y[1500:]))
        model = hashlib.sha256(booster.save_raw("json")).hexdigest()[:12]
        same = collective.broadcast(model, 0) == model
    ok = same and accuracy > 0.85
    print(f"result: xgboost task {task} of {world} (rank {rank}): 20 rounds, accuracy "
          f"{accuracy:.3f}, model {model} {'the same on every node' if same else 'DIFFERENT'} "
          f"({'ok' if ok else 'WRONG'})", flush=True)
    if tracker is not None:
        tracker.wait_for(120)
    if not ok:
        raise SystemExit(1)


name = client.train(runtime="xgboost-distributed",
                    trainer=CustomTrainer(func=train_boosted_trees, num_nodes=2))
job = client.wait_for_job_status(name, polling_interval=1, timeout=600)
emit({"name": name, "status": job.status,
      "logs": {step: list(client.get_job_logs(name, step=step)) for step in ("node-0", "node-1")}})
'''

_XGBOOST_RESULT = re.compile(
    r"^result: xgboost task (?P<task>[01]) of 2 \(rank (?P<rank>[01])\): 20 rounds, accuracy "
    r"(?P<accuracy>[\d.]+), model (?P<model>[0-9a-f]{12}) the same on every node \(ok\)$")

_RESULT = re.compile(
    r"^result: torch rank (?P<rank>[01]) of 2 \(node (?P<node>[01]), master (?P<master>\S+)\): "
    r"rank sum 1, 200 steps, loss [\d.]+, weight (?P<weight>[\d.-]+), bias (?P<bias>[\d.-]+), "
    r"the same on every rank \(ok\)$")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """`up` in process mode, as started from a shell with the venv active: the nodes' bash
    finds torchrun (and torchrun this Python, with torch) on the PATH. Its TrainJobs train
    at the trainer's port, so in this module's turn; the folders torchrun leaves in the
    temporary folder go to pytest's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{_TORCHRUN.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        patch.setenv("TMPDIR", str(tmp_path_factory.mktemp("pods-tmp")))
        options = UpOptions(port=0, node_mode="process", settings=local_settings({}))
        with trainer_port_turn(), running_local_cluster(options) as up:
            yield up


def test_two_nodes_train_one_model_with_torchrun_and_the_sdk_reads_their_logs(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    trained = run_sdk(cluster, TRAIN, tmp_path, timeout_s=660)
    name = trained["name"]
    assert trained["status"] == "Complete"
    results = {}
    for step, lines in trained["logs"].items():
        matched = [m for line in lines if (m := _RESULT.match(line))]
        assert len(matched) == 1, (step, lines)
        results[step] = matched[0]
    assert {step: result["rank"] for step, result in results.items()} == {
        "node-0": "0", "node-1": "1"}
    assert {result["node"] for result in results.values()} == {"0", "1"}
    assert {result["master"] for result in results.values()} == {f"{name}-node-0-0.{name}"}
    # DistributedDataParallel keeps the replicas equal: one model, printed alike by both.
    assert len({(result["weight"], result["bias"]) for result in results.values()}) == 1


@pytest.mark.skipif(importlib.util.find_spec("xgboost") is None,
                    reason="no xgboost here: pip install -e '.[real]'")
def test_two_xgboost_nodes_train_one_model_through_the_tracker_node_0_runs(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    trained = run_sdk(cluster, TRAIN_XGBOOST, tmp_path, timeout_s=660)
    assert trained["status"] == "Complete"
    results = {}
    for step, lines in trained["logs"].items():
        matched = [m for line in lines if (m := _XGBOOST_RESULT.match(line))]
        assert len(matched) == 1, (step, lines)
        results[step] = matched[0]
    assert {step: result["task"] for step, result in results.items()} == {
        "node-0": "0", "node-1": "1"}
    # XGBoost all-reduces the histograms: both nodes grew the same trees.
    assert len({(result["model"], result["accuracy"]) for result in results.values()}) == 1
