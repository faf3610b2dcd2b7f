"""Testing helpers that are part of the public API: ComponentTest, AgentTest and assertions."""
from rlgraph.tests.agent_test import AgentTest
from rlgraph.tests.component_test import ComponentTest
from rlgraph.tests.test_util import recursive_assert_almost_equal

__all__ = ["AgentTest", "ComponentTest", "recursive_assert_almost_equal"]
