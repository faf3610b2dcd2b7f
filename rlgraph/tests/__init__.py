"""Testing helpers that are part of the public API: ComponentTest and assertions."""
from rlgraph.tests.component_test import ComponentTest
from rlgraph.tests.test_util import recursive_assert_almost_equal

__all__ = ["ComponentTest", "recursive_assert_almost_equal"]
