"""`IMPALAActor`: an IMPALA actor: an acting agent copy stepping a vector of environments into rollouts."""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlgraph.utils.environment_maker import make_environment
from rlgraph.utils.nest import flatten_op, map_structure


def registered_vector_env(num_environments: int, env_spec: Any, seed: Optional[int]) -> Any:
    """A `SequentialVectorEnv` of `num_environments` envs made from `env_spec`, through the maker
    that `rlgraph.environments` registers (agents sit below environments and do not import them)."""
    return make_environment({"type": "sequential-vector-env", "num_environments": num_environments,
                             "env_spec": env_spec, "seed": seed}, where="IMPALAActor(env_spec)")


def actor_agent_config(agent_config: dict, index: int, num_threads: Optional[int] = 1) -> dict:
    """The agent config of actor `index`: an IMPALA agent in the "actor" role, seeded seed + 1 + index,
    with one backend thread (None: the config's threads, for actors that share a process)."""
    config = copy.deepcopy(agent_config)
    for key in ("num_workers", "fifo_queue_spec", "environment_spec", "reproducible", "visualize"):
        config.pop(key, None)
    config["type"], config["role"] = "impala", "actor"
    execution = dict(config.get("execution_spec") or {})
    if num_threads is not None:
        execution.setdefault("torch_num_threads", num_threads)
        execution.setdefault("tf_num_threads", num_threads)
    if execution.get("seed") is not None:
        execution["seed"] = int(execution["seed"]) + 1 + index
    config["execution_spec"] = execution
    return config


class IMPALAActor:
    """Steps `num_environments` envs with its agent's behaviour policy and returns rollouts of
    `rollout_length` steps, one row per env (`rlgraph/agents/impala/rollouts.py`).

    Episodes and the network's internal states continue from one rollout to the next; a rollout
    starts with the internal states (and previous action/reward) the actor carries. An episode
    that ends at step t (terminal or time limit) is marked in `terminals[:, t]`; its env is reset
    at once, so s_{t+1} is the next episode's first state and the carried extras of that row start
    from zeros. The bootstrap state s_T is preprocessed once and reused as the next rollout's first
    state (a stateful preprocessor sees each state once).

    Args:
        agent_config: The IMPALA agent config (made an actor by `actor_agent_config`).
        env_spec: The environment spec (or a callable making an env).
        index: The actor's index (seeds).
        num_environments: Envs stepped together.
        rollout_length: Steps per rollout (T).
        state_space: The environment's state space.
        action_space: The environment's action space.
        num_threads: Backend threads of the actor's agent (None: as configured).
        visualize: Make the envs with rendering on (gym envs' `visualize`).
        make_vector_env: `(num_environments, env_spec, seed) -> vector env`. The default,
            `registered_vector_env`, goes through the environment maker that importing
            `rlgraph.environments` registers; the Ray executor passes `SequentialVectorEnv` itself,
            which its actor processes unpickle (and so import) without that.
    """

    def __init__(self, agent_config: dict, env_spec: Any, index: int, num_environments: int, rollout_length: int,
                 state_space: Any, action_space: Any, num_threads: Optional[int] = 1, visualize: bool = False,
                 make_vector_env: Callable[[int, Any, Optional[int]], Any] = registered_vector_env):
        from rlgraph.agents.agent import Agent  # (Lazily: `rlgraph.agents` imports this package.)
        self.index = index
        config = actor_agent_config(agent_config, index, num_threads)
        self.agent = Agent.from_spec(config, state_space=state_space, action_space=action_space)
        seed = self.agent.execution_spec.get("seed")
        if visualize and isinstance(env_spec, dict):
            env_spec = dict(env_spec, visualize=True)
        self.env = make_vector_env(num_environments, env_spec, None if seed is None else seed * 1000)
        self.num_environments = num_environments
        self.rollout_length = rollout_length
        self.version = -1
        self._states = None
        self._pending_preprocessed = None
        self._extras = None
        self._returns = np.zeros(num_environments)
        self._lengths = np.zeros(num_environments, dtype=np.int64)
        self.stats = {"timesteps": 0, "episodes": 0, "episode_returns": [], "sample_time": 0.0, "weights_set": 0}

    def ready(self) -> int:
        """The actor's pid, once it is built."""
        import os
        return os.getpid()

    def set_weights(self, weights: Dict[str, np.ndarray], version: int) -> None:
        """Acts with the learner's weights of policy version `version` from now on."""
        self.agent.set_weights(weights)
        self.version = int(version)
        self.stats["weights_set"] += 1

    def sample(self) -> tuple:
        """One rollout of `rollout_length` steps on every env.

        Returns:
            (rollout record [E, T(+1), ...], metadata {"timesteps", "env_frames", "episode_returns",
            "episode_lengths", "version", "worker_index", "pid"}).
        """
        start = time.perf_counter()
        agent, env = self.agent, self.env
        if self._states is None:
            self._states = env.reset_all()
            self._extras = agent.initial_extras(self.num_environments)
        initial_extras = map_structure(np.copy, self._extras) if self._extras is not None else None
        steps: Dict[str, List[Any]] = {"states": [], "actions": [], "rewards": [], "terminals": [], "action_probs": [],
                                       "previous_actions": [], "previous_rewards": []}
        returns, lengths = [], []
        for _ in range(self.rollout_length):
            extras = self._extras
            if self._pending_preprocessed is not None:
                result = agent.act(self._pending_preprocessed, extras, apply_preprocessing=False)
            else:
                result = agent.act(self._states, extras)
            self._pending_preprocessed = None
            self._record_extras(steps, extras)
            next_states, rewards, terminals, _ = env.step(result["actions"])
            steps["states"].append(result["preprocessed_states"])
            steps["actions"].append(result["actions"])
            steps["action_probs"].append(result["action_probs"])
            steps["rewards"].append(rewards)
            steps["terminals"].append(np.asarray(terminals, dtype=bool))
            if extras is not None:
                self._extras = agent.next_extras(extras, result, rewards)
            self._returns += rewards
            self._lengths += 1
            for i in np.flatnonzero(terminals):
                returns.append(float(self._returns[i]))
                lengths.append(int(self._lengths[i]))
                self._returns[i], self._lengths[i] = 0.0, 0
                next_states = _set_row(next_states, i, env.reset(i))
                if self._extras is not None:
                    self._extras = _zero_row(self._extras, i)
            self._states = next_states
        self._pending_preprocessed = agent.preprocess_states(self._states)
        rollout = {
            "states": _stack(steps["states"]), "bootstrap_states": self._pending_preprocessed,
            "actions": _stack(steps["actions"]), "rewards": _stack(steps["rewards"]).astype(np.float32),
            "terminals": _stack(steps["terminals"]), "action_probs": _stack(steps["action_probs"])}
        for key in ("previous_actions", "previous_rewards"):
            if steps[key]:
                rollout[key] = _stack(steps[key])
        if agent.rnn_units:
            rollout["initial_internal_states"] = initial_extras["internal_states"]
        timesteps = self.rollout_length * self.num_environments
        self.stats["timesteps"] += timesteps
        self.stats["episodes"] += len(returns)
        self.stats["episode_returns"].extend(returns)
        self.stats["sample_time"] += time.perf_counter() - start
        meta = {"timesteps": timesteps, "env_frames": timesteps, "episode_returns": returns,
                "episode_lengths": lengths, "version": self.version, "worker_index": self.index,
                "pid": self.ready()}
        return rollout, meta

    def _record_extras(self, steps: dict, extras: Optional[dict]) -> None:
        if extras is None:
            return
        for key in ("previous_actions", "previous_rewards"):
            if key in extras:
                steps[key].append(map_structure(np.copy, extras[key]))

    def get_statistics(self) -> dict:
        """Env steps, episodes, returns, sampling time and frames/s of this actor."""
        stats = dict(self.stats, episode_returns=list(self.stats["episode_returns"]), worker_index=self.index,
                     version=self.version)
        stats["timesteps_per_second"] = stats["timesteps"] / stats["sample_time"] if stats["sample_time"] else 0.0
        return stats

    def terminate(self) -> None:
        self.env.terminate()
        self.agent.terminate()


def _stack(items: List[Any]) -> Any:
    """[E, ...] items of T steps -> [E, T, ...] (nested structures leaf by leaf)."""
    return map_structure(lambda *leaves: np.stack(leaves, axis=1), *items)


def _set_row(states: Any, i: int, value: Any) -> Any:
    for leaf, new in zip(flatten_op(states).values(), flatten_op(value).values()):
        leaf[i] = new  # (In place: the leaves are the arrays of `states`.)
    return states


def _zero_row(extras: dict, i: int) -> dict:
    for leaf in flatten_op(extras).values():
        leaf[i] = 0
    return extras
