"""Learning-quality seed study: rlgraph against Stable-Baselines3 over many seeds.

Each run trains one library on one seed with rl-zoo's hyperparameters (those of `dqn-sb3`,
`ppo-sb3` or `sac-sb3`) and evaluates its greedy policy every `--eval-interval` env steps with
the same loop for both libraries (`greedy_returns`: `--eval-episodes` episodes stepped side by
side, env i reset with seed 10,000 + 1,000 * seed + i at every evaluation). Per run it records:

- the final return: the mean greedy return of the last evaluation (after all steps);
- the area under the evaluation curve (`rl_statistics.area_under_curve`, in return units);
- the env steps to the first evaluation at or above the env's threshold (CartPole-v1: 475).

Per library (and rlgraph variant) the runs are aggregated as interquartile means with
stratified-bootstrap 95% confidence intervals, and each rlgraph variant is compared with SB3 by
the probability of improvement (P(rlgraph run > SB3 run), 0.5 is a tie) with its interval
(`rlgraph.benchmarks.rl_statistics`). A plot shows the mean evaluation curves with 95% bands.

Runs are independent processes (spawned, one torch/TF thread each), at most `--jobs` at once,
ordered by seed so that both libraries progress together on a shared machine. Every finished
run is appended to `<out>.runs.jsonl` at once, so a cut-off study keeps its runs; `--merge`
recomputes the tables and plot from the JSON results of earlier studies (e.g. PyTorch runs on
one machine and TF runs on another) without training.

A variant changes rlgraph's side only (`VARIANTS`): "baseline" is rlgraph with SB3's
hyperparameters, as in `dqn-sb3`; the others change one factor each, for the factor study of
docs/performance.md ("Learning quality"). `--set key.path=value` changes every rlgraph run.

    rlgraph benchmark learning --algo dqn --seeds 1..20 --backends pytorch tf
    rlgraph benchmark learning --algo dqn --seeds 1..20 --variants baseline torch-init adam-eps-1e-7
    rlgraph benchmark learning --merge runs-a.json runs-b.json --out all.json
    rlgraph benchmark learning --quick
"""
from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlgraph.benchmarks import rl_statistics as stats
from rlgraph.benchmarks.common import format_table, make_parser, write_results
from rlgraph.utils.rlgraph_errors import RLGraphError

NAME = "learning"
SB3 = "sb3"
EVAL_SEED_BASE = 10_000  # Evaluation env i of seed s is reset with EVAL_SEED_BASE + 1000 * s + i.
BOOTSTRAP_REPS = 2000


@dataclass(frozen=True)
class StudyAlgo:
    """What the study needs of one algorithm: its peer benchmark module and run settings."""
    module: str            # The SB3 peer benchmark (HYPERPARAMETERS, rlgraph_config, make_sb3_model).
    env_id: str
    steps: int             # Env steps per run.
    eval_interval: int     # Env steps between evaluations.
    threshold: float       # The "solved" return (the env's reward_threshold, or rl-zoo's for Pendulum).
    num_envs: int          # Envs rlgraph's worker steps (SB3's model brings its own).
    continuous: bool       # Box actions (Pendulum) rather than Discrete.


ALGOS: Dict[str, StudyAlgo] = {
    "dqn": StudyAlgo("rlgraph.benchmarks.dqn_vs_sb3", "CartPole-v1", 50_000, 2_500, 475.0, 1, False),
    "ppo": StudyAlgo("rlgraph.benchmarks.ppo_vs_sb3", "CartPole-v1", 100_000, 5_000, 475.0, 8, False),
    "sac": StudyAlgo("rlgraph.benchmarks.sac_vs_sb3", "Pendulum-v1", 20_000, 1_000, -200.0, 1, True),
}
# --quick: a run of seconds through every phase (warm-up, updates, two evaluations), 2 seeds.
QUICK = {"steps": 600, "eval_interval": 300, "eval_episodes": 2, "seeds": [1, 2],
         "hyperparameters": {"dqn": {"learning_starts": 100, "train_freq": 64, "gradient_steps": 8},
                             "ppo": {"n_epochs": 2}, "sac": {"learning_starts": 100, "batch_size": 64}}}


def _glorot_init(config: dict) -> dict:
    """rlgraph's DenseLayer default: glorot-uniform weights and zero biases (instead of the
    fan-in uniform draw of torch.nn.Linear that dqn-sb3 and the shipped DQN configs use)."""
    for layer in config["network_spec"]:
        layer.update(weights_spec="glorot_uniform", biases_spec=0.0)
    config["action_adapter_spec"] = dict(config.get("action_adapter_spec") or {}, weights_spec="glorot_uniform",
                                         biases_spec=0.0)
    return config


def _set(path: str, value: Any) -> Callable[[dict], dict]:
    def change(config: dict) -> dict:
        node = config
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        if value is _DELETE:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
        return config
    return change


_DELETE = object()
# algo -> variant -> (what it changes, config -> config). "baseline" is SB3's hyperparameters.
VARIANTS: Dict[str, Dict[str, Tuple[str, Callable[[dict], dict]]]] = {
    "dqn": {
        "baseline": ("rl-zoo hyperparameters as in dqn-sb3: fan-in uniform init (torch's), Adam eps 1e-8, "
                     "grad-norm clip 10", lambda config: config),
        "glorot-init": ("glorot-uniform weights and zero biases (rlgraph's DenseLayer default)", _glorot_init),
        "adam-eps-1e-7": ("Adam epsilon 1e-7 (rlgraph's default) instead of torch's 1e-8",
                          _set("optimizer_spec.epsilon", 1e-7)),
        "no-clip": ("no gradient-norm clipping (SB3 clips at 10)", _set("optimizer_spec.clip_grad_norm", _DELETE)),
        "double-q": ("double Q-learning target (SB3's DQN has none)", _set("double_q", True)),
        "mse": ("0.5 * TD^2 loss instead of Huber (SB3: smooth L1)", _set("huber_loss", False)),
    },
    "ppo": {"baseline": ("rl-zoo hyperparameters as in ppo-sb3", lambda config: config)},
    "sac": {"baseline": ("rl-zoo hyperparameters as in sac-sb3", lambda config: config)},
}


def parse_seeds(tokens: Sequence[str]) -> List[int]:
    """Seeds from tokens such as "1..20", "3" (an inclusive range or one seed each)."""
    seeds: List[int] = []
    for token in tokens:
        text = str(token)
        try:
            if ".." in text:
                low, high = (int(part) for part in text.split("..", 1))
                if high < low:
                    raise ValueError
                seeds.extend(range(low, high + 1))
            else:
                seeds.append(int(text))
        except ValueError:
            raise RLGraphError("a seed must be an integer or an inclusive range LOW..HIGH",
                               where="rlgraph benchmark learning --seeds", received=text) from None
    if any(seed < 0 for seed in seeds) or len(set(seeds)) != len(seeds):
        raise RLGraphError("seeds must be distinct integers >= 0", where="rlgraph benchmark learning --seeds",
                           received=seeds)
    return seeds


# --- One run (in a child process) ---------------------------------------------------------------
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
    model = importlib.import_module(algo.module).make_sb3_model(job["hyperparameters"], job["seed"])

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


# --- The study ----------------------------------------------------------------------------------
def make_jobs(args: argparse.Namespace, hp: Dict[str, Any]) -> List[dict]:
    """One job per (seed, contender), seed-major so that all contenders progress together."""
    contenders = [(f"rlgraph-{backend}", variant) for variant in args.variants for backend in args.backends]
    if args.peer == SB3:
        contenders.append((SB3, "-"))
    jobs = []
    for index, seed in enumerate(args.seeds):
        order = contenders if index % 2 == 0 else contenders[::-1]
        for library, variant in order:
            jobs.append({"algo": args.algo, "library": library, "variant": variant, "seed": seed,
                         "steps": args.steps, "eval_interval": args.eval_interval,
                         "eval_episodes": args.eval_episodes, "hyperparameters": hp,
                         "overrides": list(args.set) if library != SB3 else []})
    return jobs


def run_jobs(jobs: List[dict], num_jobs: int, log_path: Optional[str]) -> List[dict]:
    """Runs `jobs` in `num_jobs` spawned processes; appends each finished run to `log_path` (JSON lines)."""
    runs: List[dict] = []
    log = open(log_path, "a") if log_path else None
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=num_jobs, mp_context=context) as pool:
            futures = {pool.submit(run_job, job): job for job in jobs}
            for future in as_completed(futures):
                run = future.result()
                runs.append(run)
                if log:
                    log.write(json.dumps(run) + "\n")
                    log.flush()
                print(f"{run['library']:<15} {run['variant']:<14} seed {run['seed']:>3}: final {run['final_return']:8.1f}"
                      f"  auc {run['auc']:8.1f}  to threshold {run['steps_to_threshold']}  "
                      f"train {run['train_s']:6.1f} s", flush=True)
    finally:
        if log:
            log.close()
    return runs


def group_name(run: dict) -> str:
    return SB3 if run["library"] == SB3 else f"{run['library']}/{run['variant']}"


def summarize(runs: List[dict], threshold: float, reps: int = BOOTSTRAP_REPS) -> Dict[str, dict]:
    """Per group ("rlgraph-pytorch/baseline", "sb3"): IQM and 95% bootstrap CI of the final return
    and the AUC, median steps to the threshold, the fraction of runs reaching it and the training
    steps/s; each rlgraph group adds its probability of improvement over SB3 (final return, AUC)."""
    groups: Dict[str, List[dict]] = {}
    for run in sorted(runs, key=lambda r: r["seed"]):
        groups.setdefault(group_name(run), []).append(run)
    summary: Dict[str, dict] = {}
    for name, mine in groups.items():
        entry: Dict[str, Any] = {"runs": len(mine), "seeds": [r["seed"] for r in mine]}
        for key in ("final_return", "auc"):
            values = np.array([r[key] for r in mine], dtype=np.float64)
            point, low, high = stats.stratified_bootstrap_ci(values, stats.iqm, reps=reps, seed=0)
            entry[key] = {"iqm": point, "ci": [low, high], "mean": float(values.mean())}
        reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]
        entry["reached_threshold"] = len(reached) / len(mine)
        entry["median_steps_to_threshold"] = float(np.median(reached)) if reached else None
        entry["train_steps_per_s"] = float(np.mean([r["env_steps"] / r["train_s"] for r in mine]))
        summary[name] = entry
    if SB3 in groups:
        for name, mine in groups.items():
            if name == SB3:
                continue
            for key in ("final_return", "auc"):
                x = np.array([r[key] for r in mine], dtype=np.float64)
                y = np.array([r[key] for r in groups[SB3]], dtype=np.float64)
                point, low, high = stats.probability_of_improvement_ci(x, y, reps=reps, seed=0)
                summary[name][key]["p_improvement_vs_sb3"] = {"p": point, "ci": [low, high]}
    return summary


def report(result: dict, out: Optional[str]) -> dict:
    """Prints the summary table, writes the JSON results and the curve plot next to them."""
    summary, algo = result["summary"], ALGOS[result["algo"]]

    def ci(entry: dict) -> str:
        return f"{entry['iqm']:.1f} [{entry['ci'][0]:.1f}, {entry['ci'][1]:.1f}]"

    def poi(entry: dict) -> str:
        p = entry.get("p_improvement_vs_sb3")
        return "-" if p is None else f"{p['p']:.2f} [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}]"

    print()
    print(f"{result['algo']} on {algo.env_id}: {result['steps']} steps per run, evaluation every "
          f"{result['eval_interval']} steps ({result['eval_episodes']} episodes); IQM [95% stratified-bootstrap CI]")
    print(format_table(
        ["contender", "runs", "final return IQM", "P(> SB3) final", "AUC IQM", "P(> SB3) AUC",
         f"reached {algo.threshold:g}", "median steps to it", "train steps/s"],
        [[name, s["runs"], ci(s["final_return"]), poi(s["final_return"]), ci(s["auc"]), poi(s["auc"]),
          f"{s['reached_threshold']:.0%}", s["median_steps_to_threshold"] or "-", s["train_steps_per_s"]]
         for name, s in summary.items()]))
    path = write_results(result, out)
    if path:
        plot = os.path.splitext(path)[0] + ".png"
        curves = {}
        for name in summary:
            mine = sorted((r for r in result["runs"] if group_name(r) == name), key=lambda r: r["seed"])
            grid = _common_grid(mine)
            curves[name] = (grid, np.array([_on_grid(r["curve"], grid) for r in mine]))
        stats.plot_curves_with_ci(curves, plot, title=f"{result['algo']} on {algo.env_id}: mean greedy return, 95% CI",
                                  threshold=algo.threshold)
        result["plot"] = plot
        print(f"wrote {path} and {plot}")
    return result


def _common_grid(runs: List[dict]) -> np.ndarray:
    """The evaluation steps all runs share (rounded to the interval: SB3's vector envs overshoot)."""
    return np.array(sorted(set.intersection(*(set(s for s, _ in r["curve"]) for r in runs))) or
                    [s for s, _ in runs[0]["curve"]])


def _on_grid(curve: List[Tuple[int, float]], grid: np.ndarray) -> np.ndarray:
    steps, returns = zip(*curve)
    return np.interp(grid, steps, returns)


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=sorted(ALGOS), default="dqn", help="algorithm (default: %(default)s)")
    parser.add_argument("--seeds", nargs="+", default=["1..20"], help="seeds: numbers or LOW..HIGH (default: 1..20)")
    parser.add_argument("--backends", nargs="+", choices=["pytorch", "tf"], default=["pytorch"],
                        help="rlgraph backends (default: %(default)s)")
    parser.add_argument("--variants", nargs="+", default=["baseline"],
                        help="rlgraph variants (default: baseline; see VARIANTS)")
    parser.add_argument("--peer", choices=[SB3, "none"], default=SB3, help="the peer library (default: sb3)")
    parser.add_argument("--steps", type=int, help="env steps per run (default: the algorithm's)")
    parser.add_argument("--eval-interval", type=int, help="env steps between evaluations (default: the algorithm's)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes per evaluation (default: 10)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (default: CPU count)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                        help="override a value of every rlgraph run's config")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="summarize the runs of earlier results; no training")
    args = parser.parse_args(argv)
    if args.merge:
        return _merge(args)
    algo = ALGOS[args.algo]
    unknown = sorted(set(args.variants) - set(VARIANTS[args.algo]))
    if unknown:
        raise RLGraphError(f"unknown variant(s) {unknown}", where="rlgraph benchmark learning --variants",
                           expected=sorted(VARIANTS[args.algo]), received=args.variants)
    hp = dict(__import__(algo.module, fromlist=["HYPERPARAMETERS"]).HYPERPARAMETERS)
    args.seeds = parse_seeds(args.seeds)
    args.steps = args.steps or algo.steps
    args.eval_interval = args.eval_interval or algo.eval_interval
    if args.quick:
        hp.update(QUICK["hyperparameters"].get(args.algo, {}))
        args.steps, args.eval_interval = QUICK["steps"], QUICK["eval_interval"]
        args.eval_episodes, args.seeds = QUICK["eval_episodes"], QUICK["seeds"]
    for name in ("steps", "eval_interval", "eval_episodes", "jobs"):
        if getattr(args, name) < 1:
            raise RLGraphError("must be >= 1", where=f"rlgraph benchmark learning --{name.replace('_', '-')}",
                               received=getattr(args, name))
    if args.peer == SB3:
        from rlgraph.benchmarks.sb3_peer import require_sb3
        require_sb3(NAME)
    jobs = make_jobs(args, hp)
    log_path = os.path.splitext(args.out)[0] + ".runs.jsonl" if args.out else None
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    print(f"{len(jobs)} runs ({len(args.seeds)} seeds), {min(args.jobs, len(jobs))} at a time; runs go to {log_path}",
          flush=True)
    start = time.perf_counter()
    runs = run_jobs(jobs, min(args.jobs, len(jobs)), log_path)
    result = {"benchmark": NAME, "algo": args.algo, "env": algo.env_id, "steps": args.steps,
              "eval_interval": args.eval_interval, "eval_episodes": args.eval_episodes, "seeds": args.seeds,
              "backends": args.backends, "variants": {v: VARIANTS[args.algo][v][0] for v in args.variants},
              "peer": args.peer, "overrides": args.set, "quick": args.quick, "hyperparameters": hp,
              "wall_s": time.perf_counter() - start, "runs": sorted(runs, key=lambda r: (r["seed"], group_name(r)))}
    result["summary"] = summarize(result["runs"], algo.threshold)
    return report(result, args.out)


def _merge(args: argparse.Namespace) -> dict:
    """The summary of the runs in earlier results files (.json results or .runs.jsonl logs)."""
    runs: List[dict] = []
    for path in args.merge:
        with open(path) as handle:
            if path.endswith(".jsonl"):
                runs.extend(json.loads(line) for line in handle if line.strip())
            else:
                runs.extend(json.load(handle)["runs"])
    if not runs:
        raise RLGraphError("no runs in the files", where="rlgraph benchmark learning --merge", received=args.merge)
    algos = {r["algo"] for r in runs}
    settings = {(r["steps"], r["eval_interval"], r["eval_episodes"]) for r in runs}
    if len(algos) != 1 or len(settings) != 1:
        raise RLGraphError("the runs differ in algorithm or run settings", where="rlgraph benchmark learning --merge",
                           expected="one algorithm, steps, eval interval and episodes",
                           received={"algos": sorted(algos), "settings": sorted(settings)})
    (algo,), ((steps, interval, episodes),) = algos, settings
    # A run repeated in several files counts once (the last one read).
    unique = {(r["library"], r["variant"], r["seed"]): r for r in runs}
    runs = sorted(unique.values(), key=lambda r: (r["seed"], group_name(r)))
    result = {"benchmark": NAME, "algo": algo, "env": ALGOS[algo].env_id, "steps": steps, "eval_interval": interval,
              "eval_episodes": episodes, "merged_from": list(args.merge), "runs": runs}
    result["summary"] = summarize(runs, ALGOS[algo].threshold)
    return report(result, args.out)


if __name__ == "__main__":
    main()
