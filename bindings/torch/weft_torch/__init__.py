"""weft as a torch.distributed backend.

Importing this module registers the backend "weft"; then

    import weft_torch
    torch.distributed.init_process_group(backend="weft", ...)

runs the process group's collectives on weft, for CPU tensors. The weft
unique id travels through the store torch gives the backend, and the group's
timeout becomes weft's bound on every wait (WEFT_TIMEOUT_MS is not needed).
"""
import torch
import torch.distributed as dist

from ._C import ProcessGroupWeft

BACKEND_NAME = "weft"


def _create_process_group(store, rank, world_size, timeout):
    return ProcessGroupWeft(store, rank, world_size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create_process_group)

__all__ = ["ProcessGroupWeft", "BACKEND_NAME"]
