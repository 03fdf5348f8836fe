"""PyTorchJob replica: meet at MASTER_ADDR:MASTER_PORT as torch.distributed does, and train.

The engine gives every replica MASTER_ADDR (the Master's service name),
MASTER_PORT, WORLD_SIZE and RANK (the Master 0, Worker i: i + 1). The Master
is the hub of sgd.py; each Worker connects to it by that name. torch itself is
too heavy for an example, so the all-reduce is sgd.py's, over plain sockets.
"""

from __future__ import annotations

import os

import sgd


def main() -> None:
    sgd.run("pytorch", rank=int(os.environ["RANK"]), world=int(os.environ["WORLD_SIZE"]),
            hub=(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))


if __name__ == "__main__":
    main()
