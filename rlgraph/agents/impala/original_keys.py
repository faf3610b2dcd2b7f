"""The original RLgraph's IMPALA agent keys (`batch_apply`, `memory_spec`) translated for `IMPALAAgent`."""
from __future__ import annotations

from typing import Optional

from rlgraph.agents.specs import check_bool
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


def _original_impala_keys(fifo_queue_spec: Optional[dict], batch_apply: Optional[bool], memory_spec: Optional[dict],
                          owner: str) -> tuple:
    """(fifo_queue_spec, notes) after the original RLgraph's `batch_apply` and `memory_spec` keys."""
    notes = []
    if batch_apply is not None:
        check_bool(batch_apply, "batch_apply", owner)
        notes.append("batch_apply ignored (the layers before the LSTM always see the time rank folded into the "
                     "batch rank, [B*T, ...])")
    if memory_spec is not None:
        type_ = memory_spec.get("type", "fifo-queue") if isinstance(memory_spec, dict) else None
        if type_ is None or str(type_).lower().replace("_", "-") not in ("fifo-queue", "fifo"):
            raise RLGraphSpecError("IMPALA's memory is a FIFO queue", where=f"{owner}(memory_spec)",
                                   expected='{"type": "fifo-queue", "capacity": n} (or give fifo_queue_spec)',
                                   received=repr(memory_spec))
        if fifo_queue_spec is not None:
            raise RLGraphSpecError("memory_spec and fifo_queue_spec both given", where=f"{owner}(memory_spec)",
                                   hint="memory_spec is the original RLgraph's earlier name of fifo_queue_spec: "
                                        "give one of them.")
        fifo_queue_spec = {k: v for k, v in memory_spec.items() if k != "type"}
        notes.append("memory_spec -> fifo_queue_spec")
    return fifo_queue_spec, notes
