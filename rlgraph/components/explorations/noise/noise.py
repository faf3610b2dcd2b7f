"""`Noise`: base class of noise components for continuous actions."""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.components.component import Component
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError


def continuous_action_leaf(space: Any, where: str) -> FloatBox:
    """The single `FloatBox` of an action space (itself, or the one float leaf of a container),
    without batch/time ranks.

    Raises:
        RLGraphSpaceError: If the space holds no FloatBox or several.
    """
    space = Space.from_spec(space)
    leaves = [leaf for leaf in space.flatten().values() if isinstance(leaf, FloatBox)]
    if len(leaves) != 1:
        raise RLGraphSpaceError(space, f"noise needs exactly one continuous action component, found {len(leaves)}",
                                where=where, expected="a FloatBox (or a container with one FloatBox)",
                                hint="give each continuous action its own Exploration/noise component.")
    return leaves[0].strip_ranks()


class Noise(Component):
    """Base class of noise for continuous actions: `get_noise()` returns one draw shaped like the action.

    The noise has the action's shape (e.g. [action_dim]) and dtype, without a batch rank: an
    `Exploration` adds the same draw to every row of a batch. The action space comes from the
    constructor, else from the `action_space` the build passes to `create_variables`, else from
    a parent that calls `set_action_space` (as `Exploration` does with its `actions` space).

    Args:
        action_space: The (continuous) action space; a container must hold exactly one FloatBox.
        scope: Default "noise".

    Raises:
        RLGraphSpaceError: For an action space without exactly one FloatBox.

    API:
        get_noise() -> noise of the action's shape.

    >>> Noise.from_spec({"type": "constant", "value": 0.5}).value
    0.5
    """

    # Spec names -> subclass ("gaussian", "constant", "ornstein-uhlenbeck"/"ou", each also with a
    # "-noise" suffix); filled by the package's __init__.py, since the subclasses import this module.
    __lookup_classes__: dict = {}
    # `get_noise` takes no arguments: the variables wait for the action space only.
    input_spaces_needed = ("action_space",)

    def __init__(self, action_space: Any = None, scope: str = "noise", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.action_space: Optional[FloatBox] = None
        if action_space is not None:
            self.set_action_space(action_space)

    def set_action_space(self, action_space: Any) -> None:
        """Sets the action space (before the build creates the variables).

        Raises:
            RLGraphSpaceError: For a space without exactly one FloatBox, or a shape other than
                an already known one.
        """
        leaf = continuous_action_leaf(action_space, f"{self.global_scope}.set_action_space(action_space)")
        if self.variables_created and (leaf.shape != self.action_space.shape or leaf.dtype != self.action_space.dtype):
            raise RLGraphSpaceError(leaf, "the noise was built for another action shape",
                                    where=f"{self.global_scope}.set_action_space(action_space)",
                                    expected=self.action_space, hint="use one noise component per action space.")
        self.action_space = leaf

    def check_input_spaces(self, input_spaces, action_space=None):
        if self.action_space is None and action_space is not None:
            self.set_action_space(action_space)

    @rlgraph_api
    def get_noise(self):
        """One noise draw shaped like the action (no batch rank)."""
        return self._graph_fn_noise()

    def _graph_fn_noise(self):
        raise RLGraphError(f"{type(self).__name__} defines no noise", where=self.global_scope,
                           hint="use GaussianNoise, ConstantNoise or OrnsteinUhlenbeckNoise.")
