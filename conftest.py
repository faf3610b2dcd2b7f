"""Root conftest: names available to the `>>>` examples in rlgraph's docstrings (run as doctests)."""
import numpy as np
import pytest

import rlgraph.spaces


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    for name in rlgraph.spaces.__all__:
        doctest_namespace[name] = getattr(rlgraph.spaces, name)
