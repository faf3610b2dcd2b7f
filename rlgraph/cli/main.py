"""`rlgraph` command: `info`, `train`, `evaluate`, `export`, `visualize` and `benchmark`.

`rlgraph benchmark list` lists the benchmarks (`rlgraph.benchmarks.BENCHMARKS`);
`rlgraph benchmark NAME [options]` runs one, passing the options on (`--help` shows them).
The command imports no backend at start-up; each sub-command imports what it needs.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from typing import List, Optional

import numpy as np

import rlgraph
from rlgraph.backend_system import BACKENDS, default_backend, is_backend_installed
from rlgraph.environments.env_utils import allow_env_module_import
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphEnvError, RLGraphError, RLGraphInterrupted
from rlgraph.utils.util import log_to_stderr

# Exit status of a sub-command that needs an optional package (or backend) that is not installed.
EXIT_UNAVAILABLE = 3
# Seeds go to numpy's RandomState (the range of execution_spec.seed), the backends and the environments.
MAX_SEED = 2 ** 32 - 1
# `rlgraph export`: format -> the default output's suffix (after "<checkpoint>-policy").
EXPORT_SUFFIXES = {"torchscript": ".pt", "onnx": ".onnx", "savedmodel": "-savedmodel"}
# `--log-level` choices: the levels of python's logging module.
LOG_LEVELS = ("debug", "info", "warning", "error")
# What `rlgraph visualize` writes: SVG (drawn by rlgraph itself) or Graphviz DOT text.
VISUALIZE_FORMATS = (".svg", ".dot")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlgraph", description="Build, train and inspect rlgraph agents.")
    parser.add_argument("--version", action="version", version=f"rlgraph {rlgraph.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="show the version and the installed backends")
    train = commands.add_parser("train", help="train an agent from a JSON/YAML config, or --algo on --env",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_train_epilog())
    train.add_argument("config", nargs="?",
                       help="agent config file (e.g. configs/dqn_cartpole.json); or give --algo and --env")
    train.add_argument("--algo", help="train this algorithm without a config file (needs --env): "
                                      "the zoo's config of the pair (configs/zoo/) or another shipped one where "
                                      "there is one, else its defaults")
    train.add_argument("--env", help="environment id; replaces only the id of the config's environment, "
                                     "and stop_at_return with the id's reward_threshold (default: from the config)")
    train.add_argument("--backend", choices=["tf", "pytorch", "torch"], help="backend (default: rlgraph's default)")
    train.add_argument("--steps", type=int, help="number of environment steps")
    train.add_argument("--device", help='where the agent runs: "auto" (a GPU where the backend sees one), "cpu", '
                                        '"cuda", "cuda:N" (execution_spec.device; default: the config\'s)')
    seeding = train.add_mutually_exclusive_group()
    seeding.add_argument("--seed", type=int, help="random seed")
    seeding.add_argument("--seeds", type=int, nargs="+", metavar="SEED",
                         help="train once per seed, in parallel processes, into OUTPUT_DIR/seed-S, then summarize")
    train.add_argument("--jobs", type=int, metavar="N",
                       help="--seeds: processes at once (default: min(number of seeds, CPU count))")
    train.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config value")
    train.add_argument("--output-dir", help="where logs and checkpoints go (default: runs/<config>-<backend>-<time>)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--ray-address", metavar="HOST:PORT",
                       help="Ray cluster of a distributed (Ape-X) config (default: its redis_address, else a "
                            "Ray started here)")
    train.add_argument("--learners", type=int, metavar="N",
                       help="N data-parallel learner processes, gradients averaged every update "
                            "(execution_spec.num_learners; docs/distributed.md)")
    train.add_argument("--resume", metavar="RUN_DIR",
                       help="continue a run from its newest checkpoint, with its own config (--steps N trains "
                            "it further)")
    train.add_argument("--hook", action="append", default=[], metavar="MODULE:CLASS",
                       help="a rlgraph.execution.hooks.Hook subclass to run (importable module; repeatable)")
    train.add_argument("--wandb", metavar="PROJECT", help="log the TensorBoard scalars to this W&B project too")
    train.add_argument("--mlflow", metavar="EXPERIMENT", help="log the TensorBoard scalars to this MLflow experiment too")
    evaluate = commands.add_parser("evaluate", help="evaluate, watch or record a saved agent")
    evaluate.add_argument("checkpoint", help="a checkpoint directory written by `rlgraph train`, or a run directory "
                                             "(its newest checkpoint)")
    evaluate.add_argument("--best", action="store_true", help="of a run directory: its best checkpoint")
    showing = evaluate.add_mutually_exclusive_group()
    showing.add_argument("--render", action="store_true", help="show the greedy episodes in a window")
    showing.add_argument("--video", metavar="FILE.gif|FILE.mp4", help="record one greedy episode into this file")
    evaluate.add_argument("--episodes", type=int,
                          help="number of greedy episodes (default: 10; with --video: 1, recorded back to back)")
    evaluate.add_argument("--env", help="environment id (default: the one it was trained on)")
    evaluate.add_argument("--seed", type=int, default=0, help="environment seed")
    evaluate.add_argument("--device", help='where the agent runs (default: the run\'s execution_spec.device), e.g. '
                                           '"cpu" for a run trained on a GPU this machine lacks')
    export = commands.add_parser(
        "export", help="export a saved agent's greedy policy to run without rlgraph",
        description="Writes the greedy policy (preprocessing, network, action selection) of a `rlgraph train` "
                    "checkpoint as TorchScript (torch.jit.load), ONNX (onnxruntime) or a TF SavedModel "
                    "(tf.saved_model.load), from either backend; the file is checked against the agent's actions "
                    "before it is put in place.")
    export.add_argument("checkpoint", help="a checkpoint directory written by `rlgraph train`")
    export.add_argument("--format", choices=list(EXPORT_SUFFIXES), default="torchscript",
                        help="export format (default: torchscript)")
    export.add_argument("--out", help="file (directory for savedmodel) to write (default: next to the checkpoint, "
                                      "<checkpoint>-policy.pt, -policy.onnx or -policy-savedmodel)")
    export.add_argument("--no-preprocessing", action="store_true",
                        help="export the policy on preprocessed states (needed for stateful preprocessors)")
    visualize = commands.add_parser("visualize", help="render an agent's component graph")
    visualize.add_argument("config")
    visualize.add_argument("--env", help="environment id (default: from the config)")
    visualize.add_argument("--backend", choices=["tf", "pytorch", "torch"], help="backend to build with")
    visualize.add_argument("--output", help="output file, .svg or .dot (default: <config name>.svg)")
    for command in (train, evaluate, export, visualize):
        command.add_argument("--log-level", choices=LOG_LEVELS,
                             help="print rlgraph's messages of this level and above to stderr, e.g. info for the "
                                  "build's figures and a replay memory's bytes (default: warnings only)")
        command.add_argument("--allow-env-module-import", action="store_true",
                             help="let env ids of the form MODULE:ENV_ID (in the config, --env or the checkpoint) "
                                  "import MODULE, which registers ENV_ID; only for modules you trust")
    benchmark = commands.add_parser("benchmark", help="run a benchmark ('list' lists them)")
    benchmark.add_argument("name", help="a benchmark name, or 'list'")
    benchmark.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's own options (see NAME --help)")
    return parser


def _train_epilog() -> str:
    """The end of `rlgraph train --help`: the training_spec keys with their defaults, and examples."""
    from rlgraph.execution.algo_defaults import algo_names
    from rlgraph.execution.training import TRAINING_SPEC_DEFAULTS
    width = max(map(len, TRAINING_SPEC_DEFAULTS))
    keys = "\n".join(f"  {key:{width}s}  {json.dumps(value)}" for key, value in TRAINING_SPEC_DEFAULTS.items())
    return (f"training_spec keys (default; meanings in docs/agents.md), set with --set training_spec.KEY=VALUE:\n"
            f"{keys}\n\n--algo: {', '.join(algo_names())}\n\n"
            "examples:\n"
            "  rlgraph train configs/dqn_cartpole.json --set training_spec.evaluation_interval=1000\n"
            "  rlgraph train configs/dqn_cartpole.json --set update_spec.batch_size=128 "
            "--set optimizer_spec.learning_rate=0.0005\n"
            "  rlgraph train configs/dqn_cartpole.json --set training_spec.stop_at_return=null\n"
            "  rlgraph train configs/dqn_pong.json --env ALE/Breakout-v5\n"
            "  rlgraph train --algo ppo --env Acrobot-v1 --steps 100000\n"
            "  rlgraph train configs/dqn_cartpole.json --seeds 1 2 3 4 5 --jobs 2\n"
            "--set values are JSON where they parse as JSON (numbers, null, true, \"text\", [...], {...}), else text.")


def _info() -> int:
    print(f"rlgraph {rlgraph.__version__}")
    for name in BACKENDS:
        print(f"backend {name:8s} {'installed' if is_backend_installed(name) else 'not installed'}")
    try:
        print(f"default backend: {default_backend()}")
    except RLGraphError as error:
        print(f"default backend: none ({error})")
    print(f"distributed backend: {rlgraph.get_distributed_backend()}")
    return 0


def _train_config(args):
    """(resolved config, run name) of `rlgraph train`: from a config file, or from --algo and --env."""
    from rlgraph.execution.training import resolve_config
    if (args.config is None) == (args.algo is None):
        raise RLGraphError("give a config file or --algo, not both" if args.config else "nothing to train",
                           where="rlgraph train", expected="CONFIG, or --algo ALGO --env ID",
                           received=f"{args.config} and --algo {args.algo}" if args.config else "neither",
                           hint="e.g. `rlgraph train configs/dqn_cartpole.json` or "
                                "`rlgraph train --algo dqn --env CartPole-v1`.")
    if args.jobs is not None and not args.seeds:
        raise RLGraphError("--jobs needs --seeds", where="rlgraph train --jobs", received=args.jobs,
                           hint="give several seeds, e.g. --seeds 1 2 3 --jobs 2.")
    if args.algo is None:
        config = resolve_config(args.config, args.env, args.backend, args.steps, args.seed, args.set)
        return config, os.path.splitext(os.path.basename(args.config))[0]
    if args.env is None:
        raise RLGraphError("--algo needs an environment", where=f"rlgraph train --algo {args.algo}",
                           expected="--env ID", hint=f"e.g. rlgraph train --algo {args.algo} --env CartPole-v1.")
    from rlgraph.execution.algo_defaults import algo_config
    base, source = algo_config(args.algo, args.env)
    print(f"rlgraph train: {base['type']} on {args.env}, config: {source}")
    config = resolve_config(base, None, args.backend, args.steps, args.seed, args.set)
    return config, f"{config['type']}-{args.env.replace('/', '-')}"


def _loggers(args) -> List[dict]:
    """The `training_spec.loggers` entries of --wandb PROJECT and --mlflow EXPERIMENT."""
    loggers = [{"type": "wandb", "project": args.wandb}] if args.wandb else []
    return loggers + ([{"type": "mlflow", "experiment": args.mlflow}] if args.mlflow else [])


def _train(args) -> int:
    from rlgraph.execution.training import train, with_device
    if args.resume is not None:
        # The run's own config: train() refuses the options that would change it.
        given = [name for name in ("algo", "seeds", "jobs") if getattr(args, name) is not None]
        if given:
            raise RLGraphError("a resumed run keeps the config it started with", where="rlgraph train --resume",
                               received=", ".join(f"--{name}" for name in given),
                               hint="only --steps, --learners and --device may change on --resume.")
        output_dir = args.resume
        summary = train(args.config, args.env, args.backend, args.steps, args.seed, args.set,
                        output_dir=args.output_dir, progress=not args.no_progress, ray_address=args.ray_address,
                        resume=args.resume, hooks=args.hook, loggers=_loggers(args), learners=args.learners,
                        device=args.device)
    else:
        config, name = _train_config(args)
        with_device(config, args.device)  # (In the config, so that the runs of --seeds have it too.)
        if args.learners is not None:  # (In the config, so that the runs of --seeds have it too.)
            from rlgraph.execution.learners import num_learners_of
            config["execution_spec"]["num_learners"] = num_learners_of({"execution_spec": {"num_learners":
                                                                                          args.learners}})
        output_dir = args.output_dir
        if output_dir is None:
            from rlgraph.backend_system import normalize_backend
            backend = normalize_backend(config.get("backend") or default_backend())
            output_dir = os.path.join("runs", f"{name}-{backend}-{time.strftime('%Y%m%d-%H%M%S')}")
        _make_directory(output_dir, "rlgraph train --output-dir")
        if args.seeds:
            if args.hook or _loggers(args):
                raise RLGraphError("hooks and loggers are not passed on to the runs of --seeds",
                                   where="rlgraph train --seeds", received="--hook, --wandb or --mlflow",
                                   hint="train the seeds one by one with --seed S, or name them in "
                                        "training_spec.hooks / training_spec.loggers.")
            from rlgraph.execution.multi_seed import train_seeds
            return train_seeds(config, args.seeds, output_dir, jobs=args.jobs, ray_address=args.ray_address)
        summary = train(config, output_dir=output_dir, progress=not args.no_progress, ray_address=args.ray_address,
                        hooks=args.hook, loggers=_loggers(args), learners=args.learners)
    # What `--seeds` (multi_seed) reads back of each seed's run; written whole or not at all.
    from rlgraph.utils.run_logs import write_atomically, write_error
    try:
        write_atomically(os.path.join(output_dir, "summary.json"),
                         lambda handle: json.dump(summary, handle, indent=2, default=_json_value))
    except OSError as error:
        raise write_error(error, f"{output_dir}/summary.json", "rlgraph train",
                          f"the run itself finished: its checkpoints and logs are in {output_dir}.") from error
    evaluations = ", ".join(f"{step}: {value:.1f}" for step, value in summary["evaluations"]) or "none"
    print(f"rlgraph train: {summary['timesteps']} steps, {summary['episodes']} episodes in "
          f"{summary['wall_time']:.1f} s ({summary['env_frames_per_second']:.0f} steps/s) on {summary['backend']}.")
    if "mean_policy_lag" in summary:  # A distributed run.
        learners = f" on {summary['num_learners']} learners" if summary.get("num_learners", 1) > 1 else ""
        print(f"learner: {summary['num_updates']} updates{learners} ({summary['updates_per_second']:.0f}/s), "
              f"mean policy lag {summary['mean_policy_lag']:.1f} updates, {summary['restarts']} actor restarts.")
    print(f"evaluations (step: mean return): {evaluations}")
    if summary["solved"]:
        print(f"reached the target return at step {summary['solved_at_step']}.")
    print(f"checkpoint: {summary['checkpoint']}\nlearning curve: {summary['learning_curve']}\n"
          f"logs (CSV, TensorBoard): {summary['output_dir']}")
    return 0


def _json_value(value):
    """A numpy scalar as a python number (anything else JSON cannot hold as its text)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def _load_checkpoint(checkpoint: str, env: Optional[str], command: str, device: Optional[str] = None):
    """(agent with the checkpoint's variables, env spec, resolved config) of a `rlgraph train` checkpoint;
    `device` replaces the run's execution_spec.device (checkpoints hold host arrays, so any device loads them)."""
    from rlgraph.agents.agent_checkpoints import CHECKPOINT_KIND
    from rlgraph.execution.training import is_distributed, make_agent_and_env, resolve_config, with_device
    from rlgraph.utils.checkpoint_files import read_checkpoint
    # The checkpoint is read once and verified against its manifest; the config and the agent come
    # from those bytes (never from the files again, which may have changed in between).
    files = read_checkpoint(checkpoint, None, f"rlgraph {command}")
    if not files.has("config.json"):
        raise RLGraphCheckpointError("no config.json in the checkpoint directory", where=checkpoint,
                                     hint="pass a checkpoint directory written by `rlgraph train`.")
    config = resolve_config(files.json("config.json"), env=env)
    agent, env_spec = make_agent_and_env(with_device(config, device))  # (A distributed config: its learner's agent.)
    # A distributed run's checkpoint holds the learner's agent in learner/ (next to its replay shards).
    if is_distributed(config):
        agent.load_checkpoint_files(files.sub("learner", CHECKPOINT_KIND))
    elif files.manifest.get("kind") != CHECKPOINT_KIND:
        raise RLGraphCheckpointError("the checkpoint is not an agent's", where=checkpoint,
                                     expected=f"kind {CHECKPOINT_KIND!r}", received=repr(files.manifest.get("kind")))
    else:
        agent.load_checkpoint_files(files)
    return agent, env_spec, config


def _evaluate(args) -> int:
    from rlgraph.execution.env_ids import evaluation_env_spec
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.video import check_display, check_video_path, resolve_checkpoint
    if args.video is not None:  # Checked before the (slow) build.
        check_video_path(args.video, "rlgraph evaluate --video")
        _make_directory(os.path.dirname(args.video), "rlgraph evaluate --video")
    if args.render:
        check_display("rlgraph evaluate --render")
    checkpoint = resolve_checkpoint(args.checkpoint, args.best)
    if checkpoint != args.checkpoint:
        print(f"rlgraph evaluate: checkpoint {checkpoint}")
    agent, env_spec, config = _load_checkpoint(checkpoint, args.env, "evaluate", args.device)
    if args.render or args.video:
        return _watch_or_record(args, agent, env_spec, config["training_spec"]["max_timesteps_per_episode"])
    worker = SingleThreadedWorker(agent, evaluation_env_spec(env_spec), num_environments=1, seed=args.seed)
    result = worker.evaluate(args.episodes or 10, config["training_spec"]["max_timesteps_per_episode"])
    returns = result["episode_returns"]
    print(f"rlgraph evaluate: {len(returns)} greedy episodes: mean return {np.mean(returns):.2f} "
          f"(min {np.min(returns):.2f}, max {np.max(returns):.2f}), mean length {result['mean_episode_length']:.1f}")
    worker.terminate()
    agent.terminate()
    return 0


def _watch_or_record(args, agent, env_spec, max_steps: int) -> int:
    """`rlgraph evaluate --render` (--episodes episodes in a window, default 10) or `--video FILE`
    (--episodes episodes back to back, default 1)."""
    from rlgraph.execution.video import record_greedy_episode, watch
    try:
        if args.render:
            returns = watch(agent, env_spec, args.episodes or 10, max_steps, seed=args.seed)
            print(f"rlgraph evaluate: showed {len(returns)} greedy episodes: returns "
                  f"{', '.join(f'{r:.1f}' for r in returns)}")
        else:
            video = record_greedy_episode(agent, env_spec, args.video, max_steps, seed=args.seed,
                                          where="rlgraph evaluate --video", episodes=args.episodes or 1)
            print(f"rlgraph evaluate: wrote {video['path']}: {len(video['returns'])} greedy episode(s), returns "
                  f"{', '.join(f'{r:.2f}' for r in video['returns'])}, {sum(video['lengths'])} steps "
                  f"({video['frames']} frames)")
    finally:
        agent.terminate()
    return 0


def _export(args) -> int:
    out = args.out or os.path.normpath(args.checkpoint) + "-policy" + EXPORT_SUFFIXES[args.format]
    agent, _, _ = _load_checkpoint(args.checkpoint, None, "export", "cpu")  # Exports are made (and run) on the CPU.
    try:
        path = agent.export_policy(out, args.format, preprocessing=not args.no_preprocessing)
    finally:
        agent.terminate()
    loaders = {"torchscript": "torch.jit.load(path)", "onnx": "onnxruntime.InferenceSession(path)",
               "savedmodel": "tf.saved_model.load(path)"}
    print(f"rlgraph export: wrote the greedy policy as {args.format} to {path} (checked against the agent's greedy "
          f"actions); load it with {loaders[args.format]}, no rlgraph needed.")
    return 0


def _visualize(args) -> int:
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    from rlgraph.graphs.svg import component_graph_to_svg
    from rlgraph.graphs.visualization import component_graph_to_dot
    output = args.output or os.path.splitext(os.path.basename(args.config))[0] + ".svg"
    extension = os.path.splitext(output)[1].lower()
    if extension not in VISUALIZE_FORMATS:
        raise RLGraphError("unsupported output format", where="rlgraph visualize --output",
                           expected=f"a file name ending in {' or '.join(VISUALIZE_FORMATS)}", received=output,
                           hint="rlgraph draws SVG itself and has no PNG renderer; convert the .svg with an "
                                "SVG tool, or render the .dot with Graphviz.")
    # Checked before the (slow) build, so that a bad path fails at once.
    _make_directory(os.path.dirname(output), "rlgraph visualize --output")
    config = resolve_config(args.config, env=args.env, backend=args.backend)
    agent, _ = make_agent_and_env(config)
    builder = agent.graph_executor.graph_builder
    title = f"{type(agent).__name__} ({agent.backend})"
    if extension == ".dot":
        text = component_graph_to_dot(agent.root_component, builder.edges, title=title)
    else:
        text = component_graph_to_svg(agent.root_component, builder.edges, title=title)
    try:
        with open(output, "w") as handle:
            handle.write(text)
    except OSError as error:
        raise RLGraphError(f"cannot write the file ({error.strerror})", where="rlgraph visualize --output",
                           received=output) from error
    print(f"rlgraph visualize: wrote {output} ({len(agent.root_component.get_all_sub_components())} components, "
          f"{len(builder.edges)} traced calls).")
    agent.terminate()
    return 0


def _benchmark(args) -> int:
    from rlgraph.benchmarks import BENCHMARKS, run_benchmark
    if args.name == "list":
        width = max(len(name) for name in BENCHMARKS)
        for name, (_, description) in BENCHMARKS.items():
            print(f"{name:{width}s}  {description}")
        return 0
    run_benchmark(args.name, args.options)
    return 0


def _make_directory(path: str, where: str) -> None:
    """Creates directory `path` (and its parents) unless it exists; "" is the working directory."""
    if not path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise RLGraphError("the path is a file, not a directory", where=where, expected="a directory", received=path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:  # A file in the way (FileExistsError, NotADirectoryError), no permission, ...
        raise RLGraphError(f"cannot create the directory ({error.strerror or error})", where=where,
                           expected="a directory or a path where one can be created", received=path) from error


def _check_options(args) -> None:
    """Range checks of the numeric options, before anything is loaded or built."""
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise RLGraphError("seed out of range", where=f"rlgraph {args.command} --seed",
                           expected=f"an int in [0, {MAX_SEED}]", received=seed)
    for seed in getattr(args, "seeds", None) or ():
        if not 0 <= seed <= MAX_SEED:
            raise RLGraphError("seed out of range", where=f"rlgraph {args.command} --seeds",
                               expected=f"ints in [0, {MAX_SEED}]", received=seed)
    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise RLGraphError("at least one job is needed", where=f"rlgraph {args.command} --jobs",
                           expected="an int >= 1", received=jobs)
    episodes = getattr(args, "episodes", None)
    if episodes is not None and episodes < 1:
        raise RLGraphError("at least one episode is needed", where=f"rlgraph {args.command} --episodes",
                           expected="an int >= 1", received=episodes)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the `rlgraph` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "info":
        return _info()
    commands = {"train": _train, "evaluate": _evaluate, "export": _export, "visualize": _visualize,
                "benchmark": _benchmark}
    try:
        _check_options(args)
        # Env ids may name a module only when the command line says so (env_utils.check_env_id).
        with allow_env_module_import(getattr(args, "allow_env_module_import", False)), \
                log_to_stderr(getattr(args, "log_level", None)):
            return commands[args.command](args)
    except RLGraphInterrupted as error:
        # The run saved a checkpoint; the status says which signal stopped it (128 + its number).
        print(f"rlgraph {args.command}: {error}", file=sys.stderr)
        return 128 + (error.signal_number or signal.SIGINT)
    except KeyboardInterrupt:
        # A second signal while a run saves, or a command (a distributed run) that saves nothing on one.
        print(f"rlgraph {args.command}: stopped at once; the checkpoints written before are intact.",
              file=sys.stderr)
        return 128 + signal.SIGINT
    except RLGraphError as error:
        cause = error.__cause__
        if isinstance(error, RLGraphEnvError) and cause is not None:
            # The environment's own code failed: its traceback is what the user needs to fix it.
            traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
        prefix, text = f"rlgraph {args.command}", str(error)
        print(text if text.startswith(prefix) else f"{prefix}: {text}", file=sys.stderr)
        # A benchmark that needs an optional package or a backend that is not installed
        # (RLGraphMissingDependencyError, RLGraphBackendUnavailableError: both ImportErrors).
        if args.command == "benchmark" and isinstance(error, ImportError):
            return EXIT_UNAVAILABLE
        return 2


if __name__ == "__main__":
    sys.exit(main())
