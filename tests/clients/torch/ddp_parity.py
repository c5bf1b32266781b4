"""DDP on weft trains to the same parameters as DDP on torch's gloo.

Usage: ddp_parity.py WORLD_SIZE
Trains a small MLP for a few steps with DistributedDataParallel, the same
seeds and data on both backends, and compares rank 0's final parameters
(and checks every rank ends with the same parameters as rank 0).
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch import free_port  # noqa: E402

STEPS = 6


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def train(rank, world, backend, port, out_dir):
    import weft_torch  # noqa: F401
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = make_model()
    # A tiny bucket size splits the gradients into several buckets, so
    # several all-reduces are in flight per step.
    ddp = DDP(model, bucket_cap_mb=0.002)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(1000 + rank)
    for _ in range(STEPS):
        x = torch.randn(8, 16, generator=data)
        y = torch.randn(8, 4, generator=data)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    torch.save(flat_params(model), os.path.join(out_dir, f"{backend}-{rank}.pt"))
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="weft-ddp-") as out_dir:
        for backend in ("weft", "gloo"):
            mp.start_processes(train, args=(world, backend, free_port(), out_dir), nprocs=world,
                               start_method="spawn")
        load = lambda b, r: torch.load(os.path.join(out_dir, f"{b}-{r}.pt"))
        ref = load("gloo", 0)
        got = load("weft", 0)
        assert not torch.allclose(ref, flat_params(make_model())), "training did not move the parameters"
        diff = (got - ref).abs().max().item()
        assert torch.allclose(got, ref, rtol=1e-5, atol=1e-6), f"weft and gloo differ by up to {diff}"
        for r in range(1, world):
            assert torch.equal(load("weft", r), got), f"weft rank {r} ended with other parameters than rank 0"
        print(f"ddp parity: {world} ranks, {got.numel()} parameters, max |weft - gloo| = {diff:.3g}")


if __name__ == "__main__":
    main()
