"""Common helper components: time-dependent parameters (schedules), `Synchronizable`, and the
container/batch helpers (merger, slice, batch apply/splitter, sampler) and `EnvironmentStepper`."""
from rlgraph.components.common.batch_apply import BatchApply
from rlgraph.components.common.batch_splitter import BatchSplitter
from rlgraph.components.common.container_merger import ContainerMerger
from rlgraph.components.common.environment_stepper import EnvironmentStepper
from rlgraph.components.common.sampler import Sampler
from rlgraph.components.common.slice import Slice
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.common.time_dependent_parameters import (Constant, ExponentialDecay, LinearDecay,
                                                                 PolynomialDecay, TimeDependentParameter)

__all__ = ["Synchronizable", "TimeDependentParameter", "Constant", "LinearDecay", "PolynomialDecay",
           "ExponentialDecay", "ContainerMerger", "Slice", "BatchApply", "BatchSplitter", "Sampler",
           "EnvironmentStepper"]
