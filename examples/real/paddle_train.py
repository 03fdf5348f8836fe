"""PaddleJob replica (collective mode): meet at PADDLE_MASTER, and train.

The engine gives every Worker PADDLE_NNODES (the number of Workers) and
PADDLE_MASTER, the rendezvous: Worker 0 at its `master` port
(`paddle-real-worker-0:27777`; on Worker 0 itself, its own pod IP). Paddle's
launcher would hand out ranks there; here each Worker's rank is its replica
index, which the manifest passes down from the pod's label as
PADDLE_TRAINER_ID. Worker 0 is the hub of sgd.py, the others connect to it.
paddle itself is too heavy for an example, so the all-reduce is sgd.py's, over
plain sockets.
"""

from __future__ import annotations

import os

import sgd


def main() -> None:
    host, port = os.environ["PADDLE_MASTER"].rsplit(":", 1)
    sgd.run("paddle", rank=int(os.environ["PADDLE_TRAINER_ID"]),
            world=int(os.environ["PADDLE_NNODES"]), hub=(host, int(port)))


if __name__ == "__main__":
    main()
