"""`ExecutorSaving`: `store_model`, `load_model` and `export_graph` of every executor (a base of `GraphExecutor`)."""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphExportError


class ExecutorSaving:
    """Checkpoints and graph exports; `GraphExecutor` inherits it. The backend hooks `_save`,
    `_read_checkpoint`, `_read_checkpoint_files`, `_assign` and `_export` do the backend's part."""

    def store_model(self, path: Optional[str] = None, add_timestep: bool = False,
                    exclude: Iterable[str] = ()) -> str:
        """Saves all variables but those named in `exclude` (global names, e.g. a replay memory's
        records); returns the path written. Default path: saver_spec["directory"]/model."""
        if path is None:
            directory = self.saver_spec.get("directory")
            if directory is None:
                raise RLGraphError("no path given and no saver_spec directory", where=f"{self._where()}.store_model")
            path = os.path.join(directory, "model")
        return self._save(path, frozenset(exclude))

    def load_model(self, path: str, may_be_missing: Iterable[str] = ()) -> List[str]:
        """Restores all variables from a `store_model` path.

        Everything is read and checked first (every variable present with its shape; the
        components' own range checks, e.g. a memory's positions within its capacity); only then
        are the variables written (cast to their dtypes).

        Args:
            path: What `store_model` wrote.
            may_be_missing: Global names of variables the checkpoint may lack (those `store_model`
                was told to exclude); the components holding such a variable are set back to their
                initial values (an empty memory) when the checkpoint lacks it.

        Returns:
            The names of the variables set to their initial values.

        Raises:
            RLGraphCheckpointError: If the file is missing, corrupt, or does not fit this graph;
                no variable changes then.
        """
        return self.restore_checked(self.check_values(self._read_checkpoint(path), path, may_be_missing))

    def read_model_files(self, files: Any, name: str = "model") -> Dict[str, np.ndarray]:
        """The variable values of the model `store_model` wrote as `name` into a checkpoint, parsed
        from the verified bytes of `files` (a `CheckpointFiles`); nothing is read from disk again.

        Raises:
            RLGraphCheckpointError: If the model's files are not listed or cannot be parsed.
        """
        return self._read_checkpoint_files(files, name)

    def check_values(self, values: Dict[str, np.ndarray], label: str,
                     may_be_missing: Iterable[str] = ()) -> Tuple[Dict[str, np.ndarray], dict, list]:
        """Checks checkpoint values against this graph (every variable present with its shape; the
        components' own range checks) without changing anything; returns what `restore_checked` takes.

        Raises:
            RLGraphCheckpointError: As `load_model`.
        """
        records = self._records()
        absent = sorted(set(may_be_missing) & set(records) - set(values))
        # A component is restored whole or not at all: one of its variables absent resets all of them.
        reset = [c for c in self.root_component.get_all_sub_components()
                 if any(name in c.variable_records for name in absent)]
        reset_names = {name for c in reset for name in c.variable_records}
        records = {k: r for k, r in records.items() if k not in reset_names}
        missing = sorted(set(records) - set(values))
        # (Shapes from the variables themselves: reading a large memory's values just for them
        # would copy it, twice.)
        shapes = {k: tuple(r.variable.shape) for k, r in records.items()}
        wrong = [f"{k}: {tuple(values[k].shape)} vs {shape}" for k, shape in shapes.items()
                 if k in values and tuple(values[k].shape) != shape]
        if missing or wrong:
            raise RLGraphCheckpointError(f"checkpoint '{label}' does not fit this graph",
                                         where=f"{self._where()}.load_model", expected="the same variables and shapes",
                                         received=f"missing {missing}, wrong shapes {wrong}")
        for component in self.root_component.get_all_sub_components():
            if component in reset:
                continue
            own = {name[len(component.global_scope) + 1:]: values[name] for name in component.variable_records}
            if own:
                component.check_restored_variables(own, where=f"{self._where()}.load_model({label})")
        return values, records, reset

    def restore_checked(self, checked: Tuple[Dict[str, np.ndarray], dict, list]) -> List[str]:
        """Writes what `check_values` accepted into the variables; returns the names set back to
        their initial values."""
        from rlgraph.components.component_variables import restore_initial_values
        values, records, reset = checked
        for name, record in records.items():
            self._assign(record.variable, values[name])
        restore_initial_values(reset)
        return sorted(name for c in reset for name in c.variable_records)

    #: The formats `export_graph` writes on this backend, and the one it writes when none is named.
    graph_export_formats: tuple = ()
    default_graph_export_format: Optional[str] = None

    def export_graph(self, path: str, format: Optional[str] = None) -> str:  # noqa: A002 - the format's name
        """Exports every root API method of the graph (TF: a SavedModel, loadable without rlgraph;
        PyTorch: only the legacy format "pickled-module", a pickled `nn.Module` that needs rlgraph and
        `torch.load(weights_only=False)` to load). An agent's greedy policy exports to files that
        load without rlgraph on either backend: `Agent.export_policy`.

        Raises:
            RLGraphExportError: For a format this backend does not write (PyTorch: any but
                "pickled-module", which must be asked for by name).
        """
        if format is None:
            format = self.default_graph_export_format
        if format not in self.graph_export_formats:
            hint = None
            if self.backend == "pytorch":
                hint = ("a PyTorch graph exports only as the legacy pickled module (format='pickled-module': it "
                        "needs rlgraph and torch.load(weights_only=False) to load); a policy exports to TorchScript, "
                        "ONNX or a SavedModel with Agent.export_policy(path, format).")
            raise RLGraphExportError(f"export_graph on {self.backend} writes the format(s) "
                                     f"{list(self.graph_export_formats)}", where=f"{self._where()}.export_graph",
                                     received=repr(format), hint=hint)
        return self._export(path)
