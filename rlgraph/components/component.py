"""The `Component` base class: sub-components, API methods, graph functions, needed input spaces.

API methods and graph functions are registered by `ComponentApisMixin` (component_apis.py),
variables handled by `ComponentVariablesMixin` (component_variables.py); the build and its
bookkeeping live in `rlgraph.graphs`.
"""
from __future__ import annotations

import copy as copy_module
from typing import Any, Dict, Iterable, List, Optional

from rlgraph.components.component_apis import ComponentApisMixin, class_apis, class_graph_fns, missing_input_spaces
from rlgraph.components.component_variables import ComponentVariablesMixin
from rlgraph.utils.decorators import ApiInfo, GraphFnInfo
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import Specifiable

__all__ = ["Component"]


class Component(ComponentApisMixin, ComponentVariablesMixin, Specifiable):
    """Base class of every building block: layers, networks, memories, optimizers, losses.

    A component holds sub-components, API methods (`@rlgraph_api`), graph functions
    (`@graph_fn`, the only place with backend code) and variables, which it creates in
    `create_variables` once the spaces of the arguments it needs are known ("input-complete"):
    all required arguments of its API methods (except those marked `must_be_complete=False`),
    or the names in the class attribute `input_spaces_needed`.

    Args:
        *sub_components: Components to add right away. A leading string is taken as `scope`
            (`super().__init__(scope, **kwargs)` as in the custom-component tutorial).
        scope: The local name; the global scope is the parents' scopes joined by "/".
        device: The reference's per-component device ("cpu", "cuda", "cuda:N", "auto", or a TF1
            name such as "/device:CPU:0"); None: the parent's (the root's: the executor's
            `execution_spec.device`). The component's variables are created there and its graph
            functions run there, with the copies between devices inserted by the executor
            (rlgraph/graphs/placement.py).
        trainable: Overrides the `trainable` flag of every variable this component creates
            (None: each variable decides).
        summary_regexp: Only summaries whose name matches this regexp are created.
        name: Alias of `scope`, kept for reference compatibility.
        switched_off_apis: API method names (aliases allowed) that are not built: they do not
            count for input-completeness, a root does not offer them, and calling one raises an
            `RLGraphError`. An unknown name is an error at build.
    """

    __lookup_classes__: dict = {}
    # The argument names whose spaces `check_input_spaces` / `create_variables` need; None: every
    # required argument of every must-be-complete API method. "action_space" names the
    # component's `action_space` attribute (else the build's action space).
    input_spaces_needed: Optional[tuple] = None
    # Set by the executor at build for a component whose device is not the executor's (placement.py).
    _placement: Any = None

    def __init__(self, *sub_components: Any, scope: Optional[str] = None, device: Optional[str] = None,
                 trainable: Optional[bool] = None, summary_regexp: Optional[str] = None,
                 name: Optional[str] = None, switched_off_apis: Optional[Iterable[str]] = None, **kwargs):
        if sub_components and isinstance(sub_components[0], str):
            if scope is not None:
                raise RLGraphError("scope given twice", where=type(self).__name__,
                                   received=f"{sub_components[0]!r} and {scope!r}")
            scope, sub_components = sub_components[0], sub_components[1:]
        if kwargs:
            raise RLGraphError(f"unknown constructor argument(s) {sorted(kwargs)}", where=type(self).__name__,
                               expected="scope, device, trainable, summary_regexp, name, switched_off_apis")
        for key, value in (("scope", scope), ("name", name)):
            if value is not None and not isinstance(value, str):
                raise RLGraphSpecError(f"{key} must be a string", where=f"{type(self).__name__}({key})",
                                       received=f"{value!r} ({type(value).__name__})"[:100],
                                       hint="a scope names the component in variable names, e.g. \"hidden-1\".")
        self.scope = scope or name or _default_scope(type(self))
        if "/" in self.scope:
            raise RLGraphError("a scope cannot contain '/'", where=type(self).__name__, received=repr(self.scope))
        self.name = self.scope
        self.global_scope = self.scope
        self.device = device
        self.trainable = trainable
        self.summary_regexp = summary_regexp
        self.parent_component: Optional[Component] = None
        self.sub_components: Dict[str, Component] = {}
        self.api_methods: Dict[str, ApiInfo] = {n: info for n, (info, _) in class_apis(type(self)).items()}
        self.graph_fns: Dict[str, GraphFnInfo] = dict(class_graph_fns(type(self)))
        self.api_method_inputs: Dict[str, Any] = {}  # Argument -> space, as built (set by the build).
        self._init_variable_state()
        self.switched_off_apis: frozenset = frozenset()
        if switched_off_apis:
            self.switch_off_apis(switched_off_apis)
        if sub_components:
            self.add_components(*sub_components)

    # --- Sub-components ----------------------------------------------------------------------------
    def add_components(self, *components: "Component", expose_apis: Optional[Iterable[str]] = None) -> None:
        """Adds sub-components; `expose_apis` names child API methods to re-offer on this component."""
        for component in components:
            if not isinstance(component, Component):
                raise RLGraphError("can only add Component objects", where=f"{self.global_scope}.add_components",
                                   received=type(component).__name__)
            if component.parent_component is not None:
                raise RLGraphError(f"component '{component.scope}' already has a parent",
                                   where=f"{self.global_scope}.add_components",
                                   received=component.parent_component.global_scope,
                                   hint="use component.copy() to add an independent duplicate.")
            if component.scope in self.sub_components:
                raise RLGraphError(f"a sub-component with scope '{component.scope}' exists already",
                                   where=f"{self.global_scope}.add_components",
                                   hint="give the new component another scope.")
            if component is self or self in component.get_all_sub_components():
                raise RLGraphError("cannot add a component to itself or to one of its descendants",
                                   where=f"{self.global_scope}.add_components")
            self.sub_components[component.scope] = component
            component.parent_component = self
            self.propagate_scope(component)
            for name in expose_apis or ():
                self._expose_api(component, name)
            if self.variable_registry or component.variable_registry:
                component.propagate_variables()

    def get_sub_component_by_name(self, name: str) -> "Component":
        """The direct sub-component with local scope `name`.

        Raises:
            RLGraphError: If there is none; the message lists the existing names.
        """
        if name not in self.sub_components:
            raise RLGraphError(f"no sub-component named '{name}'", where=self.global_scope,
                               expected=sorted(self.sub_components))
        return self.sub_components[name]

    sub_component_by_name = get_sub_component_by_name

    def get_sub_component_by_global_scope(self, scope: str) -> Optional["Component"]:
        """The sub-component (any depth) with global scope `scope`, or None."""
        return next((c for c in self.get_all_sub_components() if c.global_scope == scope), None)

    def remove_sub_component_by_name(self, name: str) -> "Component":
        """Detaches and returns the direct sub-component `name` (with its variables' registry entries)."""
        component = self.get_sub_component_by_name(name)
        del self.sub_components[name]
        component.parent_component = None
        prefix = component.global_scope + "/"
        for owner in [self] + self.get_parents():
            for key in [k for k in owner.variable_registry if k.startswith(prefix)]:
                del owner.variable_registry[key]
        self.propagate_scope(component)
        return component

    def get_all_sub_components(self, list_: Optional[list] = None, level_: int = 0) -> List["Component"]:
        """All components of this sub-tree, deepest level first, this component last."""
        # Level by level: each level in the order a depth-first walk meets its components.
        levels: List[List[Component]] = [[self]]
        while True:
            below = [child for component in levels[-1] for child in component.sub_components.values()]
            if not below:
                break
            levels.append(below)
        ordered = [c for level in reversed(levels) for c in level]
        return (list_ or []) + ordered

    def get_parents(self) -> List["Component"]:
        """Parent, grand-parent, ... up to the root."""
        parents, node = [], self.parent_component
        while node is not None:
            parents.append(node)
            node = node.parent_component
        return parents

    def propagate_scope(self, sub_component: Optional["Component"] = None) -> None:
        """Recomputes the global scope of `sub_component` (default: self) and its sub-tree."""
        component = sub_component or self
        parent = component.parent_component
        component.global_scope = component.scope if parent is None else f"{parent.global_scope}/{component.scope}"
        for child in component.sub_components.values():
            self.propagate_scope(child)

    def propagate_sub_component_properties(self, properties: Dict[str, Any],
                                           component: Optional["Component"] = None) -> None:
        """Sets `properties` (name -> value) on `component` (default: self) and its whole sub-tree."""
        for c in (component or self).get_all_sub_components():
            for key, value in properties.items():
                setattr(c, key, value)

    # --- Input-completeness --------------------------------------------------------------------------
    def check_input_completeness(self) -> bool:
        """Whether `api_method_inputs` holds every space this component needs (see the class doc)."""
        return not missing_input_spaces(self, self.api_method_inputs)

    def check_variable_completeness(self) -> bool:
        """Whether this component and its whole sub-tree have created their variables."""
        return all(c.variables_created for c in self.get_all_sub_components())

    def check_input_spaces(self, input_spaces: Dict[str, Any], action_space: Any = None) -> None:
        """Override to validate the argument spaces (raise an `RLGraphSpaceError` naming the argument)."""

    def create_variables(self, input_spaces: Dict[str, Any], action_space: Any = None) -> None:
        """Override to create variables with `self.get_variable(...)` (or `space.get_variable(...)`)."""

    def when_input_complete(self, input_spaces: Optional[Dict[str, Any]] = None, action_space: Any = None,
                            device: Optional[str] = None, summary_regexp: Optional[str] = None) -> None:
        """Runs `check_input_spaces` then `create_variables` (called by the build system).

        Args:
            input_spaces: Argument name -> space (None: `api_method_inputs`); kept in `api_method_inputs`.
        """
        self.check_switched_off_apis()
        spaces = dict(self.api_method_inputs if input_spaces is None else input_spaces)
        self.api_method_inputs = spaces
        if device is not None:
            self.device = device
        if summary_regexp is not None:
            self.summary_regexp = summary_regexp
        self.check_input_spaces(spaces, action_space)
        with self._variable_creation_scope():
            self.create_variables(spaces, action_space)
        self.variables_created = True

    # --- Copies ------------------------------------------------------------------------------------
    def copy(self, name: Optional[str] = None, scope: Optional[str] = None, device: Optional[str] = None,
             trainable: Optional[bool] = None, reuse_variable_scope: Optional[str] = None,
             reuse_variable_scope_for_sub_components: Optional[str] = None) -> "Component":
        """An unbuilt duplicate without parent; it creates its own variables when built.

        Args:
            name: Alias of `scope`.
            scope: The copy's scope (default: this one's).
            device: The copy's device (default: this one's).
            trainable: If not None, sets `trainable` on the copy and all its sub-components
                (e.g. a frozen target network).
            reuse_variable_scope: Not supported: variables are never shared between copies.
        """
        if reuse_variable_scope or reuse_variable_scope_for_sub_components:
            raise RLGraphError("variable sharing between copies is not supported", where=f"{self.global_scope}.copy",
                               hint="copy the values with Synchronizable / set_weights instead.")
        memo = {id(self.parent_component): None}
        for component in self.get_all_sub_components():
            for var in component._all_variable_objects():
                memo[id(var)] = None
        clone = copy_module.deepcopy(self, memo)
        clone.parent_component = None
        clone.scope = clone.name = scope or name or self.scope
        if device is not None:
            clone.device = device
        for component in clone.get_all_sub_components():
            component._reset_build_state()
            if trainable is not None:
                component.trainable = trainable
        clone.propagate_scope(None)
        return clone

    def _reset_build_state(self) -> None:
        self.api_method_inputs = {}
        self._placement = None
        self._init_variable_state()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scope={self.global_scope!r})"


def _default_scope(cls: type) -> str:
    out = []
    for i, ch in enumerate(cls.__name__):
        if ch.isupper() and i > 0 and not cls.__name__[i - 1].isupper():
            out.append("-")
        out.append(ch.lower())
    return "".join(out)
