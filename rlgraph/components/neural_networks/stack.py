"""`Stack`: chains the API methods of its sub-components (the output of one feeds the next)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Union

from rlgraph.components.component import Component
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


def force_tuple(elements: Any = None, *, to_tuple: bool = True) -> Union[tuple, list]:
    """`elements` as a tuple (or list): a single item becomes a 1-tuple, None an empty one.

    >>> force_tuple(3), force_tuple([1, 2]), force_tuple(None, to_tuple=False)
    ((3,), (1, 2), [])
    """
    if elements is None:
        items = []
    elif isinstance(elements, (list, tuple)):
        items = list(elements)
    else:
        items = [elements]
    return tuple(items) if to_tuple else items


class StackChain:
    """The body of a chained API method: calls `sub_api` on every sub-component offering it, in order.

    A tuple result is spread over the next component's positional arguments; any other
    result (a tensor, a dict) is its single argument. Picklable (no closures)."""

    def __init__(self, sub_api: str):
        self.sub_api = sub_api
        self.__name__ = self.__qualname__ = f"chain_{sub_api}"

    def __call__(self, stack, *inputs):
        results = inputs[0] if len(inputs) == 1 else inputs
        # Sub-components without the method (e.g. a Synchronizable helper) are not part of the chain.
        chain = [c for c in stack.sub_components.values() if self.sub_api in c.api_methods]
        if stack.sub_components and not chain:
            raise RLGraphError(f"no sub-component has an API method '{self.sub_api}'", where=stack.global_scope,
                               expected=f"sub-components offering '{self.sub_api}'",
                               received={c.scope: sorted(c.api_methods) for c in stack.sub_components.values()})
        for component in chain:
            method = getattr(component, self.sub_api)
            results = method(*results) if type(results) is tuple else method(results)
        return results


def unique_scopes(components: List[Component]) -> None:
    """Renames unbuilt, parentless components so that scopes are unique: dense, dense-1, dense-2."""
    seen: Dict[str, int] = {}
    for component in components:
        base = component.scope
        count = seen.get(base, 0)
        seen[base] = count + 1
        if count and component.parent_component is None and not component.variables_created:
            new = f"{base}-{count}"
            while new in seen:
                count += 1
                new = f"{base}-{count}"
            seen[new] = 1
            component.scope = component.name = new
            component.propagate_scope(None)


class Stack(Component):
    """Sub-components whose API methods are chained, in the order given, into API methods of the stack.

    Args:
        *sub_components: Components, or specs of components (dicts with a "type", see
            `Component.from_spec`). Repeated scopes get a suffix: "dense", "dense-1", ...
        api_methods: The chained API methods: a set of names (the stack's method calls the
            sub-components' method of the same name), or a dict stack-name -> sub-component name.
            Default {"apply"}.
        scope: Default "stack".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> stack = Stack.from_spec([{"type": "dense", "units": 2, "weights_spec": 1.0},
    ...                          {"type": "dense", "units": 1, "weights_spec": 0.5}])
    >>> [c.scope for c in stack.sub_components.values()]
    ['dense', 'dense-1']
    >>> test = ComponentTest(stack, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[1.0, 2.0]], dtype=np.float32))).tolist()
    [[3.0]]
    """

    def __init__(self, *sub_components: Any, api_methods: Optional[Union[Iterable[str], Dict[str, str]]] = None,
                 scope: str = "stack", **kwargs):
        components = [self._to_component(c, i) for i, c in enumerate(sub_components)]
        unique_scopes(components)
        super().__init__(*components, scope=scope, **kwargs)
        if api_methods is None:
            api_methods = {"apply": "apply"}
        elif not isinstance(api_methods, dict):
            api_methods = {name: name for name in api_methods}
        self.chained_api_methods = dict(api_methods)
        for stack_api, sub_api in self.chained_api_methods.items():
            self._define_chain(stack_api, sub_api)

    def _define_chain(self, stack_api: str, sub_api: str) -> None:
        rlgraph_api(StackChain(sub_api), component=self, name=stack_api, ok_to_overwrite=True)

    def _to_component(self, spec: Any, index: int) -> Component:
        if isinstance(spec, Component):
            return spec
        if isinstance(spec, (dict, str)) or callable(spec):
            return Component.from_spec(spec)
        raise RLGraphSpecError("a Stack item must be a Component or a component spec",
                               where=f"{type(self).__name__} item {index}", received=repr(spec))

    @property
    def layers(self) -> List[Component]:
        """The sub-components in chaining order."""
        return list(self.sub_components.values())

    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> Any:
        """Like `Component.from_spec`; a list spec means the stack's sub-components in order."""
        if isinstance(spec, (list, tuple)):
            return cls(*spec, **kwargs)
        if isinstance(spec, dict) and "type" not in spec and isinstance(spec.get("layers"), list):
            spec = dict(spec)
            return cls(*spec.pop("layers"), **spec, **kwargs)
        return super().from_spec(spec, **kwargs)
