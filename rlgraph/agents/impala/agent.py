"""`IMPALAAgent`: importance-weighted actor-learner (V-trace) agent; `SingleIMPALAAgent` runs its actors in-process."""
from __future__ import annotations

import functools
import logging
from collections import namedtuple
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.agent import Agent
from rlgraph.agents.impala.action_selection import _greedy_from_logits, _sample_categorical
from rlgraph.agents.impala.core import IMPALACore
from rlgraph.agents.impala.networks import ARCHITECTURES
from rlgraph.agents.impala.original_keys import _original_impala_keys
from rlgraph.agents.impala.rollouts import OPTIONAL_KEYS, ROLLOUT_KEYS, check_rollout, rollout_space
from rlgraph.agents.specs import check_bool, check_choice, check_positive_int, check_spec
from rlgraph.components.component import Component
from rlgraph.components.loss_functions.impala_loss_function import IMPALALossFunction
from rlgraph.spaces import Dict as DictSpace, FloatBox, IntBox, Tuple as TupleSpace
from rlgraph.utils.nest import first_row, flatten_op, map_structure, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

logger = logging.getLogger(__name__)

ROLES = ("learner", "actor", "single")
FIFO_QUEUE_SPEC_DEFAULTS = {"type": "fifo-queue", "capacity": 64}
# What `update()` returns; indices 1 and 3 are the loss and the records, as in the original RLgraph.
IMPALAUpdate = namedtuple("IMPALAUpdate", ["version", "loss", "loss_per_item", "records"])


class IMPALAAgent(Agent):
    """IMPALA (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561): actors act with a behaviour
    policy mu (a recent copy of the learner's weights) and send rollouts; the learner corrects for
    the lag with V-trace (`IMPALALossFunction`). The update is written out in `IMPALACore`'s
    docstring; rollouts are the record of `rlgraph/agents/impala/rollouts.py`.

    Roles: a "learner" (type "impala") learns from rollouts given to `update(batch)`
    (`IMPALAExecutor` feeds it from actors on Ray); an "actor" only acts (the executor's and the
    single agent's actors); "single" (type "single-impala", `SingleIMPALAAgent`) starts
    `num_workers` actors in this process that fill a FIFO queue from which `update()` takes its
    batches. The agent never imports Ray.

    Acting samples each action from the policy's probabilities with the agent's own numpy
    generator (seeded from `execution_spec.seed`), so actors are reproducible on either backend;
    `use_exploration=False` takes the most likely actions. A recurrent network's internal states
    (and the previous action and reward, if fed to the network) are carried by the agent between
    `get_action` calls, per batch row; `reset()` (or `reset_internal_states(rows)`) starts them anew.

    Args:
        discount: gamma.
        fifo_queue_spec: {"capacity": rollouts (rows) waiting for the learner}.
        architecture: "small" or "large" (the paper's networks, for image states) when
            `network_spec` is not given.
        environment_spec: The environment the single agent's actors step.
        weight_pg: Loss weight of the policy-gradient term (see `IMPALALossFunction`).
        weight_baseline: Loss weight of the value term (see `IMPALALossFunction`).
        weight_entropy: Loss weight of the entropy bonus (see `IMPALALossFunction`).
        worker_sample_size: Steps per rollout (T).
        dynamic_batching: Must be false: each actor batches its own environments' acting
            (`num_worker_environments`); a shared inference batcher is not provided.
        num_workers: Actors of the single agent.
        num_worker_environments: Environments each actor steps together (one rollout row each).
        feed_previous_action_through_nn: Append the one-hot previous action to the input of the
            recurrent layer (or of the heads, without one).
        feed_previous_reward_through_nn: Likewise the previous reward.
        visualize: The single agent's first actor renders its environment (rgb arrays).
        reward_clipping: "clamp_one", "soft_asymmetric" or None (`IMPALALossFunction`).
        reproducible: The single agent's actors act exactly with the learner's previous weights
            (policy lag 1) and their rollouts are taken in a fixed order, so that a run repeats
            exactly for a seed (see docs/agents/impala.md).
        role: "learner", "actor" or "single".
        batch_apply: The original RLgraph's switch to fold the time rank into the batch rank before
            the network; accepted and ignored (with a warning): the layers before the LSTM always
            see [B*T, ...] rows here, and the LSTM unrolls over T.
        memory_spec: The original RLgraph's earlier name of `fifo_queue_spec` (a "fifo-queue" spec;
            give one of them).
        **kwargs: `Agent` arguments.
    """

    config_sections = ("environment_spec",)

    def __init__(self, discount: float = 0.99, fifo_queue_spec: Optional[dict] = None, architecture: str = "large",
                 environment_spec: Any = None, weight_pg: Optional[float] = None,
                 weight_baseline: Optional[float] = None, weight_entropy: Optional[float] = None,
                 worker_sample_size: int = 100, dynamic_batching: bool = False, num_workers: int = 1,
                 num_worker_environments: int = 1, feed_previous_action_through_nn: bool = False,
                 feed_previous_reward_through_nn: bool = False, visualize: bool = False,
                 reward_clipping: Optional[str] = "clamp_one", reproducible: bool = False, role: str = "learner",
                 batch_apply: Optional[bool] = None, memory_spec: Optional[dict] = None, **kwargs):
        owner = type(self).__name__
        if role not in ROLES:
            raise RLGraphSpecError("unknown role", where=f"{owner}(role)", expected=list(ROLES), received=repr(role))
        self.role = role
        fifo_queue_spec, notes = _original_impala_keys(fifo_queue_spec, batch_apply, memory_spec, owner)
        # (Actors are copies of a learner's config: the learner has warned about its original keys.)
        self.original_key_notes = None if role == "actor" else notes
        self.fifo_queue_spec = check_spec(fifo_queue_spec, FIFO_QUEUE_SPEC_DEFAULTS, "fifo_queue_spec", owner)
        self.fifo_queue_spec["capacity"] = check_positive_int(self.fifo_queue_spec["capacity"], "capacity",
                                                              f"{owner}(fifo_queue_spec)")
        self.architecture = check_choice(architecture, ARCHITECTURES, "architecture", owner,
                                         hint="the paper's networks for image states; used without a network_spec.")
        self.environment_spec = environment_spec
        self.worker_sample_size = check_positive_int(worker_sample_size, "worker_sample_size", owner)
        if check_bool(dynamic_batching, "dynamic_batching", owner):
            raise RLGraphSpecError("dynamic_batching is not supported", where=f"{owner}(dynamic_batching)",
                                   expected="false", received="true",
                                   hint="each actor batches the acting of its own environments: raise "
                                        "num_worker_environments instead.")
        self.num_workers = check_positive_int(num_workers, "num_workers", owner)
        self.num_worker_environments = check_positive_int(num_worker_environments, "num_worker_environments", owner)
        self.feed_previous_action = check_bool(feed_previous_action_through_nn, "feed_previous_action_through_nn",
                                               owner)
        self.feed_previous_reward = check_bool(feed_previous_reward_through_nn, "feed_previous_reward_through_nn",
                                               owner)
        # (0/1 as the original RLgraph's configs may write it.)
        self.visualize = check_bool(bool(visualize) if type(visualize) is int and visualize in (0, 1) else visualize,
                                    "visualize", owner)
        self.reproducible = check_bool(reproducible, "reproducible", owner)
        self.loss_spec = dict(weight_pg=weight_pg, weight_baseline=weight_baseline, weight_entropy=weight_entropy,
                              reward_clipping=reward_clipping)
        self.rng = None
        self._acting_extras: Optional[dict] = None
        self.actors = None  # The single agent's in-process actors (`rlgraph.agents.impala.ActorPool`).
        super().__init__(discount=discount, **kwargs)
        seed = self.execution_spec["seed"]
        self.rng = np.random.RandomState(seed)

    # --- Construction ---------------------------------------------------------------------------
    def _create_root(self) -> None:
        owner = type(self).__name__
        for key, leaf in self.action_space.flatten().items():
            if not (isinstance(leaf, IntBox) and leaf.shape == ()):
                raise RLGraphSpecError("IMPALA needs discrete actions (IntBox leaves of shape ())",
                                       where=f"{self.name}(action_space{key})", expected="IntBox(n) leaves",
                                       received=str(leaf))
        if self.policy_spec:
            raise RLGraphSpecError("IMPALA builds its own policy (network, action and value heads)",
                                   where=f"{owner}(policy_spec)", received=sorted(self.policy_spec),
                                   hint="give network_spec and action_adapter_spec instead.")
        if self.exploration_spec:
            logger.warning("%s: exploration_spec is not used: IMPALA explores by sampling from its policy "
                           "(use_exploration=False takes the most likely actions).", owner)
        network_spec = self.network_spec
        if network_spec is None:
            from rlgraph.agents.impala.networks import impala_network_spec
            network_spec = impala_network_spec(self.architecture)
        loss = IMPALALossFunction(discount=self.discount, **self.loss_spec)
        optimizer = Component.from_spec(self.optimizer_spec)
        self.root_component = IMPALACore(network_spec, self.action_space, self.preprocessing_spec, loss, optimizer,
                                         self.action_adapter_spec, self.feed_previous_action,
                                         self.feed_previous_reward, scope=self.name)
        core = self.root_component
        self.preprocessed_state_space = core.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        self.rnn_units = core.rnn.units if core.recurrent else None
        self.rollout_keys = ROLLOUT_KEYS + tuple(k for k, on in zip(OPTIONAL_KEYS, (
            core.recurrent, self.feed_previous_action, self.feed_previous_reward)) if on)
        self.input_spaces = dict(
            states=self.state_space.with_batch_rank(),
            preprocessed_states=self.preprocessed_state_space.with_batch_rank(),
            rollout=rollout_space(self.preprocessed_state_space, self.action_space, self.rnn_units,
                                  self.feed_previous_action, self.feed_previous_reward),
            time_percentage=float)
        if core.needs_extras:
            extras = {}
            if core.recurrent:
                state = FloatBox(shape=(self.rnn_units,), add_batch_rank=True)
                extras["internal_states"] = TupleSpace(state, state, add_batch_rank=True)
            if self.feed_previous_action:
                extras["previous_actions"] = self.action_space.with_batch_rank()
            if self.feed_previous_reward:
                extras["previous_rewards"] = FloatBox(add_batch_rank=True)
            self.input_spaces["extras"] = DictSpace(extras, add_batch_rank=True)
        if self.role == "single" and self.environment_spec is None:
            raise RLGraphSpecError("a single-impala agent steps its own environments", where=f"{owner}(environment_spec)",
                                   hint='give e.g. {"type": "openai-gym", "gym_env": "CartPole-v1"}.')

    # --- Acting ---------------------------------------------------------------------------------
    def initial_extras(self, rows: int) -> Optional[dict]:
        """The network extras of `rows` fresh episodes (zero internal states, previous action 0,
        previous reward 0), or None for a network without extras."""
        if not self.root_component.needs_extras:
            return None
        extras = {}
        if self.rnn_units:
            zeros = np.zeros((rows, self.rnn_units), np.float32)
            extras["internal_states"] = (zeros, zeros.copy())
        if self.feed_previous_action:
            extras["previous_actions"] = unflatten_op({k: np.zeros(rows, leaf.dtype) for k, leaf in
                                                       self.action_space.flatten().items()}) \
                if list(self.action_space.flatten()) != [""] else np.zeros(rows, self.action_space.dtype)
        if self.feed_previous_reward:
            extras["previous_rewards"] = np.zeros(rows, np.float32)
        return extras

    def reset_internal_states(self, rows: Optional[List[int]] = None) -> None:
        """Starts the carried internal states (and previous action/reward) anew for the given
        batch rows (None: all)."""
        if self._acting_extras is None:
            return
        if rows is None:
            self._acting_extras = None
            return
        fresh = self.initial_extras(1)
        for key, value in self._acting_extras.items():
            for leaf, zero in zip(flatten_op(value).values(), flatten_op(fresh[key]).values()):
                leaf[list(rows)] = zero[0]

    def act(self, states: Any, extras: Any = None, use_exploration: bool = True,
            apply_preprocessing: bool = True) -> dict:
        """One batched acting step (the actors' hot path).

        Args:
            states: [B, ...] states (preprocessed if `apply_preprocessing` is False).
            extras: The network extras of the B rows (see `initial_extras`), if it has any.
            use_exploration: Sample from the policy (True) or take the most likely actions.
            apply_preprocessing: Whether `states` still need the preprocessor.

        Returns:
            {"actions", "action_probs", "logits", "preprocessed_states", ["last_internal_states"]}.
        """
        core = self.root_component
        api = "act" if apply_preprocessing else "act_preprocessed"
        inputs = [states] if extras is None else [states, extras]
        out = self._executor().execute((api, inputs))
        result = {"preprocessed_states": out[0], "logits": out[1], "action_probs": out[2]}
        if core.recurrent:
            result["last_internal_states"] = out[3]
        flat_logits, flat_probs = flatten_op(out[1]), flatten_op(out[2])
        actions = {}
        for key in flat_probs:
            if use_exploration:
                actions[key] = _sample_categorical(flat_probs[key], self.rng)
            else:
                actions[key] = np.argmax(flat_logits[key], axis=-1)
            actions[key] = actions[key].astype(self.action_space.flatten()[key].dtype)
        result["actions"] = actions[""] if list(actions) == [""] else unflatten_op(actions)
        return result

    def greedy_policy_graph(self, preprocessing: bool = True) -> Any:
        """The export's greedy policy: the "act" API method's logits, arg-maxed per action leaf in the
        backend's graph (what `get_action(use_exploration=False)` does in numpy).

        Raises:
            RLGraphExportError: For a network with extras (a recurrent layer, or the previous action
                or reward fed back): an exported function cannot carry them between calls.
        """
        if self.root_component.needs_extras:
            from rlgraph.utils.rlgraph_errors import RLGraphExportError
            raise RLGraphExportError("the policy carries internal states or the previous action/reward between "
                                     "calls, which an exported greedy function does not take",
                                     where=f"{self.name}.export_policy",
                                     hint="export a policy without a recurrent layer and without "
                                          "feed_previous_action/reward_through_nn.")
        dtypes = {key: np.dtype(leaf.dtype) for key, leaf in self.action_space.flatten().items()}
        return ("act" if preprocessing else "act_preprocessed"), functools.partial(_greedy_from_logits, dtypes=dtypes)

    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        """Actions for one state or a batch; see `Agent.get_action`.

        `internals` are the network extras (see `initial_extras`); None uses the ones the agent
        carries from its previous call with the same batch size (fresh ones otherwise). The
        extras after this step are kept (episode ends: `reset_internal_states`).
        `extra_returns` may name "preprocessed_states", "action_probs", "logits" and
        "internal_states" (the network extras after this step).
        """
        names = self._extra_return_names(extra_returns)
        space = self.state_space if apply_preprocessing else self.preprocessed_state_space
        batch, single = self._batch(states, space, "get_action(states)")
        extras = internals
        if extras is None and self.root_component.needs_extras:
            rows = len(next(iter(flatten_op(batch).values())))
            carried = self._acting_extras
            same = carried is not None and len(next(iter(flatten_op(carried).values()))) == rows
            extras = carried if same else self.initial_extras(rows)
        result = self.act(batch, extras, use_exploration, apply_preprocessing)
        if extras is not None:
            self._acting_extras = self.next_extras(extras, result)
            result["internal_states"] = self._acting_extras
        actions = first_row(result["actions"]) if single else result["actions"]
        if not names:
            return actions
        picked = {n: (first_row(result[n]) if single else result[n]) for n in names}
        return actions, (picked["preprocessed_states"] if names == ["preprocessed_states"] else picked)

    def next_extras(self, extras: dict, result: dict, rewards: Any = None) -> dict:
        """The network extras after an acting step (`rewards` of the step, when they are fed back)."""
        out = {}
        if self.rnn_units:
            out["internal_states"] = tuple(np.array(s, np.float32) for s in result["last_internal_states"])
        if self.feed_previous_action:
            out["previous_actions"] = map_structure(np.array, result["actions"])
        if self.feed_previous_reward:
            out["previous_rewards"] = np.zeros_like(extras["previous_rewards"]) if rewards is None else \
                np.asarray(rewards, np.float32)
        return out

    def _extra_return_names(self, extra_returns: Any) -> List[str]:
        if extra_returns is None:
            return []
        names = [extra_returns] if isinstance(extra_returns, str) else sorted(extra_returns)
        valid = ("preprocessed_states", "action_probs", "logits", "internal_states")
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise RLGraphSpecError(f"unknown extra_returns {unknown}", where=f"{self.name}.get_action",
                                   expected=list(valid), received=names)
        return names

    def reset(self) -> None:
        """Episode start: fresh internal states, and stateful preprocessors reset."""
        self._acting_extras = None
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")

    # --- Observing ------------------------------------------------------------------------------
    def observe(self, *args, **kwargs) -> None:
        raise RLGraphError("IMPALA learns from rollouts, not from single transitions", where=f"{self.name}.observe",
                           hint="use a single-impala agent (its actors collect rollouts) or pass rollouts to "
                                "update(batch); see docs/agents/impala.md.")

    def _observe_graph(self, records: dict) -> None:
        self.observe()

    def import_observations(self, observations: Any) -> None:
        self.observe()

    # --- Updating -------------------------------------------------------------------------------
    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> IMPALAUpdate:
        """One V-trace learner update on a batch of rollouts.

        Args:
            batch: A rollout record (see `rlgraph/agents/impala/rollouts.py`); None: take
                `update_spec.batch_size` rollout rows from the single agent's FIFO queue
                (waits for the actors).
            time_percentage: Overrides `time_percentage()` (learning-rate schedules).

        Returns:
            IMPALAUpdate(version, loss, loss_per_item [B], records): the learner's update count
            after this update, and the rollout it learned from (indices 1 and 3 are the loss and
            the records, as the original RLgraph's `update()` returned them).

        Raises:
            RLGraphError: For batch None without in-process actors, or a rollout whose keys or
                sizes do not fit.
            RLGraphNonFiniteError: If the loss is NaN or inf (with `execution_spec.nan_check` "raise").
        """
        tp = self._time_percentage_arg(time_percentage, "update")  # (Before a batch is taken from the queue.)
        if batch is None:
            if self.actors is None:
                raise RLGraphError("this agent has no actors to take rollouts from", where=f"{self.name}.update",
                                   hint='pass a rollout (update(batch)), or use "type": "single-impala".')
            batch = self.actors.next_batch(self.update_spec["batch_size"])
        loss, loss_per_item, records = self.learn_from_rollout(batch, tp)
        if self.actors is not None:
            self.actors.publish_weights()
        return IMPALAUpdate(self.num_updates, loss, loss_per_item, records)

    def learn_from_rollout(self, rollout: dict, time_percentage: Optional[float] = None) -> tuple:
        """One update from a rollout record; returns (loss, loss_per_item [B], the checked rollout)."""
        rollout = check_rollout(rollout, self.rollout_keys, self.worker_sample_size, f"{self.name}.update(batch)")
        tp = self._time_percentage_arg(time_percentage, "learn_from_rollout")
        loss, loss_per_item = self._executor().execute(("update_from_rollout", [rollout, tp]))
        self.num_updates += 1
        self._check_loss(loss, "update")
        return loss, loss_per_item, rollout

    def get_rollout_loss(self, rollout: dict) -> tuple:
        """(loss, loss_per_item [B]) of a rollout under the current weights, without updating."""
        rollout = check_rollout(rollout, self.rollout_keys, self.worker_sample_size,
                                f"{self.name}.get_rollout_loss(rollout)")
        return self._executor().execute(("get_rollout_loss", [rollout]))

    def terminate(self) -> None:
        if self.actors is not None:
            self.actors.stop()
            self.actors = None
        super().terminate()


class SingleIMPALAAgent(IMPALAAgent):
    """IMPALA on one machine ("single-impala"): `num_workers` actors in this process step the
    environments of `environment_spec` with the behaviour policy and fill a bounded FIFO queue of
    rollouts; `update()` takes `update_spec.batch_size` rows from it. See
    `rlgraph.agents.impala.ActorPool` for how the actors run.
    """

    def __init__(self, **kwargs):
        kwargs["role"] = "single"
        # The actors' agents are made from the same arguments (`actor_agent_config` makes them actors).
        self.actor_config = {k: v for k, v in kwargs.items() if k not in ("state_space", "action_space")}
        super().__init__(**kwargs)
        self.actor_config["backend"] = self.backend
        if self.graph_executor is not None:
            self.start_actors()

    def build(self, build_options: Optional[dict] = None) -> Any:
        stats = super().build(build_options)
        if self.rng is not None:  # (Built after construction: auto_build=False.)
            self.start_actors()
        return stats

    def start_actors(self) -> None:
        """Builds the actors and starts them (once)."""
        if self.actors is not None:
            return
        from rlgraph.agents.impala.actor_pool import ActorPool
        self.actors = ActorPool(self)

    def actor_statistics(self) -> Dict[str, Any]:
        """Env steps, episodes, returns, frames/s and policy lag of the in-process actors."""
        return self.actors.statistics() if self.actors is not None else {}
