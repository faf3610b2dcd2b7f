"""The python snippets of the docs run as written (on both backends)."""
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
    code = "\n".join(textwrap.dedent(block) for block in blocks).replace('backend="tf"', f'backend="{backend}"')
    if namespace is None:
        namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(path), "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace


def test_tutorial_doc_snippets_run(backend):
    namespace = _run_doc("tutorial.md", backend, 2)
    assert namespace["test"].test("get_value").item() == 5.0


def test_components_doc_build_snippets_run(backend):
    namespace = _run_doc("components.md", backend, 2, use_blocks=1)
    q = np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 0.0]], np.float32)
    assert namespace["greedy"].test(("act", q)).tolist() == [1, 0]
    assert namespace["greedy"].component.api_method_inputs["q"] == FloatBox(shape=(3,), add_batch_rank=True)
    with pytest.raises(RLGraphBuildError, match=r"^b\.run\(flag\): the API method takes a python decision"):
        _run_doc("components.md", backend, 2)


def test_layers_doc_snippets_run(backend):
    namespace = _run_doc("layers.md", backend, 2)
    assert namespace["q"].shape == (3, 2) and namespace["v"].shape == (2, 1)


def test_memories_doc_snippets_run(backend):
    namespace = _run_doc("memories_and_losses.md", backend, 2)
    assert namespace["weights"].shape == (8,) and abs(namespace["per_item"][0] - 1.47) < 1e-5


def test_policies_doc_snippet_runs(backend):
    namespace = _run_doc("policies_and_exploration.md", backend, 1)
    assert set(namespace["chosen"]) == {"aim", "move"}


def test_agents_doc_snippets_run(backend):
    namespace = _run_doc("agents.md", backend, 7, use_blocks=3)
    assert namespace["stats"]["timesteps_executed"] == 200
    # The DQN page's record snippet continues the agent of agents.md.
    namespace = _run_doc("agents/dqn.md", backend, 1, namespace=namespace)
    assert namespace["loss_per_item"].shape == (2,) and namespace["td_errors"].shape == (2,)


def test_deploying_doc_snippets_run(backend):
    """"Deploying a trained policy": the three exports, each loaded by its runtime, give the
    agent's greedy actions (the snippets assert it themselves)."""
    pytest.importorskip("onnxruntime", reason="the ONNX snippet needs the export extra")
    namespace = _run_doc("agents.md", backend, 7, first_block=3)
    assert namespace["actions"].shape == (5,) and (namespace["actions"] == namespace["expected"]).all()
    assert namespace["agent"].backend == backend


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
             "agents/ddpg.md"]
    counts = {page: len(_python_blocks(page)) for page in pages}
    assert counts == {"agents.md": 7, "agents/dqn.md": 1, "agents/apex.md": 0, "agents/impala.md": 1,
                      "agents/ppo.md": 1, "agents/sac.md": 0, "agents/ddpg.md": 0}


def test_distributed_doc_snippet_runs(backend):
    namespace = _run_doc("distributed.md", backend, 1)
    assert namespace["result"]["timesteps_executed"] >= 1000 and namespace["result"]["learner_updates"] > 0
    assert len(namespace["per_worker"]) == 2 and namespace["more"]["timesteps_executed"] >= 200
    assert namespace["resumed"].env_timesteps >= namespace["steps"] + 200
