"""One autotuning choice for every rank of an `mx.distributed` program.

Ranks that tuned on their own could pick different configs (timings are noisy, user caches
differ between machines), and configs may round differently (a `BLOCK_K` changes the order of a
sum), so ranks that should hold identical parameters would drift apart. Under a group of more
than one process, rank 0 alone chooses (benchmarks, or reads a stored choice) and every rank takes
its choice: the index of the config is shared by `mx.distributed.all_sum` of a one-hot vector
(every rank adds zeros but rank 0), one slot past the configs meaning "rank 0 failed", so the
other ranks raise too instead of waiting for a launch that never comes.

The group is the one the program initialised (`mx.distributed.init()` returns it again); it is
looked for only when MLX is imported and the process was launched as a rank (`mlx.launch` sets
`MLX_RANK`; MPI sets `OMPI_COMM_WORLD_RANK` or `PMI_RANK`), so a plain process never starts a
distributed backend. Every rank must reach the choice for one tuning key in the same order, as
data-parallel programs do (the same kernels, shapes and dtypes on every rank).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

RANK_VARIABLES = ("MLX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def distributed_group() -> Any | None:
    """The `mx.distributed` group of this process when it has more than one rank, else None."""
    if "mlx.core" not in sys.modules or not any(v in os.environ for v in RANK_VARIABLES):
        return None
    import mlx.core as mx

    if not mx.distributed.is_available():
        return None
    group = mx.distributed.init()
    return group if group.size() > 1 else None


def shared_index(group: Any, count: int, choose: Callable[[], int]) -> int | None:
    """Rank 0's `choose()` (an index below `count`), on every rank of `group`; None on every rank
    when rank 0's `choose` raised (rank 0 re-raises its error after sharing the failure)."""
    import mlx.core as mx

    vote = [0] * (count + 1)
    failure: BaseException | None = None
    if group.rank() == 0:
        try:
            index = choose()
        except BaseException as error:  # shared first, so the other ranks do not wait forever
            failure, index = error, count
        vote[index] = 1
    total = mx.distributed.all_sum(mx.array(vote, dtype=mx.int32), group=group, stream=mx.cpu)
    found = [int(v) for v in total.tolist()]
    if failure is not None:
        raise failure
    if sum(found) != 1:
        raise RuntimeError(f"autotune: the ranks' shared choice is malformed ({found}); every rank "
                           "must tune the same kernel with the same configs at the same point")
    index = found.index(1)
    return None if index == count else index


__all__ = ["RANK_VARIABLES", "distributed_group", "shared_index"]
