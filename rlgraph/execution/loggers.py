"""Weights & Biases and MLflow loggers: hooks that send a training run's scalars to those services.

They log what TensorBoard gets (`Hook.on_log`: episode and evaluation returns, losses, epsilon,
learning rate, throughput, ...) at the same env steps. Enable them with `rlgraph train --wandb
PROJECT` / `--mlflow EXPERIMENT` or `training_spec.loggers`, e.g.
[{"type": "wandb", "project": "cartpole"}, {"type": "mlflow", "experiment": "dqn"}]. The packages
are optional (the `wandb` and `mlflow` extras); a logger whose package is missing raises an
`RLGraphMissingDependencyError` that names the extra.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional

from rlgraph.environments.env_utils import RLGraphMissingDependencyError
from rlgraph.execution.hooks import Hook, load_hook
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)


def _import(module: str, where: str) -> Any:
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise RLGraphMissingDependencyError(
            module, where=where,
            hint=f"install the `{module}` extra: pip install -c constraints.txt -e \".[{module}]\"") from error


class WandbLogger(Hook):
    """Logs the run's scalars to a Weights & Biases run (`wandb.init`, `run.log`, `run.finish`).

    Args:
        project: The W&B project.
        name: The run's name (default: W&B's).
        config: The run's config, shown with the run (`rlgraph train` passes the resolved one).
        **init_kwargs: More `wandb.init` arguments (entity, tags, mode="offline", dir, ...).
    """

    def __init__(self, project: str, name: Optional[str] = None, config: Optional[dict] = None, **init_kwargs):
        wandb = _import("wandb", "WandbLogger")
        self.run = wandb.init(project=project, name=name, config=config, **init_kwargs)

    def on_log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.run.log({tag: float(value) for tag, value in scalars.items()}, step=int(step))

    def close(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


class MLflowLogger(Hook):
    """Logs the run's scalars as MLflow metrics of a new run (`mlflow.log_metrics(..., step=)`),
    and its config as the artifact config.json.

    Args:
        experiment: The MLflow experiment (created if missing).
        run_name: The run's name (default: MLflow's).
        tracking_uri: Where MLflow stores runs (default: its own, ./mlruns or MLFLOW_TRACKING_URI).
        config: The run's config (`rlgraph train` passes the resolved one).
    """

    def __init__(self, experiment: str, run_name: Optional[str] = None, tracking_uri: Optional[str] = None,
                 config: Optional[dict] = None):
        self.mlflow = _import("mlflow", "MLflowLogger")
        if tracking_uri is not None:
            self.mlflow.set_tracking_uri(tracking_uri)
        self.mlflow.set_experiment(experiment)
        self.run = self.mlflow.start_run(run_name=run_name)
        if config is not None:
            self.mlflow.log_dict(config, "config.json")

    def on_log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.mlflow.log_metrics({tag: float(value) for tag, value in scalars.items()}, step=int(step))

    def close(self) -> None:
        if self.run is not None:
            self.mlflow.end_run()
            self.run = None


# `training_spec.loggers` "type" -> class; the only loggers a config can name.
LOGGERS: Dict[str, type] = {"wandb": WandbLogger, "mlflow": MLflowLogger}
# The argument each logger needs (the flags `--wandb PROJECT`, `--mlflow EXPERIMENT` fill it).
REQUIRED_ARGUMENTS = {"wandb": "project", "mlflow": "experiment"}


def check_logger_spec(spec: Any, where: str) -> dict:
    """A `training_spec.loggers` entry, checked without importing anything.

    Raises:
        RLGraphSpecError: For an entry that is not {"type": "wandb"|"mlflow", <its required key>: str, ...}.
    """
    kind = spec.get("type") if isinstance(spec, Mapping) else None
    if kind not in LOGGERS:
        raise RLGraphSpecError("unknown logger", where=where,
                               expected='{"type": "wandb", "project": ...} or {"type": "mlflow", "experiment": ...}',
                               received=repr(spec)[:120], hint="hooks of your own go into training_spec.hooks.")
    required = REQUIRED_ARGUMENTS[kind]
    if not isinstance(spec.get(required), str) or not spec[required]:
        raise RLGraphSpecError(f"a {kind} logger needs '{required}'", where=where,
                               expected=f'{{"type": "{kind}", "{required}": "NAME", ...}}', received=repr(spec)[:120])
    return dict(spec)


def make_logger(spec: Mapping[str, Any], config: Optional[dict] = None, where: str = "training_spec.loggers") -> Hook:
    """The logger of a `training_spec.loggers` entry, given the run's `config`.

    Raises:
        RLGraphSpecError: For a bad entry or arguments its class refuses;
            RLGraphMissingDependencyError: if its package is not installed.
    """
    spec = check_logger_spec(spec, where)
    arguments = {k: v for k, v in spec.items() if k != "type"}
    arguments.setdefault("config", config)
    try:
        return LOGGERS[spec["type"]](**arguments)
    except TypeError as error:
        raise RLGraphSpecError("the logger refused the arguments", where=where, received=sorted(arguments),
                               hint=str(error)) from None


def run_hooks(training_spec: Mapping[str, Any], config: Optional[dict] = None, hooks: Any = (),
              loggers: Any = ()) -> list:
    """The hooks of a training run: `hooks` (Hook objects, callables, or names given by the user,
    which may be imported), then `training_spec.hooks` (names from a config file, see
    `hooks.load_hook`), then the loggers of `training_spec.loggers` and of `loggers` (the
    command line's --wandb, --mlflow)."""
    made = []
    try:
        for hook in hooks or ():
            given_object = isinstance(hook, Hook) or (callable(hook) and not isinstance(hook, str))
            made.append(hook if given_object else load_hook(hook, "train(hooks, --hook)", from_config=False))
        for i, hook in enumerate(training_spec.get("hooks") or ()):
            made.append(load_hook(hook, f"training_spec.hooks[{i}]", from_config=True))
        for i, spec in enumerate(training_spec.get("loggers") or ()):
            made.append(make_logger(spec, config, where=f"training_spec.loggers[{i}]"))
        for spec in loggers or ():
            made.append(make_logger(spec, config, where=f"train(loggers, --{spec.get('type')})"))
    except BaseException:
        close_hooks(made)  # (A W&B run started before an MLflow logger failed is finished.)
        raise
    return made


def close_hooks(hooks: Any) -> None:
    """Calls `close()` of every `Hook` in `hooks`; one that raises is logged and the others still
    close (a run that failed must not end on a logger's error instead of its own)."""
    for hook in hooks:
        if isinstance(hook, Hook):
            try:
                hook.close()
            except Exception:  # noqa: BLE001
                logger.exception("closing the hook %r failed", hook)
