"""`@rlgraph_api` and `@graph_fn`: mark a component's outward methods and its backend code.

The decorators only record metadata (an `ApiInfo` / `GraphFnInfo` on the wrapper). `Component`
collects the marked methods of each class in `__init_subclass__`, in a registry keyed by the
class object. No source text or stack frame is ever read.

At run time a wrapper is one thread-local lookup plus the call: when no build is tracing in
this thread, an API method is its plain function and a graph function runs directly (with the
container handling its flags ask for). While the build system traces, the wrappers hand the
call to the tracer, which records spaces and runs graph functions on trace data.
"""
from __future__ import annotations

import functools
import inspect
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple, Union

from rlgraph.utils.ops import run_graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphError

GRAPH_FN_PREFIX = "_graph_fn_"


class _TracingState(threading.local):
    tracer = None  # The build system's tracer while a build runs in this thread.


tracing = _TracingState()

OpsFlag = Union[bool, str, Tuple[str, ...], frozenset]


@dataclass
class GraphFnInfo:
    """What `@graph_fn` recorded about one graph function."""
    name: str
    func: Callable
    returns: Optional[int] = None
    flatten_ops: Any = False
    split_ops: bool = False
    add_auto_key_as_first_param: bool = False
    requires_variable_completeness: Any = False  # True, False or "parent"
    arg_names: Tuple[str, ...] = ()
    output_space: Any = None  # A Space, fn(component, *argument spaces) -> space(s), or a method name.
    body: Optional[Callable] = field(default=None, repr=False)  # fn(component, *args): the call itself.


@dataclass
class ApiInfo:
    """What `@rlgraph_api` recorded about one API method.

    `arg_names` are the call parameters in order (without `self`); `required` those without
    default; `var_positional` the name of `*args` (its items are spaced as "name[i]").
    """
    name: str
    func: Callable
    arg_names: Tuple[str, ...] = ()
    required: Tuple[str, ...] = ()
    defaults: dict = field(default_factory=dict)
    var_positional: Optional[str] = None
    must_be_complete: bool = True
    returns: Optional[int] = None
    no_grad: bool = False
    graph_fn: Optional[GraphFnInfo] = None  # Set for auto-thin-wrapped `_graph_fn_*` methods.


def _signature_parts(func: Callable, skip_first: bool = True):
    params = list(inspect.signature(func).parameters.values())
    if skip_first and params:
        params = params[1:]
    names, required, defaults, var_positional = [], [], {}, None
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            var_positional = p.name
        elif p.kind is p.VAR_KEYWORD:
            continue
        else:
            names.append(p.name)
            if p.default is p.empty:
                required.append(p.name)
            else:
                defaults[p.name] = p.default
    return tuple(names), tuple(required), defaults, var_positional


def _normalize_flag(flag: OpsFlag, name: str, where: str) -> Any:
    if isinstance(flag, bool):
        return flag
    if isinstance(flag, str):
        return frozenset([flag])
    if isinstance(flag, (tuple, list, set, frozenset)) and all(isinstance(f, str) for f in flag):
        return frozenset(flag)
    raise RLGraphError(f"invalid `{name}` flag", where=where, expected="a bool, an argument name or a set of names",
                       received=repr(flag))


def _make_graph_fn_info(func: Callable, returns, flatten_ops, split_ops, add_auto_key_as_first_param,
                        requires_variable_completeness, output_space=None) -> GraphFnInfo:
    where = f"@graph_fn {func.__qualname__}"
    if split_ops and flatten_ops is False:
        flatten_ops = True  # Splitting needs flattened containers.
    if add_auto_key_as_first_param and not split_ops:
        raise RLGraphError("`add_auto_key_as_first_param` needs `split_ops=True`", where=where)
    if returns is not None and (not isinstance(returns, int) or returns < 1):
        raise RLGraphError("invalid `returns`", where=where, expected="a positive int", received=repr(returns))
    names = _signature_parts(func)[0]
    if add_auto_key_as_first_param:
        names = names[1:]
    flatten_ops = _normalize_flag(flatten_ops, "flatten_ops", where)
    if not isinstance(flatten_ops, bool) and not flatten_ops <= set(names):
        raise RLGraphError("`flatten_ops` names unknown parameters", where=where, expected=f"some of {list(names)}",
                           received=sorted(flatten_ops - set(names)))
    if output_space is not None and not (isinstance(output_space, str) or callable(output_space) or
                                         hasattr(output_space, "get_shape")):
        raise RLGraphError("invalid `output_space`", where=where,
                           expected="a Space, fn(component, *argument spaces) -> space(s), or a method name",
                           received=repr(output_space))
    info = GraphFnInfo(name=func.__name__, func=func, returns=returns, flatten_ops=flatten_ops,
                       split_ops=bool(split_ops), add_auto_key_as_first_param=bool(add_auto_key_as_first_param),
                       requires_variable_completeness=_completeness_flag(requires_variable_completeness, where),
                       arg_names=names, output_space=output_space)
    if not (info.flatten_ops or info.split_ops):
        info.body = func
    else:
        def body(self, *args, **kwargs):
            return run_graph_fn(info, self, args, kwargs)
        info.body = body
    return info


def _completeness_flag(flag: Any, where: str) -> Any:
    if flag == "parent":
        return flag
    if isinstance(flag, (bool, int)) and flag in (0, 1):
        return bool(flag)
    raise RLGraphError("invalid `requires_variable_completeness`", where=where,
                       expected='True, False or "parent"', received=repr(flag))


def graph_fn_wrapper(info: GraphFnInfo) -> Callable:
    body = info.body

    @functools.wraps(info.func)
    def wrapper(self, *args, **kwargs):
        tracer = tracing.tracer
        if tracer is None:
            # (A component with a device of its own runs it there: rlgraph/graphs/placement.py.)
            placement = self._placement
            if placement is None:
                return body(self, *args, **kwargs)
            return placement.call(body, self, args, kwargs)
        return tracer.call_graph_fn(self, info, args, kwargs)
    wrapper.rlgraph_graph_fn = info
    wrapper.rlgraph_graph_fn_body = body
    return wrapper


def graph_fn(graph_fn_method: Optional[Callable] = None, *, component=None, returns: Optional[int] = None,
             flatten_ops: OpsFlag = False, split_ops: bool = False, add_auto_key_as_first_param: bool = False,
             requires_variable_completeness: Union[bool, str] = False, output_space: Any = None) -> Callable:
    """Marks a component method as a graph function: the only place for backend code.

    Args:
        graph_fn_method: The method (when used without parentheses).
        component: Attach the function to this component instance instead of its class (the
            function's first parameter still receives the component).
        returns: How many values the function returns. Lets the build continue past this call
            before the component is ready (it returns that many pending records).
        flatten_ops: Pass container inputs (dicts/tuples) as flat auto-key dicts
            (`FlattenedDataOp`): True for all arguments, or a set of argument names.
        split_ops: Call the function once per auto-key of the (flattened) container inputs;
            other inputs go to every call unchanged; results are re-nested like the inputs.
        add_auto_key_as_first_param: With `split_ops`, pass each call's auto-key first.
        requires_variable_completeness: Wait until this component and all its sub-components
            have created their variables (e.g. to read every variable of a sub-tree); "parent":
            until the parent's whole sub-tree has (a helper reading its siblings' variables).
        output_space: The space of the result, where the build cannot infer it from the traced
            shapes (see `rlgraph/graphs/trace_data.py`): ranks that no shape shows (a sample of
            `num_records` rows has a batch rank), or bounds and dtypes to keep. A Space; a
            function `fn(component, *argument_spaces, **keyword_argument_spaces)` returning the
            space (a tuple of spaces for several results); or the name of such a method of the
            component. The traced result must fit it (checked at build).
    """
    def decorate(func):
        info = _make_graph_fn_info(func, returns, flatten_ops, split_ops, add_auto_key_as_first_param,
                                   requires_variable_completeness, output_space)
        wrapper = graph_fn_wrapper(info)
        if component is not None:
            component.register_graph_fn(info, types.MethodType(wrapper, component))
        return wrapper

    return decorate(graph_fn_method) if graph_fn_method is not None else decorate


def api_wrapper(info: ApiInfo) -> Callable:
    func = info.func

    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        tracer = tracing.tracer
        if tracer is None:
            return func(self, *args, **kwargs)
        return tracer.call_api(self, info, args, kwargs)
    wrapper.rlgraph_api = info
    return wrapper


def make_api_info(func: Callable, name: Optional[str] = None, must_be_complete: bool = True,
                  returns: Optional[int] = None, no_grad: bool = False,
                  graph_fn_info: Optional[GraphFnInfo] = None) -> ApiInfo:
    """Reads `func`'s signature into an `ApiInfo` (used by the decorator and by `expose_apis`)."""
    names, required, defaults, var_positional = _signature_parts(func)
    return ApiInfo(name=name or func.__name__, func=func, arg_names=names, required=required, defaults=defaults,
                   var_positional=var_positional, must_be_complete=must_be_complete, returns=returns,
                   no_grad=no_grad, graph_fn=graph_fn_info)


def rlgraph_api(api_method: Optional[Callable] = None, *, component=None, name: Optional[str] = None,
                returns: Optional[int] = None, flatten_ops: OpsFlag = False, split_ops: bool = False,
                add_auto_key_as_first_param: bool = False, must_be_complete: bool = True,
                ok_to_overwrite: bool = False, requires_variable_completeness: Union[bool, str] = False,
                no_grad: bool = False, output_space: Any = None) -> Callable:
    """Marks a component method as an API method, callable by parents and by the executor.

    A method named `_graph_fn_<x>` becomes a graph function plus a thin API method `<x>` that
    calls it with all arguments; the graph-function flags (`flatten_ops`, `split_ops`,
    `add_auto_key_as_first_param`, `requires_variable_completeness`, `output_space`) are only
    valid then.

    Args:
        api_method: The method (when used without parentheses).
        component: Define the API method on this component instance (agents build their root
            component this way); the function's first parameter receives the component.
        name: The API name; default: the function's name (without `_graph_fn_`).
        returns: How many values the method returns (see `graph_fn`).
        must_be_complete: Whether this method's arguments count for input-completeness. Set
            False for methods that clients may never call.
        ok_to_overwrite: Allow replacing an existing instance-level API method of that name.
        no_grad: PyTorch: run this method under `torch.no_grad()` when it is called as a root
            API method (acting paths).
    """
    def decorate(func):
        api_name = name or func.__name__
        gf_info = None
        body = func
        if func.__name__.startswith(GRAPH_FN_PREFIX):
            gf_info = _make_graph_fn_info(func, returns, flatten_ops, split_ops, add_auto_key_as_first_param,
                                          requires_variable_completeness, output_space)
            api_name = name or func.__name__[len(GRAPH_FN_PREFIX):]
            body = graph_fn_wrapper(gf_info)
        elif flatten_ops or split_ops or add_auto_key_as_first_param or requires_variable_completeness or \
                output_space is not None:
            raise RLGraphError("graph-function flags on an API method that is not a `_graph_fn_` method",
                               where=f"@rlgraph_api {func.__qualname__}",
                               hint="put the flags on the @graph_fn that the API method calls.")
        info = make_api_info(func, api_name, must_be_complete, returns, no_grad, gf_info)
        info.func = body
        wrapper = api_wrapper(info)
        if component is not None:
            component.register_api(info, wrapper, ok_to_overwrite=ok_to_overwrite)
        elif gf_info is not None:
            wrapper.rlgraph_graph_fn = gf_info
        return wrapper

    return decorate(api_method) if api_method is not None else decorate
