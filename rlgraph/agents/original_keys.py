"""Sub-spec keys of the original (TF1-era) RLgraph that its configs still carry.

`translate_original_keys` turns them into this version's keys before `specs.check_spec` sees
them: a key with an equivalent is mapped (`summary_spec.save_steps` -> `summary_interval`,
`execution_spec.session_config.intra_op_parallelism_threads` -> `tf_num_threads`); a key whose
machinery is gone (TF1 sessions, monitoring, timelines, device strategies) is dropped;
`default_device` naming a CPU or GPU maps to `execution_spec.device` (`device_map` is a key of this
version too: components placed on devices of their own, rlgraph/graphs/placement.py). Each agent
logs one warning listing both (`warn_original_keys`), so that an old config runs unchanged and
says what it no longer does. Keys that the original never had are still refused by `check_spec`.

`update_spec: false` (the original's way to switch learning off) becomes {"do_updates": false}.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

from rlgraph.utils.devices import TF1_DEVICE as _TF1_DEVICE
from rlgraph.utils.devices import check_device
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)

_STRATEGY = ("components run on execution_spec.device (\"auto\": a GPU where the backend sees one), or on their "
             "own device (a component's device, execution_spec.device_map); data-parallel learners are "
             "execution_spec.num_learners")
_NO_TRACING = "TF1 timelines and profiler hooks are gone; profile with the TensorFlow or PyTorch profiler"

# execution_spec keys of the original -> why they are dropped. (`session_config` is looked into
# first: its thread count maps to `tf_num_threads`.)
IGNORED_EXECUTION_KEYS: Dict[str, str] = {
    "session_config": "TF2 has no sessions",
    "disable_monitoring": "TF2 has no MonitoredTrainingSession",
    "enable_profiler": _NO_TRACING,
    "profiler_frequency": _NO_TRACING,
    "enable_timeline": _NO_TRACING,
    "timeline_frequency": _NO_TRACING,
    "trace_enabled": _NO_TRACING,
    "gpu_spec": "GPU options have no equivalent; execution_spec.device picks the device (gpus_enabled false maps "
                "to device \"cpu\")",
    "default_device": "only a CPU or GPU name (\"/device:GPU:0\") maps to execution_spec.device",
    "device_strategy": _STRATEGY,
    "distributed_spec": "TF1 parameter-server training is gone; distributed runs use Ray (execution_spec.ray_spec, "
                        "docs/distributed.md)",
    "ray_spec": "the distributed executors read it (ApexExecutor, IMPALAExecutor, `rlgraph train`); an agent built "
                "directly runs in one process",
    "OMP_NUM_THREADS": "set the environment variable OMP_NUM_THREADS before starting Python, or use "
                       "execution_spec.torch_num_threads",
}
# summary_spec / saver_spec keys of the original: mapped (old -> new) or dropped (old -> why).
MAPPED_SUMMARY_KEYS = {"save_steps": "summary_interval"}
IGNORED_SUMMARY_KEYS = {"save_secs": "summaries are spaced in env steps (summary_interval), not seconds"}
MAPPED_SAVER_KEYS = {"save_steps": "checkpoint_frequency"}
IGNORED_SAVER_KEYS = {
    "save_secs": "checkpoints are spaced in env steps (checkpoint_frequency), not seconds",
    "checkpoint_basename": "a checkpoint is a directory with a manifest; its file names are fixed",
}


def translate_original_keys(specs: Dict[str, Any], owner: str) -> Tuple[Dict[str, Any], List[str]]:
    """The sub-specs with the original RLgraph's keys mapped or dropped, and a note per key.

    Args:
        specs: {"execution_spec", "summary_spec", "saver_spec", "update_spec"} as the agent got them
            (None, a dict, or for update_spec also False). The dicts are not changed.
        owner: The agent class (named in errors).

    Returns:
        (the specs, each section that had original keys replaced by a new dict; notes such as
        "summary_spec.save_steps -> summary_spec.summary_interval (10)").

    Raises:
        RLGraphSpecError: If an original key and the key it maps to are both given, with different values.
    """
    out, notes = dict(specs), []
    if out.get("update_spec") is False:
        out["update_spec"] = {"do_updates": False}
        notes.append("update_spec false -> update_spec.do_updates false")
    execution = out.get("execution_spec")
    if isinstance(execution, dict) and set(execution) & set(IGNORED_EXECUTION_KEYS):
        execution = dict(execution)
        session = execution.get("session_config")
        threads = session.get("intra_op_parallelism_threads") if isinstance(session, dict) else None
        if threads is not None:
            _map(execution, "tf_num_threads", threads, "execution_spec.session_config.intra_op_parallelism_threads",
                 owner, notes)
        _map_devices(execution, owner, notes)
        for key, why in IGNORED_EXECUTION_KEYS.items():
            if key in execution:
                execution.pop(key)
                notes.append(f"execution_spec.{key} ignored ({why})")
        out["execution_spec"] = execution
    for name, mapped, ignored in (("summary_spec", MAPPED_SUMMARY_KEYS, IGNORED_SUMMARY_KEYS),
                                  ("saver_spec", MAPPED_SAVER_KEYS, IGNORED_SAVER_KEYS)):
        spec = out.get(name)
        if not isinstance(spec, dict) or not set(spec) & (set(mapped) | set(ignored)):
            continue
        spec = dict(spec)
        for old, new in mapped.items():
            if old in spec:
                value = spec.pop(old)
                if value is None:
                    notes.append(f"{name}.{old} null ignored")
                else:
                    _map(spec, new, value, f"{name}.{old}", owner, notes)
        for key, why in ignored.items():
            if key in spec:
                spec.pop(key)
                notes.append(f"{name}.{key} ignored ({why})")
        out[name] = spec
    return out, notes


def _map_devices(execution: dict, owner: str, notes: List[str]) -> None:
    """`default_device` naming a CPU or GPU ("/device:GPU:0", "/cpu:0") and `gpu_spec.gpus_enabled: false`
    (the original's switch that hid the GPUs) become `execution_spec.device` ("cuda:0", "cpu"); they
    are popped when mapped, else left to be ignored with the others."""
    default = execution.get("default_device")
    if isinstance(default, str) and _TF1_DEVICE.match(default.strip()):
        _map(execution, "device", check_device(execution.pop("default_device"), owner), "execution_spec.default_device",
             owner, notes)
    gpu = execution.get("gpu_spec")
    if isinstance(gpu, dict) and gpu.get("gpus_enabled") is False:
        execution.pop("gpu_spec")
        _map(execution, "device", "cpu", "execution_spec.gpu_spec.gpus_enabled", owner, notes)


def _map(spec: dict, key: str, value: Any, old: str, owner: str, notes: List[str]) -> None:
    """Sets `spec[key]` to the value of original key `old`, unless `key` is given with another value."""
    section = old.split(".", 1)[0]
    if key in spec and spec[key] is not None and spec[key] != value:
        raise RLGraphSpecError(f"{old} and {section}.{key} both given, with different values",
                               where=f"{owner}({old})", received=f"{value!r} and {spec[key]!r}",
                               hint=f"{old} is the original RLgraph's name of {section}.{key}: give one of them.")
    spec[key] = value
    notes.append(f"{old} -> {section}.{key} ({value!r})")


def warn_original_keys(notes: List[str], owner: str, name: Optional[str] = None) -> None:
    """Logs one warning that lists every translated key of an agent's config (nothing if none)."""
    if notes:
        logger.warning("%s%s: the config has keys of the original RLgraph; mapped or ignored: %s. "
                       "See docs/migrating.md.", owner, f" '{name}'" if name else "", "; ".join(notes))
