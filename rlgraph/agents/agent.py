"""`Agent`: the python front end of an algorithm; it owns a root component and its executor."""
from __future__ import annotations

import abc
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from rlgraph.agents.agent_acting import AgentActing
from rlgraph.agents.agent_checkpoints import AgentCheckpoints
from rlgraph.agents.agent_observing import AgentObserving
from rlgraph.agents.observe_buffers import ObserveBuffers
from rlgraph.agents.original_keys import translate_original_keys, warn_original_keys
from rlgraph.agents.reward_scaling import RewardScaler
from rlgraph.agents.specs import (EXECUTION_SPEC_DEFAULTS, OBSERVE_SPEC_DEFAULTS, SAVER_SPEC_DEFAULTS,
                                  NAN_CHECK_MODES, SUMMARY_SPEC_DEFAULTS, UPDATE_SPEC_DEFAULTS, check_bool, check_choice,
                                  check_dict, check_execution_spec, check_number, check_observe_spec, check_saver_spec,
                                  check_spec, check_string_keys, check_summary_spec, check_time_percentage,
                                  check_update_spec)
from rlgraph.backend_system import get_backend, normalize_backend
from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import Specifiable, load_spec_file

logger = logging.getLogger(__name__)

# Sections a config file may hold for the tools that run an agent (`rlgraph train`); the
# agent itself ignores them. "about" is documentation (a JSON object: where the config comes
# from, e.g. the configs/zoo/ files' source and deviations); nothing reads it to run.
RUN_SECTIONS = ("environment_spec", "training_spec", "about")


class Agent(AgentCheckpoints, AgentActing, AgentObserving, Specifiable, metaclass=abc.ABCMeta):
    """The base of all agents: parses the specs, builds the root component, serves the API.

    Subclasses create their root component in `_create_root()` and implement `update` and
    `_observe_graph`. Everything in the hot paths (`get_action`, `observe`, `update`) is one
    executor call plus numpy bookkeeping.

    Args:
        state_space: The environment's state space (without batch rank; a Space or spec).
        action_space: The environment's action space (without batch rank).
        discount: gamma.
        preprocessing_spec: A list of preprocessor specs (a `PreprocessorStack`), applied to
            every state before the policy (None: none).
        network_spec: The policy network (a list of layer specs, a `NeuralNetwork` or its spec).
        internal_states_space: The space of the internal (RNN) states, if the network has any.
        policy_spec: Extra `Policy` arguments (e.g. {"type": "dueling-policy", ...}).
        action_adapter_spec: The action adapter spec handed to the policy.
        exploration_spec: The `Exploration` spec (epsilon schedule, noise).
        execution_spec: {"seed", "torch_num_threads", "tf_num_threads", "max_timesteps", "mode",
            "torch_flush_denormal", "tf_trace_at_build", "device", ...}; max_timesteps are the env steps over
            which time_percentage goes from 0 to 1 (schedules); torch_flush_denormal (default
            True) runs each PyTorch API call with flush-to-zero for subnormal floats (off again
            after the call); tf_trace_at_build (default False) traces every TF API method at
            build instead of at its first call; device ("auto", "cpu", "cuda", "cuda:N") is where
            the variables live and the API methods run (`rlgraph/utils/devices.py`); compile
            (default False) compiles root API methods with torch.compile / XLA
            (`rlgraph/utils/compile_spec.py`).
            The original RLgraph's TF1 keys (session_config, gpu_spec, ...) are mapped or ignored
            with one warning (see `rlgraph/agents/original_keys.py`); so are its summary_spec and
            saver_spec keys save_steps, save_secs and checkpoint_basename.
        optimizer_spec: The optimizer spec (e.g. {"type": "adam", "learning_rate": 1e-3}).
        observe_spec: {"buffer_enabled", "buffer_size"}.
        update_spec: {"do_updates", "update_mode", "update_interval", "steps_before_update",
            "batch_size", "sync_interval", "sync_tau", "update_steps"}; false (the original
            RLgraph's form) is {"do_updates": false}: workers never call `update`.
        summary_spec: {"directory", "summary_interval", "summary_regexp"}: the TensorBoard
            directory and scalar spacing of `rlgraph train`; the regexp selects the components'
            summaries (the graph builder applies it).
        saver_spec: {"directory", "checkpoint_frequency", "max_checkpoints", "save_replay"}: the
            default path of `store_model`/`load_model`; the periodic checkpoints of `rlgraph train`
            and how many of them it keeps; whether checkpoints hold the replay memories' contents
            (default true). Valid ranges of all these keys: docs/agents.md.
        auto_build: Build the graph in the constructor (else call `build()`).
        name: The agent's name (also the root component's scope).
        backend: "tf" or "pytorch" (default: `rlgraph.get_backend()`).
    """

    # Run sections (RUN_SECTIONS) that this agent's constructor takes itself (IMPALA: environment_spec).
    config_sections: Tuple[str, ...] = ()
    # update_spec keys of this algorithm beyond `UPDATE_SPEC_DEFAULTS`, with their defaults (e.g.
    # PPO's "num_epochs"); the subclass checks their values.
    update_spec_defaults: Dict[str, Any] = {}
    # The update modes the agent knows (see `check_update_spec`).
    update_modes: Tuple[str, ...] = ("time_steps",)
    # Root APIs for greedy acting, (from preprocessed states, from raw states), or None: then
    # `get_action(use_exploration=False)` calls "get_actions" with use_exploration False.
    greedy_apis: Optional[Tuple[str, str]] = None
    # Notes on agent-level keys of the original RLgraph that a subclass translated before calling
    # `Agent.__init__` (they join the agent's one warning, see original_keys.py); None: no such
    # warning at all (IMPALA actors: copies of a learner that has warned already).
    original_key_notes: Optional[Tuple[str, ...]] = ()

    def __init__(self, state_space: Any = None, action_space: Any = None, discount: float = 0.98, preprocessing_spec: Any = None,
                 network_spec: Any = None, internal_states_space: Any = None, policy_spec: Optional[dict] = None,
                 action_adapter_spec: Optional[dict] = None, exploration_spec: Optional[dict] = None,
                 execution_spec: Optional[dict] = None, optimizer_spec: Optional[dict] = None,
                 observe_spec: Optional[dict] = None, update_spec: Optional[dict] = None,
                 summary_spec: Optional[dict] = None, saver_spec: Optional[dict] = None, auto_build: bool = True,
                 name: str = "agent", backend: Optional[str] = None):
        owner = type(self).__name__
        if state_space is None or action_space is None:
            missing = [n for n, s in (("state_space", state_space), ("action_space", action_space)) if s is None]
            raise RLGraphSpecError(f"missing {' and '.join(missing)}", where=owner,
                                   hint="pass the environment's spaces, e.g. state_space=env.state_space.")
        self.name = name
        self.backend = normalize_backend(backend) if backend is not None else get_backend()
        self.state_space = Space.from_spec(state_space).strip_ranks()
        self.action_space = Space.from_spec(action_space).strip_ranks()
        self.discount = check_number(discount, "discount", owner, 0, 1)
        if preprocessing_spec is not None and not isinstance(preprocessing_spec, (list, tuple)):
            raise RLGraphSpecError("preprocessing_spec must be a list of preprocessor specs (or null)",
                                   where=f"{owner}(preprocessing_spec)", received=repr(preprocessing_spec)[:80],
                                   hint='e.g. [{"type": "reshape", "flatten": true}].')
        self.preprocessing_spec = list(preprocessing_spec or [])
        self.network_spec = network_spec
        self.internal_states_space = Space.from_spec(internal_states_space) if internal_states_space else None
        self.policy_spec = check_dict(policy_spec, "policy_spec", owner)
        self.action_adapter_spec = None if action_adapter_spec is None else \
            check_dict(action_adapter_spec, "action_adapter_spec", owner)
        self.exploration_spec = exploration_spec
        self.optimizer_spec = optimizer_spec or {"type": "adam", "learning_rate": 1e-3}
        # The original RLgraph's keys mapped or dropped (one warning, after the checks), then keys
        # (unknown ones are refused), then values (types and ranges; see specs.py).
        given = dict(execution_spec=execution_spec, summary_spec=summary_spec, saver_spec=saver_spec,
                     update_spec=update_spec)
        original, original_notes = translate_original_keys(given, owner)
        # `from_spec` keeps these in `self.spec`, so that replicas made from it do not warn again.
        self._translated_specs = {k: v for k, v in original.items() if v is not given[k]}
        execution_spec, summary_spec, saver_spec, update_spec = (
            original[k] for k in ("execution_spec", "summary_spec", "saver_spec", "update_spec"))
        self.execution_spec = check_execution_spec(
            check_spec(execution_spec, EXECUTION_SPEC_DEFAULTS, "execution_spec", owner), owner)
        self.observe_spec = check_observe_spec(check_spec(observe_spec, OBSERVE_SPEC_DEFAULTS, "observe_spec", owner),
                                               owner)
        update_defaults = {**UPDATE_SPEC_DEFAULTS, **self.update_spec_defaults}
        self.update_spec = check_update_spec(check_spec(update_spec, update_defaults, "update_spec", owner), owner,
                                             self.update_modes)
        self.summary_spec = check_summary_spec(check_spec(summary_spec, SUMMARY_SPEC_DEFAULTS, "summary_spec", owner),
                                               owner)
        self.saver_spec = check_saver_spec(check_spec(saver_spec, SAVER_SPEC_DEFAULTS, "saver_spec", owner), owner)
        check_choice(self.execution_spec["nan_check"], NAN_CHECK_MODES, "execution_spec.nan_check", owner)
        self.max_timesteps = self.execution_spec["max_timesteps"]
        if self.original_key_notes is not None:
            warn_original_keys(list(self.original_key_notes) + original_notes, owner, name)

        # Counters: env steps observed, updates done, env steps at the last target sync.
        self.timesteps = 0
        self.num_updates = 0
        self.last_sync_timestep = 0
        self.buffers = ObserveBuffers(self.observe_spec["buffer_size"] if self.observe_spec["buffer_enabled"] else 1,
                                      n_step=self._n_step(), discount=self.discount)
        self.reward_scaler = RewardScaler.from_spec(self.observe_spec["normalize_rewards"], owner)
        self._warned_time = False
        self._leaf_ranks: Dict[int, int] = {}  # id(space) -> rank of its first leaf (see `_batch`).
        self.root_component = None
        self.input_spaces: Dict[str, Any] = {}
        self.graph_executor = None
        self.build_stats = None
        self.spec: Optional[dict] = None  # Set by `from_spec`: the spec (without spaces), e.g. to make replicas.
        self._create_root()
        self._check_sde_support(owner)
        if check_bool(auto_build, "auto_build", owner):
            self.build()

    # --- Construction ---------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> "Agent":
        """Creates an agent from a dict, a JSON or YAML file, or keyword arguments.

        `state_space`, `action_space` and `backend` given as keyword arguments override the
        spec. The config sections "environment_spec" and "training_spec" (read by `rlgraph
        train`) are ignored here; any other unknown key is an error that lists the valid keys.

        Raises:
            RLGraphSpecError: For a config that is not a mapping (a file holding null, a number, a
                list or a string; None without keyword arguments), or an invalid spec.
        """
        where = "Agent.from_spec"
        if isinstance(spec, str) and os.path.splitext(spec)[1].lower() in (".json", ".yaml", ".yml"):
            where, spec = f"Agent.from_spec({spec!r})", load_spec_file(spec)
            is_config = isinstance(spec, dict)
        else:
            is_config = isinstance(spec, (dict, str, Agent, type)) or (spec is None and bool(kwargs))
        if not is_config:
            raise RLGraphSpecError("an agent config must be a mapping", where=where,
                                   expected='a dict (JSON object, YAML mapping) such as {"type": "dqn", ...}',
                                   received=repr(spec)[:80])
        if isinstance(spec, dict):
            check_string_keys(spec, "config", where)
            target = cls.resolve_type(spec["type"]) if "type" in spec else cls
            kept = getattr(target, "config_sections", ()) if isinstance(target, type) else ()
            spec = {k: v for k, v in spec.items() if k not in RUN_SECTIONS or k in kept}
            kwargs = {**spec, **kwargs}
            spec = None
        agent = super().from_spec(spec, **kwargs)
        if isinstance(agent, Agent):
            agent.spec = {k: agent._translated_specs.get(k, v) for k, v in kwargs.items()
                          if k not in ("state_space", "action_space", "backend")}
        return agent

    def _n_step(self) -> int:
        return 1

    # Whether the agent draws gSDE exploration noise anew (`ActionAdapter(use_sde=True)`): agents that
    # do not would explore with one noise draw forever, so they refuse such a policy.
    supports_sde = False

    def _check_sde_support(self, owner: str) -> None:
        if self.supports_sde or self.root_component is None:
            return
        if any(getattr(c, "use_sde", False) for c in self.root_component.get_all_sub_components()):
            raise RLGraphSpecError("gSDE exploration (use_sde) is for the PPO, actor-critic and SAC agents",
                                   where=f"{owner}(action_adapter_spec.use_sde)", received=type(self).__name__,
                                   hint="remove use_sde, or use type \"ppo\", \"actor-critic\" or \"sac\".")

    @abc.abstractmethod
    def _create_root(self) -> None:
        """Creates `self.root_component` and `self.input_spaces` (API argument name -> space)."""

    def build(self, build_options: Optional[dict] = None) -> Any:
        """Builds the root component on the agent's backend (once; `auto_build=False` defers it).

        Returns:
            The build statistics (`total_build_time`, `build_overhead`, ...).
        """
        if self.graph_executor is not None:
            raise RLGraphError("the agent is already built", where=self.name)
        from rlgraph.graphs import GraphBuilder, GraphExecutor
        options = dict(build_options or {})
        options.setdefault("summary_spec", {"summary_regexp": self.summary_spec["summary_regexp"]})
        builder = GraphBuilder(action_space=self.action_space, **options)
        executor_keys = ("seed", "torch_num_threads", "tf_num_threads", "torch_flush_denormal", "tf_trace_at_build",
                         "device", "device_map", "compile")
        executor_spec = {k: v for k, v in self.execution_spec.items() if k in executor_keys and v is not None}
        self.graph_executor = GraphExecutor.from_spec(self.backend, graph_builder=builder,
                                                      execution_spec=executor_spec)
        self.build_stats = self.graph_executor.build([self.root_component], self.input_spaces)
        return self.build_stats

    def _executor(self):
        if self.graph_executor is None:
            raise RLGraphError("the agent is not built yet", where=self.name, hint="call agent.build() first.")
        return self.graph_executor

    # --- Time -----------------------------------------------------------------------------------
    def time_percentage(self) -> float:
        """timesteps / max_timesteps in [0, 1] (0 with a warning when max_timesteps is unset)."""
        if not self.max_timesteps:
            if not self._warned_time:
                logger.warning("%s: execution_spec.max_timesteps is not set; schedules stay at their start "
                               "value (time_percentage 0). Workers set it from their step count.", self.name)
                self._warned_time = True
            return 0.0
        return min(1.0, self.timesteps / float(self.max_timesteps))

    def _time_percentage_arg(self, time_percentage: Any, method: str) -> np.float32:
        """An API method's `time_percentage` argument (None: `time_percentage()`) as float32.

        Raises:
            RLGraphSpecError: For anything but a finite real number, naming `<agent>.<method>(time_percentage)`.
        """
        if time_percentage is None:
            return np.float32(self.time_percentage())
        return check_time_percentage(time_percentage, f"{self.name}.{method}(time_percentage)")

    # --- Training scalars -----------------------------------------------------------------------
    # Fields of the named tuple `update` returns -> the tags `training_scalars` gives them (e.g.
    # PPO's {"policy_loss": "loss/policy"}); the last update's tuple is kept in `last_losses`.
    loss_scalar_tags: Dict[str, str] = {}

    def training_scalars(self) -> Dict[str, float]:
        """What `rlgraph train` writes to TensorBoard (and loggers) about the agent, tag -> float:
        "train/num_updates", "train/time_percentage", epsilon ("explore/epsilon") and learning
        rates ("train/learning_rate") at the current time percentage, and the component losses
        of the last update (`loss_scalar_tags`).

        Built from counters, schedules read in numpy and what the last update returned: no
        executor call here (a subclass may add one, see `DQNAgent.training_scalars`), nothing added
        to `get_action`, `observe` or `update`.
        """
        from rlgraph.agents.training_scalars import loss_scalars, schedule_readers
        if getattr(self, "_schedule_readers", None) is None:
            self._schedule_readers = schedule_readers(self.root_component)
        t = self.time_percentage()
        scalars = {"train/num_updates": float(self.num_updates), "train/time_percentage": t}
        scalars.update((tag, float(read(t))) for tag, read in self._schedule_readers)
        if self.loss_scalar_tags and getattr(self, "last_losses", None) is not None:
            scalars.update(loss_scalars(self.last_losses, self.loss_scalar_tags))
        return scalars

    # Acting (`get_action`, `preprocess_states`): `AgentActing` in agent_acting.py. Observing
    # (`observe`, the buffers, `import_observations`): `AgentObserving` in agent_observing.py.

    # --- Updating -------------------------------------------------------------------------------
    def ready_to_update(self) -> bool:
        """Whether `update()` (from the agent's own data) can run now; workers ask before each
        update round. Agents with a memory say whether it holds a batch; on-policy agents whether
        their rollout is complete."""
        return True

    @abc.abstractmethod
    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> Any:
        """One update from the memory (batch None) or from an external batch; returns the loss(es)."""

    @abc.abstractmethod
    def _observe_graph(self, records: dict) -> None:
        """Writes a record of (n-step) transitions into the agent's memory.

        Args:
            records: {"states" (preprocessed), "actions", "rewards" float32, "terminals" bool,
                "next_states"}, each batched [B, ...] (see `rlgraph/agents/records.py`).
        """

    # --- Misc API -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Called at episode starts: resets stateful preprocessors (and exploration noise)."""

    def call_api_method(self, op: str, inputs: Any = None, return_ops: Any = None) -> Any:
        """Calls any root API method by name (see `GraphExecutor.execute`)."""
        return self._executor().execute((op, inputs, return_ops))

    def get_weights(self, names: Optional[List[str]] = None) -> Dict[str, np.ndarray]:
        """The policy's weights (global variable name -> numpy array), or those named."""
        executor = self._executor()
        if names is not None:
            return executor.get_weights(names)
        scope = self.policy_scope() + "/"
        return {k: v for k, v in executor.get_weights().items() if k.startswith(scope)}

    def set_weights(self, weights: Dict[str, Any], rate: float = 1.0) -> None:
        """Writes weights (as `get_weights` returns them); rate < 1 blends them in (soft update)."""
        self._executor().set_weights(weights, rate)

    get_policy_weights = get_weights
    set_policy_weights = set_weights

    def policy_scope(self) -> str:
        """The global scope of the agent's (online) policy."""
        return self.root_component.policy.global_scope

    def export_graph(self, filename: Optional[str] = None, format: Optional[str] = None) -> str:  # noqa: A002
        """Exports the whole root component (TF: a SavedModel; PyTorch: only the legacy pickled
        module, `format="pickled-module"`). To deploy a policy, use `export_policy`."""
        if filename is None:
            directory = self.saver_spec["directory"] or "."
            filename = os.path.join(directory, f"{self.name}-export")
        return self._executor().export_graph(filename, format)

    def greedy_policy_graph(self, preprocessing: bool = True) -> Tuple[str, Any]:
        """What `export_policy` exports: the root API method that computes the greedy actions (from
        raw states if `preprocessing`, else from preprocessed ones) and a function that picks the
        actions out of its outputs (it runs inside the backend's graph).

        Raises:
            RLGraphExportError: If the agent has no greedy acting API method.
        """
        if self.greedy_apis is None:
            from rlgraph.utils.rlgraph_errors import RLGraphExportError
            raise RLGraphExportError(f"{type(self).__name__} has no greedy acting API method to export",
                                     where=f"{self.name}.export_policy")
        return self.greedy_apis[bool(preprocessing)], _second

    def export_policy(self, path: str, format: str = "torchscript", preprocessing: bool = True) -> str:  # noqa: A002
        """Writes the greedy policy (preprocessing, network, action selection) as a file that runs
        without rlgraph: "torchscript" (`torch.jit.load`), "onnx" (onnxruntime) or "savedmodel"
        (`tf.saved_model.load`), from either backend. The export is loaded and checked against
        `get_action(use_exploration=False)` before it is put in place (see
        `rlgraph.agents.policy_export`).

        Args:
            path: The file (TorchScript, ONNX) or directory (SavedModel) to write.
            format: "torchscript", "onnx" or "savedmodel".
            preprocessing: False exports the policy on preprocessed states (required for a
                preprocessor that keeps state between calls).

        Returns:
            The path written.
        """
        from rlgraph.agents.policy_export import export_policy
        return export_policy(self, path, format, preprocessing)

    def terminate(self) -> None:
        """Releases the executor; the agent cannot be used afterwards."""
        if self.graph_executor is not None:
            self.graph_executor.terminate()
        self.graph_executor = None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, backend={self.backend!r}, "
                f"state_space={self.state_space}, action_space={self.action_space})")

def _second(outputs: Any) -> Any:
    """The actions of a greedy API method returning (preprocessed states, actions)."""
    return outputs[1]
