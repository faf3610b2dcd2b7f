"""The file format of a policy export: its input and output names and the JSON description stored with it."""
from __future__ import annotations

import os
from typing import Any, Dict, List

import numpy as np

from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphExportError, RLGraphSpecError
from rlgraph.utils.spec_files import load_json_text

#: The name of the JSON description stored with every export (inputs, outputs, spaces, source).
METADATA_NAME = "rlgraph_policy.json"
METADATA_VERSION = 1


def input_names(space: Space) -> List[str]:
    """The names of an export's inputs (or outputs) for `space`: ["states"] for a plain space,
    else its flat keys without the leading slash."""
    keys = list(space.flatten().keys())
    return ["states"] if keys == [""] else [k.lstrip("/") for k in keys]


def read_metadata(path: str) -> dict:
    """The JSON description stored with an export (any format), without loading its model.

    Raises:
        RLGraphExportError: If `path` holds no rlgraph export description.
    """
    where = "read_metadata"
    text = None
    if os.path.isdir(path):
        candidate = os.path.join(path, "assets.extra", METADATA_NAME)
        if os.path.isfile(candidate):
            with open(candidate, "rb") as handle:
                text = handle.read(1 << 20)
    elif os.path.isfile(path):
        import zipfile
        if zipfile.is_zipfile(path):  # TorchScript: a zip archive with extra files.
            try:
                with zipfile.ZipFile(path) as archive:
                    found = [n for n in archive.namelist() if n.endswith(f"/extra/{METADATA_NAME}")]
                    if found and archive.getinfo(found[0]).file_size <= 1 << 20:
                        text = archive.read(found[0])
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError,
                    NotImplementedError) as error:  # (A damaged archive or an unknown compression.)
                raise RLGraphExportError("the file is a damaged zip archive", where=where, received=path,
                                         hint=str(error)) from None
        else:
            try:
                import onnx
                model = onnx.load(path, load_external_data=False)
                text = next((p.value for p in model.metadata_props if p.key == METADATA_NAME), None)
            except Exception:  # noqa: BLE001 - not an ONNX file either.
                text = None
    if text is None:
        raise RLGraphExportError("no rlgraph policy export found", where=where, received=path,
                                 expected="a file or directory written by export_policy")
    try:  # (Within the spec files' bounds: a deeply nested description is refused, not a RecursionError.)
        metadata = load_json_text(text.decode("utf-8") if isinstance(text, bytes) else text, repr(path), where=where)
    except (ValueError, RLGraphSpecError) as error:
        raise RLGraphExportError("the export's description is not valid JSON", where=where, received=path,
                                 expected=f"the {METADATA_NAME} that export_policy writes",
                                 hint=getattr(error, "message", None) or str(error)) from None
    if not isinstance(metadata, dict):
        raise RLGraphExportError("the export's description is not a JSON object", where=where, received=path)
    return metadata


def policy_metadata(agent: Any, format: str, preprocessing: bool, in_space: Space) -> dict:  # noqa: A002
    """The JSON description of an export of `agent` taking states of `in_space`: its format, the
    rlgraph version, the agent, and each input's and output's name, shape and dtype."""
    import rlgraph

    def describe(space: Space) -> Dict[str, Any]:
        names = input_names(space)
        leaves = list(space.flatten().values())
        return {n: {"shape": [None, *leaf.shape], "dtype": str(np.dtype(leaf.dtype))} for n, leaf in zip(names, leaves)}
    return {"format": "rlgraph-policy", "version": METADATA_VERSION, "export_format": format,
            "rlgraph_version": rlgraph.__version__, "agent": type(agent).__name__, "agent_backend": agent.backend,
            "preprocessing": preprocessing, "inputs": describe(in_space),
            "outputs": {("actions" if n == "states" else n): v for n, v in describe(agent.action_space).items()},
            "state_space": repr(in_space), "action_space": repr(agent.action_space)}
