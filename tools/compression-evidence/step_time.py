"""DDP step time per comm hook, for docs/compression.md: one rank of a job
launched by tests/multihost/netns_hosts.sh (WEFT_RANK, WEFT_NRANKS set per
rank; the file store lies on the file system all namespaces share). Every
rank trains the same MLP (about 1.6 M float32 parameters, 6.3 MB of gradient
per step) with DDP on the weft backend, once per hook, and rank 0 prints
the median step time, its spread and the bytes each rank sent.

    tools/compression-evidence/step_time.sh     # runs it over shaped hosts and over shm
"""
import importlib.util
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "weft_hooks", os.path.join(HERE, "..", "..", "bindings", "torch", "weft_torch", "hooks.py"))
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

FEATURES, HIDDEN, CLASSES, BATCH = 512, 1024, 8, 64
WARMUP, STEPS = 1, 5
RUNS = [
    ("none", None, lambda: None),
    ("bf16", hooks.bf16_hook, lambda: None),
    ("topk 1% + EF", hooks.topk_hook, lambda: hooks.TopKState(ratio=0.01)),
    ("sign + EF", hooks.sign_hook, lambda: hooks.SignState()),
]


def run(rank, world, hook, make_state):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                              torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                              torch.nn.Linear(HIDDEN, CLASSES))
    model = DDP(net)  # DDP's default buckets: 25 MB, 1 MB first
    state = make_state()
    if hook is not None:
        model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(BATCH, FEATURES, generator=g)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for step in range(WARMUP + STEPS):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if step >= WARMUP:
            times.append((time.perf_counter() - start) * 1000)
    numel = sum(p.numel() for p in net.parameters())
    if state is not None:
        sent = state.bytes_sent / (WARMUP + STEPS)
    else:
        elem = 2 if hook is hooks.bf16_hook else 4
        sent = 2 * (world - 1) / world * numel * elem
    return statistics.median(times), min(times), max(times), sent, numel


def main():
    rank, world = int(os.environ["WEFT_RANK"]), int(os.environ["WEFT_NRANKS"])
    store = sys.argv[1]
    import weft_torch  # noqa: F401  registers the backend
    torch.set_num_threads(1)
    dist.init_process_group("weft", init_method="file://" + store, rank=rank, world_size=world)
    rows = [(name,) + run(rank, world, hook, make) for name, hook, make in RUNS]
    dist.destroy_process_group()
    if rank == 0:
        print(f"# {world} ranks, {rows[0][5]} parameters, median (min-max) of {STEPS} steps after {WARMUP}")
        print(f"{'hook':14} {'step ms':>8} {'min':>7} {'max':>7} {'bytes/step/rank':>16}")
        for name, med, lo, hi, sent, _ in rows:
            print(f"{name:14} {med:8.1f} {lo:7.1f} {hi:7.1f} {sent:16.0f}")


if __name__ == "__main__":
    main()
