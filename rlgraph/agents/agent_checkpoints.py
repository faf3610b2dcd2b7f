"""`AgentCheckpoints`: `store_model` and `load_model` of every agent (a base class of `Agent`).

A checkpoint is a directory written atomically (see `rlgraph/utils/checkpoint_dir.py`): the
executor's variables, the agent's python state (`agent_state.py`: counters, observe buffers,
random generators) and whatever a subclass adds through `_save_files`; nothing in it is pickled.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional

from rlgraph.agents.agent_state import load_agent_state, restore_rng, save_agent_state
from rlgraph.utils.checkpoint_dir import CheckpointWriter, write_json
from rlgraph.utils.checkpoint_files import newest_checkpoint, read_checkpoint
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphCheckpointWriteError, RLGraphError
from rlgraph.utils.run_logs import DISK_FULL, write_error

logger = logging.getLogger(__name__)

# The manifest kind of `store_model` checkpoints.
CHECKPOINT_KIND = "agent"


class AgentCheckpoints:
    """Saving and restoring everything a run needs to continue; `Agent` inherits it. Subclasses
    with state outside the graph (a python memory) extend `_save_files`, `_check_files` and
    `_load_files`."""

    def store_model(self, path: Optional[str] = None, add_timestep: bool = True,
                    extra_files: Optional[Dict[str, Any]] = None, save_replay: Optional[bool] = None) -> str:
        """Saves everything a run needs to continue: weights, optimizer slots, memory contents,
        counters, pending observe buffers and the random generators' states.

        The checkpoint is a directory written atomically (see `rlgraph/utils/checkpoint_dir.py`):
        it is built next to `path` and renamed into place with a manifest of every file's SHA-256,
        so a crash during the save leaves the previous checkpoint at `path` intact. Nothing in it
        is pickled.

        Args:
            path: A checkpoint directory (default: saver_spec["directory"]). An existing `path`
                must be an rlgraph checkpoint (it is replaced) or an empty directory.
            add_timestep: Store into "<path>/step-<timesteps>" instead of `path`.
            extra_files: File name -> JSON-able value written into the checkpoint as JSON (e.g.
                the run's "config.json"); covered by the manifest like every other file.
            save_replay: Store the replay memories' contents (default: saver_spec["save_replay"],
                true). Without them configs/dqn_cartpole.json's checkpoint (50k replay) takes
                1.1 MB instead of 3.4 MB; `load_model` then leaves the memories empty.

        Returns:
            The checkpoint directory.

        Raises:
            RLGraphCheckpointError: If `path` is a file or a directory with other files in it.
            RLGraphCheckpointWriteError: If the file system refuses a file (a full disk: it says
                so); also the `OSError` (same errno). A checkpoint that was at `path` is intact.
        """
        path = path or self.saver_spec["directory"]
        if path is None:
            raise RLGraphError("no checkpoint path given and no saver_spec.directory", where=f"{self.name}.store_model")
        if add_timestep:
            path = os.path.join(path, f"step-{self.timesteps}")
        executor = self._executor()
        save_replay = self.saver_spec["save_replay"] if save_replay is None else bool(save_replay)
        try:
            with CheckpointWriter(path, CHECKPOINT_KIND, where=f"{self.name}.store_model") as writer:
                executor.store_model(writer.path("model"),
                                     exclude=() if save_replay else self._replay_variable_names())
                save_agent_state(writer.root, self)
                self._save_files(writer.root, save_replay=save_replay)
                for name, value in (extra_files or {}).items():
                    write_json(writer.path(name), value, allow_nan=True)
                return writer.commit(self.timesteps, extra={"agent_type": type(self).__name__,
                                                            "backend": self.backend, "replay": save_replay})
        except OSError as error:
            if isinstance(error, RLGraphError):
                raise
            fix = "free space on its disk" if error.errno in DISK_FULL else "fix the cause"
            raise write_error(error, f"the checkpoint {path}", f"{self.name}.store_model",
                              f"{fix} and store again; a checkpoint that was at this path is intact.",
                              RLGraphCheckpointWriteError) from error

    def load_model(self, path: Optional[str] = None) -> None:
        """Restores a `store_model` checkpoint into this (built) agent.

        `path` is a checkpoint directory, or a directory holding checkpoints (as `store_model(path)`
        writes `path/step-<N>` by default): then the one whose manifest has the highest step is loaded.
        The checkpoint's files are read once, into memory, each verified against the manifest (size
        and SHA-256); only those bytes are parsed, so a file the manifest does not list is never read
        and a checkpoint replaced while it loads cannot mix with the one verified. Every value is
        checked against this agent (variables and shapes, counters, memory positions, random states,
        buffered states and actions) before anything changes.

        Raises:
            RLGraphCheckpointError: If the checkpoint is missing, damaged, out of range or made by
                a different agent (or `path` holds no checkpoint); the agent is left unchanged then.

        A checkpoint stored without its replay (`save_replay` false) leaves the replay memories
        empty, with one warning.
        """
        path = path or self.saver_spec["directory"]
        if path is None:
            raise RLGraphError("no checkpoint path given and no saver_spec.directory", where=f"{self.name}.load_model")
        where = f"{type(self).__name__}.load_model"
        files = read_checkpoint(newest_checkpoint(path, CHECKPOINT_KIND, where), CHECKPOINT_KIND, where)
        self.load_checkpoint_files(files)

    def load_checkpoint_files(self, files: Any) -> None:
        """Restores a checkpoint already read and verified (`checkpoint_files.read_checkpoint`; an
        Ape-X checkpoint's `learner/`); see `load_model`."""
        where = f"{type(self).__name__}.load_model"
        payload = load_agent_state(files, self)
        if files.step != payload["counters"]["timesteps"]:
            raise RLGraphCheckpointError("the manifest and the agent state disagree on the step", where=where,
                                         expected=files.step, received=payload["counters"]["timesteps"])
        staged_files = self._check_files(files)
        with_replay = files.manifest.get("replay", True) is not False
        executor = self._executor()
        staged_model = executor.check_values(executor.read_model_files(files, "model"), files.path,
                                             may_be_missing=() if with_replay else self._replay_variable_names())
        # All checked: from here on the restore only writes values that fit.
        executor.restore_checked(staged_model)
        self._set_python_state(payload)
        self._load_files(staged_files)
        restore_rng(payload, self.graph_executor)
        if not with_replay:
            logger.warning("%s: the checkpoint %s was stored without its replay memory (saver_spec.save_replay "
                           "false): the memory starts empty and fills again before updates resume.", self.name,
                           files.path)

    def _replay_memories(self) -> List[Any]:
        """The memory components whose contents `save_replay` false leaves out of checkpoints:
        every `Memory` of the graph (subclasses keep memories that training cannot refill)."""
        from rlgraph.components.memories.memory import Memory
        return [c for c in self.root_component.get_all_sub_components() if isinstance(c, Memory)]

    def _replay_variable_names(self) -> List[str]:
        return [name for memory in self._replay_memories() for name in memory.variable_records]

    def _save_files(self, directory: str, save_replay: bool = True) -> None:
        """Subclass hook: writes further checkpoint files (e.g. a python replay memory, unless
        `save_replay` is false) into `directory`."""

    def _check_files(self, files: Any) -> Any:
        """Subclass hook: parses and validates what `_save_files` wrote, from the verified
        `CheckpointFiles` (never from the directory), without changing the agent."""
        return None

    def _load_files(self, checked: Any) -> None:
        """Subclass hook: restores what `_check_files` validated."""

    def _set_python_state(self, payload: dict) -> None:
        for key, value in payload["counters"].items():
            setattr(self, key, value)
        self.max_timesteps = payload["max_timesteps"]
        self.buffers.buffers = payload["buffers"]
        if payload.get("reward_scaler") is not None:
            self.reward_scaler.restore(payload["reward_scaler"])
        if payload.get("sde_steps") is not None and getattr(self, "sde_sample_freq", None) is not None:
            self._sde_steps = payload["sde_steps"]
