"""`HorovodOptimizer`: the reference's data-parallel optimizer spec, on rlgraph's learner groups."""
from __future__ import annotations

from typing import Any

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer
from rlgraph.components.optimizers.optimizer import Optimizer
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class HorovodOptimizer(Optimizer):
    """Averages the gradients over the learner group before its local optimizer's step.

    Data-parallel averaging is built into every `LocalOptimizer`: in a process that is a learner of
    a group (`rlgraph train --learners N`, `execution_spec.num_learners`), its gradients are
    averaged over the group (one all-reduce on `torch.distributed`/gloo or TF's collective ops)
    before clipping and the update. So a `{"type": "horovod-optimizer", "local_optimizer": {...}}`
    spec (also "horovod", "data-parallel-optimizer") builds its local optimizer itself, with the
    local optimizer's variable names: a config keeps its checkpoints whether or not it names the
    wrapper, and in a single process the result is exactly the local optimizer. Horovod itself (MPI)
    is not used: it is no longer maintained.

    Args:
        local_optimizer: The spec of the update rule, e.g. {"type": "adam", "learning_rate": 1e-3}.
        **kwargs: Further constructor arguments of the local optimizer (e.g. `scope`); they win over
            the same keys of `local_optimizer`.

    Returns:
        (construction) The local optimizer (a `LocalOptimizer`), not a `HorovodOptimizer` instance.

    Raises:
        RLGraphSpecError: Without a local optimizer, or with one that is not a `LocalOptimizer`.

    >>> local = {"type": "adam", "learning_rate": 0.01}
    >>> optimizer = Optimizer.from_spec({"type": "horovod-optimizer", "local_optimizer": local})
    >>> type(optimizer).__name__, optimizer.global_scope == Optimizer.from_spec(local).global_scope
    ('AdamOptimizer', True)
    """

    def __new__(cls, local_optimizer: Any = None, **kwargs):
        where = f"{cls.__name__}(local_optimizer)"
        if local_optimizer is None:
            raise RLGraphSpecError("a local optimizer spec is required", where=where,
                                   expected='e.g. {"type": "adam", "learning_rate": 1e-3}')
        if isinstance(local_optimizer, dict):
            spec = dict(local_optimizer, **kwargs)
            kwargs = {}
        else:
            spec = local_optimizer
        optimizer = LocalOptimizer.from_spec(spec, **kwargs)
        if not isinstance(optimizer, LocalOptimizer):
            raise RLGraphSpecError("the local optimizer must update in this process", where=where,
                                   expected="a LocalOptimizer spec (adam, sgd, rmsprop, ...)",
                                   received=type(optimizer).__name__)
        return optimizer

    def __init__(self, local_optimizer: Any = None, **kwargs):  # pragma: no cover - __new__ returns another type.
        # Never runs (construction returns the local optimizer); it declares the spec's keys.
        super().__init__(**kwargs)
