"""Destroying a weft process group while operations with Python completion
callbacks (Future.then) are still queued: the callbacks run on the group's
queue thread and need the GIL, which the destroying thread holds, so the
group must let go of it while it waits for them. Every rank must finish
(each callback having seen the right sum) instead of hanging."""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def worker(rank, store):
    import weft_torch  # noqa: F401  registers the backend
    dist.init_process_group("weft", init_method="file://" + store, rank=rank, world_size=WORLD)
    seen = []
    tensors = [torch.full((1 << 20,), float(rank + 1 + i)) for i in range(3)]
    futures = [dist.all_reduce(t, async_op=True).get_future().then(lambda f: seen.append(f.value()[0][0].item()))
               for t in tensors]
    dist.destroy_process_group()  # the callbacks may still be queued here
    for f in futures:
        f.wait()
    expect = [float(sum(r + 1 + i for r in range(WORLD))) for i in range(3)]
    if sorted(seen) != expect:
        print(f"rank {rank}: callbacks saw {seen}, expected {expect}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(os.path.join(d, "store"),), nprocs=WORLD, join=True)
    print("every rank destroyed its group with callbacks pending")
