"""Preprocessing layers."""
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer

__all__ = ["PreprocessLayer"]
