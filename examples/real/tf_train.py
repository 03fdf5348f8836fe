"""TFJob replica: find every task in TF_CONFIG, meet at the first one, and train.

TF_CONFIG is the JSON the engine sets: `cluster` maps each replica type to its
tasks' service addresses (`<job>-worker-0.<namespace>.svc:2222`, ...) and
`task` says which one this is. As in TensorFlow's multi-worker strategies the
chief (else worker 0) goes first: ranks follow the order chief, master,
worker. Every address is looked up, then rank 0 is the hub of sgd.py and the
others connect to its address. tensorflow itself is too heavy for an example,
so the all-reduce is sgd.py's, over plain sockets.
"""

from __future__ import annotations

import json
import os
import socket

import sgd

# The task types that train, in rank order.
TRAINERS = ("chief", "master", "worker")


def main() -> None:
    config = json.loads(os.environ["TF_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    tasks = [(kind, index) for kind in TRAINERS for index in range(len(cluster.get(kind, [])))]
    addresses = [cluster[kind][index] for kind, index in tasks]
    for address in addresses:
        host, port = address.rsplit(":", 1)
        resolved = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][4][0]
        print(f"{task['type']} {task['index']}: {address} is {resolved}", flush=True)
    host, port = addresses[0].rsplit(":", 1)
    sgd.run("tfjob", rank=tasks.index((task["type"], task["index"])), world=len(tasks),
            hub=(host, int(port)))


if __name__ == "__main__":
    main()
