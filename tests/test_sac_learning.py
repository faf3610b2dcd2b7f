"""Learning test: SAC swings Pendulum-v1 up with the shipped config, its networks shrunk to fit the suite.

The config's actor and critic networks (256 x 256) become 64 x 64 (batch 256 kept), which learn as
fast per env step on Pendulum and cost a third of the compute per gradient step (4.5 ms instead of
14.3 ms on PyTorch, one thread). Seeds run in parallel worker processes (one per core, one backend
thread each), as in tests/test_learning.py; each prints the step at which the greedy evaluation (5
episodes) first reached the target and its wall time. Measured on the 2-core machine: PyTorch seeds
1 to 4 reached -400 at step 3500, 3500, 3500 and 4000 (23-26 s each), TF seed 1 at step 3500. The
full config's 20k-step figures (3 PyTorch seeds, one TF seed) are in docs/agents/sac.md.
"""
import pytest
from backend_marks import needs_tf

from test_learning import _run_seeds

pytestmark = pytest.mark.learning

PENDULUM_TARGET = -400.0


def _hidden(prefix):
    return ('[{"type": "dense", "units": 64, "activation": "relu", "scope": "%shidden-1"}, '
            '{"type": "dense", "units": 64, "activation": "relu", "scope": "%shidden-2"}]' % (prefix, prefix))


SMALL = [f"network_spec={_hidden('')}", f"value_function_spec={_hidden('vf-')}",
         "training_spec.num_timesteps=6000", "training_spec.evaluation_interval=500",
         f"training_spec.stop_at_return={PENDULUM_TARGET}"]


@pytest.mark.parametrize("backend, seeds", [("pytorch", [1, 2]), pytest.param("tf", [1], marks=needs_tf)])
def test_sac_pendulum(backend, seeds):
    """Mean greedy return >= -400 within 6000 env steps for every seed, evaluated every 500 steps."""
    solved = _run_seeds("configs/sac_pendulum.json", backend, seeds, SMALL)
    assert all(solved), solved
