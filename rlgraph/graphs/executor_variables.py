"""`ExecutorVariables`: reading and writing an executor's variables as numpy (a base class of `GraphExecutor`)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphNonFiniteError
from rlgraph.utils.specifiable import closest_match


class ExecutorVariables:
    """Variables by global name, as numpy; `GraphExecutor` inherits it. The backend hooks `_read`
    and `_assign` move the values in and out."""

    def _records(self) -> dict:
        return self.root_component.variable_records_of_tree()

    def read_variable_values(self, variables: Any = None) -> Any:
        """Numpy values of variables: a variable, a name, or a list/dict of them (None: all)."""
        if variables is None:
            variables = self.root_component.variable_registry
        by_name = self.root_component.variable_registry

        def read(var):
            if isinstance(var, str):
                if var not in by_name:
                    raise RLGraphError(f"no variable named '{var}'", where=self._where(), expected=sorted(by_name))
                var = by_name[var]
            return self._read(var)
        if isinstance(variables, dict):
            return {k: read(v) for k, v in variables.items()}
        if isinstance(variables, (list, tuple)):
            return [read(v) for v in variables]
        return read(variables)

    def get_weights(self, names: Optional[List[str]] = None, trainable_only: bool = False) -> Dict[str, np.ndarray]:
        """Global variable name -> numpy value of all (non-local) variables, or of `names`."""
        records = {k: r for k, r in self._records().items() if not r.local and (r.trainable or not trainable_only)}
        if names is not None:
            missing = [n for n in names if n not in records]
            if missing:
                raise RLGraphError(f"unknown variable name(s) {missing}", where=self._where(),
                                   expected=sorted(records))
            records = {n: records[n] for n in names}
        return {k: self._read(r.variable) for k, r in records.items()}

    def set_weights(self, weights: Dict[str, Any], rate: float = 1.0) -> None:
        """Writes `weights` (global name -> value); `rate` < 1 blends: new = rate*w + (1-rate)*old.

        Every value is checked before any is written.

        Raises:
            RLGraphError: For an unknown name, a wrong shape, or a soft update of a non-float variable.
            RLGraphNonFiniteError: For a NaN, or an inf in a variable that does not start out holding
                infinities (a prioritized memory's min-tree does: +inf is its neutral element).
        """
        if not 0.0 <= rate <= 1.0:
            raise RLGraphError("rate must be in [0, 1]", where=f"{self._where()}.set_weights", received=rate)
        records = self._records()
        if not isinstance(weights, dict):
            raise RLGraphError("weights must be a dict of variable name -> array", where=f"{self._where()}.set_weights",
                               expected="a dict as get_weights() returns it", received=type(weights).__name__)
        writes = []
        for name, value in weights.items():
            if name not in records:
                guess = closest_match(name, list(records))
                raise RLGraphError(f"no variable named '{name}'", where=f"{self._where()}.set_weights",
                                   expected=sorted(records), hint=f"did you mean '{guess}'?" if guess else None)
            variable = records[name].variable
            current = self._read(variable)
            try:
                value = np.asarray(value)
                if value.dtype.kind not in "biuf":
                    raise TypeError(f"dtype {value.dtype}")
            except (TypeError, ValueError) as error:  # Ragged lists, strings, objects.
                raise RLGraphError(f"weights for '{name}' are no numeric array ({error})",
                                   where=f"{self._where()}.set_weights", expected=f"{current.dtype} {current.shape}",
                                   received=repr(value)[:80]) from None
            if value.shape != current.shape:
                raise RLGraphError(f"weights for '{name}' have the wrong shape", where=f"{self._where()}.set_weights",
                                   expected=current.shape, received=value.shape)
            if rate != 1.0:
                if current.dtype.kind != "f":
                    raise RLGraphError(f"soft update of non-float variable '{name}'",
                                       where=f"{self._where()}.set_weights", hint="use rate=1.0.")
                value = rate * value + (1.0 - rate) * current
            with np.errstate(over="ignore"):  # (A value beyond the dtype's range becomes inf: refused below.)
                value = value.astype(current.dtype)
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                _check_non_finite(name, value, records[name].initial, f"{self._where()}.set_weights")
            writes.append((variable, value))
        for variable, value in writes:
            self._assign(variable, value)


def _check_non_finite(name: str, value: np.ndarray, initial: Any, where: str) -> None:
    """Raises for the NaN or inf in `value` (weights for variable `name`), unless it holds only
    infinities and the variable's `initial` value holds some too (then they are its own)."""
    nan = np.isnan(value)
    if not nan.any() and not np.isfinite(np.asarray(initial, dtype=np.float64)).all():
        return
    index = tuple(int(i) for i in np.argwhere(nan if nan.any() else ~np.isfinite(value))[0])
    raise RLGraphNonFiniteError(f"weights for '{name}' hold a non-finite value at index {index}", where=where,
                                received=value[index].item(),
                                hint="weights with NaN/inf come from a diverged run (check its losses); nothing "
                                     "was written.")
