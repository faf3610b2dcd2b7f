"""`Stack`: chains the API methods of its sub-components (the output of one feeds the next)."""
from __future__ import annotations

from typing import Any, Dict, List, Union

from rlgraph.components.api_aliases import ApiAlias, resolve_api_name
from rlgraph.components.component import Component
from rlgraph.components.component_apis import class_apis
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
    result (a tensor, a dict) is its single argument. With `fold_time_rank` the first input's
    batch and time ranks are folded into one before the chain; with `unfold_time_rank` the
    (first) result is unfolded at the end like the original input (the first input when folding,
    else the second, which is then not passed to the chain). Picklable (no closures)."""

    def __init__(self, sub_api: str, fold_time_rank: bool = False, unfold_time_rank: bool = False):
        self.sub_api = sub_api
        self.fold_time_rank, self.unfold_time_rank = bool(fold_time_rank), bool(unfold_time_rank)
        self.__name__ = self.__qualname__ = f"chain_{sub_api}"

    def __call__(self, stack, *inputs):
        chain = []  # (component, its API method's canonical name)
        for component in stack.sub_components.values():
            name = resolve_api_name(component, self.sub_api)
            # Sub-components without the method (e.g. a Synchronizable helper) are not part of the chain.
            if name in component.api_methods and component.scope not in stack.helper_scopes:
                chain.append((component, name))
        if stack.sub_components and not chain:
            raise RLGraphError(f"no sub-component has an API method '{self.sub_api}'", where=stack.global_scope,
                               expected=f"sub-components offering '{self.sub_api}'",
                               received={c.scope: sorted(c.api_methods) for c in stack.sub_components.values()})
        original = None
        if self.unfold_time_rank:
            if not self.fold_time_rank:
                if len(inputs) < 2:
                    raise RLGraphError("unfold_time_rank without fold_time_rank needs the original (unfolded) input "
                                       "as the second argument", where=f"{stack.global_scope}.{self.__name__}",
                                       received=f"{len(inputs)} argument(s)")
                original, inputs = inputs[1], inputs[:1] + inputs[2:]
            else:
                original = inputs[0]
        if self.fold_time_rank:
            folder = stack.sub_components[_helper_scope(self.sub_api, "folder")]
            inputs = (folder.apply(inputs[0]),) + inputs[1:]
        results = inputs[0] if len(inputs) == 1 else inputs
        for component, name in chain:
            method = getattr(component, name)
            results = method(*results) if type(results) is tuple else method(results)
        if self.unfold_time_rank:
            unfolder = stack.sub_components[_helper_scope(self.sub_api, "unfolder")]
            if type(results) is tuple:
                results = (unfolder.apply(results[0], original),) + results[1:]
            else:
                results = unfolder.apply(results, original)
        return results


def _helper_scope(sub_api: str, kind: str) -> str:
    return f"{sub_api}-time-rank-{kind}"


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
        api_methods: The chained API methods (default {"apply"}), as
            - a dict {stack API name: sub-components' API name};
            - or a list/set of items, each
              - a name (the stack's method calls the sub-components' method of that name),
              - a pair (stack API name, sub-components' API name),
              - a pair (stack API name, function): the function (first parameter: the stack)
                becomes that API method, or
              - a dict {"api": stack API name, "component_api": sub-components' API name
                (default: the same), "function": as above, "fold_time_rank": fold the first
                input's batch and time ranks into one before the chain, "unfold_time_rank":
                unfold the result like the original input at the end (see `StackChain`)}.
            An entry with a function always defines its API method; a plain entry naming an API
            method that the stack's class defines itself (NeuralNetwork's `apply`) keeps the
            class's method. `call` means `apply` (the original's name, see `ApiAlias`).
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

    call = ApiAlias("apply")

    def __init__(self, *sub_components: Any, api_methods: Any = None, scope: str = "stack", **kwargs):
        if len(sub_components) == 1 and isinstance(sub_components[0], list):
            sub_components = tuple(sub_components[0])  # Stack([a, b]) as Stack(a, b), as the original allowed.
        components = [self._to_component(c, i) for i, c in enumerate(sub_components)]
        unique_scopes(components)
        super().__init__(*components, scope=scope, **kwargs)
        self.helper_scopes: set = set()  # Time-rank folders: sub-components that are no chain links.
        self.chained_api_methods: Dict[str, str] = {}
        own_apis = class_apis(type(self))
        for stack_api, sub_api, function, fold, unfold in _api_method_entries(api_methods, type(self).__name__):
            stack_api = resolve_api_name(self, stack_api)
            if stack_api in own_apis and function is None:
                # The class defines this API method itself (e.g. NeuralNetwork's `apply`): kept, unless
                # the entry asks for something else than that method.
                if fold or unfold or resolve_api_name(self, sub_api) != stack_api:
                    raise RLGraphSpecError(f"{type(self).__name__} defines '{stack_api}' itself: it cannot be "
                                           "chained anew", where=f"{type(self).__name__}(api_methods)",
                                           received=repr((stack_api, sub_api, dict(fold_time_rank=fold,
                                                                                    unfold_time_rank=unfold))),
                                           hint="give a function for it, chain under another name, or add ReShape "
                                                "layers to fold/unfold the time rank.")
                continue
            self.chained_api_methods[stack_api] = sub_api
            if function is not None:
                rlgraph_api(function, component=self, name=stack_api, ok_to_overwrite=True)
            else:
                self._define_chain(stack_api, sub_api, fold, unfold)
        self.map_api_to_sub_components_api = self.chained_api_methods  # (The original's name.)

    def _define_chain(self, stack_api: str, sub_api: str, fold_time_rank: bool = False,
                      unfold_time_rank: bool = False) -> None:
        from rlgraph.components.layers.preprocessing.reshape import ReShape
        for flag, kind, spec in ((fold_time_rank, "folder", dict(fold_time_rank=True)),
                                 (unfold_time_rank, "unfolder", dict(unfold_time_rank=True))):
            scope = _helper_scope(sub_api, kind)
            if flag and scope not in self.sub_components:
                self.add_components(ReShape(scope=scope, **spec))
                self.helper_scopes.add(scope)
        rlgraph_api(StackChain(sub_api, fold_time_rank, unfold_time_rank), component=self, name=stack_api,
                    ok_to_overwrite=True)

    def _to_component(self, spec: Any, index: int) -> Component:
        if isinstance(spec, Component):
            return spec
        if isinstance(spec, (dict, str)) or callable(spec):
            return Component.from_spec(spec)
        raise RLGraphSpecError("a Stack item must be a Component or a component spec",
                               where=f"{type(self).__name__} item {index}", received=repr(spec))

    @property
    def layers(self) -> List[Component]:
        """The sub-components in chaining order (without time-rank helpers)."""
        return [c for c in self.sub_components.values() if c.scope not in self.helper_scopes]

    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> Any:
        """Like `Component.from_spec`; a list spec means the stack's sub-components in order."""
        if isinstance(spec, (list, tuple)):
            return cls(*spec, **kwargs)
        if isinstance(spec, dict) and "type" not in spec and isinstance(spec.get("layers"), list):
            spec = dict(spec)
            return cls(*spec.pop("layers"), **spec, **kwargs)
        return super().from_spec(spec, **kwargs)


def _api_method_entries(api_methods: Any, where: str) -> List[tuple]:
    """`Stack(api_methods=...)` as (stack API, sub API, function, fold_time_rank, unfold_time_rank) entries."""
    if api_methods is None:
        return [("apply", "apply", None, False, False)]
    if isinstance(api_methods, dict):
        return [(stack_api, sub_api, None, False, False) for stack_api, sub_api in api_methods.items()]
    if isinstance(api_methods, str):
        api_methods = [api_methods]
    entries = []
    for item in api_methods:
        if isinstance(item, str):
            entries.append((item, item, None, False, False))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and \
                (isinstance(item[1], str) or callable(item[1])):
            function = item[1] if callable(item[1]) else None
            entries.append((item[0], item[0] if function else item[1], function, False, False))
        elif isinstance(item, dict) and isinstance(item.get("api"), str):
            unknown = sorted(set(item) - _ENTRY_KEYS)
            if unknown:
                raise RLGraphSpecError(f"unknown key(s) {unknown} in an api_methods entry",
                                       where=f"{where}(api_methods)", expected=sorted(_ENTRY_KEYS), received=repr(item))
            entries.append((item["api"], item.get("component_api", item["api"]), item.get("function"),
                            bool(item.get("fold_time_rank", False)), bool(item.get("unfold_time_rank", False))))
        else:
            raise RLGraphSpecError("invalid api_methods entry", where=f"{where}(api_methods)",
                                   expected='a name, a pair (stack API, sub-component API or function), or a dict '
                                            '{"api": ..., "component_api": ..., "function": ..., '
                                            '"fold_time_rank": ..., "unfold_time_rank": ...}',
                                   received=repr(item))
    return entries


_ENTRY_KEYS = {"api", "component_api", "function", "fold_time_rank", "unfold_time_rank"}
