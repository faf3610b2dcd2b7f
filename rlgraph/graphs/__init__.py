"""The build system and the executors. Backends are imported only when an executor is used."""
from rlgraph.graphs.graph_builder import BuildStats, GraphBuilder
from rlgraph.graphs.graph_executor import GraphExecutor, executor_for
from rlgraph.graphs.pytorch_executor import PyTorchExecutor
from rlgraph.graphs.tensorflow_executor import TensorFlowExecutor
from rlgraph.graphs.visualization import component_graph_to_dot

# The executor class of each backend (`GraphExecutor.from_spec("tf")`); neither module imports its
# backend before an executor is created.
GraphExecutor.__lookup_classes__ = {"tf": TensorFlowExecutor, "pytorch": PyTorchExecutor}

__all__ = ["BuildStats", "GraphBuilder", "GraphExecutor", "executor_for", "component_graph_to_dot"]
