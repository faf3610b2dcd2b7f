"""Components: the building blocks of every model."""
from rlgraph.components.component import Component

Component.__lookup_classes__ = {"component": Component}

__all__ = ["Component"]
