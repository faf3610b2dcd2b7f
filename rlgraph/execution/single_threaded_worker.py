"""`SingleThreadedWorker`: runs an agent on a vector of environments in this process."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlgraph.execution.hooks import Hook, StepData
from rlgraph.utils.nest import batch_row, map_structure
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError


class SingleThreadedWorker:
    """Steps `num_environments` environments with one agent: batched actions, per-env observes,
    updates as the agent's `update_spec` says.

    Each worker step asks the agent for the actions of all envs in one call
    (`get_action(states, extra_returns="preprocessed_states")`), steps every env, and observes
    each env's transition with `env_id` = its index. A transition's next state is the
    *preprocessed* state that the next `get_action` call returns, so the agent's preprocessor
    runs once per state; when an episode is truncated (time limit) the final state is
    preprocessed with `agent.preprocess_states` so that the bootstrap sees it. Finished envs are
    reset right away.

    Updates: after `update_spec.steps_before_update` observed env steps, every
    `update_interval` observed env steps the worker calls `agent.update()` `update_steps` times
    (one such round per interval, so N envs with an interval of 1 give N rounds per worker step), once
    `agent.ready_to_update()` says the agent has the data for an update (a replay memory holding
    a batch, an on-policy agent's full rollout); a round that finds it without them is dropped.

    Args:
        agent: The agent.
        env_spec: An environment spec, an `Environment`, a callable making one, or a `VectorEnv`.
        num_environments: Number of envs stepped together (ignored for a `VectorEnv`).
        hooks: Callables hook(agent, StepData) run after each step of each env (see
            `rlgraph.execution.hooks`); `Hook` objects also get `on_episode_end`.
        seed: Seed of the envs (env i gets seed + i).
        worker_executes_exploration: Whether actions explore (default True; `execute_*` can override).
        clip_rewards: Observe rewards clipped to [-1, 1] (the returns in the statistics stay raw).
    """

    def __init__(self, agent: Any, env_spec: Any, num_environments: int = 1, hooks: Optional[List[Callable]] = None,
                 seed: Optional[int] = None, worker_executes_exploration: bool = True, clip_rewards: bool = False):
        from rlgraph.environments import VectorEnv, SequentialVectorEnv
        self.agent = agent
        if isinstance(env_spec, VectorEnv):
            self.vector_env = env_spec
        else:
            self.vector_env = SequentialVectorEnv(num_environments=num_environments, env_spec=env_spec, seed=seed)
        self.num_environments = self.vector_env.num_environments
        self.env_ids = list(range(self.num_environments))
        self.hooks = list(hooks or [])
        self.use_exploration = worker_executes_exploration
        self.clip_rewards = bool(clip_rewards)
        self.total_steps = 0
        self.total_episodes = 0
        self.last_update_timestep = None
        self._states = None
        self._pending = None
        self._episode_returns = np.zeros(self.num_environments)
        self._episode_lengths = np.zeros(self.num_environments, dtype=np.int64)
        # The statistics of the last `execute_*` call up to an env failure that cut it short (else None).
        self.interrupted_stats: Optional[Dict[str, Any]] = None
        self.stop_requested = False  # See `request_stop`.

    # --- Public API -----------------------------------------------------------------------------
    def execute_timesteps(self, num_timesteps: int, max_timesteps_per_episode: int = 0, use_exploration: bool = None,
                          learn: bool = True, reset: bool = True) -> Dict[str, Any]:
        """Runs `num_timesteps` env steps (over all envs together).

        Args:
            num_timesteps: Env steps to run (rounded up to a multiple of num_environments).
            max_timesteps_per_episode: Truncate episodes after this many steps (0: no limit).
            use_exploration: Explore (default: the worker's setting).
            learn: Observe transitions and update (False: just act, e.g. to evaluate).
            reset: Start new episodes (False: continue where the last call stopped).

        Returns:
            Statistics (see `_stats`).
        """
        if self.agent.max_timesteps is None and learn:
            self.agent.max_timesteps = num_timesteps  # Schedules run over this call.
        return self._run(lambda steps, episodes: steps >= num_timesteps, max_timesteps_per_episode,
                         use_exploration, learn, reset)

    def execute_episodes(self, num_episodes: int, max_timesteps_per_episode: int = 0, use_exploration: bool = None,
                         learn: bool = True, reset: bool = True) -> Dict[str, Any]:
        """Runs until `num_episodes` episodes have finished (episodes finishing after that in other
        envs are not counted). Arguments as in `execute_timesteps`."""
        return self._run(lambda steps, episodes: episodes >= num_episodes, max_timesteps_per_episode,
                         use_exploration, learn, reset, max_episodes=num_episodes)

    def evaluate(self, num_episodes: int, max_timesteps_per_episode: int = 0) -> Dict[str, Any]:
        """Greedy episodes without learning (fresh episodes; the training episodes are not touched
        when the worker has its own env, and the agent's preprocessor state is put back afterwards:
        `Agent.preprocessor_state_kept`)."""
        with self.agent.preprocessor_state_kept():
            return self.execute_episodes(num_episodes, max_timesteps_per_episode, use_exploration=False,
                                         learn=False)

    def request_stop(self) -> None:
        """Ends the running `execute_*` call after the current worker step (every env finishes its
        step, and the updates due after it run); its statistics cover the steps taken, as at the
        end of any call. Safe to call from a signal handler or a hook. Later calls return at once
        until `stop_requested` is set back to False."""
        self.stop_requested = True

    def terminate(self) -> None:
        self.vector_env.terminate()

    # --- Loop -----------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        self._states = self.vector_env.reset_all()
        self._pending = None
        self._episode_returns[:] = 0.0
        self._episode_lengths[:] = 0
        self.agent.reset()

    def _run(self, done_fn: Callable[[int, int], bool], max_len: int, use_exploration: Optional[bool], learn: bool,
             reset: bool, max_episodes: Optional[int] = None) -> Dict[str, Any]:
        agent, env = self.agent, self.vector_env
        explore = self.use_exploration if use_exploration is None else bool(use_exploration)
        if reset or self._states is None:
            self._reset_all()
        update_spec = agent.update_spec
        if self.last_update_timestep is None:
            self.last_update_timestep = agent.timesteps
        steps = episodes = 0
        returns, lengths, ends, losses = [], [], [], []
        self.interrupted_stats = None
        start = time.perf_counter()
        act_time = env_time = update_time = 0.0
        while not done_fn(steps, episodes) and not self.stop_requested:
            t0 = time.perf_counter()
            actions, preprocessed = agent.get_action(self._states, use_exploration=explore,
                                                     extra_returns="preprocessed_states")
            t1 = time.perf_counter()
            if learn and self._pending is not None:
                self._observe_pending(preprocessed)
            try:
                next_states, rewards, terminals, infos = env.step(actions)
            except Exception as error:
                self._keep_interrupted(steps, episodes, returns, lengths, ends, losses, start)
                raise self._env_error(error, "step") from _cause(error)
            t2 = time.perf_counter()
            act_time += t1 - t0
            env_time += t2 - t1
            steps += self.num_environments
            self.total_steps += self.num_environments
            self._episode_returns += rewards
            observed = np.clip(rewards, -1.0, 1.0) if self.clip_rewards else rewards
            self._episode_lengths += 1
            done = np.asarray(terminals, dtype=bool).copy()
            if max_len:
                done |= self._episode_lengths >= max_len
            if self.hooks:
                self._run_hooks(actions, rewards, next_states, done, explore)
            for i in np.flatnonzero(done):
                if learn:
                    self._observe_last(i, preprocessed, actions, observed, next_states, terminals[i], infos[i])
                if max_episodes is None or episodes < max_episodes:
                    returns.append(float(self._episode_returns[i]))
                    lengths.append(int(self._episode_lengths[i]))
                    ends.append(self.total_steps)
                    episodes += 1
                self.total_episodes += 1
                self._episode_returns[i] = 0.0
                self._episode_lengths[i] = 0
                try:
                    reset_state = env.reset(i)
                except Exception as error:
                    self._keep_interrupted(steps, episodes, returns, lengths, ends, losses, start)
                    raise self._env_error(error, "reset", i) from error
                next_states = _set_row(next_states, i, reset_state)
                if self.num_environments == 1:
                    agent.reset()
            self._pending = (preprocessed, actions, observed, ~done) if learn else None
            self._states = next_states
            if learn and update_spec["do_updates"]:
                t3 = time.perf_counter()
                losses.extend(self._maybe_update())
                update_time += time.perf_counter() - t3
        runtime = time.perf_counter() - start
        stats = self._stats(steps, episodes, returns, lengths, losses, runtime, act_time, env_time, update_time)
        stats["episode_end_steps"] = ends
        return stats

    def _keep_interrupted(self, steps, episodes, returns, lengths, ends, losses, start) -> None:
        """Keeps what a call did before an env failed in `interrupted_stats`, so that a run can
        still log the episodes that finished (see `training.train`)."""
        nan = float("nan")
        self.interrupted_stats = self._stats(steps, episodes, returns, lengths, losses, time.perf_counter() - start,
                                             nan, nan, nan)
        self.interrupted_stats["episode_end_steps"] = ends

    def _env_error(self, error: Exception, method: str, index: Optional[int] = None) -> RLGraphEnvError:
        """The error of an env whose `method` ("step" or "reset") raised `error`: it names the env, its
        index and the worker's env step (1-based over all envs, as `StepData.step`; for a reset, the
        step that ended the episode)."""
        if index is None:
            index = getattr(error, "env_index", None)  # Set by the vector env.
        cause = _cause(error)
        if index is None:
            env, step, position = self.vector_env, self.total_steps + 1, "an env"
        else:
            env = self.vector_env.get_env(index)
            step = self.total_steps + (index + 1 if method == "step" else 0)
            position = f"env {index} of {self.num_environments}"
            if method == "step":
                position += f" in step {int(self._episode_lengths[index]) + 1} of its episode"
        return RLGraphEnvError(f"the environment raised {type(cause).__name__}: {cause}", where=f"{env}.{method}",
                               env_index=index, step=step, received=f"{position}, at the worker's env step {step}",
                               hint="the environment's own traceback is chained above this error.")

    def _observe_pending(self, next_preprocessed: Any) -> None:
        preprocessed, actions, rewards, alive = self._pending
        for i in np.flatnonzero(alive):
            self.agent.observe(batch_row(preprocessed, i), batch_row(actions, i), None, rewards[i],
                               batch_row(next_preprocessed, i), False, env_id=self.env_ids[i])
        self._pending = None

    def _observe_last(self, i: int, preprocessed: Any, actions: Any, rewards: np.ndarray, next_states: Any,
                      terminal: bool, info: Any) -> None:
        truncated = not (terminal and not (info or {}).get("truncated", False))
        if truncated:
            # The bootstrap needs the final state: preprocess it now.
            final = self.agent.preprocess_states(batch_row(next_states, i))
        else:
            final = batch_row(preprocessed, i)  # Not read: terminal transitions do not bootstrap.
        self.agent.observe(batch_row(preprocessed, i), batch_row(actions, i), None, rewards[i], final, not truncated,
                           env_id=self.env_ids[i], truncated=truncated)

    def _maybe_update(self) -> List[float]:
        agent, spec = self.agent, self.agent.update_spec
        if agent.timesteps < spec["steps_before_update"]:
            self.last_update_timestep = agent.timesteps
            return []
        # One round per update_interval env steps observed since the last round: several when a
        # step observed more than one transition (several envs, or an episode end, which observes
        # its last transition at once).
        rounds = (agent.timesteps - self.last_update_timestep) // spec["update_interval"]
        losses = []
        for _ in range(rounds):
            self.last_update_timestep += spec["update_interval"]
            if not agent.ready_to_update():
                continue  # A round that finds the agent without the data for an update is dropped.
            for _ in range(spec["update_steps"]):
                if not agent.ready_to_update():
                    break  # (An on-policy agent has learned from its whole rollout.)
                out = agent.update()
                losses.append(float(out[0] if isinstance(out, (tuple, list)) else out))
        return losses

    def _run_hooks(self, actions, rewards, next_states, done, explore) -> None:
        for i in range(self.num_environments):
            data = StepData(step=self.total_steps - self.num_environments + i + 1,
                            episode=self.total_episodes + 1, episode_step=int(self._episode_lengths[i]),
                            env_id=self.env_ids[i], observation=batch_row(self._states, i),
                            action=batch_row(actions, i), reward=float(rewards[i]),
                            observation_1=batch_row(next_states, i), done=bool(done[i]),
                            episode_reward=float(self._episode_returns[i]), training=explore)
            for hook in self.hooks:
                hook(self.agent, data)
                if done[i] and isinstance(hook, Hook):
                    hook.on_episode_end(self.agent, data)

    def _stats(self, steps, episodes, returns, lengths, losses, runtime, act_time, env_time, update_time) -> dict:
        """Statistics of one `execute_*` call."""
        def mean(values):
            return float(np.mean(values)) if values else float("nan")
        return {
            "timesteps_executed": steps, "episodes_executed": episodes, "runtime": runtime,
            "env_frames_per_second": steps / runtime if runtime > 0 else float("nan"),
            "episode_returns": returns, "episode_lengths": lengths,
            "mean_episode_return": mean(returns), "max_episode_return": max(returns) if returns else float("nan"),
            "min_episode_return": min(returns) if returns else float("nan"),
            "final_episode_return": returns[-1] if returns else float("nan"),
            "mean_episode_length": mean(lengths), "num_updates": len(losses), "mean_loss": mean(losses),
            "losses": losses, "act_time": act_time, "env_time": env_time, "update_time": update_time,
            "total_timesteps": self.total_steps, "agent_timesteps": self.agent.timesteps,
        }


def _cause(error: Exception) -> BaseException:
    """The env's own exception: the cause of an `RLGraphEnvError` raised by the vector env, else `error`."""
    if isinstance(error, RLGraphEnvError) and error.__cause__ is not None:
        return error.__cause__
    return error


def _set_row(batch: Any, i: int, value: Any) -> Any:
    def assign(x, v):
        x[i] = v
        return x
    try:
        return map_structure(assign, batch, value)
    except (TypeError, ValueError) as error:
        raise RLGraphError("a reset state does not fit the batch of states", where="SingleThreadedWorker",
                           received=str(error)) from error
