"""Every collective of the weft backend against values computed locally.

Usage: smoke.py WORLD_SIZE   (spawns the ranks itself, loopback only)
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch import free_port  # noqa: E402


def run(rank, world, port):
    import weft_torch  # noqa: F401  registers "weft" in this process
    dist.init_process_group("weft", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    n = world
    # all_reduce, sync and async, with every op
    t = torch.arange(10, dtype=torch.float32) + rank
    dist.all_reduce(t)
    assert torch.equal(t, sum(torch.arange(10, dtype=torch.float32) + r for r in range(n))), t
    t = torch.full((5,), rank + 1, dtype=torch.int64)
    w = dist.all_reduce(t, op=dist.ReduceOp.PRODUCT, async_op=True)
    w.wait()
    assert t[0].item() == torch.arange(1, n + 1).prod().item()
    fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((3,), float(n)))
    for op, want in ((dist.ReduceOp.MAX, n - 1), (dist.ReduceOp.MIN, 0)):
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, op=op)
        assert t.item() == want
    # broadcast, reduce
    t = torch.full((7,), float(rank))
    dist.broadcast(t, src=n - 1)
    assert torch.all(t == n - 1)
    t = torch.full((7,), float(rank + 1))
    dist.reduce(t, dst=0)
    if rank == 0:
        assert torch.all(t == n * (n + 1) / 2)
    # all_gather (list and base), reduce_scatter (list and base)
    outs = [torch.zeros(3) for _ in range(n)]
    dist.all_gather(outs, torch.full((3,), float(rank)))
    assert all(torch.all(o == r) for r, o in enumerate(outs))
    big = torch.zeros(3 * n)
    dist._all_gather_base(big, torch.full((3,), float(rank)))
    assert torch.equal(big, torch.arange(n).repeat_interleave(3).float())
    out = torch.zeros(4)
    dist.reduce_scatter(out, [torch.full((4,), float(r + rank)) for r in range(n)])
    assert torch.all(out == sum(rank + r for r in range(n)))
    out = torch.zeros(2)
    dist._reduce_scatter_base(out, torch.arange(2 * n, dtype=torch.float32))
    assert torch.equal(out, n * torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32))
    # gather, scatter
    gl = [torch.zeros(2) for _ in range(n)] if rank == 0 else None
    dist.gather(torch.full((2,), float(rank)), gl, dst=0)
    if rank == 0:
        assert all(torch.all(g == r) for r, g in enumerate(gl))
    s = torch.zeros(2)
    dist.scatter(s, [torch.full((2,), float(r * 10)) for r in range(n)] if rank == 0 else None, src=0)
    assert torch.all(s == rank * 10)
    # all_to_all: equal, uneven splits, lists
    inp = torch.arange(n * 2, dtype=torch.float32) + 100 * rank
    outp = torch.zeros(n * 2)
    dist.all_to_all_single(outp, inp)
    want = torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + 100 * r for r in range(n)])
    assert torch.equal(outp, want), (outp, want)
    in_splits = [r + 1 for r in range(n)]  # rank sends r+1 elements to rank r
    out_splits = [rank + 1] * n
    inp = torch.full((sum(in_splits),), float(rank))
    outp = torch.zeros(sum(out_splits))
    dist.all_to_all_single(outp, inp, out_splits, in_splits)
    assert torch.equal(outp, torch.arange(n).repeat_interleave(rank + 1).float())
    outs = [torch.zeros(r + 1) for r in range(n)]
    dist.all_to_all(outs, [torch.full((rank + 1,), float(rank)) for _ in range(n)])
    assert all(torch.all(o == r) for r, o in enumerate(outs))
    # send/recv around a ring, barrier
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    t = torch.full((4,), float(rank))
    r_ = torch.zeros(4)
    if rank % 2 == 0:
        dist.send(t, nxt)
        dist.recv(r_, prv)
    else:
        dist.recv(r_, prv)
        dist.send(t, nxt)
    assert torch.all(r_ == prv)
    dist.barrier()
    # sequence numbers: equal on every rank, one step per queued operation
    pg = dist.distributed_c10d._get_default_group()
    seqs = [None] * n
    dist.all_gather_object(seqs, pg._get_sequence_number_for_group())
    assert len(set(seqs)) == 1, seqs
    before = pg._get_sequence_number_for_group()
    dist.all_reduce(torch.ones(1))
    assert pg._get_sequence_number_for_group() == before + 1
    # allgather_coalesced, tensors of two shapes (torch requires one type)
    outs = [[torch.empty(3), torch.empty(2, 2)] for _ in range(n)]
    dist.all_gather_coalesced(outs, [torch.full((3,), float(rank)), torch.full((2, 2), float(rank))])
    for r in range(n):
        assert torch.all(outs[r][0] == r) and torch.all(outs[r][1] == r), outs
    # monitored_barrier: every rank arrives
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    # errors are Python exceptions
    try:
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BXOR)
    except RuntimeError as e:
        assert "is not supported" in str(e), e
    else:
        raise AssertionError("BXOR all_reduce did not raise")
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1])
    mp.start_processes(run, args=(world, free_port()), nprocs=world, start_method="spawn")
    print(f"smoke: {world} ranks OK")
