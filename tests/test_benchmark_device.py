"""`rlgraph benchmark device` (--quick): every contender runs, and the compiled update's first losses
equal the uncompiled ones (timings are not checked).

It runs rlgraph on TF only: this checks the benchmark's wiring, which is the same for both backends,
and XLA compiles the updates in about a second where Inductor takes 5-9 s each. PyTorch's compiled
updates are checked against uncompiled ones in tests/test_compile.py."""
import numpy as np
import pytest
from backend_marks import needs_tf

pytest.importorskip("stable_baselines3")


@needs_tf
def test_device_benchmark_quick(capsys):
    from rlgraph.benchmarks.device_updates import main
    result = main(["--quick", "--backends", "tf", "--out", ""])
    out = capsys.readouterr().out
    for algo in ("dqn-cnn", "sac"):
        measured = result["algos"][algo]
        assert set(measured["steps_per_s"]) == {"sb3", "rlgraph-tf", "rlgraph-tf batch", "rlgraph-tf batch, compiled"}
        assert all(rate > 0 for rate in measured["steps_per_s"].values())
        plain, compiled = measured["first_losses"]["tf"]
        np.testing.assert_allclose(compiled, plain, rtol=1e-5)
        assert f"{algo}  " in out or f"{algo} " in out
    status = result["algos"]["dqn-cnn"]["compile_status"]["tf"]["update_from_external_batch"]
    assert status["compiled"] is True and status["seconds"] > 0
    # SAC's update draws random numbers: XLA would draw others, so it stays uncompiled, saying why.
    status = result["algos"]["sac"]["compile_status"]["tf"]["update_from_external_batch_and_sync"]
    assert status["compiled"] is False and "random ops" in status["reason"]


@needs_tf
def test_act_and_update_benchmarks_time_a_compiled_twin():
    # TF only, for the reason in this module's docstring.
    from rlgraph.benchmarks import act_overhead, update_overhead
    update = update_overhead.main(["--quick", "--compile", "--backends", "tf", "--calls", "5", "--out", ""])
    measured = update["backends"]["tf"]
    assert measured["compiled_us"] > 0 and measured["losses_match"], measured["first_losses"]
    assert measured["compile_status"]["update_from_external_batch"]["compiled"] is True
    act = act_overhead.main(["--quick", "--compile", "--backends", "tf", "--calls", "20", "--out", ""])
    measured = act["backends"]["tf"]
    assert measured["greedy"]["compiled_us"] > 0 and "compiled_us" not in measured["explore"]
    assert measured["actions_match"]  # The compiled twin's greedy actions too, on 200 states.
