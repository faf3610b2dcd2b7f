"""Common helper components: time-dependent parameters (schedules) and `Synchronizable`."""
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.common.time_dependent_parameters import (Constant, ExponentialDecay, LinearDecay,
                                                                 PolynomialDecay, TimeDependentParameter)

__all__ = ["Synchronizable", "TimeDependentParameter", "Constant", "LinearDecay", "PolynomialDecay",
           "ExponentialDecay"]
