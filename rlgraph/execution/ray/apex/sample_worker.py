"""`ApexSampleWorker`: an Ape-X actor: an agent copy stepping a vector of environments."""
from __future__ import annotations

import copy
import time
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.records import RECORD_KEYS
from rlgraph.agents.replay_access import ReplayAccess
from rlgraph.execution.ray.actors import process_id
from rlgraph.utils.nest import map_structure
from rlgraph.utils.rlgraph_errors import RLGraphError


class RecordCollector(ReplayAccess):
    """A sample worker's stand-in for its agent's memory: keeps the records the agent observes
    (n-step transitions, rewards folded in) until `take` hands them out."""

    in_graph = False

    def __init__(self):
        super().__init__(lambda: None)
        self.records: List[dict] = []

    def insert(self, records: dict) -> None:
        self.records.append(records)

    def update_from_memory(self, batch_size, time_percentage):
        raise RLGraphError("a sample worker's agent does not learn", where="ApexSampleWorker",
                           hint="the learner samples the replay shards.")

    def size(self) -> int:
        return sum(len(r["rewards"]) for r in self.records)

    def take(self) -> Optional[dict]:
        """All collected records as one record (None if none), and forgets them."""
        records, self.records = self.records, []
        if not records:
            return None
        if len(records) == 1:
            return records[0]
        return {key: map_structure(lambda *leaves: np.concatenate(leaves), *[r[key] for r in records])
                for key in RECORD_KEYS}


def worker_epsilon(worker_spec: dict, index: int, num_workers: int, rng: np.random.RandomState,
                   epsilon_from: float) -> Optional[float]:
    """The constant (or start) epsilon of worker `index`, or None to keep the config's schedule.

    - `ray_constant_exploration`: 0.4 ** (1 + 7 * index / (num_workers - 1)) (Ape-X paper; 0.4
      for a single worker).
    - `sample_exploration`: uniform in [exploration_min_value, epsilon_from).
    """
    if worker_spec["ray_constant_exploration"]:
        return 0.4 ** (1.0 + 7.0 * index / (num_workers - 1)) if num_workers > 1 else 0.4
    if worker_spec["sample_exploration"]:
        low = float(worker_spec["exploration_min_value"])
        if low > epsilon_from:
            raise RLGraphError("exploration_min_value exceeds the epsilon schedule's start",
                               where="ray_spec.worker_spec(exploration_min_value)",
                               expected=f"<= {epsilon_from}", received=low)
        return float(rng.uniform(low, epsilon_from))
    return None


def worker_agent_config(agent_config: dict, worker_spec: dict, index: int, num_workers: int) -> dict:
    """The agent config of sample worker `index`: no learning, a one-thread backend, the worker's
    exploration and seed, and a small python memory (records go to the replay shards)."""
    config = copy.deepcopy(agent_config)
    execution = dict(config.get("execution_spec") or {})
    execution.update(worker_spec["execution_spec"] or {})
    execution.setdefault("torch_num_threads", 1)
    execution.setdefault("tf_num_threads", 1)
    seed = worker_spec["seed"] if worker_spec["seed"] is not None else execution.get("seed")
    if seed is not None:
        execution["seed"] = int(seed) + 1 + index
    config["execution_spec"] = execution
    config["update_spec"] = dict(config.get("update_spec") or {}, do_updates=False)
    config["memory_spec"] = {"type": "mem-prioritized-replay", "capacity": 1}
    config["n_step"] = worker_spec["n_step_adjustment"]
    exploration = copy.deepcopy(config.get("exploration_spec") or {})
    decay = (exploration.get("epsilon_spec") or {}).get("decay_spec")
    epsilon_from = float(decay.get("from", decay.get("from_", 1.0))) if isinstance(decay, dict) else 1.0
    epsilon = worker_epsilon(worker_spec, index, num_workers, np.random.RandomState(execution.get("seed")),
                             epsilon_from)
    if epsilon is not None:
        epsilon_spec = dict(exploration.get("epsilon_spec") or {})
        if worker_spec["sample_exploration"] and isinstance(decay, dict):
            epsilon_spec["decay_spec"] = dict(decay, **{"from": epsilon} if "from" in decay else {"from_": epsilon})
        else:
            epsilon_spec["decay_spec"] = {"type": "constant", "value": epsilon}
        exploration["epsilon_spec"] = epsilon_spec
        config["exploration_spec"] = exploration
    return config


class ApexSampleWorker:
    """Acts with an agent copy on `num_worker_environments` envs and returns n-step records with
    their initial priorities.

    Each `sample` call runs `num_worker_samples` env steps (over all of the worker's envs,
    continuing the episodes of the last call). The agent's observe buffers fold in the n-step
    returns exactly as a single-process DQN does (episode ends, time-limit truncation);
    transitions whose n-step return still waits for rewards stay buffered for the next call.
    With `worker_executes_postprocessing` the worker computes each record's priority |TD error|
    under its current weights (else the shard gives new records the highest priority).

    Args:
        agent_config: The agent config (without ray_spec) of the learner.
        worker_spec: The checked `ray_spec.worker_spec`.
        env_spec: The environment spec (or a callable making an env).
        index: This worker's index (seeds, epsilon).
        num_workers: The number of sample workers.
        clip_rewards: Observe rewards clipped to [-1, 1].
        state_space: The environment's state space (read by the executor once).
        action_space: The environment's action space (read by the executor once).
    """

    def __init__(self, agent_config: dict, worker_spec: dict, env_spec: Any, index: int, num_workers: int,
                 clip_rewards: bool, state_space: Any, action_space: Any):
        from rlgraph.agents import Agent
        from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
        self.index = index
        self.worker_spec = worker_spec
        config = worker_agent_config(agent_config, worker_spec, index, num_workers)
        self.epsilon_spec = (config.get("exploration_spec") or {}).get("epsilon_spec")
        self.agent = Agent.from_spec(config, state_space=state_space, action_space=action_space)
        self.collector = RecordCollector()
        self.agent.replay = self.collector  # Observed records are handed out by `sample`.
        if worker_spec["worker_frame_skip"] > 1:
            env_spec = {"type": "action-repeat", "env_spec": env_spec, "repeat": worker_spec["worker_frame_skip"]}
        seed = self.agent.execution_spec.get("seed")
        self.worker = SingleThreadedWorker(
            self.agent, env_spec, num_environments=worker_spec["num_worker_environments"],
            seed=None if seed is None else seed * 1000,
            worker_executes_exploration=worker_spec["worker_executes_exploration"], clip_rewards=clip_rewards)
        self.frames_per_step = worker_spec["worker_frame_skip"] * worker_spec["env_internal_frame_skip"]
        self.version = -1
        self.started = False
        self.stats = {"timesteps": 0, "episodes": 0, "episode_returns": [], "sample_time": 0.0, "act_time": 0.0,
                      "env_time": 0.0, "postprocessing_time": 0.0, "num_samples_calls": 0, "weights_set": 0}

    def ready(self) -> int:
        """The worker's pid, once it is built (the executor waits on this)."""
        return process_id()

    def set_weights(self, weights: Dict[str, np.ndarray], version: int) -> None:
        """Loads the learner's policy weights (policy version `version`)."""
        self.agent.set_weights(weights)
        self.version = int(version)
        self.stats["weights_set"] += 1

    def set_timesteps(self, timesteps: int) -> None:
        """Sets the agent's env-step counter (a restarted or restored worker continues its schedule)."""
        self.agent.timesteps = int(timesteps)

    def set_max_timesteps(self, max_timesteps: int) -> None:
        """The worker's share of the run's env steps (epsilon schedules run over it)."""
        self.agent.max_timesteps = int(max_timesteps)

    def sample(self, num_samples: int) -> tuple:
        """Runs `num_samples` env steps and returns (batch, metadata).

        Returns:
            batch: {"records": a record [B] (or None if no transition completed yet),
                "priorities": float32 [B] or None}; metadata: {"timesteps", "env_frames",
                "episode_returns", "episode_lengths", "version", "worker_index", "num_records", "pid"}.
        """
        start = time.perf_counter()
        stats = self.worker.execute_timesteps(num_samples, reset=not self.started)
        self.started = True
        self.agent.flush_buffers()  # Complete transitions go now; n-step ones wait for their rewards.
        records = self.collector.take()
        t0 = time.perf_counter()
        priorities = None
        if records is not None and self.worker_spec["worker_executes_postprocessing"]:
            priorities = self.agent.get_priorities(records)
        self.stats["postprocessing_time"] += time.perf_counter() - t0
        self.stats["timesteps"] += stats["timesteps_executed"]
        self.stats["episodes"] += stats["episodes_executed"]
        self.stats["episode_returns"].extend(stats["episode_returns"])
        self.stats["act_time"] += stats["act_time"]
        self.stats["env_time"] += stats["env_time"]
        self.stats["num_samples_calls"] += 1
        self.stats["sample_time"] += time.perf_counter() - start
        meta = {"timesteps": stats["timesteps_executed"],
                "env_frames": stats["timesteps_executed"] * self.frames_per_step,
                "episode_returns": list(stats["episode_returns"]), "episode_lengths": list(stats["episode_lengths"]),
                "version": self.version,
                "worker_index": self.index, "num_records": 0 if records is None else len(records["rewards"]),
                "pid": process_id()}
        return {"records": records, "priorities": priorities}, meta

    def get_statistics(self) -> dict:
        """What the worker did so far: timesteps, episodes, returns, times, throughput."""
        stats = dict(self.stats, episode_returns=list(self.stats["episode_returns"]), worker_index=self.index,
                     version=self.version, epsilon_spec=self.epsilon_spec)
        stats["env_frames"] = stats["timesteps"] * self.frames_per_step
        stats["timesteps_per_second"] = stats["timesteps"] / stats["sample_time"] if stats["sample_time"] else 0.0
        return stats

    def terminate(self) -> None:
        self.worker.terminate()
        self.agent.terminate()
