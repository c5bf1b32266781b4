"""weft_torch.hooks on torch's DDP, 2 processes, over the backend named by
HOOKS_TEST_BACKEND: "gloo" (default; the hooks use only torch.distributed
collectives, so any backend runs them, but gloo has no bfloat16, so
bf16_hook is skipped there) or "weft" (needs weft_torch on PYTHONPATH).
Checks: TopK at ratio 1 gives the plain average; bf16 within its rounding;
every hook trains a logistic regression on a synthetic set, and error
feedback makes TopK 1% reach a lower loss than without; TopK's momentum
correction steps its velocity and residual exactly as DGC says, and at
ratio 1 trains as plain SGD. Prints the final losses. Exit 77 (skipped) without torch."""
import os
import sys
import tempfile

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError:
    sys.exit(77)

import importlib.util

spec = importlib.util.spec_from_file_location(
    "weft_hooks", os.path.join(os.path.dirname(__file__), "..", "..", "bindings", "torch", "weft_torch", "hooks.py"))
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)

WORLD = 2
FEATURES = 200


def data(rank):
    g = torch.Generator().manual_seed(1)
    w = torch.randn(FEATURES, generator=g)
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(512, FEATURES, generator=g)
    y = (x @ w > 0).float()
    return x, y


class FakeBucket:
    """What topk_hook reads of DDP's GradBucket."""

    def __init__(self, values):
        self._buffer = torch.tensor(values, dtype=torch.float32)

    def buffer(self):
        return self._buffer

    def index(self):
        return 0


def momentum_correction_steps():
    """k = 1 of 4 entries, momentum 0.5, the same gradient on every rank.
    Step 1: u = g = [4,1,0,0]; entry 0 sent; residual [0,1,0,0]; u[0] cleared.
    Step 2: g = [0,0,0,3]: u = [0,.5,0,3]; v = u + residual = [0,1.5,0,3];
    entry 3 sent; residual [0,1.5,0,0]; u = [0,.5,0,0]."""
    state = hooks.TopKState(ratio=0.25, momentum=0.5)
    out1 = hooks.topk_hook(state, FakeBucket([4, 1, 0, 0])).wait()
    ok = out1.tolist() == [4, 0, 0, 0]
    out2 = hooks.topk_hook(state, FakeBucket([0, 0, 0, 3])).wait()
    ok = ok and out2.tolist() == [0, 0, 0, 3]
    ok = ok and state.residuals[0].tolist() == [0, 1.5, 0, 0] and state.velocities[0].tolist() == [0, 0.5, 0, 0]
    return ok


def train(rank, hook, state, steps=40):
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(FEATURES, 1), bucket_cap_mb=1)
    if hook is not None:
        model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x, y = data(rank)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    first_grad = None
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x).squeeze(1), y)
        loss.backward()
        if first_grad is None:
            first_grad = torch.cat([p.grad.view(-1).clone() for p in model.parameters()])
        opt.step()
    with torch.no_grad():
        final = loss_fn(model(x).squeeze(1), y).item()
    return first_grad, final


BACKEND = os.environ.get("HOOKS_TEST_BACKEND", "gloo")


def worker(rank, store_path, results):
    if BACKEND == "weft":
        import weft_torch  # noqa: F401  registers the backend
    dist.init_process_group(BACKEND, init_method="file://" + store_path, rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    out = {}
    plain_grad, out["none"] = train(rank, None, None)
    topk1_grad, _ = train(rank, hooks.topk_hook, hooks.TopKState(ratio=1.0), steps=1)
    out["topk1_equal"] = torch.allclose(plain_grad, topk1_grad, rtol=1e-6, atol=1e-7)
    if BACKEND != "gloo":
        bf16_grad, out["bf16"] = train(rank, hooks.bf16_hook, None)
        out["bf16_close"] = torch.allclose(plain_grad, bf16_grad, rtol=2e-2, atol=1e-3)
    _, out["topk_ef"] = train(rank, hooks.topk_hook, hooks.TopKState(ratio=0.01))
    _, out["topk_no_ef"] = train(rank, hooks.topk_hook, hooks.TopKState(ratio=0.01, error_feedback=False))
    out["momentum_steps"] = momentum_correction_steps()
    # At ratio 1 every velocity is sent and cleared: plain SGD, step for step.
    _, out["none5"] = train(rank, None, None, steps=5)
    _, out["topk1_momentum5"] = train(rank, hooks.topk_hook, hooks.TopKState(ratio=1.0, momentum=0.9), steps=5)
    _, out["sign_ef"] = train(rank, hooks.sign_hook, hooks.SignState())
    _, out["sign_no_ef"] = train(rank, hooks.sign_hook, hooks.SignState(error_feedback=False))
    results[rank] = out
    dist.destroy_process_group()


def main():
    with tempfile.TemporaryDirectory() as d:
        manager = mp.Manager()
        results = manager.dict()
        mp.spawn(worker, args=(os.path.join(d, "store"), results), nprocs=WORLD, join=True)
        r = dict(results[0])
    print("final losses:", {k: round(v, 4) for k, v in r.items() if isinstance(v, float)})
    problems = []
    if not r["topk1_equal"]:
        problems.append("TopK at ratio 1 differs from the plain average")
    if "bf16" in r and not r["bf16_close"]:
        problems.append("bf16 gradient beyond its rounding")
    for k in ("none", "bf16", "topk_ef", "sign_ef"):
        if k in r and not r[k] < 0.6:
            problems.append(f"{k}: loss {r[k]:.4f} did not fall below 0.6")
    if not r["momentum_steps"]:
        problems.append("TopK momentum correction: velocity, residual or output not as DGC steps them")
    if abs(r["none5"] - r["topk1_momentum5"]) > 1e-5:
        problems.append(f"TopK ratio 1 with momentum correction: loss {r['topk1_momentum5']:.6f}, "
                        f"plain SGD {r['none5']:.6f}")
    if not r["topk_ef"] < r["topk_no_ef"]:
        problems.append("TopK: error feedback did not beat no error feedback")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
