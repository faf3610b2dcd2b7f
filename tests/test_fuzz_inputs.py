"""A hypothesis sweep over bad input: agent configs, space specs and agent API arguments.

The property is the same everywhere: whatever comes in, rlgraph either accepts it or raises an
`RLGraphError` (anything else fails the test, and hypothesis shows the input). The sweep is
derandomized and keeps no example database, so every run draws the same examples and cannot be
flaky; the example counts keep the module under a minute on a 2-core machine (about 40 s).

Restrictions of the strategies (each with its reason; lift them when the reason is gone):

- Type names never hold a "." (a dotted name is an import path: the fuzzer must not import or
  call arbitrary module attributes).
- `execution_spec.torch_num_threads` / `tf_num_threads` only get values that must be refused
  (valid ones would change the thread count of the whole test process).
- No `saver_spec` / `summary_spec` (their directories would be created in the working directory).
- Sampled, zeroed and copied spaces are only those of at most 10,000 elements (a valid space may
  describe data too big to allocate).
"""
import copy
import math
import os
import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_helpers import _spec
from rlgraph.agents import Agent
from rlgraph.agents.specs import EXECUTION_SPEC_DEFAULTS, UPDATE_SPEC_DEFAULTS
from rlgraph.backend_system import is_backend_installed
from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.utils.rlgraph_errors import RLGraphError

# Examples per test; the TF agent is slower to build and call, so it gets a smaller share.
EXAMPLES = {"configs": {"pytorch": 150, "tf": 20}, "spaces": 1000, "api": {"pytorch": 600, "tf": 200}}
TALLY = Counter()  # (test, outcome) -> count, printed at the end of the module (pytest -s shows it).


def fuzz_settings(max_examples):
    # RLGRAPH_FUZZ_SCALE=20 runs a 20 times longer sweep (locally, to look for new bugs).
    max_examples = int(max_examples * float(os.environ.get("RLGRAPH_FUZZ_SCALE", "1")))
    return settings(max_examples=max_examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def accepted_or_rlgraph_error(test, fn, *args, **kwargs):
    """Calls fn; an `RLGraphError` is an accepted outcome (tallied), any other exception fails."""
    try:
        out = fn(*args, **kwargs)
    except RLGraphError as error:
        TALLY[(test, type(error).__name__)] += 1
        return None
    TALLY[(test, "accepted")] += 1
    return out


@pytest.fixture(scope="module", autouse=True)
def _print_tally():
    yield
    for (test, outcome), count in sorted(TALLY.items()):
        print(f"fuzz tally: {test}: {outcome} x {count}")


def _backends():
    return [pytest.param(b, marks=pytest.mark.skipif(not is_backend_installed(b), reason=f"{b} is not installed"))
            for b in ("pytorch", "tf")]


# --- Values -------------------------------------------------------------------------------------------
names = st.text(alphabet="abcxyz_-T0123/ ", max_size=6)  # Never a "." (see the module docstring).
numbers = st.one_of(st.integers(-2 ** 40, 2 ** 40), st.sampled_from([0, 1, -1, 2, 2 ** 31, 2 ** 63, -2 ** 63]),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans())
scalars = st.one_of(numbers, names, st.none())
any_value = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(names, inner, max_size=3)), max_leaves=6)


# --- (1) Agent configs --------------------------------------------------------------------------------
SECTIONS = {
    "update_spec": (list(UPDATE_SPEC_DEFAULTS), {"batch_size": 4}),
    "execution_spec": ([k for k in EXECUTION_SPEC_DEFAULTS if not k.endswith("num_threads")], {"seed": 1}),
    "memory_spec": (["type", "capacity", "alpha", "beta", "epsilon"], {"type": "replay-memory", "capacity": 16}),
    "exploration_spec": (["epsilon_spec", "noise_spec"], None),
    "optimizer_spec": (["type", "learning_rate", "clip_grad_norm", "beta_1", "beta_2", "epsilon"],
                       {"type": "adam", "learning_rate": 1e-3}),
}
TYPE_NAMES = {"memory_spec": ["replay-memory", "prioritized-replay", "mem-prioritized-replay", "frame-replay",
                              "ring-buffer", "fifo-queue", "dense"],
              "optimizer_spec": ["adam", "sgd", "rmsprop", "nadam", "adagrad", "adadelta", "replay-memory"]}
decay_specs = st.fixed_dictionaries({"type": st.sampled_from(["linear-decay", "constant", "exponential-decay"])},
                                    optional={"from": numbers, "to": numbers, "start_percentage": numbers,
                                              "stop_percentage": numbers, "bogus": numbers})
bad_thread_counts = st.one_of(st.integers(-5, 0), st.floats(allow_nan=True), names, st.booleans())


# Values near the valid ones find more than wild ones (which the first check refuses).
plausible = st.one_of(st.integers(-2, 70), st.floats(-0.5, 1.5), st.booleans(), st.none(), st.just(2 ** 40),
                      st.sampled_from([math.nan, math.inf]))


@st.composite
def section_values(draw, section):
    keys, _ = SECTIONS[section]
    # (Hypothesis favours the ends of a range: `== 5` is a plain 1-in-10 chance, `== 0` would not be.)
    key = draw(st.sampled_from(["bogus_key", ""])) if draw(st.integers(0, 9)) == 5 else draw(st.sampled_from(keys))
    if key == "type":
        return key, draw(st.one_of(st.sampled_from(TYPE_NAMES[section]), names, numbers))
    if key == "epsilon_spec":
        return key, draw(st.one_of(st.fixed_dictionaries({"decay_spec": decay_specs}), any_value))
    return key, draw(st.one_of(plausible, plausible, plausible, any_value))


@st.composite
def configs(draw):
    spec = _spec(None, execution_spec={"seed": 1}, update_spec={"batch_size": 4})
    spec.pop("backend")
    for section in draw(st.lists(st.sampled_from(sorted(SECTIONS)), min_size=1, max_size=2, unique=True)):
        if draw(st.integers(0, 19)) == 7:
            spec[section] = draw(any_value)  # Mostly not a dict at all.
            continue
        base = dict(SECTIONS[section][1] or {})
        for _ in range(draw(st.integers(1, 2))):
            key, value = draw(section_values(section))
            base[key] = value
        spec[section] = base
    if draw(st.integers(0, 19)) == 7:
        spec.setdefault("execution_spec", {})
        if isinstance(spec["execution_spec"], dict):
            spec["execution_spec"]["torch_num_threads"] = draw(bad_thread_counts)
    return spec


def _exercise(agent):
    """A few calls of a freshly built agent: bad values that the constructor let through fail here."""
    state = np.zeros(4, np.float32)
    agent.get_action(state)
    agent.get_action(np.stack([state] * 3), use_exploration=False)
    batch = dict(states=np.zeros((4, 4), np.float32), actions=np.arange(4) % 3, rewards=np.ones(4, np.float32),
                 terminals=np.array([False, False, False, True]), next_states=np.zeros((4, 4), np.float32))
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"], batch["terminals"])
    agent.update(batch)
    agent.update()


@pytest.mark.parametrize("backend", _backends())
def test_configs(backend):
    torch = None
    if is_backend_installed("pytorch"):  # Thread counts are restored after each example.
        import torch
    threads = torch.get_num_threads() if torch is not None else None

    @fuzz_settings(EXAMPLES["configs"][backend])
    @given(configs())
    def check(spec):
        agent = accepted_or_rlgraph_error(f"configs[{backend}]", Agent.from_spec, dict(spec, type="dqn",
                                                                                         backend=backend))
        try:
            if agent is not None:
                accepted_or_rlgraph_error(f"configs[{backend}]: first calls", _exercise, agent)
        finally:
            if torch is not None:
                torch.set_num_threads(threads)
            if agent is not None:
                agent.terminate()
    check()


# --- (2) Space specs -----------------------------------------------------------------------------------
SPACE_TYPES = ["float-box", "int-box", "bool-box", "text-box", "dict", "tuple", "float", "int", "bool", "str",
               "FloatBox", "IntBox", "box", "space", "container-space"]
dims = st.one_of(st.integers(0, 4), st.integers(-3, -1), st.sampled_from([2 ** 40, 10 ** 6]), st.floats(0, 3),
                 st.none(), names)
shape_values = st.one_of(st.lists(dims, max_size=3), st.tuples(dims, dims), dims)
bounds = st.one_of(numbers, st.lists(numbers, max_size=3), st.lists(st.lists(numbers, max_size=2), max_size=2),
                   names, st.none())
dtypes = st.one_of(st.sampled_from(["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "uint64",
                                    "bool", "str", "object", "complex64", "U3", "datetime64", float, int, bool, str]),
                   names, numbers)
rank_flags = st.one_of(st.booleans(), st.integers(-2, 3), st.none(), names, st.floats(allow_nan=True))


@st.composite
def box_specs(draw):
    spec = {"type": draw(st.one_of(st.sampled_from(SPACE_TYPES), names, numbers))}
    optional = {"shape": shape_values, "low": bounds, "high": bounds, "dtype": dtypes, "add_batch_rank": rank_flags,
                "add_time_rank": rank_flags, "time_major": rank_flags, "num_categories": numbers, "bogus": numbers}
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        spec[key] = draw(optional[key])
    return spec


python_types = st.sampled_from([float, int, bool, str, list, dict, tuple, object, type, np.float32, complex])
space_specs = st.recursive(
    st.one_of(box_specs(), python_types, names, numbers),
    lambda inner: st.one_of(st.dictionaries(st.one_of(names, st.integers(0, 2)), inner, max_size=3),
                            st.lists(inner, max_size=3), st.tuples(inner)),
    max_leaves=5)


def _flat_size(space):
    sizes = [math.prod(leaf.shape) for leaf in space.flatten().values()]
    return sum(sizes) + len(sizes)


def _structure(space):
    """The nested dicts and tuples of a space, its primitive spaces as leaves."""
    if isinstance(space, Dict):
        return {key: _structure(child) for key, child in space.items()}
    if isinstance(space, Tuple):
        return tuple(_structure(child) for child in space)
    return space


def _use_space(space):
    """What every valid space must support without an error."""
    assert isinstance(space, Space), space
    repr(space)
    assert space.unflatten(space.flatten()) == _structure(space)
    space.with_batch_rank().get_shape(with_batch_rank=True)
    space.strip_ranks()
    if _flat_size(space) <= 10_000:
        space.seed(3)
        sample = space.sample()
        assert space.contains(sample), (space, sample)
        space.sample(2)
        space.zeros()
        assert copy.deepcopy(space) == space and pickle.loads(pickle.dumps(space)) == space


@fuzz_settings(EXAMPLES["spaces"])
@given(space_specs)
def test_space_specs(spec):
    space = accepted_or_rlgraph_error("spaces", Space.from_spec, spec)
    if space is not None:
        _use_space(space)  # No exception at all here: a space that was built must work.


# --- (3) Agent API arguments --------------------------------------------------------------------------
ARRAY_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_, np.complex64, np.str_, object]
array_shapes = st.one_of(st.sampled_from([(4,), (2, 4), (1, 4), (3,), (4, 1), (0, 4), (), (2,), (2, 3, 4)]),
                         st.lists(st.integers(0, 4), max_size=3).map(tuple))


fills = st.one_of(st.floats(-3, 3), st.integers(-2, 5), st.sampled_from([np.nan, np.inf, -np.inf, 1e30, 0.0]))


def _full(shape, fill, dtype):
    if np.issubdtype(dtype, np.integer) or dtype is np.bool_:
        fill = int(np.clip(fill, -3, 1000)) if np.isfinite(fill) else 0
        if np.issubdtype(dtype, np.unsignedinteger):
            fill = abs(fill)
    with np.errstate(over="ignore", invalid="ignore"):  # 1e30 as float16 is inf: that is wanted here.
        return np.full(shape, fill).astype(dtype)


@st.composite
def arrays(draw):
    """Arrays of any of a few shapes and dtypes (strings and objects too)."""
    dtype = draw(st.sampled_from(ARRAY_DTYPES))
    shape = draw(array_shapes)
    if dtype is np.str_:
        return np.full(shape, "ab")
    if dtype is object:
        return np.full(shape, draw(st.one_of(st.none(), st.just({"a": 1}), st.just(1.5))), dtype=object)
    return _full(shape, draw(fills), dtype)


@st.composite
def near(draw, shapes, dtypes):
    """Arrays close to valid ones: a plausible shape and dtype, values that may be out of range."""
    return _full(draw(st.sampled_from(shapes)), draw(fills), draw(st.sampled_from(dtypes)))


ragged = st.lists(st.lists(st.floats(-2, 2), max_size=4), min_size=2, max_size=3)
api_values = st.recursive(
    st.one_of(arrays(), arrays(), scalars, ragged),
    lambda inner: st.one_of(st.dictionaries(st.sampled_from(["a", "states", "", "_T0_", "x/y"]), inner, max_size=2),
                            st.lists(inner, max_size=2), st.tuples(inner)),
    max_leaves=4)
ROWS = [(), (1,), (2,), (3,)]
FIELDS = {  # Mostly near-valid values (so that later checks are reached), sometimes anything.
    "states": near([(4,), (1, 4), (2, 4), (3, 4), (2, 3)], [np.float32, np.float64, np.int64, np.float16]),
    "actions": near(ROWS, [np.int32, np.int64, np.uint8, np.float32, np.bool_]),
    "rewards": near(ROWS, [np.float32, np.float64, np.int32, np.bool_]),
    "terminals": near(ROWS, [np.bool_, np.int64, np.float32]),
}
FIELDS["next_states"] = FIELDS["states"]


def field(name):
    return st.one_of(FIELDS[name], FIELDS[name], FIELDS[name], api_values)


records = st.fixed_dictionaries({name: field(name) for name in ("states", "actions", "rewards", "terminals",
                                                                 "next_states")},
                                optional={"importance_weights": st.one_of(FIELDS["rewards"], api_values),
                                          "bogus": api_values})


@st.composite
def update_batches(draw):
    """Batches that are near valid (numeric fields sharing one batch size n) or not: fields of another
    batch size, actions out of range, and any value at all in any field (`update(batch)` runs the
    same data checks as `observe`)."""
    n = draw(st.integers(1, 3))
    batch = {name: _full((n, 4) if name.endswith("states") else (n,), draw(fills), draw(st.sampled_from(dtypes)))
             for name, dtypes in (("states", [np.float32, np.float64, np.int64]),
                                  ("actions", [np.int32, np.int64, np.uint8, np.float32, np.bool_]),
                                  ("rewards", [np.float32, np.float64, np.int32, np.bool_]),
                                  ("terminals", [np.bool_, np.int64, np.float32]),
                                  ("next_states", [np.float32, np.float64, np.int64]))}
    batch["actions"] = _full((n,), draw(st.integers(-1, 4)), batch["actions"].dtype)
    if draw(st.booleans()):
        batch["importance_weights"] = _full((n,), draw(fills), np.float32)
    if draw(st.integers(0, 4)) == 2:
        name = draw(st.sampled_from(sorted(batch)))
        batch[name] = draw(st.one_of(field(name) if name in FIELDS else FIELDS["rewards"], api_values))
    if draw(st.integers(0, 9)) == 5:
        batch["bogus"] = draw(api_values)
    return batch


# Weight values: arrays and numbers, and anything else (ragged lists, nests, strings).
weight_values = st.one_of(arrays(), FIELDS["states"], numbers, api_values)


@pytest.fixture(scope="module", params=_backends())
def api_agent(request):
    from rlgraph.agents import DQNAgent
    agent = DQNAgent(**_spec(request.param, update_spec={"batch_size": 4}))
    yield agent
    agent.terminate()


def _call(agent, api, args):
    try:
        if api == "get_action":
            states, exploration, extra, tp = args
            return agent.get_action(states, use_exploration=exploration, extra_returns=extra, time_percentage=tp)
        if api == "observe":
            states, actions, rewards, next_states, terminals, env_id = args
            agent.observe(states, actions, None, rewards, next_states, terminals, env_id=env_id)
            return agent.flush_buffers()  # What a bad observe left in the buffers reaches the memory here.
        if api == "update":
            return agent.update(args)
        if api == "import_observations":
            return agent.import_observations(args)
        weights, rate = args
        return agent.set_weights(weights, rate)
    finally:
        agent.reset_env_buffers()  # Each example starts with empty observe buffers.


@st.composite
def api_calls(draw, weight_names):
    api = draw(st.sampled_from(["get_action", "observe", "update", "import_observations", "set_weights"]))
    if api == "get_action":
        extras = st.sampled_from([None, "preprocessed_states", "bogus", ["preprocessed_states"], 5])
        tps = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), names)
        args = (draw(field("states")), draw(st.booleans()), draw(extras), draw(tps))
    elif api == "observe":
        env_ids = st.one_of(st.none(), st.integers(0, 3), names, st.just([1]), st.just({"a": 1}))
        args = tuple(draw(field(name)) for name in ("states", "actions", "rewards", "next_states", "terminals")) + \
            (draw(env_ids),)
    elif api == "update":
        args = draw(st.one_of(update_batches(), update_batches(), api_values))
    elif api == "import_observations":
        args = draw(st.one_of(records, st.lists(records, max_size=2), api_values))
    else:
        keys = st.one_of(st.sampled_from(weight_names), names)
        args = (draw(st.dictionaries(keys, weight_values, max_size=2)),
                draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), numbers)))
    return api, args


def test_agent_api(api_agent):
    agent = api_agent
    weights = agent.graph_executor.get_weights()
    budget = EXAMPLES["api"][agent.backend]

    @fuzz_settings(budget)
    @given(api_calls(sorted(weights)))
    def check(call):
        api, args = call
        try:
            accepted_or_rlgraph_error(f"api[{agent.backend}] {api}", _call, agent, api, args)
        finally:
            if api in ("set_weights", "update"):
                agent.graph_executor.set_weights(weights)  # Later examples start from sane (non-NaN) weights.
    check()
    assert agent.get_action(np.zeros(4, np.float32)) in range(3)  # Still usable after all that.
