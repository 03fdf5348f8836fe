"""One node of the TrainJob example (trainjob.yaml): torchrun starts it with the PET_*
variables the TrainJob machine gives, and the nodes fit y = 2x - 1 together by
DistributedDataParallel over gloo, each on its half of the rows."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

STEPS = 200


def main() -> None:
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ranks = torch.tensor([float(rank)])
    dist.all_reduce(ranks)
    x = torch.rand(512, 1, generator=torch.Generator().manual_seed(7))
    y = 2 * x - 1
    mine = slice(rank * 512 // world, (rank + 1) * 512 // world)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(STEPS):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
        loss.backward()
        optimiser.step()
    weight, bias = model.module.weight.item(), model.module.bias.item()
    both = torch.tensor([weight, bias])
    dist.all_reduce(both)
    same = torch.allclose(both / world, torch.tensor([weight, bias]))
    ok = same and abs(weight - 2) < 0.05 and abs(bias + 1) < 0.05
    print(f"result: trainjob rank {rank} of {world} (node {os.environ['PET_NODE_RANK']} of "
          f"{os.environ['PET_NNODES']}, master {os.environ['PET_MASTER_ADDR']}): rank sum "
          f"{ranks.item():g}, {STEPS} steps, loss {loss.item():.5f}, weight {weight:.3f}, "
          f"bias {bias:.3f}, the same on every rank ({'ok' if ok else 'WRONG'})", flush=True)
    # Every rank done before any tears gloo down: a rank whose peer closed first can abort
    # at exit, and its node's restart would wait for a rendezvous the other has left.
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
