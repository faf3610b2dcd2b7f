"""One run of the learning-quality study (a child process): one library on one seed, trained and evaluated."""
from __future__ import annotations

import copy
import time
from typing import Any, Callable, List, Tuple

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
    """Trains and evaluates one (library, variant, seed) run; returns its record (curve included)."""
    import gymnasium as gym
    from rlgraph.benchmarks.sb3_peer import torch_state
    algo = ALGOS[job["algo"]]
    envs = [gym.make(algo.env_id) for _ in range(job["eval_episodes"])]
    to_env_action, seed = _env_action(algo), job["seed"]
    curve: List[Tuple[int, float]] = []
    eval_s = [0.0]

    def evaluate(step: int, act: Callable) -> None:
        start = time.perf_counter()
        curve.append((int(step), float(np.mean(greedy_returns(envs, act, to_env_action, seed)))))
        eval_s[0] += time.perf_counter() - start

    start = time.perf_counter()
    with torch_state(1, False):  # rlgraph's executor sets flush-to-zero per call itself; SB3 leaves it off.
        if job["library"] == SB3:
            steps_done = _run_sb3(job, algo, evaluate)
        else:
            steps_done = _run_rlgraph(job, algo, evaluate)
    wall = time.perf_counter() - start
    for env in envs:
        env.close()
    steps, returns = [s for s, _ in curve], [r for _, r in curve]
    return dict(job, curve=curve, final_return=returns[-1], auc=stats.area_under_curve(steps, returns),
                steps_to_threshold=stats.first_step_reaching(steps, returns, algo.threshold),
                env_steps=int(steps_done), train_s=wall - eval_s[0], eval_s=eval_s[0])


def _run_rlgraph(job: dict, algo: StudyAlgo, evaluate: Callable) -> int:
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    agent, env_spec = make_agent_and_env(resolve_config(rlgraph_study_config(job)))
    worker = SingleThreadedWorker(agent, env_spec, num_environments=algo.num_envs, seed=job["seed"])

    def act(states: np.ndarray) -> Any:
        return agent.get_action(states, use_exploration=False)

    done = 0
    try:
        while done < job["steps"]:
            chunk = min(job["eval_interval"], job["steps"] - done)
            done += worker.execute_timesteps(chunk, reset=done == 0)["timesteps_executed"]
            evaluate(done, act)
    finally:
        worker.terminate()
        agent.terminate()
    return done


def _run_sb3(job: dict, algo: StudyAlgo, evaluate: Callable) -> int:
    import importlib
    from stable_baselines3.common.callbacks import BaseCallback
    from rlgraph.benchmarks.sb3_peer import quiet_logger
    model = quiet_logger(importlib.import_module(algo.module).make_sb3_model(job["hyperparameters"], job["seed"]))

    def act(states: np.ndarray) -> Any:
        return model.predict(states, deterministic=True)[0]

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
