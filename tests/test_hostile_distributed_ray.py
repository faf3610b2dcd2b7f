"""Issue 34 on a real Ray: a replay shard killed before a checkpoint, a sample worker killed before a
statistics call (see tests/test_hostile_distributed.py for the inline tests and the worked numbers).

One executor (one sample worker, one shard snapshotting every 250 records) on the 2-CPU Ray of
tests/ray_helpers.py. Its own module, in conftest's RAY_MODULES, so that only this test joins the
serial Ray group.
"""
import json
import os
import signal

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.execution.ray import ApexExecutor
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError
from ray_helpers import local_ray_session

ray = pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray():
    with local_ray_session(ray):
        yield


def test_dead_actors_outside_sampling_on_ray(local_ray, tmp_path):
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    from test_apex_ray import CARTPOLE, _workload, apex_cartpole_config
    config = apex_cartpole_config("pytorch", num_sample_workers=1, max_num_worker_restarts=2)
    config["n_step"] = 1
    config["execution_spec"]["ray_spec"]["apex_replay_spec"]["snapshot_interval"] = 250
    executor = ApexExecutor(CARTPOLE, config)
    try:
        assert executor.execute_workload(_workload(600))["timesteps_executed"] == 600
        # (The workload's statistics call waited for every insert the driver had sent.)
        inserted = executor.replay_statistics()[0]["inserted"]
        with np.load(os.path.join(executor.snapshot_dir, "shard-0.npz")) as snapshot:
            snapshot_size, snapshot_count = int(snapshot["size"]), int(snapshot["extra_inserted_since_load"])
        assert 250 <= snapshot_count <= inserted and snapshot_size == snapshot_count  # (Capacity 20000.)

        # A shard killed before a checkpoint: restarted from its snapshot, and the checkpoint holds that.
        killed_shard = executor.shards[0].pid
        os.kill(killed_shard, signal.SIGKILL)
        path = executor.store_checkpoint(str(tmp_path / "ckpt"))
        assert executor.num_restarts == 1 and executor.shards[0].pid != killed_shard
        assert executor.records_lost == inserted - snapshot_count
        with open(os.path.join(path, "executor_state.json")) as handle:
            state = json.load(handle)
        assert (state["shard_sizes"], state["restarts"], state["records_lost"]) == \
            ([snapshot_size], 1, inserted - snapshot_count)

        # A worker killed before its statistics are asked for: restarted, and the run goes on.
        killed_worker = executor.workers[0].pid
        os.kill(killed_worker, signal.SIGKILL)
        by_worker = executor.result_by_worker()
        assert executor.num_restarts == 2 and by_worker["workers"][0]["pid"] == executor.workers[0].pid != killed_worker
        assert [r["kind"] for r in executor.restart_log] == ["replay shard", "sample worker"]
        assert executor.execute_workload(_workload(200))["timesteps_executed"] == 200

        # Beyond max_num_worker_restarts (2): a clear error instead of Ray's ActorDiedError.
        os.kill(executor.shards[0].pid, signal.SIGKILL)
        with pytest.raises(RLGraphDistributedError, match="replay shard 0 died and the restart budget is used up"):
            executor.replay_statistics()
    finally:
        executor.terminate()
