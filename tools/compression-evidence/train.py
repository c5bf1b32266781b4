"""Evidence for docs/compression.md: an MLP on a synthetic classification set,
trained with DDP on the weft backend by 4 processes (shared memory), once per
comm hook: no compression, bf16, TopK 1% with and without error feedback,
Sign with and without error feedback; with --momentum instead: SGD with
momentum 0.9 without compression, with TopK 1% + error feedback, and TopK
1% + error feedback with the momentum moved into the hook (DGC's momentum
correction, plain SGD in the optimizer). Writes the loss curves as a PNG
(matplotlib from Debian: python3-matplotlib) and prints final accuracy,
bytes sent per step per rank and step time.

    PYTHONPATH=build/bindings/torch WEFT_SOCKET_IFNAME=lo \\
      /usr/bin/python3 tools/compression-evidence/train.py docs/compression-loss.png
    ... train.py --momentum docs/compression-momentum.png
"""
import importlib.util
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "weft_hooks", os.path.join(HERE, "..", "..", "bindings", "torch", "weft_torch", "hooks.py"))
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

WORLD, FEATURES, CLASSES, HIDDEN, SAMPLES, STEPS = 4, 64, 8, 128, 1024, 100
# (name, hook, state maker, optimizer momentum, learning rate)
PLAIN_RUNS = [
    ("none", None, lambda: None, 0.0, 0.1),
    ("bf16", hooks.bf16_hook, lambda: None, 0.0, 0.1),
    ("topk 1% + EF", hooks.topk_hook, lambda: hooks.TopKState(ratio=0.01), 0.0, 0.1),
    ("topk 1%, no EF", hooks.topk_hook, lambda: hooks.TopKState(ratio=0.01, error_feedback=False), 0.0, 0.1),
    ("sign + EF", hooks.sign_hook, lambda: hooks.SignState(), 0.0, 0.1),
    ("sign, no EF", hooks.sign_hook, lambda: hooks.SignState(error_feedback=False), 0.0, 0.1),
]
MOMENTUM_RUNS = [
    ("none, SGD m=0.9", None, lambda: None, 0.9, 0.02),
    ("topk 1% + EF, SGD m=0.9", hooks.topk_hook, lambda: hooks.TopKState(ratio=0.01), 0.9, 0.02),
    ("topk 1% + EF + momentum correction", hooks.topk_hook,
     lambda: hooks.TopKState(ratio=0.01, momentum=0.9), 0.0, 0.02),
]
RUNS = MOMENTUM_RUNS if "--momentum" in sys.argv else PLAIN_RUNS


def dataset(rank):
    g = torch.Generator().manual_seed(7)
    centers = torch.randn(CLASSES, FEATURES, generator=g) * 1.5
    g = torch.Generator().manual_seed(1000 + rank)
    y = torch.randint(0, CLASSES, (SAMPLES,), generator=g)
    x = centers[y] + torch.randn(SAMPLES, FEATURES, generator=g) * 5.0
    return x, y


def ring_bytes(numel, elem):
    return 2 * (WORLD - 1) / WORLD * numel * elem


def run(rank, hook, make_state, momentum, lr):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))
    model = DDP(net, bucket_cap_mb=1)
    state = make_state()
    if hook is not None:
        model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    x, y = dataset(rank)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    start = time.perf_counter()
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    step_ms = (time.perf_counter() - start) * 1000 / STEPS
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    numel = sum(p.numel() for p in net.parameters())
    if state is not None:
        sent = state.bytes_sent / STEPS
    else:
        sent = ring_bytes(numel, 2 if hook is hooks.bf16_hook else 4)
    return {"losses": losses, "accuracy": acc, "bytes": sent, "step_ms": step_ms, "params": numel}


def worker(rank, store, results):
    import weft_torch  # noqa: F401  registers the backend
    torch.set_num_threads(1)
    dist.init_process_group("weft", init_method="file://" + store, rank=rank, world_size=WORLD)
    out = {name: run(rank, hook, make, m, lr) for name, hook, make, m, lr in RUNS}
    results[rank] = out
    dist.destroy_process_group()


def main():
    args = [a for a in sys.argv[1:] if a != "--momentum"]
    png = args[0] if args else "compression-loss.png"
    with tempfile.TemporaryDirectory() as d:
        results = mp.Manager().dict()
        mp.spawn(worker, args=(os.path.join(d, "store"), results), nprocs=WORLD, join=True)
        r = dict(results[0])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, *_ in RUNS:
        ax.plot(r[name]["losses"], label=f"{name} (acc {r[name]['accuracy']:.3f})")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (rank 0)")
    ax.set_yscale("log")
    ax.set_title(f"MLP, {WORLD} ranks, DDP on weft (shared memory)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"{'hook':16} {'final loss':>10} {'accuracy':>9} {'bytes/step/rank':>16} {'step ms':>8}")
    for name, *_ in RUNS:
        x = r[name]
        print(f"{name:16} {x['losses'][-1]:10.4f} {x['accuracy']:9.3f} {x['bytes']:16.0f} {x['step_ms']:8.2f}")
    print(json.dumps({"params": r["none"]["params"]}))


if __name__ == "__main__":
    main()
