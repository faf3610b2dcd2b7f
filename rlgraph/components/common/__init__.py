"""Common helper components (e.g. `Synchronizable` for target networks)."""
from rlgraph.components.common.synchronizable import Synchronizable

__all__ = ["Synchronizable"]
