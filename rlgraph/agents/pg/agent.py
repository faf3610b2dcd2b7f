"""`PolicyGradientAgent`: the on-policy base of PPO and actor-critic (rollout collection, GAE, updates)."""
from __future__ import annotations

import abc
import logging
from collections import namedtuple
from typing import Any, List, Optional

import numpy as np

from rlgraph.agents.agent import Agent
from rlgraph.agents.pg.core import PG_BATCH_KEYS, PolicyGradientCore, pg_batch_space
from rlgraph.agents.pg.rollouts import RolloutStorage, gae_advantages, read_rollout, save_rollout
from rlgraph.agents.sde_schedule import SDEScheduleMixin
from rlgraph.agents.specs import check_bool, check_number
from rlgraph.components.common.time_dependent_parameters import TimeDependentParameter
from rlgraph.components.component import Component
from rlgraph.components.neural_networks.value_function import ValueFunction
from rlgraph.components.policies.policy import Policy
from rlgraph.utils.devices import check_host_memory_device
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import construct

logger = logging.getLogger(__name__)

# What `update()` returns; index 0 is the loss and 1 the loss per item, as for every agent.
PGUpdate = namedtuple("PGUpdate", ["loss", "loss_per_item", "policy_loss", "value_loss", "entropy"])
MEMORY_TYPES = ("ring-buffer", "ringbuffer", "ring_buffer", "rollout", "RingBuffer")


class PolicyGradientAgent(SDEScheduleMixin, Agent):
    """Collects on-policy rollouts through `observe`, then learns from them in `update()`.

    Transitions go through the observe buffers (per `env_id`) into a `RolloutStorage`. An update
    round (`update()`, called by the worker when `ready_to_update()`):

        1. log mu(a_t|s_t), v(s_t), v(s_{t+1}) of every stored transition in one executor call
           (the weights that acted: nothing changes them between collection and update);
        2. advantages A_t by GAE over each env's time-ordered fragments (`rollouts.gae_advantages`),
           value targets G_t = A_t + v(s_t); a truncated episode bootstraps from its final state;
        3. the algorithm's gradient steps (`_learn`), then the storage is emptied.

    The last transition of each env in a worker step is observed after the next action has been
    chosen, so it joins the next rollout; its log mu is taken with the weights of the next update
    (one transition per env per rollout lags one update).

    Args:
        discount: gamma.
        gae_lambda: lambda of GAE in [0, 1] (1: discounted returns minus values).
        clip_rewards: Clip rewards to [-clip_rewards, clip_rewards] for learning (0: no clipping).
        standardize_advantages: Scale the advantages to mean 0 and standard deviation 1 (per
            minibatch for PPO, per batch for actor-critic).
        sample_episodes: Update after `update_spec.batch_size` finished episodes instead of env steps
            (as `update_spec.update_mode` "episodes"); every transition collected is used.
        weight_entropy: Weight of the entropy bonus: a number or a schedule (e.g. ["linear", 0.01, 0.0]).
        weight_vf: Weight of the value loss in the one-optimizer loss (default 0.5).
        value_function_spec: The baseline's own network (a list of layer specs); None: a value
            head on the policy's network.
        value_function_optimizer_spec: A second optimizer for the baseline's own network
            (needs `value_function_spec`); None: one optimizer on the summed loss.
        memory_spec: {"type": "ring-buffer", "capacity": N}: a rollout keeps its newest N
            transitions (default: no bound); older ones are dropped with a warning, and a capacity
            below `update_spec.batch_size` is accepted with a warning (the original RLgraph's
            configs use one); other memory types are refused.
        **kwargs: `Agent` arguments.
    """

    greedy_apis = ("get_greedy_actions_from_preprocessed_states", "get_greedy_actions")
    loss_scalar_tags = {"policy_loss": "loss/policy", "value_loss": "loss/value", "entropy": "train/entropy"}
    update_modes = ("time_steps", "episodes")
    loss_kind = "ppo"
    # The weight of the policy-gradient term in the loss itself (A2C's `weight_pg`), so that
    # standardized advantages and `get_batch_losses` keep it.
    weight_pg = 1.0

    def __init__(self, discount: float = 0.99, gae_lambda: float = 0.95, clip_rewards: float = 0.0,
                 standardize_advantages: bool = False, sample_episodes: bool = False, weight_entropy: Any = 0.0,
                 weight_vf: Optional[float] = None, value_function_spec: Any = None,
                 value_function_optimizer_spec: Optional[dict] = None, memory_spec: Optional[dict] = None,
                 **kwargs):
        owner = type(self).__name__
        self.gae_lambda = check_number(gae_lambda, "gae_lambda", owner, 0, 1)
        self.clip_rewards = check_number(clip_rewards, "clip_rewards", owner, low=0)
        self.standardize_advantages = check_bool(standardize_advantages, "standardize_advantages", owner)
        self.sample_episodes = check_bool(sample_episodes, "sample_episodes", owner)
        self.weight_entropy = TimeDependentParameter.from_spec(weight_entropy if weight_entropy is not None else 0.0,
                                                                scope="weight-entropy")
        # (A schedule runs monotonically from its start to its end value: both ends bound it.)
        if min(self.weight_entropy.value_at(0.0), self.weight_entropy.value_at(1.0)) < 0:
            raise RLGraphSpecError("weight_entropy must stay >= 0 (a weight of the entropy bonus)",
                                   where=f"{owner}(weight_entropy)", received=repr(weight_entropy),
                                   hint="e.g. 0.01 or [\"linear\", 0.01, 0.0]; 0 switches the bonus off.")
        self.weight_vf = check_number(0.5 if weight_vf is None else weight_vf, "weight_vf", owner, low=0)
        self.value_function_spec = value_function_spec
        self.value_function_optimizer_spec = value_function_optimizer_spec
        if value_function_optimizer_spec is not None and value_function_spec is None:
            raise RLGraphSpecError("a value-function optimizer needs a value network of its own",
                                   where=f"{owner}(value_function_optimizer_spec)",
                                   hint="give value_function_spec too, or leave the second optimizer out.")
        self.rollout_capacity = _rollout_capacity(memory_spec, owner)
        self.num_gradient_steps = 0
        given = kwargs.get("update_spec")
        unused = sorted(k for k in ("sync_interval", "sync_tau") if isinstance(given, dict) and k in given)
        if unused:
            raise RLGraphSpecError(f"update_spec {unused} do not apply: on-policy agents have no target network",
                                   where=f"{owner}(update_spec)", received=unused, hint="remove the key(s).")
        super().__init__(discount=discount, **kwargs)
        if self.sample_episodes:
            self.update_spec["update_mode"] = "episodes"
        if self.rollout_capacity is not None and self.update_spec["update_mode"] == "time_steps" and \
                self.rollout_capacity < self.update_spec["batch_size"]:
            # The original RLgraph's configs do this (a ring buffer smaller than the batch): as there,
            # each update learns from the newest `capacity` transitions of the rollout.
            logger.warning("%s: memory_spec.capacity (%d) is smaller than update_spec.batch_size (%d): each update "
                           "learns from the newest %d transitions of its %d-step rollout.", owner,
                           self.rollout_capacity, self.update_spec["batch_size"], self.rollout_capacity,
                           self.update_spec["batch_size"])
        self.rollouts = RolloutStorage(self.rollout_capacity, f"{self.name}.observe")
        self._init_sde_schedule()  # gSDE (`action_adapter_spec.use_sde`), see `sde_schedule.py`.
        seed = self.execution_spec["seed"]
        self.rng = np.random.RandomState(seed)  # Minibatch order.

    # --- Construction ---------------------------------------------------------------------------
    def _create_root(self) -> None:
        if self.network_spec is None and "network_spec" not in self.policy_spec:
            raise RLGraphSpecError("no network_spec", where=f"{self.name}(network_spec)",
                                   hint='give e.g. [{"type": "dense", "units": 64, "activation": "tanh"}].')
        spec = dict(self.policy_spec)
        spec.setdefault("network_spec", self.network_spec)
        spec.setdefault("action_space", self.action_space)
        if self.action_adapter_spec is not None:
            spec.setdefault("action_adapter_spec", self.action_adapter_spec)
        spec["max_likelihood"] = False
        shared = self.value_function_spec is None
        spec.setdefault("type", "shared-value-function-policy" if shared else "policy")
        spec.setdefault("scope", "policy")
        policy = Policy.from_spec(spec)
        if shared and not hasattr(policy, "get_state_values"):
            raise RLGraphSpecError("without value_function_spec the policy must have a value head",
                                   where=f"{self.name}(policy_spec)", received=spec["type"],
                                   hint='use "shared-value-function-policy" or give value_function_spec.')
        value_function = None if shared else _value_function(self.value_function_spec, self.name)
        optimizer = Component.from_spec(self.optimizer_spec)
        vf_optimizer = None
        if self.value_function_optimizer_spec is not None:
            vf_optimizer = Component.from_spec(dict(self.value_function_optimizer_spec,
                                                    scope="value-function-optimizer"))
        self.root_component = PolicyGradientCore(
            policy, value_function, self.preprocessing_spec, optimizer, vf_optimizer, loss=self.loss_kind,
            value_function_clipping=self._value_function_clipping(), weight_vf=self.weight_vf,
            weight_pg=self.weight_pg, scope=self.name)
        self.preprocessed_state_space = self.root_component.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        self.input_spaces = dict(
            states=self.state_space.with_batch_rank(),
            preprocessed_states=self.preprocessed_state_space.with_batch_rank(),
            next_states=self.preprocessed_state_space.with_batch_rank(),
            actions=self.action_space.with_batch_rank(),
            batch=pg_batch_space(self.preprocessed_state_space, self.action_space),
            time_percentage=float, use_exploration=bool, clip_ratio=float, weight_entropy=float)

    def _value_function_clipping(self) -> Optional[float]:
        return None

    # --- Observing ------------------------------------------------------------------------------
    def _observe_graph(self, records: dict) -> None:
        self.rollouts.add(records)

    def observe(self, preprocessed_states: Any, actions: Any, internals: Any, rewards: Any, next_states: Any,
                terminals: Any, env_id: Any = None, truncated: Any = False) -> None:
        super().observe(preprocessed_states, actions, internals, rewards, next_states, terminals, env_id, truncated)
        # (Checked by `Agent.observe` before this point: nothing is counted for refused data.)
        ended = int(np.sum(np.asarray(terminals, bool)))
        if bool(truncated) and not bool(np.asarray(terminals, bool).reshape(-1)[-1]):
            ended += 1
        self.rollouts.episodes += ended

    def memory_size(self) -> int:
        """The number of transitions in the rollout (those still in the observe buffers not counted)."""
        return self.rollouts.rows

    def ready_to_update(self) -> bool:
        """Whether the rollout holds `update_spec.batch_size` env steps (update mode "time_steps") or
        finished episodes ("episodes", `sample_episodes`)."""
        if self.update_spec["update_mode"] == "episodes":
            return self.rollouts.episodes >= self.update_spec["batch_size"]
        return self.rollouts.observed + self.buffers.pending() >= self.update_spec["batch_size"]

    # --- Updating -------------------------------------------------------------------------------
    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> PGUpdate:
        """One update round on the collected rollout (or on `batch`).

        Args:
            batch: None: the transitions observed since the last update (buffers included).
                Else a dict with "states" (preprocessed), "actions", "rewards", "terminals",
                "next_states" (one time-ordered fragment of one environment; its last step
                bootstraps from its next state unless terminal).
            time_percentage: Overrides `time_percentage()` (schedules).

        Returns:
            PGUpdate(loss, loss_per_item [B], policy_loss, value_loss, entropy): means over the
            round's gradient steps; loss_per_item from each item's first step.

        Raises:
            RLGraphError: If there is nothing to learn from, or `batch` is not a record.
            RLGraphNonFiniteError: If a loss is NaN or inf (with `execution_spec.nan_check` "raise").
        """
        tp = self._time_percentage_arg(time_percentage, "update")
        if batch is None:
            self.flush_buffers()
            fragments = self.rollouts.take()
        else:
            from rlgraph.agents.records import to_record
            fragments = [to_record(batch, f"{self.name}.update(batch)", checks=self._data_checks)]
        if not fragments:
            raise RLGraphError("no transitions to learn from", where=f"{self.name}.update",
                               hint="observe transitions first (the worker calls update() when "
                                    "ready_to_update() is true).")
        learn_batch = self.make_batch(fragments)
        out = self._learn(learn_batch, tp)
        self.num_updates += 1
        self._new_sde_rollout()
        self._check_loss(out.loss, "update")
        self.last_losses = out
        return out

    def make_batch(self, fragments: List[dict]) -> dict:
        """The update batch (`PG_BATCH_KEYS`) of time-ordered fragments: log mu, values, GAE."""
        records = _concat(fragments)
        ends = np.zeros(len(records["rewards"]), bool)
        ends[np.cumsum([len(f["rewards"]) for f in fragments]) - 1] = True
        log_mu, values, next_values = self._executor().execute(
            ("evaluate_transitions", [records["states"], records["actions"], records["next_states"]]))
        rewards = records["rewards"]
        if self.clip_rewards > 0:
            rewards = np.clip(rewards, -self.clip_rewards, self.clip_rewards)
        advantages = gae_advantages(rewards, values, next_values, records["terminals"], ends, self.discount,
                                    self.gae_lambda)
        return {"states": records["states"], "actions": records["actions"], "log_probs": log_mu,
                "values": values, "advantages": advantages, "value_targets": advantages + values}

    @abc.abstractmethod
    def _learn(self, batch: dict, time_percentage: np.float32) -> PGUpdate:
        """The algorithm's gradient steps on a batch (see `PG_BATCH_KEYS`)."""

    def _step(self, batch: dict, time_percentage: np.float32, clip_ratio: float) -> tuple:
        """One optimizer step on `batch`: (loss, loss_per_item, policy_loss, value_loss, entropy)."""
        if self.standardize_advantages:
            batch = dict(batch, advantages=_standardize(batch["advantages"]))
        weight_entropy = np.float32(self.weight_entropy.value_at(time_percentage))
        out = self._executor().execute(("update_from_batch", [batch, time_percentage, np.float32(clip_ratio),
                                                              weight_entropy]))
        self.num_gradient_steps += 1
        return out

    def get_batch_losses(self, batch: dict, clip_ratio: float = 0.2, time_percentage: Optional[float] = None) -> PGUpdate:
        """The losses of an update batch (`PG_BATCH_KEYS`, e.g. from `make_batch`) without a step,
        with the schedules at `time_percentage` (None: now, `time_percentage()`)."""
        time_percentage = self._time_percentage_arg(time_percentage, "get_batch_losses")
        weight_entropy = np.float32(self.weight_entropy.value_at(time_percentage))
        out = self._executor().execute(("get_batch_losses", [batch, np.float32(clip_ratio), weight_entropy]))
        return PGUpdate(*out)

    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        """`Agent.get_action`; with gSDE, exploring calls draw new noise on the schedule of
        `sde_schedule.py`."""
        if use_exploration:
            self._count_sde_step()
        return super().get_action(states, internals, use_exploration, apply_preprocessing, extra_returns,
                                  time_percentage)

    def get_state_values(self, states: Any, apply_preprocessing: bool = True) -> np.ndarray:
        """V(s) of one state or a batch [B]."""
        if apply_preprocessing:
            states = self.preprocess_states(states)
        batch, single = self._batch(states, self.preprocessed_state_space)
        values = self._executor().execute(("get_state_values", [batch]))
        return values[0] if single else values

    def reset(self) -> None:
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")

    # --- Checkpoints: the rollout since the last update and the minibatch generator go along ----
    def _save_files(self, directory: str, save_replay: bool = True) -> None:
        save_rollout(directory, self.rollouts, self.rng, self.num_gradient_steps)

    def _check_files(self, files: Any) -> Any:
        return read_rollout(files, self, f"{type(self).__name__}.load_model")

    def _load_files(self, checked: Any) -> None:
        fragments, episodes, rng_state, self.num_gradient_steps, observed, dropped = checked
        self.rng.set_state(rng_state)
        self.rollouts.take()
        for fragment in fragments:
            self.rollouts.add(fragment)
        self.rollouts.episodes = episodes
        self.rollouts.observed, self.rollouts.dropped = observed, dropped


def _rollout_capacity(memory_spec: Optional[dict], owner: str) -> Optional[int]:
    if memory_spec is None:
        return None
    if not isinstance(memory_spec, dict):
        raise RLGraphSpecError("memory_spec must be a dict", where=f"{owner}(memory_spec)",
                               expected='{"type": "ring-buffer", "capacity": N}', received=repr(memory_spec))
    memory_spec = check_host_memory_device(memory_spec, owner, "the rollout of an on-policy agent")
    unknown = sorted(set(memory_spec) - {"type", "capacity"})
    type_ = str(memory_spec.get("type", "ring-buffer"))
    if type_ not in MEMORY_TYPES or unknown:
        raise RLGraphSpecError("on-policy agents keep their rollout in a ring buffer", where=f"{owner}(memory_spec)",
                               expected='{"type": "ring-buffer", "capacity": N}',
                               received=repr(memory_spec), hint="replay memories are for off-policy agents.")
    if "capacity" not in memory_spec:
        return None
    return check_number(memory_spec["capacity"], "memory_spec.capacity", owner, low=1, integer=True)


def _concat(fragments: List[dict]) -> dict:
    """One record of several (nested states and actions concatenated leaf by leaf)."""
    if len(fragments) == 1:
        return fragments[0]
    out = {}
    for key in fragments[0]:
        flat = [flatten_op(f[key]) for f in fragments]
        joined = {k: np.concatenate([f[k] for f in flat]) for k in flat[0]}
        out[key] = joined[""] if list(joined) == [""] else unflatten_op(joined)
    return out


def _standardize(x: np.ndarray) -> np.ndarray:
    """(x - mean) / std, with std 1 for a batch of one or of equal values."""
    std = float(np.std(x))
    return ((x - np.mean(x)) / (std if std > 1e-8 else 1.0)).astype(np.float32)


def row_subset(batch: dict, indices: np.ndarray) -> dict:
    """The rows `indices` of every (nested) field of `batch`."""
    out = {}
    for key, value in batch.items():
        flat = {k: v[indices] for k, v in flatten_op(value).items()}
        out[key] = flat[""] if list(flat) == [""] else unflatten_op(flat)
    return out


def _value_function(spec: Any, owner: str) -> ValueFunction:
    """The value network of `value_function_spec`: the network itself (layer list or network spec),
    or the original RLgraph's `ValueFunction` spec {"network_spec": ..., ...} (optional "type"
    "value-function") whose keys are `ValueFunction`'s arguments."""
    if not (isinstance(spec, dict) and "network_spec" in spec):
        return ValueFunction(spec, scope="value-function")
    args = dict(spec)
    type_ = args.pop("type", None)
    if type_ is not None and str(type_).lower().replace("_", "-") != "value-function":
        raise RLGraphSpecError("a value_function_spec with network_spec is a value-function spec",
                               where=f"{owner}(value_function_spec.type)", expected='"value-function" (or no type)',
                               received=repr(type_), hint="give the network's own spec without the network_spec key.")
    args.setdefault("scope", "value-function")
    return construct(ValueFunction, [], args)  # (Checks the keys against ValueFunction's arguments.)


__all__ = ["PolicyGradientAgent", "PGUpdate", "PG_BATCH_KEYS", "row_subset"]
