"""Utilities: specs, errors, nesting, dtype helpers and numpy reference maths. No backend imports."""
from rlgraph.utils.rlgraph_errors import (RLGraphBackendUnavailableError, RLGraphBuildError, RLGraphCheckpointError,
                                          RLGraphCheckpointWriteError, RLGraphDistributedError, RLGraphEnvError,
                                          RLGraphError, RLGraphExportError, RLGraphInputIncompleteError,
                                          RLGraphInterrupted, RLGraphNonFiniteError, RLGraphObsoletedError,
                                          RLGraphRunDirLockedError, RLGraphSpaceError, RLGraphSpecError)
from rlgraph.utils.specifiable import Specifiable
from rlgraph.utils.util import SMALL_NUMBER, convert_dtype, force_list, force_tuple, root_logger

__all__ = ["RLGraphError", "RLGraphBuildError", "RLGraphSpaceError", "RLGraphSpecError",
           "RLGraphInputIncompleteError", "RLGraphObsoletedError", "RLGraphBackendUnavailableError",
           "RLGraphCheckpointError", "RLGraphCheckpointWriteError", "RLGraphDistributedError", "RLGraphEnvError",
           "RLGraphExportError",
           "RLGraphNonFiniteError", "RLGraphInterrupted", "RLGraphRunDirLockedError",
           "Specifiable", "convert_dtype", "force_list", "force_tuple", "SMALL_NUMBER", "root_logger"]
