"""Action adapters: a network's output -> the parameters of an action distribution."""
from rlgraph.components.action_adapters.action_adapter import ActionAdapter
from rlgraph.components.action_adapters.baseline_action_adapter import BaselineActionAdapter
from rlgraph.components.action_adapters.dueling_action_adapter import DuelingActionAdapter

__all__ = ["ActionAdapter", "BaselineActionAdapter", "DuelingActionAdapter"]
