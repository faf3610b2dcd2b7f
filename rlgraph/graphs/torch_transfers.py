"""One host-to-device and one device-to-host copy per PyTorch API call on a GPU.

An API call's inputs are a nest (dicts, tuples, lists) of host tensors, one per leaf of the input
spaces: a DQN update from an external batch has six, a Dict state space one per key. Copied one by
one, each leaf costs a transfer of its own, and from pageable memory each waits for the copy to
finish. `to_device` instead packs every leaf's bytes into one pinned (page-locked) host buffer,
copies it with one `non_blocking` transfer, and hands the graph functions typed views of the
device buffer. `to_host` does the reverse for the results: the device tensors' bytes are
concatenated on the device, copied back in one transfer (one synchronisation), and split into
numpy arrays on the host.

Both are exact: the bytes are moved, never converted, so a leaf comes out with its dtype, shape and
every bit of its values (tests/test_torch_transfers.py checks every dtype the spaces have, scalars,
empty and strided arrays). The pinned blocks come from PyTorch's caching host allocator, which
does not hand a block out again before the transfer that reads it has finished, so one call's
buffer is never overwritten by the next call.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np

from rlgraph.graphs.graph_executor import numpy_structure

#: Byte alignment of each leaf in a packed buffer: a typed view (`buffer[a:b].view(torch.float64)`)
#: needs its offset to be a multiple of the element size; 16 covers every dtype of the spaces.
ALIGNMENT = 16


def to_device(structure: Any, device: Any, pin: bool) -> Any:
    """`structure` with every CPU torch tensor leaf replaced by a tensor on `device`, all moved in
    one transfer (other leaves, e.g. numpy text arrays, pass through).

    Args:
        structure: A nest of dicts, tuples (named ones too) and lists.
        device: The `torch.device` to move to.
        pin: Whether to stage the bytes in pinned host memory (needs CUDA; then the copy is
            asynchronous).

    Returns:
        The same nest; the moved leaves are views of one device buffer.
    """
    import torch
    leaves, rebuild = _flatten(structure, lambda v: isinstance(v, torch.Tensor) and v.device.type == "cpu")
    if not leaves:
        return structure
    sizes = [t.numel() * t.element_size() for t in leaves]
    offsets, total = _layout(sizes)
    # (On the host by name: a placed call runs this under its GPU's device context, the default of torch.empty.)
    buffer = torch.empty(total, dtype=torch.uint8, device="cpu", pin_memory=pin)
    host = buffer.numpy()
    for tensor, offset, size in zip(leaves, offsets, sizes):
        if size:
            host[offset:offset + size] = np.ascontiguousarray(tensor.detach().numpy()).reshape(-1).view(np.uint8)
    moved = buffer.to(device, non_blocking=pin)
    return rebuild([_typed_view(moved, offset, size, tensor.dtype, tensor.shape)
                    for tensor, offset, size in zip(leaves, offsets, sizes)])


def move_to(structure: Any, device: Any) -> Any:
    """`structure` with every torch tensor leaf that is not on `device` replaced by its copy there:
    between graph functions of components on different devices (rlgraph/graphs/placement.py).

    Variables (`torch.nn.Parameter`) are never copied: a graph function that updates one in place
    (an optimizer, a synchronizer) must update the variable, not a copy of it; they pass through as
    they are (the placed call refuses them at build, see `pytorch_executor.py`). The other leaves
    that carry gradients (`requires_grad`) move one by one with `Tensor.to`, so that the gradients
    flow back across the copy. The others move in one packed transfer per source device:
    from the host through `to_device` (pinned when the target is a GPU), from a device through one
    byte buffer built there (`to_host`'s packing, with the views made on `device`).

    Args:
        structure: A nest of dicts, tuples (named ones too) and lists; other leaves pass through.
        device: The `torch.device` to move to.
    """
    import torch
    parameter = torch.nn.Parameter
    leaves, rebuild = _flatten(structure, lambda v: isinstance(v, torch.Tensor) and v.device != device and
                               not isinstance(v, parameter))
    if not leaves:
        return structure
    moved: list = [None] * len(leaves)
    groups: dict = {}
    for index, tensor in enumerate(leaves):
        if tensor.requires_grad:
            moved[index] = tensor.to(device)
        else:
            groups.setdefault(tensor.device, []).append(index)
    for source, indices in groups.items():
        tensors = [leaves[i] for i in indices]
        if source.type == "cpu":
            pin = device.type == "cuda" and torch.cuda.is_available()
            copies = to_device(tensors, device, pin)
        else:
            copies = _pack_and_move(tensors, device)
        for index, copy in zip(indices, copies):
            moved[index] = copy
    return rebuild(moved)


def _pack_and_move(tensors: List[Any], device: Any) -> List[Any]:
    """Copies of `tensors` (all on one device, no gradients) on `device`, moved as one byte buffer."""
    import torch
    sizes = [t.numel() * t.element_size() for t in tensors]
    offsets, total = _layout(sizes)
    buffer = torch.empty(total, dtype=torch.uint8, device=tensors[0].device)
    for tensor, offset, size in zip(tensors, offsets, sizes):
        if size:
            buffer[offset:offset + size] = _bytes_of(tensor)
    moved = buffer.to(device)
    return [_typed_view(moved, offset, size, tensor.dtype, tensor.shape)
            for tensor, offset, size in zip(tensors, offsets, sizes)]


def to_host(structure: Any, device: Any, to_numpy: Callable[[Any], Any]) -> Any:
    """`structure` as numpy: the torch tensor leaves on `device` come back in one transfer for all of
    them, each as an array that owns its memory; other leaves go through `to_numpy`.

    Args:
        structure: A nest of dicts, tuples (named ones too) and lists; None stays None.
        device: The `torch.device` whose tensors are packed.
        to_numpy: Converts any other leaf (tensors elsewhere, numpy arrays, python values).
    """
    import torch
    leaves, rebuild = _flatten(structure, lambda v: isinstance(v, torch.Tensor) and v.device == device)
    if not leaves:
        return numpy_structure(structure, to_numpy)
    parts = [_bytes_of(t) for t in leaves]
    packed = (parts[0] if len(parts) == 1 else torch.cat(parts)).cpu().numpy()
    arrays, offset = [], 0
    for tensor, part in zip(leaves, parts):
        size = part.numel()
        dtype = numpy_dtype(tensor.dtype)
        arrays.append(packed[offset:offset + size].view(dtype).reshape(tuple(tensor.shape)).copy())
        offset += size
    return rebuild(arrays, to_numpy)


def numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of torch dtype `dtype` (one lookup per dtype)."""
    found = _NUMPY_DTYPES.get(dtype)
    if found is None:
        import torch
        found = _NUMPY_DTYPES[dtype] = torch.empty(0, dtype=dtype, device="cpu").numpy().dtype
    return found


_NUMPY_DTYPES: dict = {}


def _bytes_of(tensor: Any) -> Any:
    """`tensor`'s elements as a flat uint8 tensor on its device: a view where it is contiguous, else
    a contiguous copy (a slice such as `x[:, :1]` has a last stride other than 1, which a byte view
    of a wider dtype cannot have)."""
    import torch
    return tensor.detach().contiguous().view(-1).view(torch.uint8)


def _layout(sizes: List[int]) -> Tuple[List[int], int]:
    """(the offset of each leaf, the buffer's size): leaves in order, each at an ALIGNMENT multiple."""
    offsets, end = [], 0
    for size in sizes:
        start = -(-end // ALIGNMENT) * ALIGNMENT
        offsets.append(start)
        end = start + size
    return offsets, max(end, 1)


def _typed_view(buffer: Any, offset: int, size: int, dtype: Any, shape: Any) -> Any:
    import torch
    if size == 0:
        return torch.empty(tuple(shape), dtype=dtype, device=buffer.device)
    return buffer[offset:offset + size].view(dtype).view(tuple(shape))


def _flatten(structure: Any, is_leaf: Callable[[Any], bool]) -> Tuple[list, Callable[..., Any]]:
    """(the leaves of `structure` that `is_leaf` picks, in order; fn(new leaves, other=None) -> the
    structure with those leaves replaced, in order, and `other` applied to the remaining leaves)."""
    found: list = []
    numpy_structure(structure, lambda v: found.append(v) if is_leaf(v) else None)

    def rebuild(values: list, other: Callable[[Any], Any] = lambda v: v) -> Any:
        replacements = iter(values)
        return numpy_structure(structure, lambda v: next(replacements) if is_leaf(v) else other(v))
    return found, rebuild
