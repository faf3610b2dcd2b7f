"""`Optimizer`: the base class of components that update other components' variables from a loss."""
from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from rlgraph.components.component import Component
from rlgraph.spaces import Dict as DictSpace
from rlgraph.spaces import FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

# API arguments whose spaces the optimizer checks; only `variables` is needed to create its slots.


class Optimizer(Component):
    """Base class of optimizers: components that update variables handed to them as data.

    The variables to optimize are an API argument: a dict name -> variable that the parent gets
    from another component (e.g. a graph function returning
    `policy.get_variables(custom_scope_separator="-")`; Dict keys cannot contain "/"). The
    optimizer becomes input-complete as soon as the space of `variables` (a Dict of FloatBoxes)
    is known and then creates its own variables ("slots", e.g. Adam's moments), one set per
    optimized variable, as component variables, so they are checkpointed with the model.

    The learning rate is a number or a time-dependent parameter spec (`["linear", 1e-3, 1e-4]`,
    {"type": "linear-decay", "from": 1e-3, "to": 1e-4}, see `TimeDependentParameter`); a schedule
    becomes the sub-component "learning-rate", evaluated at the `time_percentage` argument
    (a scalar in [0, 1]; None counts as 0).

    Args:
        learning_rate: A number >= 0, a time-dependent parameter spec, or None (for optimizers
            without a learning rate).
        scope: Default "optimizer".

    Raises:
        RLGraphSpecError: For a negative, non-finite or unreadable learning rate.

    API:
        step(variables, loss, loss_per_item, time_percentage=None) -> (loss, loss_per_item)
            after one update of `variables`.
        calculate_gradients(variables, loss, time_percentage=None) -> dict name -> gradient.
        apply_gradients(variables, gradients, time_percentage=None) -> None; one update.
        get_optimizer_variables() -> dict local name -> slot variable.

    >>> optimizer = Optimizer(learning_rate=["linear", 1e-3, 1e-4])
    >>> round(optimizer.learning_rate_schedule.value_at(0.5), 6), optimizer.learning_rate_schedule.global_scope
    (0.00055, 'optimizer/learning-rate')
    """

    # Only the space of `variables` is needed to create the slots (a parent may call only `step`,
    # or only `calculate_gradients` + `apply_gradients`).
    input_spaces_needed = ("variables",)

    def __init__(self, learning_rate: Any = None, scope: str = "optimizer", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.learning_rate = learning_rate
        self.learning_rate_schedule = None
        self._constant_learning_rate: Optional[float] = None
        where = f"{type(self).__name__}(learning_rate)"
        if learning_rate is None:
            pass
        elif isinstance(learning_rate, numbers.Real) and not isinstance(learning_rate, bool):
            if not np.isfinite(learning_rate) or learning_rate < 0:
                raise RLGraphSpecError("the learning rate must be a finite number >= 0", where=where,
                                       received=repr(learning_rate))
            self._constant_learning_rate = float(learning_rate)
        else:
            self.learning_rate_schedule = _make_schedule(learning_rate, where)
            self.add_components(self.learning_rate_schedule)
        self.variables_space: Optional[DictSpace] = None

    # --- Build --------------------------------------------------------------------------------------------
    def check_input_spaces(self, input_spaces, action_space=None):
        variables = input_spaces.get("variables")
        where = f"{self.global_scope}.step(variables)"
        if not isinstance(variables, DictSpace) or not dict.__len__(variables):
            raise RLGraphSpaceError(variables, "the variables to optimize must be a non-empty dict", where=where,
                                    expected="a Dict of FloatBoxes (name -> variable)", received=variables,
                                    hint="pass e.g. the result of a graph function returning "
                                         "component.get_variables(custom_scope_separator='-').")
        for key, space in variables._children():
            if not isinstance(space, FloatBox) or space.has_batch_rank or space.has_time_rank:
                raise RLGraphSpaceError(space, f"variable '{key}' cannot be optimized", where=where,
                                        expected="a float variable (FloatBox without batch/time rank)",
                                        received=space, hint="nested dicts are not supported; flatten them.")
        loss = input_spaces.get("loss")
        if loss is not None and (not isinstance(loss, FloatBox) or loss.shape != () or loss.has_batch_rank or
                                 loss.has_time_rank):
            raise RLGraphSpaceError(loss, "the loss must be a float scalar", where=f"{self.global_scope}.step(loss)",
                                    expected="FloatBox() without batch/time rank", received=loss,
                                    hint="reduce the per-item loss, e.g. with its mean.")
        gradients = input_spaces.get("gradients")
        if gradients is not None and (not isinstance(gradients, DictSpace) or
                                      set(dict.keys(gradients)) != set(dict.keys(variables))):
            raise RLGraphSpaceError(gradients, "the gradients must have the keys of the variables",
                                    where=f"{self.global_scope}.apply_gradients(gradients)",
                                    expected=sorted(dict.keys(variables)), received=gradients)
        time_percentage = input_spaces.get("time_percentage")
        if time_percentage is not None and (getattr(time_percentage, "shape", None) != () or
                                            time_percentage.has_batch_rank or time_percentage.has_time_rank):
            raise RLGraphSpaceError(time_percentage, "time_percentage must be a scalar",
                                    where=f"{self.global_scope}.step(time_percentage)",
                                    expected="a float scalar in [0, 1] without batch/time rank",
                                    received=time_percentage)
        self.variables_space = variables

    # --- API --------------------------------------------------------------------------------------------
    @rlgraph_api(must_be_complete=False)
    def step(self, variables, loss, loss_per_item, time_percentage=None):
        """Applies one update to `variables` that lowers `loss`.

        Args:
            variables: Dict name -> variable to optimize.
            loss: The scalar loss, computed from `variables` in the same API call.
            loss_per_item: [B] per-item losses (passed through).
            time_percentage: Optional scalar in [0, 1] for a learning-rate schedule.

        Returns:
            (loss, loss_per_item), on TF depending on the update (fetching them runs it).
        """
        return self._graph_fn_step(variables, loss, loss_per_item, self.learning_rate_at(time_percentage))

    @rlgraph_api(must_be_complete=False)
    def calculate_gradients(self, variables, loss, time_percentage=None):
        """The (clipped) gradients of `loss` with respect to `variables`: dict name -> gradient."""
        return self._graph_fn_calculate_gradients(variables, loss)

    @rlgraph_api(must_be_complete=False)
    def apply_gradients(self, variables, gradients, time_percentage=None):
        """Applies one update to `variables` from `gradients` (dict name -> gradient); returns None."""
        return self._graph_fn_apply_gradients(variables, gradients, self.learning_rate_at(time_percentage))

    @rlgraph_api
    def _graph_fn_get_optimizer_variables(self):
        """The optimizer's own variables (slots): dict local name -> variable."""
        return dict(self.variables)

    def learning_rate_at(self, time_percentage: Any = None) -> Any:
        """The learning rate for an API call: a python float, or the schedule's output record
        (call only from API methods: it calls the "learning-rate" sub-component's `get`)."""
        if self.learning_rate_schedule is None:
            return self._constant_learning_rate
        return self.learning_rate_schedule.get(0.0 if time_percentage is None else time_percentage)

    # --- Graph functions (subclasses) -------------------------------------------------------------------
    @graph_fn(returns=2)
    def _graph_fn_step(self, variables, loss, loss_per_item, learning_rate):
        raise RLGraphError(f"{type(self).__name__} does not implement step", where=self.global_scope,
                           hint="use a LocalOptimizer subclass such as AdamOptimizer.")

    # The gradients have the variables' spaces.
    @graph_fn(output_space=lambda self, variables, loss: variables)
    def _graph_fn_calculate_gradients(self, variables, loss):
        raise RLGraphError(f"{type(self).__name__} does not implement calculate_gradients", where=self.global_scope,
                           hint="use a LocalOptimizer subclass such as AdamOptimizer.")

    @graph_fn
    def _graph_fn_apply_gradients(self, variables, gradients, learning_rate):
        raise RLGraphError(f"{type(self).__name__} does not implement apply_gradients", where=self.global_scope,
                           hint="use a LocalOptimizer subclass such as AdamOptimizer.")


def _make_schedule(spec: Any, where: str):
    # Imported here: the optimizer base must not depend on the schedules at import time.
    from rlgraph.components.common.time_dependent_parameters import TimeDependentParameter
    if isinstance(spec, TimeDependentParameter):
        schedule = spec
    else:
        try:
            schedule = TimeDependentParameter.from_spec(spec, scope="learning-rate")
        except RLGraphSpecError:
            raise
        except Exception as error:  # noqa: BLE001 - a spec of the wrong kind raises from deep inside.
            raise RLGraphSpecError("cannot read the learning-rate spec", where=where,
                                   expected='a number >= 0, e.g. ["linear", 1e-3, 1e-4] or '
                                            '{"type": "linear-decay", "from": 1e-3, "to": 1e-4}',
                                   received=repr(spec), hint=f"{type(error).__name__}: {error}") from error
    ends = np.asarray(schedule.value_at([0.0, 1.0]))
    if not np.all(np.isfinite(ends)) or np.any(ends < 0):
        raise RLGraphSpecError("the learning-rate schedule must stay >= 0", where=where,
                               received=f"{repr(spec)} (from {ends[0]} to {ends[1]})")
    return schedule
