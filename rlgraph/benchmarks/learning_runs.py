"""One run of the learning-quality study (a child process): one library on one seed, trained and evaluated.

`evaluated_run`, `train_rlgraph` and `train_sb3` are the study-independent parts, which the zoo
benchmark (`zoo.py`) runs with its own configs and models.
"""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from rlgraph.benchmarks import rl_statistics as stats
from rlgraph.benchmarks.learning_variants import ALGOS, SB3, VARIANTS, StudyAlgo

EVAL_SEED_BASE = 10_000  # Evaluation env i of seed s is reset with EVAL_SEED_BASE + 1000 * s + i.


def greedy_returns(envs: list, act: Callable[[np.ndarray], Any], to_env_action: Callable[[Any], Any],
                   seed: int) -> List[float]:
    """One greedy episode in each env of `envs`, stepped side by side: env i is reset with
    EVAL_SEED_BASE + 1000 * seed + i, and `act` gets the states of all unfinished envs at once."""
    states = [env.reset(seed=EVAL_SEED_BASE + 1000 * seed + i)[0] for i, env in enumerate(envs)]
    returns = np.zeros(len(envs))
    alive = list(range(len(envs)))
    while alive:
        actions = act(np.stack([states[i] for i in alive]))
        still = []
        for k, i in enumerate(alive):
            states[i], reward, terminated, truncated, _ = envs[i].step(to_env_action(actions[k]))
            returns[i] += float(reward)
            if not (terminated or truncated):
                still.append(i)
        alive = still
    return returns.tolist()


def _env_action(algo: StudyAlgo) -> Callable[[Any], Any]:
    if algo.continuous:
        return lambda action: np.asarray(action, dtype=np.float32).reshape(-1)
    return int


def rlgraph_study_config(job: dict) -> dict:
    """The rlgraph config of a job: the peer benchmark's config, the variant, then `--set`."""
    import importlib
    from rlgraph.execution.training import apply_overrides
    algo = ALGOS[job["algo"]]
    module = importlib.import_module(algo.module)
    hp, backend, steps, seed = job["hyperparameters"], job["library"][len("rlgraph-"):], job["steps"], job["seed"]
    if job["algo"] == "dqn":
        from rlgraph.utils.specifiable import load_spec_file
        config = module.rlgraph_config(load_spec_file(module.DEFAULT_CONFIG), hp, backend, steps, seed, 1)
    else:
        config = module.rlgraph_config(hp, backend, steps, seed, 1)
    config = VARIANTS[job["algo"]][job["variant"]][1](copy.deepcopy(config))
    return apply_overrides(config, job["overrides"])


def run_job(job: dict) -> dict:
    """Trains and evaluates one (library, variant, seed) run of the study; returns its record (curve included)."""
    import importlib
    algo = ALGOS[job["algo"]]
    if job["library"] == SB3:
        def train(evaluate: Callable) -> int:
            from rlgraph.benchmarks.sb3_peer import quiet_logger
            module = importlib.import_module(algo.module)
            model = quiet_logger(module.make_sb3_model(job["hyperparameters"], job["seed"]))
            return train_sb3(model, lambda states: model.predict(states, deterministic=True)[0], job, evaluate)
    else:
        def train(evaluate: Callable) -> int:
            return train_rlgraph(rlgraph_study_config(job), algo.num_envs, job, evaluate)
    return evaluated_run(job, algo.env_id, _env_action(algo), algo.threshold, train)


def evaluated_run(job: dict, env_id: str, to_env_action: Callable[[Any], Any], threshold: Optional[float],
                  train: Callable[[Callable], int]) -> dict:
    """One run: `train(evaluate)` builds and trains its agent or model, calling `evaluate(step, act)`
    every `job["eval_interval"]` env steps and after the last, and returns the env steps done.

    Args:
        job: The run's settings: "seed", "eval_episodes" (greedy episodes per evaluation, stepped
            side by side by `greedy_returns`) and what `train` reads.
        env_id: The gymnasium id of the evaluation envs.
        to_env_action: One action of `act`'s batch -> what the env's step takes.
        threshold: The "solved" return (None: no steps-to-threshold figure).
        train: The library's training loop (see `train_rlgraph`, `train_sb3`).

    Returns:
        `job` plus the evaluation curve [(step, mean return)], final_return (the last evaluation),
        auc, steps_to_threshold, env_steps and the seconds spent training (train_s: building and
        training, evaluations excluded) and evaluating (eval_s).
    """
    import gymnasium as gym
    from rlgraph.benchmarks.sb3_peer import torch_state
    envs = [gym.make(env_id) for _ in range(job["eval_episodes"])]
    curve: List[Tuple[int, float]] = []
    eval_s = [0.0]

    def evaluate(step: int, act: Callable) -> None:
        start = time.perf_counter()
        curve.append((int(step), float(np.mean(greedy_returns(envs, act, to_env_action, job["seed"])))))
        eval_s[0] += time.perf_counter() - start

    start = time.perf_counter()
    try:
        with torch_state(1, False):  # rlgraph's executor sets flush-to-zero per call itself; SB3 leaves it off.
            steps_done = train(evaluate)
    finally:
        for env in envs:
            env.close()
    wall = time.perf_counter() - start
    steps, returns = [s for s, _ in curve], [r for _, r in curve]
    reached = None if threshold is None else stats.first_step_reaching(steps, returns, threshold)
    return dict(job, curve=curve, final_return=returns[-1], auc=stats.area_under_curve(steps, returns),
                steps_to_threshold=reached, env_steps=int(steps_done), train_s=wall - eval_s[0], eval_s=eval_s[0])


def train_rlgraph(config: dict, num_envs: int, job: dict, evaluate: Callable) -> int:
    """Builds rlgraph's agent from `config` and trains it in a `SingleThreadedWorker` on `num_envs`
    envs (seeded with job["seed"]) for job["steps"] env steps, evaluating every job["eval_interval"]
    (the preprocessor's variables, e.g. running statistics, are as before each evaluation after it)."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    agent, env_spec = make_agent_and_env(resolve_config(config))
    worker = SingleThreadedWorker(agent, env_spec, num_environments=num_envs, seed=job["seed"])

    def act(states: np.ndarray) -> Any:
        return agent.get_action(states, use_exploration=False)

    done = 0
    try:
        while done < job["steps"]:
            chunk = min(job["eval_interval"], job["steps"] - done)
            done += worker.execute_timesteps(chunk, reset=done == 0)["timesteps_executed"]
            with agent.preprocessor_state_kept():  # (SB3's evaluation only reads its VecNormalize.)
                evaluate(done, act)
    finally:
        worker.terminate()
        agent.terminate()
    return done


def train_sb3(model: Any, act: Callable[[np.ndarray], Any], job: dict, evaluate: Callable) -> int:
    """Trains SB3's `model` for job["steps"] env steps (`model.learn`), evaluating `act` (a batch of
    raw observations -> actions) every job["eval_interval"] env steps from a callback."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EvaluateEvery(BaseCallback):
        """Evaluates once num_timesteps passes each multiple of the interval (SB3 counts all envs)."""

        def __init__(self):
            super().__init__()
            self.next_eval = job["eval_interval"]

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                self.next_eval += job["eval_interval"]
                evaluate(self.num_timesteps, act)
            return True

    model.learn(total_timesteps=job["steps"], callback=EvaluateEvery())
    if not job["steps"] % job["eval_interval"] == 0 or not model.num_timesteps >= job["steps"]:
        evaluate(model.num_timesteps, act)  # The final evaluation, where no multiple was passed at the end.
    model.get_env().close()
    return int(model.num_timesteps)
