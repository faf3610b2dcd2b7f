"""The python snippets of the docs run as written (on both backends)."""
import json
import logging
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rlgraph.spaces import FloatBox
from rlgraph.utils.rlgraph_errors import RLGraphBuildError

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _python_blocks(name: str) -> list:
    """The python blocks of docs/`name`."""
    return re.findall(r"```python\n(.*?) *```", (DOCS / name).read_text(), flags=re.S)


def _run_doc(name: str, backend: str, num_blocks: int, use_blocks: int = None, namespace: dict = None,
             first_block: int = 0) -> dict:
    """Runs the python blocks of docs/`name` (blocks `first_block` to `use_blocks` - 1) on `backend`;
    returns their namespace. The page must hold exactly `num_blocks` blocks (at least, if
    `use_blocks` is given). A page whose snippets continue another page's runs in that page's
    `namespace`."""
    path = DOCS / name
    blocks = _python_blocks(name)
    if use_blocks is None:
        assert len(blocks) == num_blocks
    else:
        assert len(blocks) >= num_blocks
    blocks = blocks[first_block:use_blocks]
    code = "\n".join(textwrap.dedent(block) for block in blocks)
    # Both ways a page names the backend: a keyword argument and a config's key (the pytorch case of a
    # page with only the key ran TF before).
    code = code.replace('backend="tf"', f'backend="{backend}"').replace('"backend": "tf"', f'"backend": "{backend}"')
    if namespace is None:
        namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(path), "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace


def test_tutorial_doc_snippets_run(backend):
    namespace = _run_doc("tutorial.md", backend, 2)
    assert namespace["test"].test("get_value").item() == 5.0


def test_components_doc_build_snippets_run(backend):
    namespace = _run_doc("components.md", backend, 5, use_blocks=1)
    q = np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 0.0]], np.float32)
    assert namespace["greedy"].test(("act", q)).tolist() == [1, 0]
    assert namespace["greedy"].component.api_method_inputs["q"] == FloatBox(shape=(3,), add_batch_rank=True)
    with pytest.raises(RLGraphBuildError, match=r"^b\.run\(flag\): the API method takes a python decision"):
        _run_doc("components.md", backend, 5, use_blocks=2)


def test_components_doc_api_snippets_run(backend):
    """The `call` alias, switched-off API methods and the ComponentTest tooling (blocks 2-4)."""
    namespace = _run_doc("components.md", backend, 5, first_block=2)
    assert namespace["doubled_plus_one"].tolist() == [[3.0, -3.0]]
    assert sorted(namespace["net"].component.sub_components["double"].api_methods) == ["apply"]
    np.testing.assert_allclose(namespace["entropy"], [np.log(4.0)], rtol=1e-6)
    assert "root API method 'kl_divergence' is switched off" in namespace["switched_off"]
    assert sorted(namespace["params"]) == ["neural-network/d0/bias", "neural-network/d0/kernel",
                                           "neural-network/d1/bias", "neural-network/d1/kernel"]
    assert namespace["kernel"].shape == (2, 3) and sorted(namespace["d1_values"]) == ["bias", "kernel"]
    assert namespace["config"]["type"] == "dqn"


def test_layers_doc_snippets_run(backend):
    namespace = _run_doc("layers.md", backend, 5)
    assert namespace["q"].shape == (3, 2) and namespace["v"].shape == (2, 1)
    # LRN with depth_radius 1: sums of squares 5, 14, 13.
    np.testing.assert_allclose(namespace["normalized"], [[1 / 6 ** 0.5, 2 / 15 ** 0.5, 3 / 14 ** 0.5]], rtol=1e-5)
    # Stack(api_methods=...): the chained `apply`, a function entry and the time-rank folding spec dict.
    np.testing.assert_allclose(namespace["chained"], [[4.5]])
    np.testing.assert_allclose(namespace["hidden"], [[3.0, 3.0, 3.0]])
    assert namespace["sequences"].shape == (2, 4, 1)
    # The variational auto-encoder: [5, 2] codes; the loss is the batch mean of reconstruction + KL.
    code, pieces = namespace["code"], namespace["pieces"]
    assert code["z_sample"].shape == code["mean"].shape == code["stddev"].shape == (5, 2)
    assert (code["stddev"] > 0).all() and pieces["loss_per_item"].shape == (5,)
    np.testing.assert_allclose(pieces["loss_per_item"], pieces["reconstruction_loss"] + pieces["kl_divergence"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pieces["loss"], np.mean(pieces["loss_per_item"]), rtol=1e-5)


def test_memories_doc_snippets_run(backend):
    namespace = _run_doc("memories_and_losses.md", backend, 11)
    assert namespace["weights"].shape == (8,) and abs(namespace["per_item"][0] - 1.47) < 1e-5
    assert namespace["frame_memory"].pool.live == 5 and namespace["frame_weights"].shape == (3,)
    np.testing.assert_allclose(namespace["ppo_per_item"], [-0.95, -0.25], rtol=1e-5)  # The keyed PPO loss.
    # Container and batch helpers.
    assert set(namespace["merged"]) == {"s", "r"}
    np.testing.assert_allclose(namespace["merged"]["s"], [[1.0, 1.0]])
    np.testing.assert_allclose(namespace["merged"]["r"], [0.5])
    np.testing.assert_allclose(namespace["last_step"], namespace["x"][2])
    np.testing.assert_allclose(namespace["first_two"], namespace["x"][0:2])
    assert namespace["over_time"].shape == (2, 5, 4)
    assert len(namespace["shards"]) == 4
    np.testing.assert_allclose(namespace["rewards_of_shard_1"], [5.0, 6.0, 7.0, 8.0, 9.0])
    assert namespace["rows"].tolist() == [3, 7, 0, 7]
    np.testing.assert_allclose(namespace["sample"]["state"], namespace["batch"]["state"][[3, 7, 0, 7]])
    # The environment stepper: 10 CartPole steps per call, the second call continues the first.
    first, second = namespace["first"], namespace["second"]
    assert first["states"].shape == second["states"].shape == (11, 4)
    assert first["actions"].shape == first["rewards"].shape == first["terminals"].shape == (10,)
    np.testing.assert_allclose(first["action_probs"].sum(axis=-1), np.ones(10), rtol=1e-5)
    np.testing.assert_allclose(first["action_log_probs"],
                               np.log(first["action_probs"][np.arange(10), first["actions"]]), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(second["states"][0], first["states"][-1])
    # ContainerLossFunction: log 2 + 0.5 * 5.
    np.testing.assert_allclose(namespace["loss_per_item"], [np.log(2.0) + 2.5], rtol=1e-5)
    np.testing.assert_allclose(namespace["mean_loss"], np.log(2.0) + 2.5, rtol=1e-5)


def test_policies_doc_snippet_runs(backend):
    namespace = _run_doc("policies_and_exploration.md", backend, 2)
    assert set(namespace["chosen"]) == {"aim", "move"}
    # Joint and mixture distributions.
    np.testing.assert_allclose(namespace["joint_log_prob"], [np.log(0.5) - 0.5 * np.log(2 * np.pi)], rtol=1e-5)
    np.testing.assert_allclose(namespace["mean"], [0.2], rtol=1e-5)
    np.testing.assert_allclose(namespace["mixture_log_prob"], [-0.5 - 0.5 * np.log(2 * np.pi)], rtol=1e-5)
    weights_entropy = -(0.4 * np.log(0.4) + 0.6 * np.log(0.6))
    np.testing.assert_allclose(namespace["entropy_bound"], [weights_entropy + 0.5 + 0.5 * np.log(2 * np.pi)],
                               rtol=1e-5)


def test_agents_doc_snippets_run(backend):
    namespace = _run_doc("agents.md", backend, 8, use_blocks=3)
    assert namespace["stats"]["timesteps_executed"] == 200
    # The DQN page's record snippet continues the agent of agents.md.
    namespace = _run_doc("agents/dqn.md", backend, 1, namespace=namespace)
    assert namespace["loss_per_item"].shape == (2,) and namespace["td_errors"].shape == (2,)


def test_deploying_doc_snippets_run(backend):
    """"Deploying a trained policy": the three exports, each loaded by its runtime, give the
    agent's greedy actions (the snippets assert it themselves)."""
    pytest.importorskip("onnxruntime", reason="the ONNX snippet needs the export extra")
    namespace = _run_doc("agents.md", backend, 8, first_block=3, use_blocks=7)
    assert namespace["actions"].shape == (5,) and (namespace["actions"] == namespace["expected"]).all()
    assert namespace["agent"].backend == backend


def test_random_agent_doc_snippet_runs(backend):
    namespace = _run_doc("agents.md", backend, 8, first_block=7)
    assert namespace["random_actions"].tolist() == [1, 3, 0]  # The same on both backends.
    assert namespace["baseline"]["mean_episode_return"] == -1.0


def test_impala_doc_snippet_runs(backend):
    # Three updates of a reproducible single-impala agent.
    namespace = _run_doc("agents/impala.md", backend, 1)
    assert namespace["version"] == 3 and namespace["row_losses"].shape == (4,)
    assert namespace["actor_stats"]["max_policy_lag"] == 1


def test_ppo_doc_snippet_runs(backend):
    # Three rollouts of 64 steps.
    namespace = _run_doc("agents/ppo.md", backend, 1)
    assert namespace["ppo"].num_updates == 3 and namespace["values"].shape == (2,)


def test_agent_pages_keep_their_snippets():
    """One page per agent: every snippet of the agents' material is on a page whose blocks a test runs."""
    pages = ["agents.md", "agents/dqn.md", "agents/apex.md", "agents/impala.md", "agents/ppo.md", "agents/sac.md",
             "agents/ddpg.md", "agents/td3.md", "agents/dqfd.md"]
    counts = {page: len(_python_blocks(page)) for page in pages}
    assert counts == {"agents.md": 8, "agents/dqn.md": 1, "agents/apex.md": 0, "agents/impala.md": 1,
                      "agents/ppo.md": 1, "agents/sac.md": 0, "agents/ddpg.md": 0, "agents/td3.md": 0,
                      "agents/dqfd.md": 1}


def test_dqfd_doc_snippets_run(backend):
    # Pre-training on two demonstrations of GridWorld 2x2 gives the expert's policy; 200 online steps follow.
    namespace = _run_doc("agents/dqfd.md", backend, 1)
    agent = namespace["agent"]
    assert agent.get_action(namespace["states"], use_exploration=False).tolist() == [2, 1]
    assert namespace["stats"]["timesteps_executed"] == 200
    assert agent.demo_memory_size() == 2 and agent.demo_batch_size == 4 and agent.num_updates > 100
    assert namespace["loss_per_item"].shape == (16,) and np.isfinite(namespace["loss"])
    # The page's config builds as it is (GridWorld 4x4: 16 discrete states, 4 actions).
    from rlgraph.agents import Agent, DQFDAgent
    from rlgraph.environments import GridWorld
    config = json.loads(re.findall(r"```json\n(.*?)```", (DOCS / "agents/dqfd.md").read_text(), flags=re.S)[0])
    env = GridWorld("4x4")
    built = Agent.from_spec(config, state_space=env.state_space, action_space=env.action_space, backend=backend)
    assert isinstance(built, DQFDAgent) and built.demo_batch_size == 8 and built.demo_memory_size() == 0
    built.terminate()


def test_distributed_doc_snippet_runs(backend):
    namespace = _run_doc("distributed.md", backend, 1)
    assert namespace["result"]["timesteps_executed"] >= 1000 and namespace["result"]["learner_updates"] > 0
    assert len(namespace["per_worker"]) == 2 and namespace["more"]["timesteps_executed"] >= 200
    assert namespace["resumed"].env_timesteps >= namespace["steps"] + 200


def test_migrating_doc_original_config_snippet_runs(backend, caplog):
    # A config of the original RLgraph: TF1-era keys mapped or dropped with one warning.
    with caplog.at_level(logging.WARNING, logger="rlgraph.agents.original_keys"):
        namespace = _run_doc("migrating.md", backend, 2, use_blocks=1)
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlgraph.agents.original_keys"]
    assert len(warnings) == 1
    for note in ("update_spec false -> update_spec.do_updates false",
                 "execution_spec.session_config.intra_op_parallelism_threads -> execution_spec.tf_num_threads (1)",
                 "execution_spec.gpu_spec.gpus_enabled -> execution_spec.device ('cpu')", "summary_spec.save_steps -> summary_spec.summary_interval (50)",
                 "saver_spec.save_secs ignored"):
        assert note in warnings[0]
    assert namespace["old_style"].spec["execution_spec"] == {"seed": 1, "tf_num_threads": 1, "device": "cpu"}
    np.testing.assert_allclose(namespace["end_value"], 0.05 + 0.95 * 0.1, rtol=1e-6)


def test_migrating_doc_snippet_runs(backend):
    # Worker-side preprocessing of the original: the preprocessing_spec goes into the agent.
    namespace = _run_doc("migrating.md", backend, 2, first_block=1)
    assert namespace["stats"]["timesteps_executed"] == 100
    np.testing.assert_allclose(namespace["one_hot"], [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
