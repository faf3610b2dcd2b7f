"""The schedules behind `Agent.training_scalars`: epsilon and learning rates, read in numpy.

Every `EpsilonExploration` and every `Optimizer` of an agent's root component is found once;
their values at a time percentage t come from `TimeDependentParameter.value_at(t)`, the same
formula the graph evaluates (`get(t)`), so reading them costs no executor call.

Tags: "explore/epsilon" and "train/learning_rate" for an agent with one of each; with several
(SAC's and DDPG's actor and critic optimizers), one tag per component, suffixed by its scope
("train/learning_rate/actor-optimizer").
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple


def schedule_readers(root_component: Any) -> List[Tuple[str, Callable[[float], float]]]:
    """(tag, value at time percentage t) of the epsilon schedules and the learning rates under
    `root_component` (none when it is None)."""
    from rlgraph.components.explorations.epsilon_exploration import EpsilonExploration
    from rlgraph.components.optimizers.optimizer import Optimizer
    if root_component is None:
        return []
    components = root_component.get_all_sub_components()
    readers = []
    for tag, kind, read in (("explore/epsilon", EpsilonExploration, _epsilon),
                            ("train/learning_rate", Optimizer, _learning_rate)):
        found = [c for c in components if isinstance(c, kind) and read(c) is not None]
        scopes = [c.scope for c in found]
        if len(set(scopes)) < len(scopes):
            scopes = [c.global_scope for c in found]
        for component, scope in zip(found, scopes):
            readers.append((tag if len(found) == 1 else f"{tag}/{scope}", read(component)))
    return readers


def _epsilon(component: Any) -> Callable[[float], float]:
    return component.decay.value_at


def _learning_rate(component: Any) -> Any:
    """The learning rate of an optimizer as a function of t; None for one without a rate."""
    if component.learning_rate_schedule is not None:
        return component.learning_rate_schedule.value_at
    constant = component._constant_learning_rate
    return None if constant is None else (lambda t, value=float(constant): value)


def loss_scalars(losses: Any, fields: Dict[str, str]) -> Dict[str, float]:
    """tag -> float of the `fields` (field name -> tag) of a named tuple an update returned."""
    return {tag: float(getattr(losses, field)) for field, tag in fields.items()}
