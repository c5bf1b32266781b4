"""Point-to-point patterns that must not deadlock on weft where they do not on
gloo, with tags matched and receives from any source.

Usage: p2p_patterns.py [BACKEND]   (default weft; gloo for comparison)
Forks 3 ranks on 127.0.0.1. Each pattern moves 8 MiB tensors (more than
weft's 4 MiB connection buffer, so a send cannot complete before its
receive is posted). The process group's timeout is 20 s and the whole run
is killed after 90 s: a deadlock fails the test instead of hanging it.
"""
import datetime
import multiprocessing as mp
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from launch import free_port  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

WORLD = 3
ELEMS = 2 * 1024 * 1024  # float32: 8 MiB
GROUP_TIMEOUT_S = 20
DELAYS_MS = [2, 5, 10, 20, 40, 80, 160, 320]  # of posted_while_arriving
RUN_LIMIT_S = 90


def both_send_first(rank):
    """Ranks 0 and 1 each isend to the other, then recv, then wait."""
    if rank > 1:
        return
    peer = 1 - rank
    out = torch.full((ELEMS,), float(rank))
    got = torch.empty(ELEMS)
    work = dist.isend(out, peer)
    dist.recv(got, peer)
    work.wait()
    assert torch.all(got == peer), f"rank {rank}: wrong data from {peer}"


def tags_matched(rank):
    """Rank 0 sends tag 1 then tag 2; rank 1 posts tag 2 first: tags pair them."""
    if rank == 0:
        works = [dist.isend(torch.full((ELEMS,), 1.0), 1, tag=1), dist.isend(torch.full((16,), 2.0), 1, tag=2)]
        for w in works:
            w.wait()
    elif rank == 1:
        small, big = torch.empty(16), torch.empty(ELEMS)
        dist.recv(small, 0, tag=2)
        dist.recv(big, 0, tag=1)
        assert torch.all(small == 2.0) and torch.all(big == 1.0), "tags mismatched"


def any_source(rank):
    """Ranks 1 and 2 send to rank 0, which receives from any source twice."""
    if rank == 0:
        seen = set()
        for _ in range(2):
            got = torch.empty(ELEMS)
            src = dist.recv(got)
            assert torch.all(got == src), f"data from {src} is wrong"
            seen.add(src)
        assert seen == {1, 2}, f"sources {seen}"
    else:
        dist.send(torch.full((ELEMS,), float(rank)), 0)


def posted_while_arriving(rank):
    """Rank 1 sends a big tag-2 message, then a small tag-1 one. Rank 0 has
    only its tag-1 receive posted when they start, so the tag-2 message
    begins to arrive unclaimed; its tag-2 receive comes DELAYS_MS[round]
    later: while that payload is still on its way in the early rounds, after
    it in the late ones; from any source in every other round. Every round
    both must land."""
    big = 4 * ELEMS
    for round_, delay_ms in enumerate(DELAYS_MS):
        if rank == 0:
            small, large = torch.empty(16), torch.empty(big)
            first = dist.irecv(small, 1, tag=1)
            dist.barrier()  # rank 1 sends after this
            time.sleep(delay_ms / 1000)
            second = dist.irecv(large, 1 if round_ % 2 else None, tag=2)  # None: from any source
            first.wait()
            second.wait()
            assert torch.all(small == round_) and torch.all(large == round_ + 0.5), f"round {round_}: wrong data"
        else:
            out = [torch.full((big,), round_ + 0.5), torch.full((16,), float(round_))]
            dist.barrier()
            if rank == 1:
                works = [dist.isend(out[0], 0, tag=2), dist.isend(out[1], 0, tag=1)]
                for w in works:
                    w.wait()


def pipeline(rank):
    """A 3-stage pipeline, 4 micro-batches, activations forward and gradients
    backward exchanged with batch_isend_irecv (send forward + receive
    backward in one batch, as pipeline schedules do)."""
    micro = 4
    prev, nxt = rank - 1, rank + 1
    acts = []
    for m in range(micro):  # forward
        x = torch.full((ELEMS,), float(m))
        if prev >= 0:
            dist.recv(x, prev)
        y = x + 1
        acts.append(y)
        if nxt < WORLD:
            ops = [dist.P2POp(dist.isend, y, nxt)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
    for m in range(micro):  # backward: grads flow from the last stage back
        g = torch.full((ELEMS,), 0.0)
        ops = []
        if nxt < WORLD:
            ops.append(dist.P2POp(dist.irecv, g, nxt))
        if prev >= 0:
            ops.append(dist.P2POp(dist.isend, acts[m], prev))
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        if nxt < WORLD:
            assert torch.all(g == m + rank + 2), f"stage {rank} micro-batch {m}: gradient {g[0].item()}"


PATTERNS = [both_send_first, tags_matched, any_source, posted_while_arriving, pipeline]


def rank_main(rank, backend, port, results):
    try:
        if backend == "weft":
            import weft_torch  # noqa: F401
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                                timeout=datetime.timedelta(seconds=GROUP_TIMEOUT_S))
        for pattern in PATTERNS:
            start = time.time()
            pattern(rank)
            dist.barrier()
            results.put((rank, pattern.__name__, "ok", round(time.time() - start, 2)))
        dist.destroy_process_group()
    except Exception:
        results.put((rank, "error", traceback.format_exc(), 0))
        results.close()
        results.join_thread()  # os._exit skips the queue's flush
        os._exit(1)


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "weft"
    os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, backend, port, results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    deadline = time.time() + RUN_LIMIT_S
    for p in procs:
        p.join(max(0.1, deadline - time.time()))
    hung = [i for i, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
    done = []
    while not results.empty():
        done.append(results.get())
    for rank, name, status, secs in sorted(done, key=lambda d: d[0]):
        print(f"rank {rank}: {name}: {status} {secs}s")
    ok = not hung and all(p.exitcode == 0 for p in procs) and len(done) == WORLD * len(PATTERNS)
    if hung:
        print(f"FAIL: ranks {hung} still running after {RUN_LIMIT_S} s (deadlock)")
    print(f"{backend}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
