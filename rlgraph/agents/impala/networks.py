"""The two IMPALA network architectures as layer-spec lists (`NeuralNetwork.from_spec`).

Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures" (https://arxiv.org/abs/1802.01561), Figure 3. Only agent-side
python data lives here (no backend import), so that `IMPALAAgent` can expand its
`architecture` argument into a `network_spec`.
"""
from __future__ import annotations

from typing import Any, Dict, List

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

ARCHITECTURES = ("small", "large")

# Channels of the three sections of the "large" (deep ResNet) torso.
LARGE_SECTION_CHANNELS = (16, 32, 32)


def impala_network_spec(architecture: str) -> List[Dict[str, Any]]:
    """The layer specs of IMPALA's "small" or "large" network for image states [B, H, W, C].

    "small" (shallow, as in A3C): conv 16 8x8/4 relu, conv 32 4x4/2 relu (both "valid"),
    flatten, dense 256 relu, LSTM 256.

    "large" (deep ResNet): three sections with 16, 32, 32 channels, each
    conv 3x3/1 ("same"), max-pool 3x3/2 ("same") and two residual blocks
    x + conv3x3(relu(conv3x3(relu(x)))); then relu, flatten, dense 256 relu, LSTM 256.

    Both lists start with a division by 255 (uint8 pixels become float32 in [0, 1]; a float
    input is divided as well, so feed raw pixel values) and end with the LSTM layer, which the
    agent unrolls over [B, T, 256] itself; every layer before it sees [B*T, ...] rows. The paper
    also feeds the last action and reward to the LSTM; that is the agent's business, not the
    spec's. Each call returns a new list, safe to modify.

    Args:
        architecture: "small" or "large".

    Returns:
        A list of layer-spec dicts (plain JSON data).

    Raises:
        RLGraphSpecError: If `architecture` is not one of `ARCHITECTURES`.

    >>> [layer["type"] for layer in impala_network_spec("small")]
    ['divide', 'conv2d', 'conv2d', 'reshape', 'dense', 'lstm']
    >>> len(impala_network_spec("large"))  # 1 + 3 sections x (conv, pool, 2 blocks) + 3 + 1
    17
    """
    if architecture == "small":
        torso = _small_torso()
    elif architecture == "large":
        torso = _large_torso()
    else:
        raise RLGraphSpecError("unknown network architecture", where="IMPALAAgent(architecture)",
                               expected=" or ".join(repr(a) for a in ARCHITECTURES), received=repr(architecture),
                               hint="pick one of these, or pass a `network_spec` (a list of layer specs), "
                                    "which overrides `architecture`.")
    scale = {"type": "divide", "divisor": 255.0, "scope": "scale-pixels"}
    return [scale] + torso + [{"type": "lstm", "units": 256, "scope": "lstm"}]


def _small_torso() -> List[Dict[str, Any]]:
    return [
        {"type": "conv2d", "filters": 16, "kernel_size": 8, "strides": 4, "activation": "relu", "scope": "conv-0"},
        {"type": "conv2d", "filters": 32, "kernel_size": 4, "strides": 2, "activation": "relu", "scope": "conv-1"},
        {"type": "reshape", "flatten": True, "scope": "flatten"},
        {"type": "dense", "units": 256, "activation": "relu", "scope": "dense"},
    ]


def _large_torso() -> List[Dict[str, Any]]:
    layers: List[Dict[str, Any]] = []
    for i, channels in enumerate(LARGE_SECTION_CHANNELS):
        layers.append({"type": "conv2d", "filters": channels, "kernel_size": 3, "strides": 1, "padding": "same",
                       "scope": f"section-{i}-conv"})
        layers.append({"type": "maxpool2d", "pool_size": 3, "strides": 2, "padding": "same",
                       "scope": f"section-{i}-pool"})
        layers += [_residual_block(channels, f"section-{i}-block-{j}") for j in range(2)]
    return layers + [
        {"type": "nn-layer", "activation": "relu", "scope": "relu"},
        {"type": "reshape", "flatten": True, "scope": "flatten"},
        {"type": "dense", "units": 256, "activation": "relu", "scope": "dense"},
    ]


def _residual_block(channels: int, scope: str) -> Dict[str, Any]:
    """x + conv3x3(relu(conv3x3(relu(x)))).

    A `ResidualLayer` (no activation after the sum) whose unit, the stack (relu, conv3x3 "same"),
    is chained twice: `repeats` copies have their own kernels. `_args` are the stack's
    positional layers.
    """
    relu_conv = {"type": "stack", "scope": "relu-conv", "_args": [
        {"type": "nn-layer", "activation": "relu", "scope": "relu"},
        {"type": "conv2d", "filters": channels, "kernel_size": 3, "strides": 1, "padding": "same", "scope": "conv"},
    ]}
    return {"type": "residual", "residual_unit": relu_conv, "repeats": 2, "scope": scope}
