"""String (text) processing layers."""
from rlgraph.components.layers.strings.embedding_lookup import EmbeddingLookup
from rlgraph.components.layers.strings.string_layer import StringLayer
from rlgraph.components.layers.strings.string_to_hash_bucket import StringToHashBucket

__all__ = ["StringLayer", "StringToHashBucket", "EmbeddingLookup"]
