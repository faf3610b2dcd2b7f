"""Policies: a network plus action adapters and distributions for any action space."""
from rlgraph.components.policies.dueling_policy import DuelingPolicy
from rlgraph.components.policies.policy import Policy
from rlgraph.components.policies.shared_value_function_policy import SharedValueFunctionPolicy

__all__ = ["Policy", "DuelingPolicy", "SharedValueFunctionPolicy"]
