"""A rank killed in the middle of DDP training makes the others raise a
Python exception within the process group's timeout, instead of hanging.

Usage: killed_rank.py WORLD_SIZE
The last rank SIGKILLs itself at step KILL_STEP; every other rank must get a
RuntimeError from the training step within TIMEOUT_S (+ slack) of the kill.
"""
import datetime
import multiprocessing
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch import free_port  # noqa: E402

TIMEOUT_S = 6
SLACK_S = 4
KILL_STEP = 3


def train(rank, world, port, out_dir):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    import weft_torch  # noqa: F401

    dist.init_process_group("weft", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=TIMEOUT_S))
    torch.manual_seed(0)
    ddp = DDP(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    result = os.path.join(out_dir, f"rank{rank}")
    try:
        for step in range(1000):
            if rank == world - 1 and step == KILL_STEP:
                with open(os.path.join(out_dir, "killed"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            ddp(torch.randn(4, 8)).sum().backward()
            opt.step()
        outcome = "finished without error"
    except RuntimeError as e:
        outcome = f"raised {time.time()!r} {str(e).splitlines()[0]}"
    with open(result, "w") as f:
        f.write(outcome)
    os._exit(0)  # no destroy: the group is broken


def main():
    world = int(sys.argv[1])
    ctx = multiprocessing.get_context("spawn")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="weft-kill-") as out_dir:
        procs = [ctx.Process(target=train, args=(r, world, port, out_dir)) for r in range(world)]
        for p in procs:
            p.start()
        deadline = time.time() + 60
        for p in procs:
            p.join(max(1, deadline - time.time()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
        assert not hung, f"ranks {hung} hung after a peer was killed"
        killed_at = float(open(os.path.join(out_dir, "killed")).read())
        for r in range(world - 1):
            outcome = open(os.path.join(out_dir, f"rank{r}")).read()
            assert outcome.startswith("raised "), f"rank {r}: {outcome}"
            _, when, message = outcome.split(" ", 2)
            after = float(when) - killed_at
            assert after <= TIMEOUT_S + SLACK_S, f"rank {r} raised {after:.1f} s after the kill (timeout {TIMEOUT_S} s)"
            print(f"rank {r} raised {after:.2f} s after rank {world - 1} was killed: {message}")
    print("killed rank: OK")


if __name__ == "__main__":
    main()
