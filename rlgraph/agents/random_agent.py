"""`RandomAgent`: acts uniformly at random from its action space and never learns (a baseline)."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.agent import Agent
from rlgraph.agents.agent_core import PreprocessingCore
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.spaces import Space
from rlgraph.utils.checkpoint_values import check_mt19937
from rlgraph.utils.nest import first_row, flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpaceError
from rlgraph.utils.safe_npz import ArraySpec

# The checkpoint file with the action sampler's random states (one MT19937 state per action leaf).
RNG_FILE = "random_agent_rng.npz"


class RandomCore(PreprocessingCore):
    """The root component of `RandomAgent`: only the preprocessor (actions are drawn in numpy).

    API (batched):
        get_preprocessed_states(states)
        reset_preprocessor(): resets stateful preprocessors (at episode starts)
    """

    def __init__(self, preprocessing_spec: list, scope: str = "random-agent"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.add_components(self.preprocessor)


class RandomAgent(Agent):
    """Draws every action uniformly at random from the action space; learns nothing.

    A baseline: its returns show what a policy must beat. Every leaf of the action space is sampled
    by `Space.sample` (IntBox, BoolBox: uniform over the values; a bounded FloatBox: uniform in
    [low, high]; an unbounded FloatBox side: normal or exponential tails), containers leaf by leaf.
    The draws come from numpy generators seeded with `execution_spec.seed` (fresh entropy without
    one), so a seed gives the same actions on both backends, and a checkpoint stores the
    generators' states: a loaded agent goes on with the actions the stored one would have drawn.

    - `get_action` ignores `use_exploration`: a random policy is its own greedy policy, so a
      worker's greedy evaluation (`use_exploration=False`, `rlgraph evaluate`) measures the
      random baseline. It still preprocesses the states (`preprocessing_spec`) for
      `extra_returns="preprocessed_states"`.
    - `observe` checks and counts the transitions (timesteps) but keeps none (no observe buffers).
    - `update` changes nothing and returns (0.0, 0.0) as a (loss, loss_per_item); the worker does
      not even call it (`update_spec.do_updates` defaults to False).
    - No variables: `get_weights()` is {}; `export_policy` refuses (there is no greedy network).

    Args:
        name: The agent's name (also its root component's scope).
        **kwargs: `Agent` arguments; those of learning (network_spec, optimizer_spec,
            exploration_spec, ...) are accepted and ignored.

    >>> from rlgraph.spaces import IntBox
    >>> agent = RandomAgent(state_space=IntBox(4), action_space=IntBox(3), execution_spec={"seed": 1},
    ...                     backend="pytorch")
    >>> agent.get_action(np.array([0, 1, 2])).tolist()
    [1, 0, 0]
    """

    update_spec_defaults = {"do_updates": False}

    def __init__(self, name: str = "random-agent", **kwargs):
        # Nothing is learned from the transitions: they need not wait in buffers.
        given = kwargs.get("observe_spec")
        if given is None or isinstance(given, dict):  # (Anything else: `Agent` says what is wrong.)
            kwargs["observe_spec"] = {"buffer_enabled": False, **(given or {})}
        super().__init__(name=name, **kwargs)
        seed = self.execution_spec["seed"]
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._sampler: Space = self.action_space.with_batch_rank()
        self._sampler.seed(seed)  # Each leaf gets its own RandomState (see `Space.seed`).

    def _create_root(self) -> None:
        self.root_component = RandomCore(self.preprocessing_spec, scope=self.name)
        self.preprocessed_state_space = self.root_component.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        self.input_spaces = dict(states=self.state_space.with_batch_rank())

    # --- Acting ---------------------------------------------------------------------------------
    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        """Random actions, one per state (see `Agent.get_action`; `use_exploration`, `internals`
        and `time_percentage` make no difference)."""
        extras = self._check_extra_returns(extra_returns)
        space = self.state_space if apply_preprocessing else self.preprocessed_state_space
        batch, single = self._batch(states, space, "get_action(states)")
        preprocessed = batch
        if apply_preprocessing:
            try:  # (The executor also checks the states' shapes and dtypes here.)
                preprocessed = self._executor().execute(("get_preprocessed_states", [batch]))
            except RLGraphSpaceError as error:
                raise RLGraphSpaceError(error.space, f"{error.message} (in {error.where})",
                                        where=f"{self.name}.get_action(states)", expected=error.expected,
                                        received=error.received, hint=error.hint) from error
        first_leaf = next(iter(flatten_op(batch).values())) if isinstance(batch, (dict, tuple)) else batch
        actions = self._sampler.sample(size=len(first_leaf))
        if single:
            actions, preprocessed = first_row(actions), first_row(preprocessed)
        return (actions, preprocessed) if extras else actions

    def reset(self) -> None:
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")

    # --- Learning (none) ------------------------------------------------------------------------
    def _observe_graph(self, records: dict) -> None:
        """Keeps nothing."""

    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> Any:
        """Learns nothing.

        Returns:
            (0.0, 0.0): a zero loss and loss per item.
        """
        return 0.0, 0.0

    def get_weights(self, names: Optional[List[str]] = None) -> Dict[str, np.ndarray]:
        """{}: the agent has no variables (named variables are looked up and not found)."""
        return self._executor().get_weights(names) if names is not None else {}

    # --- Checkpoints: the sampler's random states -------------------------------------------------
    def _leaf_generators(self) -> List[np.random.RandomState]:
        return [leaf.rng for leaf in self._sampler.flatten().values()]

    def _save_files(self, directory: str, save_replay: bool = True) -> None:
        states = [rng.get_state() for rng in self._leaf_generators()]
        with open(os.path.join(directory, RNG_FILE), "wb") as handle:
            np.savez(handle, keys=np.stack([s[1] for s in states]).astype(np.uint32),
                     pos=np.array([s[2] for s in states], np.int64),
                     has_gauss=np.array([s[3] for s in states], np.int64),
                     cached_gaussian=np.array([s[4] for s in states], np.float64))

    def _check_files(self, files: Any) -> Any:
        where = f"{type(self).__name__}.load_model"
        count = len(self._leaf_generators())
        shapes = {"keys": (count, 624), "pos": (count,), "has_gauss": (count,), "cached_gaussian": (count,)}
        kinds = {"keys": "u", "pos": "i", "has_gauss": "i", "cached_gaussian": "f"}
        arrays = files.npz(RNG_FILE, {name: ArraySpec(shape, kinds[name], np.uint32 if name == "keys" else None,
                                                      mismatch="the file is damaged or made for another action space")
                                      for name, shape in shapes.items()})
        for name, shape in shapes.items():
            value = arrays.get(name)
            if value is None or value.shape != shape or value.dtype.kind != kinds[name]:
                raise RLGraphCheckpointError(f"'{RNG_FILE}' is damaged or made for another action space", where=where,
                                             expected=f"'{name}' of shape {shape} (one row per action leaf)",
                                             received=None if value is None else f"{value.shape} {value.dtype}")
        return [check_mt19937(arrays["keys"][i], arrays["pos"][i], arrays["has_gauss"][i], arrays["cached_gaussian"][i],
                              f"{RNG_FILE}[{i}]", where) for i in range(count)]

    def _load_files(self, checked: Any) -> None:
        for rng, state in zip(self._leaf_generators(), checked):
            rng.set_state(state)

    def __repr__(self) -> str:
        return f"RandomAgent(name={self.name!r}, backend={self.backend!r}, action_space={self.action_space})"
