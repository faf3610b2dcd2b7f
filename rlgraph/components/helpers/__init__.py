"""Helper components (V-trace, GAE, sequences, softmax, clipping) and numpy segment trees."""
from rlgraph.components.helpers.clipping import Clipping
from rlgraph.components.helpers.generalized_advantage_estimation import GeneralizedAdvantageEstimation
from rlgraph.components.helpers.mem_segment_tree import MemSegmentTree
from rlgraph.components.helpers.min_sum_segment_tree import MinSumSegmentTree
from rlgraph.components.helpers.sequence_helper import SequenceHelper
from rlgraph.components.helpers.softmax import SoftMax
from rlgraph.components.helpers.v_trace_function import VTraceFunction

__all__ = ["VTraceFunction", "GeneralizedAdvantageEstimation", "SequenceHelper", "SoftMax", "Clipping",
           "MemSegmentTree", "MinSumSegmentTree"]
