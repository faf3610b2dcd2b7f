"""A config-mutation sweep (issue 34): every scalar leaf of the main shipped configs replaced by each
of NaN, inf, -1, 0, 1e30, "x" and true; the mutated config must either work or be refused with an
`RLGraphError`, never another exception. (The issue's sweep found 122 raw tracebacks from 4
causes. Run before the fixes, this one found 3: a non-numeric or NaN `scope` (a TypeError in
`Component`), `torch_num_threads` 1e30 (an OverflowError in `torch.set_num_threads`) and Ape-X's
`n_step` "x" (a TypeError in the ray_spec checks); counts of 1e30 such as `batch_size`, which
overflowed only when first used, are refused at the spec check now too.)

What runs, and why it stays within about 7 s of CPU:

- Every mutation (7 configs x about 40 leaves x 7 values, about 2,000) is resolved as `rlgraph
  train` resolves it (`resolve_config`, with the PyTorch backend; a distributed config's
  `learner_config`, which checks its ray_spec), its environment is made (one probe per distinct
  environment_spec, cached: most mutations leave it alone) and its agent is constructed with
  `auto_build=False`: every spec check and every component constructor runs, nothing is built.
- A fixed, seeded sample of `NUM_BUILDS` of the ~170 accepted mutations is then built on PyTorch
  and acts once (~40 ms of CPU each; all of them built and acted when this sweep was written, in
  ~10 s of CPU, which is more than this module's share of the suite's time).

Besides "no raw traceback", the sweep checks that nonsense is refused: a leaf shipped as a number
takes no NaN, inf, string or bool, and a leaf shipped as a bool takes nothing but a bool. What
stays valid (0 or 1e30 for a learning rate, a weight, a constant initializer, -1 for a target
entropy, ...) is valid by documentation; see docs/specs.md ("Values that are refused").
"""
import copy
import json
import math
import os
import random
import traceback

import numpy as np
import pytest

from config_helpers import ROOT
from rlgraph.agents import Agent
from rlgraph.environments import Environment
from rlgraph.execution.distributed_training import learner_config
from rlgraph.execution.run_config import is_distributed, resolve_config
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.spec_files import load_spec_file

CONFIGS = ["dqn_cartpole", "dqn_cartpole_tf", "ppo_cartpole", "sac_pendulum", "ddpg_pendulum", "impala_cartpole",
           "apex_cartpole"]
VALUES = [math.nan, math.inf, -1, 0, 1e30, "x", True]
NUM_BUILDS = 40
SEED = 34


def _leaves(node, path=()):
    """The key paths of every scalar (non-dict, non-list) value of a config."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, path + (index,))
    else:
        yield path


def _get(config, path):
    for key in path:
        config = config[key]
    return config


def _mutated(config, path, value):
    config = copy.deepcopy(config)
    _get(config, path[:-1])[path[-1]] = value
    return config


class _Probes:
    """The environments' spaces, one probe per distinct environment_spec (its error if it fails)."""

    def __init__(self):
        self.spaces = {}

    def __call__(self, env_spec):
        key = json.dumps(env_spec, sort_keys=True, default=repr)
        if key not in self.spaces:
            try:
                env = Environment.from_spec(env_spec)
                self.spaces[key] = (env.state_space, env.action_space)
                env.terminate()
            except Exception as error:  # noqa: BLE001 - judged where it is raised again.
                self.spaces[key] = error
        if isinstance(self.spaces[key], Exception):
            raise self.spaces[key]
        return copy.deepcopy(self.spaces[key])  # (Each agent gets spaces of its own, as from a new probe.)


def _agent_spec(config, path, probes):
    """(agent spec, state space, action space) of a mutated config, as `make_agent_and_env` makes them."""
    # (The "backend" leaf is tried as it is; every other mutation runs on PyTorch.)
    resolved = resolve_config(config, backend=None if path == ("backend",) else "pytorch")
    agent_config = learner_config(resolved) if is_distributed(resolved) else resolved
    state_space, action_space = probes(resolved["environment_spec"])
    spec = {k: v for k, v in agent_config.items() if k not in ("environment_spec", "training_spec")}
    return spec, state_space, action_space


def _raw(error):
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__} at {os.path.relpath(frame.filename, ROOT)}:{frame.lineno}: {str(error)[:120]}"


@pytest.fixture(scope="module")
def sweep():
    """{(config, path, value): "accepted" | the RLGraphError's class name | "RAW <where>: <error>"}."""
    probes, outcomes, shipped = _Probes(), {}, {}
    for name in CONFIGS:
        shipped[name] = base = load_spec_file(os.path.join(ROOT, "configs", f"{name}.json"))
        for path in _leaves(base):
            for value in VALUES:
                try:
                    spec, state_space, action_space = _agent_spec(_mutated(base, path, value), path, probes)
                    Agent.from_spec(spec, state_space=state_space, action_space=action_space,
                                    auto_build=False).terminate()
                    outcome = "accepted"
                except RLGraphError as error:
                    outcome = type(error).__name__
                except Exception as error:  # noqa: BLE001 - the defect this sweep looks for.
                    outcome = "RAW " + _raw(error)
                outcomes[(name, path, repr(value))] = outcome
    return outcomes, shipped, probes


def test_the_sweep_covers_the_main_configs(sweep):
    outcomes, shipped, _ = sweep
    assert len(outcomes) == sum(len(list(_leaves(c))) for c in shipped.values()) * len(VALUES) > 1500
    assert 0 < sum(o == "accepted" for o in outcomes.values()) < len(outcomes) / 5


def test_no_mutation_ends_in_a_raw_traceback(sweep):
    raw = [f"{name} {'.'.join(map(str, path))}={value}: {outcome}"
           for (name, path, value), outcome in sorted(sweep[0].items(), key=str) if outcome.startswith("RAW")]
    assert not raw, "\n".join(raw)


def _nonsense(shipped_value, value):
    """Whether `value` replacing `shipped_value` is nonsense that must be refused."""
    if isinstance(shipped_value, bool):
        return not isinstance(value, bool)
    if isinstance(shipped_value, (int, float)):
        return isinstance(value, (bool, str)) or not math.isfinite(value)
    return False


def test_nonsense_is_refused(sweep):
    outcomes, shipped, _ = sweep
    accepted = [f"{name} {'.'.join(map(str, path))}={value!r} (shipped {_get(shipped[name], path)!r})"
                for name in CONFIGS for path in _leaves(shipped[name]) for value in VALUES
                if outcomes[(name, path, repr(value))] == "accepted" and _nonsense(_get(shipped[name], path), value)]
    assert not accepted, "\n".join(accepted)


def test_a_sample_of_accepted_mutations_builds_and_acts(sweep):
    outcomes, shipped, probes = sweep
    accepted = sorted(key for key, outcome in outcomes.items() if outcome == "accepted")
    sample = random.Random(SEED).sample(accepted, NUM_BUILDS)
    import torch
    threads = torch.get_num_threads()  # (The configs' torch_num_threads holds for the whole process.)
    raw = []
    try:
        for name, path, value in sample:
            value = next(v for v in VALUES if repr(v) == value)
            spec, state_space, action_space = _agent_spec(_mutated(shipped[name], path, value), path, probes)
            try:
                agent = Agent.from_spec(spec, state_space=state_space, action_space=action_space)
                action = agent.get_action(state_space.sample())
                assert action_space.contains(np.asarray(action)), (name, path, value)
                agent.terminate()
            except RLGraphError:
                pass
            except Exception as error:  # noqa: BLE001 - the defect this sweep looks for.
                raw.append(f"{name} {'.'.join(map(str, path))}={value!r}: {_raw(error)}")
    finally:
        torch.set_num_threads(threads)
    assert not raw, "\n".join(raw)
