"""The python snippets of docs/components.md run as written (on both backends)."""
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "components.md"


def test_components_doc_snippets_run(backend):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 2
    code = "\n".join(blocks[:2]).replace('backend="tf"', f'backend="{backend}"')
    namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["test"].test("get_value").item() == 5.0


LAYERS_DOC = Path(__file__).resolve().parent.parent / "docs" / "layers.md"


def test_layers_doc_snippets_run(backend):
    blocks = re.findall(r"```python\n(.*?)```", LAYERS_DOC.read_text(), flags=re.S)
    assert len(blocks) == 2
    code = "\n".join(blocks).replace('backend="tf"', f'backend="{backend}"')
    namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(LAYERS_DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["q"].shape == (3, 2) and namespace["v"].shape == (2, 1)


MEMORIES_DOC = Path(__file__).resolve().parent.parent / "docs" / "memories_and_losses.md"


def test_memories_doc_snippets_run(backend):
    blocks = re.findall(r"```python\n(.*?)```", MEMORIES_DOC.read_text(), flags=re.S)
    assert len(blocks) == 2
    code = "\n".join(blocks).replace('backend="tf"', f'backend="{backend}"')
    namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(MEMORIES_DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["weights"].shape == (8,) and abs(namespace["per_item"][0] - 1.47) < 1e-5


POLICIES_DOC = Path(__file__).resolve().parent.parent / "docs" / "policies_and_exploration.md"


def test_policies_doc_snippet_runs(backend):
    blocks = re.findall(r"```python\n(.*?)```", POLICIES_DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    code = blocks[0].replace('backend="tf"', f'backend="{backend}"')
    namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(POLICIES_DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert set(namespace["chosen"]) == {"aim", "move"}


AGENTS_DOC = Path(__file__).resolve().parent.parent / "docs" / "agents.md"


def test_agents_doc_snippets_run(backend):
    blocks = re.findall(r"```python\n(.*?)```", AGENTS_DOC.read_text(), flags=re.S)
    assert len(blocks) == 3
    code = "\n".join(blocks).replace('backend="tf"', f'backend="{backend}"')
    namespace = {"__name__": "doc_snippet"}
    exec(compile(code, str(AGENTS_DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["stats"]["timesteps_executed"] == 200
