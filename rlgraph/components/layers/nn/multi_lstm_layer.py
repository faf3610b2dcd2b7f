"""`MultiLSTMLayer`: a stack of `LSTMLayer`s, optionally with skip connections."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import Layer
from rlgraph.components.layers.nn.lstm_layer import LSTMLayer, _is_positive_int
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class MultiLSTMLayer(Layer):
    """`num_lstms` LSTM layers ("lstm-0", "lstm-1", ...), each fed with the output sequence of the one before.

    With `skip_connections`, layer i's input is its regular input (the stack's input for i = 0,
    else the output of lstm-(i-1)) concatenated, on the last axis, with further sources: source 0 is
    the stack's input and source k >= 1 the output of lstm-(k-1). `skip_connections[i][k]` True
    adds source k to layer i (only k < i is allowed; k == i is the regular input, always used).
    Example for 3 layers where the last also sees the raw input: [[], [], [True]].

    API:
        apply(inputs, initial_c_and_h_states=None, sequence_length=None) -> dict:
            inputs: [B, T, in] ([T, B, in] if `time_major`).
            initial_c_and_h_states: A tuple with one (c0, h0) per layer, each [B, units_i];
                zeros if None.
            sequence_length: [B] valid steps per row (see `LSTMLayer`), used by every layer.
            Returns {"output": the last layer's output [B, T, units_last], "last_internal_states":
            a tuple with one (c, h) per layer}.

    Args:
        num_lstms: The number of LSTM layers.
        units: The units of every layer (an int), or a list with one per layer.
        skip_connections: See above; None: no skip connections.
        use_peepholes: Passed to every `LSTMLayer`.
        cell_clip: Passed to every `LSTMLayer`.
        static_loop: Passed to every `LSTMLayer`.
        forget_bias: Passed to every `LSTMLayer`.
        parallel_iterations: Passed to every `LSTMLayer`.
        swap_memory: Passed to every `LSTMLayer`.
        time_major: Passed to every `LSTMLayer`.
        weights_spec: Passed to every `LSTMLayer`.
        biases_spec: Passed to every `LSTMLayer`.
        scope: Default "multi-lstm".

    Raises:
        RLGraphSpecError: For an invalid `num_lstms`, `units` or `skip_connections`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> stack = MultiLSTMLayer(num_lstms=2, units=[3, 2])
    >>> test = ComponentTest(stack, input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True,
    ...                      add_time_rank=True)), backend="pytorch")
    >>> out = test.test(("apply", np.ones((2, 5, 4), dtype=np.float32)))
    >>> out["output"].shape, [c.shape for c, h in out["last_internal_states"]]
    ((2, 5, 2), [(2, 3), (2, 2)])
    """

    is_recurrent = True  # NeuralNetwork passes internal states and sequence lengths to it.

    def __init__(self, num_lstms: int, units: Union[int, Sequence[int]], use_peepholes: bool = False,
                 cell_clip: Optional[float] = None, static_loop: Union[bool, int] = False, forget_bias: float = 1.0,
                 parallel_iterations: int = 32, swap_memory: bool = False, time_major: bool = False,
                 weights_spec: Any = None, biases_spec: Any = None,
                 skip_connections: Optional[Sequence[Sequence[bool]]] = None, scope: str = "multi-lstm", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if not _is_positive_int(num_lstms):
            raise RLGraphSpecError("num_lstms must be a positive int", where=f"{name}(num_lstms)",
                                   received=repr(num_lstms))
        self.num_lstms = int(num_lstms)
        units_list = list(units) if isinstance(units, (list, tuple)) else [units] * self.num_lstms
        if len(units_list) != self.num_lstms:
            raise RLGraphSpecError("units must be an int or a list with one entry per layer", where=f"{name}(units)",
                                   expected=f"{self.num_lstms} entries", received=repr(units))
        self.units = units_list
        self.time_major = bool(time_major)
        self.skip_connections = _check_skip_connections(skip_connections, self.num_lstms, f"{name}(skip_connections)")
        self.lstms: List[LSTMLayer] = [
            LSTMLayer(units=u, use_peepholes=use_peepholes, cell_clip=cell_clip, static_loop=static_loop,
                      forget_bias=forget_bias, parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                      time_major=time_major, weights_spec=weights_spec, biases_spec=biases_spec, scope=f"lstm-{i}")
            for i, u in enumerate(units_list)
        ]
        self.add_components(*self.lstms)

    @rlgraph_api
    def apply(self, inputs, initial_c_and_h_states=None, sequence_length=None):
        sources = [inputs]  # Source k >= 1 is the output of lstm-(k-1).
        last_states = []
        for i, lstm in enumerate(self.lstms):
            skips = [sources[k] for k in self.skip_connections[i]]
            layer_input = sources[-1] if not skips else self._graph_fn_concat(sources[-1], *skips)
            states = None if initial_c_and_h_states is None else initial_c_and_h_states[i]
            result = lstm.apply(layer_input, states, sequence_length)
            sources.append(result["output"])
            last_states.append(result["last_internal_states"])
        return {"output": sources[-1], "last_internal_states": tuple(last_states)}

    @graph_fn
    def _graph_fn_concat(self, *sequences):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.concat(sequences, axis=-1)
        import torch
        return torch.cat(sequences, dim=-1)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space of "output": FloatBox (units of the last layer,) with the input's batch/time ranks."""
        return FloatBox(shape=(self.units[-1],), add_batch_rank=space.has_batch_rank,
                        add_time_rank=space.has_time_rank, time_major=space.time_major)


def _check_skip_connections(skip_connections: Any, num_lstms: int, where: str) -> List[List[int]]:
    """Validates the bool matrix; returns per layer the sorted extra source indices (k < i)."""
    if skip_connections is None:
        return [[] for _ in range(num_lstms)]
    if not isinstance(skip_connections, (list, tuple)) or len(skip_connections) != num_lstms:
        raise RLGraphSpecError("skip_connections must be a list with one list of bools per layer", where=where,
                               expected=f"{num_lstms} rows", received=repr(skip_connections))
    sources = []
    for i, row in enumerate(skip_connections):
        if not isinstance(row, (list, tuple)) or not all(isinstance(b, bool) for b in row):
            raise RLGraphSpecError(f"row {i} of skip_connections must be a list of bools", where=where,
                                   received=repr(row))
        late = [k for k, on in enumerate(row) if on and k > i]
        if late:
            raise RLGraphSpecError(f"layer {i} cannot receive sources {late}: they are computed after it", where=where,
                                   expected=f"True only at positions 0..{i - 1} (0: the stack's input, "
                                            "k: the output of lstm-(k-1))", received=repr(row))
        sources.append([k for k, on in enumerate(row) if on and k < i])
    return sources
