"""The RLlib IMPALA peer benchmark without Ray: lazy imports and the missing-dependency error."""
import builtins
import subprocess
import sys

import pytest

from rlgraph.utils.rlgraph_errors import RLGraphError


def test_module_imports_without_importing_ray():
    code = ("import sys\n"
            "import rlgraph.benchmarks.rllib_impala as module\n"
            "assert callable(module.run_rllib_impala)\n"
            "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr


def test_missing_rllib_dependency_raises_rlgraph_error(monkeypatch):
    from rlgraph.benchmarks import rllib_impala

    real_import = builtins.__import__

    def failing_import(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing_import)
    with pytest.raises(RLGraphError) as info:
        rllib_impala.run_rllib_impala(num_actors=1, rollout_length=50, batch_size=8, hidden_units=64,
                                      num_timesteps=100, seed=1)
    assert 'pip install -c constraints.txt -e ".[bench]"' in str(info.value)
    assert info.value.hint is not None and ".[bench]" in info.value.hint
