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
