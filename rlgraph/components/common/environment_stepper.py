"""`EnvironmentStepper`: an actor steps a python environment `num_steps` times inside one API call."""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.common.environment_runner import EnvironmentMaker, EnvironmentRunner
from rlgraph.components.component import Component
from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.neural_networks.actor_component import ActorComponent
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space
from rlgraph.utils import nest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.util import convert_dtype


class EnvironmentStepper(Component):
    """Runs an `ActorComponent` against an environment for `num_steps` steps per `step()` call and
    returns the trajectory as one record.

    The environment is python: given as a spec (any `Environment` spec: gymnasium through
    "openai-gym", "grid-world", ...) or as a factory that makes one (`environment=`). On TF each
    environment call is a `tf.numpy_function` inside the API method's `tf.function`; on PyTorch it
    is a plain python call. The step loop is unrolled at build time (`num_steps` is a constructor
    argument): one actor pass and one environment step per step.

    Where the state lives:
        - The environment, its current observation and the running episode return are python state
          of the stepper, so consecutive `step()` calls continue the same episodes. A terminal step
          resets the environment: the next state in the trajectory is then the new episode's first.
        - The variable "started" (worker-local) says whether the python side holds a live episode.
          It is False after the build (the build's trace runs step the environment and are undone
          by restoring the variables), so the first `step()` makes the environment anew (from its
          spec, or by calling the factory) and resets it: a seeded environment gives the same
          trajectories on TF and PyTorch, whatever the build did. Copies (`copy()`) make their own
          environment.
        - The variable "time-step" (worker-local) counts the steps taken, for the actor's
          `time_percentage` = time-step / `max_timesteps` (0.0 without `max_timesteps`).

    Where the environment comes from: components never import `rlgraph.environments` (it sits
    above them, see DESIGN's layer table). A factory (`environment=`) is called as it is: no lookup.
    A spec (`environment_spec`, the original RLgraph's form) is made by the function that
    `rlgraph.environments` registers (`rlgraph/utils/environment_maker.py`); the package face
    `rlgraph/__init__.py` imports it, so the spec form works wherever rlgraph is imported.

    Args:
        environment_spec: The environment's spec (a dict such as {"type": "openai-gym", "gym_env":
            "CartPole-v1", "seed": 1}, or a type name). Not an `Environment` object: the stepper must
            be able to make the environment anew (after the build, and for copies). Give either this
            or `environment`.
        actor_component_spec: An `ActorComponent` or the dict of its arguments (preprocessor_spec,
            policy_spec, exploration_spec, max_likelihood). Its network must not be recurrent.
            Required (it has a default only so that `environment` can be given instead of a spec).
        num_steps: Steps per `step()` call (>= 1).
        state_space: The environment's state space (None: read from a probe environment).
        action_space: The environment's action space (None: read from a probe environment).
        add_action_probs: Add the policy's action probabilities and the log-probability of each
            taken action to the trajectory (single discrete action spaces only).
        action_probs_space: Accepted for the original's configs; if given, a FloatBox of shape
            (num_actions,).
        max_timesteps: The number of steps that `time_percentage` 1.0 stands for (None: always 0.0, so
            exploration schedules stay at their start; the default epsilon starts at 1.0, all random).
        use_exploration: Whether the actor explores (its `Exploration`) while stepping.
        environment: Instead of `environment_spec`: a zero-argument callable that makes a new
            environment at each call, e.g. `lambda: GridWorld("2x2")` or
            `functools.partial(Environment.from_spec, spec)`. It is called for the probe that
            reads the spaces (unless both are given), at the first `step()` after the build or
            `terminate()`, and by each copy (copies call the same factory).
        scope: Default "environment-stepper".

    Raises:
        RLGraphSpecError: For an Environment object (as spec or as `environment`), both or neither
            of `environment_spec` and `environment`, a missing `actor_component_spec`, a bad
            `num_steps` / `max_timesteps`, a recurrent network, `add_action_probs` with a
            non-discrete action space, or a factory that makes no environment.

    API:
        step() -> dict, T = num_steps:
            "states": [T + 1, ...] raw environment states, the first being the state this call
                started in, then the state after each step (after a terminal step: the next
                episode's first state).
            "actions": [T, ...] the actions taken (after exploration).
            "rewards": [T] float32.
            "terminals": [T] bool, whether step t ended an episode.
            "episode_returns": [T] float32, the return of the running episode including step t
                (at a terminal step: the episode's return).
            With `add_action_probs`: "action_probs" [T, num_actions] (the policy's probabilities)
                and "action_log_probs" [T] (log pi(a_t | s_t) of the action taken).
        The steps are the records' batch rank.

    >>> import rlgraph.environments  # Registers the maker of environment specs (see above).
    >>> from rlgraph.tests import ComponentTest
    >>> stepper = EnvironmentStepper(
    ...     {"type": "grid-world", "world": "2x2"},
    ...     {"preprocessor_spec": [{"type": "reshape", "flatten": True, "flatten_categories": 4}],
    ...      "policy_spec": {"network_spec": [{"type": "dense", "units": 4}], "action_space": IntBox(4)},
    ...      "exploration_spec": {"epsilon_spec": {"decay_spec": ["constant", 0.0]}}}, num_steps=3)
    >>> out = ComponentTest(stepper, backend="pytorch").test("step")
    >>> out["states"].shape, out["actions"].shape, out["terminals"].dtype
    ((4,), (3,), dtype('bool'))

    The same with a factory instead of the spec (no spec lookup):

    >>> from rlgraph.environments import GridWorld
    >>> stepper = EnvironmentStepper(
    ...     environment=lambda: GridWorld("2x2"),
    ...     actor_component_spec={"preprocessor_spec": [{"type": "reshape", "flatten": True, "flatten_categories": 4}],
    ...                           "policy_spec": {"network_spec": [{"type": "dense", "units": 4}],
    ...                                           "action_space": IntBox(4)}}, num_steps=3)
    >>> ComponentTest(stepper, backend="pytorch").test("step")["rewards"].shape
    (3,)
    """

    def __init__(self, environment_spec: Any = None, actor_component_spec: Any = None, num_steps: int = 20,
                 state_space: Any = None, action_space: Any = None, add_action_probs: bool = False,
                 action_probs_space: Any = None, max_timesteps: Optional[int] = None, use_exploration: bool = True,
                 environment: Optional[Callable[[], Any]] = None, scope: str = "environment-stepper", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        maker = EnvironmentMaker.from_arguments(environment_spec, environment, name)
        if actor_component_spec is None:
            raise RLGraphSpecError("actor_component_spec is missing", where=f"{name}(actor_component_spec)",
                                   expected="an ActorComponent or the dict of its arguments",
                                   hint='e.g. {"policy_spec": {"network_spec": [...], "action_space": IntBox(2)}}.')
        if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
            raise RLGraphSpecError("num_steps must be an int >= 1", where=f"{name}(num_steps)",
                                   received=repr(num_steps))
        if max_timesteps is not None and (isinstance(max_timesteps, bool) or
                                          not isinstance(max_timesteps, (int, np.integer)) or max_timesteps < 1):
            raise RLGraphSpecError("max_timesteps must be None or an int >= 1", where=f"{name}(max_timesteps)",
                                   received=repr(max_timesteps))
        if state_space is None or action_space is None:
            probe = maker()
            state_space = probe.state_space if state_space is None else state_space
            action_space = probe.action_space if action_space is None else action_space
            probe.terminate()
        self.environment_spec = environment_spec
        self.environment = environment
        self.state_space = Space.from_spec(state_space).strip_ranks()
        self.action_space = Space.from_spec(action_space).strip_ranks()
        self.num_steps = int(num_steps)
        self.max_timesteps = None if max_timesteps is None else int(max_timesteps)
        self.use_exploration = bool(use_exploration)
        self.add_action_probs = bool(add_action_probs)
        if self.add_action_probs:
            _check_action_probs(self.action_space, action_probs_space, name)

        self.actor_component = actor_component_spec if isinstance(actor_component_spec, ActorComponent) else \
            ActorComponent.from_spec(actor_component_spec)
        network = getattr(self.actor_component.policy, "network", None)
        if getattr(network, "has_rnn", lambda: False)():
            raise RLGraphSpecError("the actor's network is recurrent", where=f"{name}(actor_component_spec)",
                                   hint="the acting API of ActorComponent returns no internal states to carry from "
                                        "step to step; step recurrent policies with a worker instead.")
        self.add_components(self.actor_component)

        self._state_leaves = list(self.state_space.flatten().items())
        self._action_keys = list(self.action_space.flatten().keys())
        self._runner = EnvironmentRunner(maker, self._state_leaves, self._action_keys)
        self.started = None
        self.time_step = None

    def create_variables(self, input_spaces, action_space=None):
        self.started = self.get_variable("started", dtype="bool", initializer=False, trainable=False, local=True)
        self.time_step = self.get_variable("time-step", dtype="int64", initializer=0, trainable=False, local=True)

    def terminate(self) -> None:
        """Closes the environment (a later `step()` makes a new one)."""
        self._runner.close()

    # --- API ------------------------------------------------------------------------------------
    @rlgraph_api(no_grad=True)
    def step(self):
        """`num_steps` steps of the actor in the environment; see the class docstring for the record."""
        state, time_percentage = self._graph_fn_begin()
        states, actions, rewards, terminals, returns, probs, log_probs = [state], [], [], [], [], [], []
        act = self.actor_component
        for t in range(self.num_steps):
            if self.add_action_probs:
                _, action, (_, probabilities, all_log_probs) = act.get_preprocessed_state_action_and_action_probs(
                    state, time_percentage, self.use_exploration)
                probs.append(probabilities)
                log_probs.append(all_log_probs)
            else:
                _, action = act.get_preprocessed_state_and_action(state, time_percentage, self.use_exploration)
            state, reward, terminal, episode_return, time_percentage = self._graph_fn_env_step(action, t + 1)
            for trajectory, value in ((states, state), (actions, action), (rewards, reward),
                                      (terminals, terminal), (returns, episode_return)):
                trajectory.append(value)
        if not self.add_action_probs:
            probs = log_probs = None
        return self._graph_fn_trajectory(states, actions, rewards, terminals, returns, probs, log_probs)

    # --- Graph functions --------------------------------------------------------------------------
    def _begin_spaces(self, *_):
        return self.state_space.with_batch_rank(), FloatBox()

    def _step_spaces(self, *_):
        rows = dict(add_batch_rank=True)
        return (self.state_space.with_batch_rank(), FloatBox(**rows), BoolBox(**rows), FloatBox(**rows), FloatBox())

    def _trajectory_spaces(self, *_):
        rows = dict(add_batch_rank=True)
        spaces = dict(states=self.state_space.with_batch_rank(), actions=self.action_space.with_batch_rank(),
                      rewards=FloatBox(**rows), terminals=BoolBox(**rows), episode_returns=FloatBox(**rows))
        if self.add_action_probs:
            spaces["action_probs"] = FloatBox(shape=(self.action_space.num_categories,), **rows)
            spaces["action_log_probs"] = FloatBox(**rows)
        return spaces

    @graph_fn(returns=2, output_space="_begin_spaces")
    def _graph_fn_begin(self):
        """The state to start from ([1, ...]; a new episode of a new environment unless started) and
        the first step's time percentage."""
        started = self.read_variable(self.started)
        flat = _call_numpy(self._runner.begin, [started], self._state_specs())
        self.assign_variable(self.started, True)
        return self._unflatten_state(flat), self._time_percentage(0)

    @graph_fn(returns=5, output_space="_step_spaces")
    def _graph_fn_env_step(self, action, steps_done):
        """One environment step with `action` ([1, ...]); returns (next state [1, ...], reward [1],
        terminal [1], episode return [1], the next step's time percentage)."""
        specs = self._state_specs() + [(np.float32, (1,)), (np.bool_, (1,)), (np.float32, (1,))]
        out = _call_numpy(self._runner.step, nest.flatten(action), specs)
        n = len(self._state_leaves)
        return (self._unflatten_state(out[:n]), out[n], out[n + 1], out[n + 2],
                self._time_percentage(steps_done))

    @graph_fn(output_space="_trajectory_spaces")
    def _graph_fn_trajectory(self, states, actions, rewards, terminals, episode_returns, action_probs,
                             action_log_probs):
        """The per-step values (lists of [1, ...] rows) concatenated into the trajectory record; counts
        the steps in "time-step"."""
        concat = _concat_tf if get_backend() == "tf" else _concat_torch
        record = dict(states=nest.map_structure(lambda *rows: concat(rows), *states),
                      actions=nest.map_structure(lambda *rows: concat(rows), *actions),
                      rewards=concat(rewards), terminals=concat(terminals), episode_returns=concat(episode_returns))
        if action_probs is not None:
            record["action_probs"] = concat(action_probs)
            record["action_log_probs"] = backend_maths().gather_last(concat(action_log_probs), record["actions"])
        self.assign_variable(self.time_step, self.read_variable(self.time_step) + self.num_steps)
        return record

    # --- Helpers (inside graph functions) ---------------------------------------------------------
    def _state_specs(self) -> list:
        return [(leaf.dtype, (1,) + tuple(leaf.shape)) for _, leaf in self._state_leaves]

    def _unflatten_state(self, flat: list) -> Any:
        return nest.unflatten_op({key: value for (key, _), value in zip(self._state_leaves, flat)})

    def _time_percentage(self, steps_done: int) -> Any:
        """min(1, (time-step + steps_done) / max_timesteps) as a float32 scalar (0.0 without max_timesteps)."""
        if get_backend() == "tf":
            import tensorflow as tf
            if self.max_timesteps is None:
                return tf.constant(0.0)
            steps = tf.cast(self.read_variable(self.time_step) + steps_done, tf.float32)
            return tf.minimum(steps / self.max_timesteps, 1.0)
        import torch
        if self.max_timesteps is None:
            return torch.tensor(0.0)
        steps = (self.read_variable(self.time_step) + steps_done).to(torch.float32)
        return torch.clamp(steps / self.max_timesteps, max=1.0)


# --- Module helpers ------------------------------------------------------------------------------

def _call_numpy(fn, inputs: list, out_specs: list) -> list:
    """fn(*numpy inputs) -> list of numpy outputs, called from a graph function: on TF as a
    `tf.numpy_function` (stateful, so it runs in program order within the `tf.function`), on
    PyTorch directly. `out_specs`: (dtype, shape) per output."""
    if get_backend() == "tf":
        import tensorflow as tf
        outs = tf.numpy_function(fn, list(inputs), [convert_dtype(d, to="tf") for d, _ in out_specs], stateful=True)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]  # (One output comes back bare.)
        for out, (_, shape) in zip(outs, out_specs):
            out.set_shape(shape)
        return list(outs)
    import torch
    arrays = [x.detach().cpu().numpy() if torch.is_tensor(x) else np.asarray(x) for x in inputs]
    # (as_tensor: the env's outputs go to the device whose context the graph function runs under.)
    return [torch.as_tensor(np.asarray(out, dtype=convert_dtype(d))) for out, (d, _) in zip(fn(*arrays), out_specs)]


def _concat_tf(rows):
    import tensorflow as tf
    return tf.concat(list(rows), axis=0)


def _concat_torch(rows):
    import torch
    return torch.cat(list(rows), dim=0)


def _check_action_probs(action_space: Space, action_probs_space: Any, name: str) -> None:
    if not isinstance(action_space, IntBox) or action_space.shape != ():
        raise RLGraphSpecError("add_action_probs needs a single discrete action", where=f"{name}(add_action_probs)",
                               expected="action_space IntBox(n)", received=action_space)
    if action_probs_space is not None:
        space = Space.from_spec(action_probs_space)
        if not isinstance(space, FloatBox) or tuple(space.shape) != (action_space.num_categories,):
            raise RLGraphSpecError("action_probs_space does not fit the action space",
                                   where=f"{name}(action_probs_space)",
                                   expected=f"FloatBox(shape=({action_space.num_categories},))", received=space)
