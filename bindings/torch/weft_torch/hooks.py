"""DDP communication hooks that compress gradients (docs/compression.md).

    import weft_torch.hooks as hooks
    ddp.register_comm_hook(None, hooks.bf16_hook)
    ddp.register_comm_hook(hooks.TopKState(ratio=0.01), hooks.topk_hook)
    ddp.register_comm_hook(hooks.SignState(), hooks.sign_hook)

They use only torch.distributed collectives, so on the "weft" backend they
run on weft's AllReduce, AllGather and AlltoAll; they mirror the schemes of
weft's C compressors (weftCompressedAllReduce):

- bf16_hook: the bucket crosses the wire as bfloat16 (weft reduces in float32
  and rounds once per ring hop);
- topk_hook: each rank sends its ratio largest-magnitude entries as (index,
  value) pairs (AllGather), the rest stays in a per-bucket residual that is
  added to the next step's gradient (error feedback); with
  TopKState(momentum=m) the hook applies momentum itself, before selection,
  and clears the momentum of the entries it sent (DGC's momentum correction
  and factor masking): use it with an optimizer without momentum;
- sign_hook: DeepSpeed's two phases: the sign bits of each rank's chunk and a
  scale per chunk go to the chunk's owner (AlltoAll), the owner sums, adds
  its own residual, packs again, and the packed sums are all-gathered; both
  sides keep residuals.

Every hook returns the average over ranks, as DDP expects. The states keep
the residuals per bucket index across steps; `state.residuals` (and
`state.owner_residuals` for Sign) can be saved with the model and loaded back.
"""
import math

import torch
import torch.distributed as dist

__all__ = ["bf16_hook", "TopKState", "topk_hook", "SignState", "sign_hook"]


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def bf16_hook(process_group, bucket):
    """The bucket's AllReduce with bfloat16 on the wire; the average."""
    group = _group(process_group)
    world = dist.get_world_size(group)
    buffer = bucket.buffer()
    wire = buffer.to(torch.bfloat16).div_(world)
    fut = dist.all_reduce(wire, group=group, async_op=True).get_future()

    def decompress(f):
        buffer.copy_(f.value()[0])
        return buffer

    return fut.then(decompress)


class TopKState:
    """State of topk_hook: the ratio of entries sent, one residual per bucket,
    and with momentum > 0 one velocity per bucket.

    Momentum in the optimizer compounds with error feedback (a residual that
    waits several steps is then applied with several steps' momentum), which
    makes training oscillate; momentum here is accumulated before selection
    instead, and an entry's velocity is cleared when it is sent."""

    def __init__(self, process_group=None, ratio=0.01, error_feedback=True, momentum=0.0):
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"TopKState: ratio {ratio} is outside (0, 1]")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"TopKState: momentum {momentum} is outside [0, 1)")
        if momentum and not error_feedback:
            raise ValueError("TopKState: momentum correction needs error_feedback=True (the velocity "
                             "of unsent entries lives on in the residual)")
        self.process_group = process_group
        self.ratio = ratio
        self.error_feedback = error_feedback
        self.momentum = momentum
        self.residuals = {}
        self.velocities = {}
        self.bytes_sent = 0


def topk_hook(state, bucket):
    """Top-k sparsification with error feedback; the average over ranks."""
    group = _group(state.process_group)
    world = dist.get_world_size(group)
    grad = bucket.buffer()
    flat = grad.float()
    velocity = None
    if state.momentum:
        velocity = state.velocities.get(bucket.index())
        if velocity is None or velocity.numel() != flat.numel():
            velocity = torch.zeros_like(flat)
        velocity.mul_(state.momentum).add_(flat)
        state.velocities[bucket.index()] = velocity
        flat = velocity
    if state.error_feedback:
        residual = state.residuals.get(bucket.index())
        if residual is None or residual.numel() != flat.numel():
            residual = torch.zeros_like(flat)
        flat = flat + residual
    n = flat.numel()
    k = min(n, max(1, math.ceil(state.ratio * n)))
    _, index = torch.topk(flat.abs(), k, sorted=False)
    values = flat[index]
    if state.error_feedback:
        kept = flat.clone()
        kept[index] = 0
        state.residuals[bucket.index()] = kept
    if velocity is not None:
        velocity[index] = 0
    indices = [torch.empty_like(index) for _ in range(world)]
    gathered = [torch.empty_like(values) for _ in range(world)]
    dist.all_gather(indices, index, group=group)
    fut = dist.all_gather(gathered, values, group=group, async_op=True).get_future()
    state.bytes_sent += (world - 1) * k * (index.element_size() + values.element_size())

    def scatter_add(f):
        out = torch.zeros(n, dtype=torch.float32)
        for i, v in zip(indices, gathered):
            out.index_add_(0, i, v)
        grad.copy_(out.div_(world))
        return grad

    return fut.then(scatter_add)


class SignState:
    """State of sign_hook: the worker and owner residuals per bucket."""

    def __init__(self, process_group=None, error_feedback=True):
        self.process_group = process_group
        self.error_feedback = error_feedback
        self.residuals = {}
        self.owner_residuals = {}
        self.bytes_sent = 0


_BITS = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8)


def _pack(chunks):
    """Rows of float entries -> (scale per row, sign bits, 8 per byte)."""
    scale = chunks.abs().mean(dim=1)
    positive = (chunks >= 0).to(torch.uint8).view(chunks.shape[0], -1, 8)
    return scale, (positive * _BITS).sum(dim=2, dtype=torch.uint8)


def _unpack(scale, bits):
    signs = ((bits.unsqueeze(2) & _BITS) != 0).view(bits.shape[0], -1)
    return (signs.float() * 2 - 1) * scale.unsqueeze(1)


def _residual(table, key, shape):
    r = table.get(key)
    return r if r is not None and r.shape == shape else torch.zeros(shape)


def sign_hook(state, bucket):
    """1-bit sign compression in two phases, error feedback on both sides."""
    group = _group(state.process_group)
    world = dist.get_world_size(group)
    grad = bucket.buffer()
    n = grad.numel()
    chunk = 8 * math.ceil(n / world / 8)  # whole bytes of bits per chunk
    v = torch.zeros(world * chunk)
    v[:n] = grad.float()
    rows = v.view(world, chunk)
    if state.error_feedback:
        rows += _residual(state.residuals, bucket.index(), rows.shape)
    scale, bits = _pack(rows)
    if state.error_feedback:
        state.residuals[bucket.index()] = rows - _unpack(scale, bits)
    # Phase 1: chunk j to rank j (bits and scales), then the owner's sum.
    got_bits, got_scale = torch.empty_like(bits), torch.empty_like(scale)
    dist.all_to_all_single(got_bits, bits, group=group)
    dist.all_to_all_single(got_scale, scale, group=group)
    total = _unpack(got_scale, got_bits).sum(dim=0, keepdim=True)
    if state.error_feedback:
        total += _residual(state.owner_residuals, bucket.index(), total.shape)
    own_scale, own_bits = _pack(total)
    if state.error_feedback:
        state.owner_residuals[bucket.index()] = total - _unpack(own_scale, own_bits)
    # Phase 2: every owner's packed sum to every rank.
    all_bits = [torch.empty(1, chunk // 8, dtype=torch.uint8) for _ in range(world)]
    all_scale = [torch.empty(1) for _ in range(world)]
    dist.all_gather(all_scale, own_scale, group=group)
    fut = dist.all_gather(all_bits, own_bits, group=group, async_op=True).get_future()
    state.bytes_sent += 2 * (world - 1) * (chunk // 8 + 4)

    def decompress(f):
        out = _unpack(torch.cat(all_scale), torch.cat(all_bits)).view(-1)[:n]
        grad.copy_(out.div_(world))
        return grad

    return fut.then(decompress)
