"""Assertions for tests of components and agents (part of the public API)."""
from __future__ import annotations

import os
from typing import Any, List, Optional

import numpy as np


def recursive_assert_almost_equal(x: Any, y: Any, decimals: int = 7, atol: Optional[float] = None,
                                  rtol: Optional[float] = None, false: bool = False, _path: str = "") -> None:
    """Asserts that two nested structures (dicts, tuples, lists, arrays, numbers, strings, None)
    are equal, numbers to `decimals` decimals (or within `atol`/`rtol` when given).

    Args:
        x: The actual value.
        y: The expected value.
        decimals: Decimals to compare numbers to (ignored if `atol` or `rtol` is given).
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        false: Assert that the values differ instead.

    Raises:
        AssertionError: Naming the path (`['a'][1]`) of the first difference.
    """
    if false:
        try:
            recursive_assert_almost_equal(x, y, decimals, atol, rtol)
        except AssertionError:
            return
        raise AssertionError(f"values at {_path or 'top level'} are equal but should differ: {x!r}")
    where = _path or "top level"
    if isinstance(y, dict):
        assert isinstance(x, dict), f"at {where}: expected a dict, got {type(x).__name__}"
        assert set(x) == set(y), f"at {where}: keys differ: {sorted(x)} vs expected {sorted(y)}"
        for key in y:
            recursive_assert_almost_equal(x[key], y[key], decimals, atol, rtol, _path=f"{_path}[{key!r}]")
        return
    if isinstance(y, (tuple, list)) and not (isinstance(x, np.ndarray) and x.dtype != object):
        assert isinstance(x, (tuple, list, np.ndarray)), f"at {where}: expected a sequence, got {type(x).__name__}"
        assert len(x) == len(y), f"at {where}: lengths differ: {len(x)} vs expected {len(y)}"
        for i, (a, b) in enumerate(zip(x, y)):
            recursive_assert_almost_equal(a, b, decimals, atol, rtol, _path=f"{_path}[{i}]")
        return
    if y is None:
        assert x is None, f"at {where}: expected None, got {x!r}"
        return
    if isinstance(y, (str, bytes)):
        assert x == y, f"at {where}: {x!r} != expected {y!r}"
        return
    x_arr, y_arr = np.asarray(x), np.asarray(y)
    if x_arr.dtype.kind in "USO" or y_arr.dtype.kind in "USO":
        np.testing.assert_array_equal(x_arr, y_arr, err_msg=f"at {where}")
        return
    if atol is not None or rtol is not None:
        np.testing.assert_allclose(x_arr, y_arr, rtol=rtol or 0.0, atol=atol or 0.0, err_msg=f"at {where}")
    else:
        np.testing.assert_array_almost_equal(x_arr, y_arr, decimal=decimals, err_msg=f"at {where}")


def config_from_path(path: str, root: Optional[str] = None) -> Any:
    """Reads an agent config (JSON or YAML) the way the original's tests did, with rlgraph's safe
    spec-file loader (`load_spec_file`: data only, no code runs; size and depth limits).

    A relative `path` is looked up in `root` if given (only there, as in the original), else
    in the checkout's top directory and its `configs/` folder (where rlgraph's shipped configs
    live: `config_from_path("configs/dqn_cartpole.json")` and `config_from_path("dqn_cartpole.json")`
    both work), else in the working directory.

    Args:
        path: The config file.
        root: The directory that a relative `path` is relative to.

    Returns:
        The config (a dict, or a list).

    Raises:
        RLGraphSpecError: If no file is found (the message lists the places tried) or it cannot be read.
    """
    from rlgraph.utils.rlgraph_errors import RLGraphSpecError
    from rlgraph.utils.specifiable import load_spec_file
    for candidate in _config_candidates(path, root):
        if os.path.isfile(candidate):
            return load_spec_file(candidate)
    raise RLGraphSpecError("config file not found", where="config_from_path", received=repr(path),
                           expected=f"a file at one of {_config_candidates(path, root)}")


def _config_candidates(path: str, root: Optional[str]) -> List[str]:
    path = os.path.expanduser(path)
    if os.path.isabs(path):
        return [path]
    if root:
        return [os.path.join(root, path)]
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [os.path.join(checkout, path), os.path.join(checkout, "configs", path), os.path.abspath(path)]
