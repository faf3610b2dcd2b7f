"""`EpsilonExploration`: decides per batch item whether to act uniformly at random."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.common.time_dependent_parameters import TimeDependentParameter
from rlgraph.components.component import Component
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

DEFAULT_DECAY_SPEC = ("linear", 1.0, 0.1)


class EpsilonExploration(Component):
    """Epsilon-greedy decisions: item b explores iff u_b < epsilon(t), with u_b ~ U[0, 1).

    epsilon(t) comes from a `TimeDependentParameter` sub-component (the "decay") evaluated at the
    time percentage t in [0, 1]; the draws use the agent's own random stream (seeded by the executor).

    Args:
        decay_spec: Spec of the epsilon schedule, any form `TimeDependentParameter.from_spec`
            reads (e.g. 0.05, ["linear", 1.0, 0.1], {"type": "exponential", "from": 1.0, "to": 0.01});
            default: linear from 1.0 to 0.1. Its values must lie in [0, 1].
        scope: Default "epsilon-exploration".

    Raises:
        RLGraphSpecError: For a bad decay spec or epsilon values outside [0, 1].
        RLGraphSpaceError: (at build time) for a `sample` without batch rank.

    API:
        do_explore(sample, time_percentage) -> bool [B]: True where the item explores. `sample`
            is any batch (e.g. the actions, also a container) that gives B; time_percentage is
            a scalar or [B].
        get_epsilon(time_percentage) -> epsilon, float32, scalar or [B].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> explore = EpsilonExploration(decay_spec=["linear", 1.0, 0.0])
    >>> test = ComponentTest(explore, input_spaces=dict(sample=IntBox(2, add_batch_rank=True),
    ...                      time_percentage=float), backend="pytorch")
    >>> float(test.test(("get_epsilon", 0.25)))
    0.75
    >>> test.test(("do_explore", [np.zeros(3, dtype=np.int32), 0.0])).tolist()  # epsilon 1.0
    [True, True, True]
    """

    def __init__(self, decay_spec: Any = None, scope: str = "epsilon-exploration", **kwargs):
        super().__init__(scope=scope, **kwargs)
        spec = list(DEFAULT_DECAY_SPEC) if decay_spec is None else decay_spec
        self.decay = TimeDependentParameter.from_spec(spec)
        for name in ("from_", "to_"):
            value = getattr(self.decay, name)
            if not 0.0 <= value <= 1.0:
                raise RLGraphSpecError("epsilon must lie in [0, 1]", where=f"{type(self).__name__}(decay_spec)",
                                       expected="schedule values in [0, 1]", received=f"{name}={value}",
                                       hint="epsilon is a probability of exploring.")
        self.add_components(self.decay)

    def check_input_spaces(self, input_spaces, action_space=None):
        sample = input_spaces.get("sample")
        if sample is not None:
            leaves = list(sample.flatten().values())
            if not leaves or not all(leaf.has_batch_rank for leaf in leaves):
                raise RLGraphSpaceError(sample, "`sample` needs a batch rank (it gives the number of items B)",
                                        where=f"{self.global_scope}.do_explore(sample)",
                                        expected="a space with add_batch_rank=True",
                                        hint="pass the batch of actions the decisions are for.")

    @rlgraph_api
    def do_explore(self, sample, time_percentage):
        """bool [B]: whether each item of `sample` explores at `time_percentage`."""
        return self._graph_fn_decide(sample, self.decay.get(time_percentage))

    @rlgraph_api
    def get_epsilon(self, time_percentage):
        """epsilon at `time_percentage` (scalar or [B])."""
        return self.decay.get(time_percentage)

    @graph_fn(flatten_ops={"sample"})
    def _graph_fn_decide(self, sample, epsilon):
        first = next(iter(sample.values())) if isinstance(sample, dict) else sample
        if get_backend() == "tf":
            import tensorflow as tf
            u = tf.random.uniform(tf.shape(first)[:1], dtype=tf.float32)
            return u < tf.cast(epsilon, tf.float32)
        import torch
        u = torch_random.rand(first.shape[:1], dtype=torch.float32, device=first.device)
        return u < torch.as_tensor(epsilon, dtype=torch.float32, device=first.device)
