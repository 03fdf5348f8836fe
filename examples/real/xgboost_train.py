"""XGBoostJob replica: the Master runs XGBoost's collective tracker, the Workers train one model.

The engine gives every replica MASTER_ADDR and MASTER_PORT (the Master's
service), WORLD_SIZE (the Master and the Workers) and RANK (the Master 0,
Worker i: i + 1). The Master starts xgboost's RabitTracker on MASTER_PORT for
WORLD_SIZE - 1 workers and waits until they are done. Each Worker joins the
tracker at MASTER_ADDR:MASTER_PORT, loads its share of the rows of a generated
classification data set and trains with the others: XGBoost all-reduces the
histograms, so every Worker ends with the same trees. Each Worker then scores
the same held-out rows, checks that every Worker has the same model and
accuracy (a broadcast and two all-reduces through the tracker's group) and
that the accuracy is good, and prints one `result:` line.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

ROWS, TEST_ROWS, FEATURES = 3000, 1000, 10
ROUNDS = 30
PARAMS = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": 4, "eta": 0.3,
          "eval_metric": "logloss", "nthread": 1}
GOOD_ACCURACY = 0.85
TIMEOUT_S = 120
# A Worker retries reaching the tracker after 2, 4, 6, ... seconds: 9 tries wait 90
# seconds, long enough for the Master to get its port back (see tracker_on).
CONNECT_RETRIES = 9


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and held-out rows, the same on every replica: a noisy linear boundary."""
    draw = np.random.default_rng(0)
    x = draw.normal(size=(ROWS + TEST_ROWS, FEATURES))
    y = (x @ draw.normal(size=FEATURES) + draw.normal(scale=0.5, size=len(x)) > 0)
    return x[:ROWS], y[:ROWS].astype(float), x[ROWS:], y[ROWS:].astype(float)


def tracker_on(host: str, port: int, workers: int) -> RabitTracker:
    """A tracker on `port`, waited for while the port is taken: the tracker does not reuse
    a port whose last connections are still closing (TCP's TIME_WAIT, up to a minute after
    an earlier run), and every pod of the local node shares the machine's ports."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return RabitTracker(n_workers=workers, host_ip=host, port=port, sortby="task",
                                timeout=TIMEOUT_S)
        except xgb.core.XGBoostError as exc:
            if "Address already in use" not in str(exc) or time.monotonic() > deadline:
                raise
            print(f"xgboost tracker: port {port} is in use; waiting for it", flush=True)
            time.sleep(2.0)


def track(host: str, port: int, workers: int) -> None:
    """The Master: coordinate the Workers' group until every Worker has left it."""
    tracker = tracker_on(host, port, workers)
    tracker.start()
    print(f"xgboost tracker: waiting at {host}:{port} for {workers} workers", flush=True)
    tracker.wait_for(TIMEOUT_S)
    print(f"result: xgboost tracker: {workers} workers trained together and left", flush=True)


def train(host: str, port: int, index: int) -> None:
    """Worker `index`: train with the others; exit 1 unless the model is good and shared."""
    x, y, test_x, test_y = data()
    with collective.CommunicatorContext(dmlc_communicator="rabit", dmlc_tracker_uri=host,
                                        dmlc_tracker_port=port, dmlc_task_id=f"{index:05d}",
                                        dmlc_retry=CONNECT_RETRIES, dmlc_timeout=TIMEOUT_S):
        rank, workers = collective.get_rank(), collective.get_world_size()
        mine = slice(rank, None, workers)
        train_set = xgb.DMatrix(x[mine], label=y[mine])
        test_set = xgb.DMatrix(test_x, label=test_y)
        history: dict[str, dict[str, list[float]]] = {}
        booster = xgb.train(PARAMS, train_set, ROUNDS, evals=[(test_set, "test")],
                            evals_result=history, verbose_eval=False)
        accuracy = float(np.mean((booster.predict(test_set) > 0.5) == test_y))
        model = hashlib.sha256(booster.save_raw("json")).hexdigest()[:12]
        same_model = collective.broadcast(model, 0) == model
        spread = [float(collective.allreduce(np.array([accuracy]), op)[0])
                  for op in (collective.Op.MIN, collective.Op.MAX)]
        shared = same_model and spread[0] == spread[1]
        good = shared and accuracy >= GOOD_ACCURACY
        print(f"result: xgboost worker {rank} of {workers}: {ROUNDS} rounds on {ROWS} rows "
              f"({train_set.num_row()} here), test logloss {history['test']['logloss'][-1]:.4f}, "
              f"accuracy {accuracy:.3f}, model {model} "
              f"{'the same on every worker' if shared else 'NOT the same on every worker'} "
              f"({'ok' if good else 'WRONG'})", flush=True)
    if not good:
        sys.exit(1)


def main() -> None:
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    print(f"xgboost {xgb.__version__}: rank {rank} of {world}, tracker {host}:{port}",
          flush=True)
    if rank == 0:
        track(host, port, world - 1)
    else:
        train(host, port, rank - 1)


if __name__ == "__main__":
    main()
