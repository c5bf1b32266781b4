"""weft as a torch.distributed backend.

Importing this module registers the backend "weft"; then

    import weft_torch
    torch.distributed.init_process_group(backend="weft", ...)

runs the process group's collectives on weft, for CPU tensors. The weft
unique id travels through the store torch gives the backend, and the group's
timeout becomes weft's bound on every wait (WEFT_TIMEOUT_MS is not needed).

torch 1.13's `monitored_barrier` refuses every backend but gloo by name;
importing this module lets it through for weft groups too (other groups go
to torch's own function unchanged).
"""
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from ._C import ProcessGroupWeft

BACKEND_NAME = "weft"


def _create_process_group(store, rank, world_size, timeout):
    return ProcessGroupWeft(store, rank, world_size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create_process_group)

_torch_monitored_barrier = c10d.monitored_barrier


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier, for weft groups as for gloo's:
    rank 0 names the ranks that did not arrive within `timeout`."""
    if c10d._rank_not_in_group(group) or c10d.get_backend(group) != BACKEND_NAME:
        return _torch_monitored_barrier(group, timeout, wait_all_ranks)
    if timeout is None:
        timeout = c10d.default_pg_timeout
    pg = c10d._get_default_group() if group is None else group
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


if getattr(c10d.monitored_barrier, "__module__", "") != __name__:
    c10d.monitored_barrier = monitored_barrier
    dist.monitored_barrier = monitored_barrier

__all__ = ["ProcessGroupWeft", "BACKEND_NAME"]
