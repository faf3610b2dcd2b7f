"""Preprocessing layers."""
from rlgraph.components.layers.preprocessing.clip import Clip
from rlgraph.components.layers.preprocessing.container_splitter import ContainerSplitter
from rlgraph.components.layers.preprocessing.convert_type import ConvertType
from rlgraph.components.layers.preprocessing.divide import Divide
from rlgraph.components.layers.preprocessing.grayscale import GrayScale
from rlgraph.components.layers.preprocessing.image_binary import ImageBinary
from rlgraph.components.layers.preprocessing.image_crop import ImageCrop
from rlgraph.components.layers.preprocessing.image_resize import ImageResize
from rlgraph.components.layers.preprocessing.moving_standardize import MovingStandardize
from rlgraph.components.layers.preprocessing.multiply import Multiply
from rlgraph.components.layers.preprocessing.normalize import Normalize
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.components.layers.preprocessing.rank_reinterpreter import RankReinterpreter
from rlgraph.components.layers.preprocessing.reshape import ReShape
from rlgraph.components.layers.preprocessing.sequence import Sequence
from rlgraph.components.layers.preprocessing.transpose import Transpose

__all__ = ["PreprocessLayer", "GrayScale", "ImageResize", "ImageCrop", "ImageBinary", "Normalize", "MovingStandardize",
           "Clip", "Multiply", "Divide", "ConvertType", "ReShape", "Transpose", "Sequence", "RankReinterpreter",
           "ContainerSplitter"]
