"""One learner of a data-parallel run: `python -m rlgraph.execution.learner_process SPEC_JSON`.

Started by `learners.train_learners`, which writes SPEC_JSON (rank, size, backend, addresses, the
resolved config, rank 0's run folder, the run to resume, a scratch folder). The process joins the
learner group, trains its rank's part (`training.train_as_learner`) and reports to the scratch
folder: rank 0 its summary ("summary-0.json"), a failing rank its error ("error-RANK.json").
"""
from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any, Dict, Iterable, Optional

from rlgraph.execution.learner_sync import learner_config


def run_learner(spec: dict) -> Dict[str, Any]:
    """Joins the group of `spec` and trains this rank's part; returns the training summary."""
    from rlgraph.execution.training import train_as_learner
    from rlgraph.utils import learner_group
    rank = spec["rank"]
    learner_group.join(rank, spec["size"], spec["backend"], spec["addresses"])
    open(os.path.join(spec["scratch"], f"joined-{rank}"), "w").close()  # (The launcher watches the forming.)
    try:
        return train_as_learner(learner_config(spec["config"], rank), spec["output_dir"], spec["resume"],
                                spec["progress"], spec.get("hooks", ()), spec.get("loggers", ()))
    finally:
        learner_group.leave()


def main(argv: Optional[Iterable[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with open(argv[0]) as f:
        spec = json.load(f)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # The launcher's SIGTERM ends the learner.
    try:
        summary = run_learner(spec)
    except BaseException as error:  # noqa: BLE001 - reported to the launcher, then the process fails.
        with open(os.path.join(spec["scratch"], f"error-{spec['rank']}.json"), "w") as f:
            json.dump({"type": type(error).__name__, "message": str(error), "traceback": traceback.format_exc()}, f)
        return 1
    if spec["rank"] == 0:
        with open(os.path.join(spec["scratch"], "summary-0.json"), "w") as f:
            json.dump(summary, f, default=_json_default)
    return 0


def _json_default(value: Any) -> Any:
    import numpy as np
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
