"""The build system and the executors. Backends are imported only when an executor is used."""
from rlgraph.graphs.graph_builder import BuildStats, GraphBuilder
from rlgraph.graphs.graph_executor import GraphExecutor, executor_for
from rlgraph.graphs.visualization import component_graph_to_dot

__all__ = ["BuildStats", "GraphBuilder", "GraphExecutor", "executor_for", "component_graph_to_dot"]
