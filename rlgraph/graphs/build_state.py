"""What the build knows about each component while it runs: argument spaces and completeness.

A `BuildState` lives in the `GraphBuilder` for the duration of one build; components keep only
their definition, sub-components and variables (and, once built, `api_method_inputs`: the
argument spaces they were built with).

A component is input-complete when the spaces of the arguments it needs are known: by default
every required argument of every API method not marked `must_be_complete=False`; a component
class may instead name them in `input_spaces_needed` (e.g. an optimizer needs only the space
of `variables`). The name "action_space" there stands for the component's `action_space`
attribute, else the build's action space.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from rlgraph.components.component_apis import missing_input_spaces
from rlgraph.spaces.space_utils import check_space_equivalence
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class BuildState:
    """One component's build data: `spaces`, argument name -> the space it received (equivalent
    in every call). Whether the component is built is whether it created its variables
    (`component.variables_created`)."""
    __slots__ = ("spaces",)

    def __init__(self):
        self.spaces: Dict[str, Any] = {}


class BuildStates:
    """The `BuildState` of every component of one build, and the completeness rules."""

    def __init__(self, action_space: Any = None):
        self.action_space = action_space
        self._states: Dict[int, tuple] = {}  # id(component) -> (component, state)

    def of(self, component) -> BuildState:
        entry = self._states.get(id(component))
        if entry is None:
            entry = self._states[id(component)] = (component, BuildState())
        return entry[1]

    def register(self, component, arg: str, space: Any, api_name: str) -> bool:
        """Records the space of argument `arg`; True if the name is new for this component.

        Raises:
            RLGraphSpaceError: If an earlier call gave `arg` a space that is not equivalent.
        """
        spaces = self.of(component).spaces
        known = spaces.get(arg)
        if known is None:
            spaces[arg] = space
            return True
        if known is not space:
            merged = check_space_equivalence(known, space)
            if merged is False:
                raise RLGraphSpaceError(space, f"argument '{arg}' received a space that differs from an earlier call",
                                        where=f"{component.global_scope}.{api_name}({arg})", expected=known,
                                        received=space,
                                        hint="API arguments of the same name must get equivalent spaces in every call.")
            spaces[arg] = merged
        return False

    def missing(self, component) -> Dict[str, List[str]]:
        """API method (or "input_spaces_needed") -> the needed argument names still without a space."""
        return missing_input_spaces(component, self.of(component).spaces, self.action_space)

    def input_complete(self, component) -> bool:
        return not self.missing(component)
