"""Networks from JSON layer lists, keras-style assembly, and a preprocessor stack, on each backend.

Run: python examples/networks_and_preprocessors.py
"""
import json

import numpy as np

from rlgraph.backend_system import is_backend_installed
from rlgraph.components.layers import Conv2DLayer, DenseLayer, ReShape
from rlgraph.components.neural_networks import NeuralNetwork, PreprocessorStack
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest

# The network part of an agent config: a list of layer specs.
NETWORK_SPEC = json.loads("""[
    {"type": "dense", "units": 32, "activation": "relu", "scope": "hidden"},
    {"type": "dense", "units": 32, "activation": "relu", "scope": "hidden"},
    {"type": "dense", "units": 2, "scope": "q-values"}
]""")

# Atari-style preprocessing: 210x160 RGB frames -> 84x84 grayscale, scaled to [0, 1], 4 stacked frames.
PREPROCESSING_SPEC = [
    {"type": "grayscale", "keep_rank": True},
    {"type": "image-resize", "width": 84, "height": 84},
    {"type": "convert-type", "to_dtype": "float32"},
    {"type": "divide", "divisor": 255.0},
    {"type": "sequence", "sequence_length": 4, "batch_size": 1, "add_rank": False},
]


def main():
    for backend in ("tf", "pytorch"):
        if not is_backend_installed(backend):
            continue
        # 1) A network from a JSON layer list.
        net = NeuralNetwork.from_spec(NETWORK_SPEC, scope="policy")
        test = ComponentTest(net, input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)),
                             backend=backend)
        q = test.test(("apply", np.ones((3, 4), dtype=np.float32)))["output"]
        print(f"{backend}: q-values {q.shape}, variables {sorted(test.graph_executor.get_weights())[:2]} ...")

        # 2) Keras-style: a small conv net on 84x84x4 frames.
        frames = FloatBox(shape=(84, 84, 4), add_batch_rank=True)
        x = Conv2DLayer(filters=8, kernel_size=8, strides=4, activation="relu", scope="conv1")(frames)
        x = Conv2DLayer(filters=16, kernel_size=4, strides=2, activation="relu", scope="conv2")(x)
        x = ReShape(flatten=True, scope="flatten")(x)
        x = DenseLayer(units=6, scope="logits")(x)
        conv_net = NeuralNetwork(outputs=x, scope="conv-net")
        test = ComponentTest(conv_net, input_spaces=dict(inputs=frames), backend=backend)
        print(f"{backend}: conv logits {test.test(('apply', frames.sample(2)))['output'].shape}")

        # 3) A preprocessor stack with a stateful frame stack, reset at an episode start.
        stack = PreprocessorStack(*PREPROCESSING_SPEC)
        image = IntBox(256, shape=(210, 160, 3), dtype="uint8", add_batch_rank=True)
        print(f"{backend}: preprocessed space {stack.get_preprocessed_space(image)}")
        test = ComponentTest(stack, input_spaces=dict(inputs=image), backend=backend)
        test.test("reset")
        out = test.test(("preprocess", image.sample(1)))
        print(f"{backend}: preprocessed frame stack {out.shape}, in [{out.min():.2f}, {out.max():.2f}]")


if __name__ == "__main__":
    main()
