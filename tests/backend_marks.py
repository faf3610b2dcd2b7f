"""Marks for tests that need a backend the `backend` fixture does not give them: comparisons across
both backends, and TF-only cases. Where TF is not installed (a PyTorch-only machine, such as a GPU
machine without TensorFlow), they are skipped with the reason instead of failing on the import."""
import pytest

from rlgraph.backend_system import is_backend_installed

needs_tf = pytest.mark.skipif(not is_backend_installed("tf"),
                              reason="backend 'tf' is not installed (install the '.[tf,torch]' extras)")
needs_both_backends = pytest.mark.skipif(
    not (is_backend_installed("tf") and is_backend_installed("pytorch")),
    reason="compares the two backends, and one is not installed (install the '.[tf,torch]' extras)")
