"""Conformance sweep over every registered component class (STYLE.md, item 9).

Each class in `Component.__lookup_classes__` builds on both backends from a spec, runs its main
API method on sampled data, agrees with its own `get_preprocessed_space`, builds again as a
`copy()`, and restores its variables from a checkpoint. A class registered without an entry in
CASES fails `test_every_registered_class_has_a_case`.
"""
import numpy as np
import pytest

import rlgraph.environments  # noqa: F401 - registers the maker of environment specs (EnvironmentStepper's case)
from rlgraph.components import Component
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, TextBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal

BATCH = FloatBox(shape=(4,), add_batch_rank=True)
IMAGE = IntBox(256, shape=(8, 6, 3), dtype="uint8", add_batch_rank=True)
SEQ = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)

# class name -> (spec without "type", {arg: space}, api method, check get_preprocessed_space?)
CASES = {
    "Layer": ({}, {"inputs": BATCH}, "apply", True),
    "NNLayer": ({"activation": "tanh"}, {"inputs": BATCH}, "apply", True),
    "DenseLayer": ({"units": 3, "activation": "relu"}, {"inputs": BATCH}, "apply", True),
    "Conv2DLayer": ({"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"},
                    {"inputs": FloatBox(shape=(8, 6, 3), add_batch_rank=True)}, "apply", True),
    "MaxPool2DLayer": ({"pool_size": 2, "strides": 2}, {"inputs": FloatBox(shape=(8, 6, 3), add_batch_rank=True)},
                       "apply", True),
    "ConcatLayer": ({}, {"inputs": [BATCH, FloatBox(shape=(2,), add_batch_rank=True)]}, "apply", False),
    "ResidualLayer": ({"residual_unit": {"type": "dense", "units": 4}}, {"inputs": BATCH}, "apply", True),
    "LSTMLayer": ({"units": 2}, {"inputs": SEQ}, "apply", False),
    "MultiLSTMLayer": ({"num_lstms": 2, "units": 2}, {"inputs": SEQ}, "apply", False),
    "PreprocessLayer": ({}, {"inputs": BATCH}, "apply", True),
    "GrayScale": ({"keep_rank": True}, {"inputs": IMAGE}, "apply", True),
    "ImageResize": ({"width": 4, "height": 5}, {"inputs": IMAGE}, "apply", True),
    "ImageCrop": ({"x": 1, "y": 2, "width": 3, "height": 4}, {"inputs": IMAGE}, "apply", True),
    "ImageBinary": ({"threshold": 100}, {"inputs": IMAGE}, "apply", True),
    "Normalize": ({}, {"inputs": BATCH}, "apply", True),
    "MovingStandardize": ({}, {"inputs": BATCH}, "apply", True),
    "Clip": ({"min": -0.5, "max": 0.5}, {"inputs": BATCH}, "apply", True),
    "Multiply": ({"factor": 2.0}, {"inputs": BATCH}, "apply", True),
    "Divide": ({"divisor": 4.0}, {"inputs": BATCH}, "apply", True),
    "ConvertType": ({"to_dtype": "float32"}, {"inputs": IMAGE}, "apply", True),
    "ReShape": ({"flatten": True}, {"inputs": IMAGE}, "apply", True),
    "Transpose": ({}, {"inputs": SEQ}, "apply", True),
    "Sequence": ({"sequence_length": 3, "batch_size": 2}, {"inputs": BATCH}, "apply", True),
    "RankReinterpreter": ({"add_time_rank": True}, {"inputs": FloatBox(shape=(3, 2), add_batch_rank=True)}, "apply",
                          False),
    "StringLayer": ({}, {"inputs": TextBox(add_batch_rank=True)}, "apply", False),
    "StringToHashBucket": ({"num_hash_buckets": 10}, {"inputs": TextBox(add_batch_rank=True)}, "apply", False),
    "EmbeddingLookup": ({"embed_dim": 3, "vocab_size": 10}, {"inputs": IntBox(10, shape=(2,), add_batch_rank=True)},
                        "apply", True),
    "Stack": ({"_args": [{"type": "dense", "units": 2}, {"type": "dense", "units": 1}]}, {"inputs": BATCH},
              "apply", False),
    "NeuralNetwork": ({"_args": [{"type": "dense", "units": 2}]}, {"inputs": BATCH}, "apply", False),
    "PreprocessorStack": ({"_args": [{"type": "multiply", "factor": 2.0}, {"type": "clip"}]}, {"inputs": BATCH},
                          "preprocess", True),
    "DictPreprocessorStack": ({"preprocessors": {"a": [{"type": "divide", "divisor": 2.0}]}},
                              {"inputs": Dict(a=FloatBox(shape=(2,)), b=IntBox(3), add_batch_rank=True)},
                              "preprocess", True),
    "MultiInputStreamNeuralNetwork": ({"input_network_specs": {"a": [{"type": "dense", "units": 2}], "b": []},
                                       "post_network_spec": [{"type": "dense", "units": 1}]},
                                      {"inputs": Dict(a=FloatBox(shape=(2,)), b=IntBox(3), add_batch_rank=True)},
                                      "apply", False),
}
B_FLOAT = FloatBox(add_batch_rank=True)
B_BOOL = BoolBox(add_batch_rank=True)
BT_FLOAT = FloatBox(add_batch_rank=True, add_time_rank=True)
BT_BOOL = BoolBox(add_batch_rank=True, add_time_rank=True)
RECORDS = Dict(s=FloatBox(shape=(2,)), a=IntBox(3), terminals=BoolBox(), add_batch_rank=True)
Q = FloatBox(shape=(3,), add_batch_rank=True)
# Components whose main API method takes several arguments (or none called "inputs"):
# class name -> (spec, {arg: space}, api method, [argument names in call order], check_space).
CASES.update({
    "ReplayMemory": ({"capacity": 4}, {"records": RECORDS, "num_records": int}, "insert_records", ["records"],
                     False),
    "RingBuffer": ({"capacity": 4}, {"records": RECORDS, "num_records": int, "num_episodes": int},
                   "insert_records", ["records"], False),
    "PrioritizedReplay": ({"capacity": 4}, {"records": RECORDS, "num_records": int,
                                            "indices": IntBox(add_batch_rank=True), "update": B_FLOAT},
                          "insert_records", ["records"], False),
    "FIFOQueue": ({"capacity": 8}, {"records": RECORDS, "num_records": int}, "insert_records", ["records"], False),
    "VTraceFunction": ({}, {"log_is_weights": BT_FLOAT, "discounts": BT_FLOAT, "rewards": BT_FLOAT,
                            "values": BT_FLOAT, "bootstrapped_values": B_FLOAT}, "calc_v_trace_values",
                       ["log_is_weights", "discounts", "rewards", "values", "bootstrapped_values"], False),
    "GeneralizedAdvantageEstimation": ({"gae_lambda": 0.9, "discount": 0.99},
                                       {"baseline_values": B_FLOAT, "rewards": B_FLOAT, "terminals": B_BOOL,
                                        "sequence_indices": B_BOOL}, "calc_gae_values",
                                       ["baseline_values", "rewards", "terminals", "sequence_indices"], False),
    "SequenceHelper": ({}, {"sequence_indices": B_BOOL, "decay": float, "values": B_FLOAT, "rewards": B_FLOAT,
                            "terminals": B_BOOL, "discount": float}, "reverse_apply_decays_to_sequence",
                       ["values", "sequence_indices", "decay"], False),
    "SoftMax": ({}, {"logits": Q}, "get_probabilities_and_log_probs", ["logits"], False),
    "Clipping": ({"clip_value": 0.5}, {"values": B_FLOAT}, "clip_if_needed", ["values"], False),
    "LossFunction": ({}, {"loss_per_item": B_FLOAT}, "loss_average", ["loss_per_item"], False),
    "DQNLossFunction": ({"double_q": True, "huber_loss": True},
                        {"q_values_s": Q, "actions": IntBox(3, add_batch_rank=True), "rewards": B_FLOAT,
                         "terminals": B_BOOL, "qt_values_sp": Q, "q_values_sp": Q}, "loss",
                        ["q_values_s", "actions", "rewards", "terminals", "qt_values_sp", "q_values_sp"], False),
    "DQFDLossFunction": ({"double_q": True, "importance_weights": True, "expert_margin": 0.8},
                         {"q_values_s": Q, "actions": IntBox(3, add_batch_rank=True), "rewards": B_FLOAT,
                          "terminals": B_BOOL, "qt_values_sp": Q, "q_values_sp": Q, "importance_weights": B_FLOAT,
                          "expert_mask": B_BOOL}, "loss",
                         ["q_values_s", "actions", "rewards", "terminals", "qt_values_sp", "q_values_sp",
                          "importance_weights", "expert_mask"], False),
    "IMPALALossFunction": ({}, {"logits_actions_pi": FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True),
                                "action_probs_mu": FloatBox(shape=(3,), low=0.1, high=0.5, add_batch_rank=True,
                                                            add_time_rank=True),
                                "values": BT_FLOAT, "actions": IntBox(3, add_batch_rank=True, add_time_rank=True),
                                "rewards": BT_FLOAT, "terminals": BT_BOOL, "bootstrapped_values": B_FLOAT}, "loss",
                           ["logits_actions_pi", "action_probs_mu", "values", "actions", "rewards", "terminals",
                            "bootstrapped_values"], False),
    "PPOLossFunction": ({}, {k: B_FLOAT for k in ("log_probs", "prev_log_probs", "advantages", "entropy", "values",
                                                  "prev_values", "value_targets")}, "loss",
                        ["log_probs", "prev_log_probs", "advantages", "entropy", "values", "prev_values",
                         "value_targets"], False),
    "ActorCriticLossFunction": ({}, {"log_probs": BT_FLOAT, "values": BT_FLOAT, "rewards": BT_FLOAT,
                                     "terminals": BT_BOOL, "entropy": BT_FLOAT, "bootstrapped_value": B_FLOAT},
                                "loss", ["log_probs", "values", "rewards", "terminals", "entropy",
                                         "bootstrapped_value"], False),
    "SACLossFunction": ({"target_entropy": -1.0}, {"alpha": float, **{k: B_FLOAT for k in (
        "log_probs_next_sampled", "q_values_next_sampled", "q_values", "log_probs_sampled", "q_values_sampled",
        "rewards")}, "terminals": B_BOOL}, "loss",
                        ["alpha", "log_probs_next_sampled", "q_values_next_sampled", "q_values", "log_probs_sampled",
                         "q_values_sampled", "rewards", "terminals"], False),
    "DDPGLossFunction": ({"huber_delta": 1.0}, {**{k: B_FLOAT for k in ("q_values", "qt_values_sp", "rewards",
                                                                         "q_values_mu")}, "terminals": B_BOOL},
                         "loss", ["q_values", "qt_values_sp", "rewards", "terminals", "q_values_mu"], False),
    "EuclideanDistanceLoss": ({}, {"predictions": Q, "labels": Q}, "loss", ["predictions", "labels"], False),
    "CategoricalCrossEntropyLoss": ({}, {"predictions": Q, "labels": IntBox(3, add_batch_rank=True)}, "loss",
                                    ["predictions", "labels"], False),
})
LOGITS = FloatBox(shape=(3,), add_batch_rank=True)
MEAN_LOG_STD = Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,), low=-1.0, high=0.0), add_batch_rank=True)
CASES.update({
    name: ({}, {"parameters": LOGITS}, "sample_deterministic", ["parameters"], False)
    for name in ("Categorical", "GumbelSoftmax", "Bernoulli")})
CASES.update({
    name: ({}, {"parameters": MEAN_LOG_STD}, "sample_deterministic", ["parameters"], False)
    for name in ("Normal", "MultivariateNormal", "SquashedNormal")})
CASES["Beta"] = ({}, {"parameters": Tuple(FloatBox(shape=(2,), low=1.0, high=3.0),
                                           FloatBox(shape=(2,), low=1.0, high=3.0), add_batch_rank=True)},
                 "sample_deterministic", ["parameters"], False)
CASES["JointCumulativeDistribution"] = (
    {"distribution_specs": {"a": "categorical", "/b/_T0_": "normal"}},
    {"parameters": Dict(a=FloatBox(shape=(3,)),
                        b=Tuple(Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,), low=-1.0, high=0.0))),
                        add_batch_rank=True)}, "sample_deterministic", ["parameters"], False)
CASES["MixtureDistribution"] = (
    {"_args": ["normal"], "num_experts": 2},
    {"parameters": Dict(categorical=FloatBox(shape=(2,)),
                        parameters0=Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,), low=-1.0, high=0.0)),
                        parameters1=Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,), low=-1.0, high=0.0)),
                        add_batch_rank=True)}, "sample_deterministic", ["parameters"], False)
CASES["ContainerLossFunction"] = (
    {"loss_functions_spec": {"a": "euclidean-distance-loss", "b": "categorical-cross-entropy-loss"},
     "weights": {"a": 0.5, "b": 2.0}},
    {"predictions": Dict(a=FloatBox(shape=(2,)), b=FloatBox(shape=(3,)), add_batch_rank=True),
     "labels": Dict(a=FloatBox(shape=(2,)), b=IntBox(3), add_batch_rank=True)}, "loss", ["predictions", "labels"],
    False)
TIME = FloatBox()
for _name, _spec_ in (("Constant", {"value": 0.5}), ("LinearDecay", {"from_": 1.0, "to_": 0.1}),
                      ("PolynomialDecay", {}), ("ExponentialDecay", {})):
    CASES[_name] = (_spec_, {"time_percentage": TIME}, "get", ["time_percentage"], False)
CASES["EpsilonExploration"] = ({}, {"sample": BATCH, "time_percentage": TIME}, "do_explore",
                               ["sample", "time_percentage"], False)
CASES["Exploration"] = ({"epsilon_spec": {"decay_spec": ["linear", 1.0, 0.1]}},
                        {"actions": IntBox(3, add_batch_rank=True), "time_percentage": TIME,
                         "use_exploration": bool}, "get_action", ["actions", "time_percentage"], False)
for _name in ("GaussianNoise", "ConstantNoise", "OrnsteinUhlenbeckNoise"):
    CASES[_name] = ({"action_space": FloatBox(shape=(2,))}, {}, "get_noise", [], False)
NET = [{"type": "dense", "units": 4, "activation": "relu"}]
ACTIONS = Dict(discrete=IntBox(3), continuous=FloatBox(shape=(2,), low=-1.0, high=1.0))
# (With a pre-network: its variables are stored, copied and restored with the adapter's.)
CASES["ActionAdapter"] = ({"action_space": IntBox(3), "pre_network_spec": NET}, {"nn_output": BATCH},
                          "get_logits_probabilities_log_probs", ["nn_output"], False)
CASES["DuelingActionAdapter"] = ({"action_space": IntBox(3), "units_state_value_stream": 4,
                                  "units_advantage_stream": 4}, {"nn_output": BATCH}, "get_dueling_output",
                                 ["nn_output"], False)
CASES["BaselineActionAdapter"] = ({"action_space": FloatBox(shape=(2,), low=-1.0, high=1.0)}, {"nn_output": BATCH},
                                  "get_state_values_and_parameters", ["nn_output"], False)
CASES["Policy"] = ({"network_spec": NET, "action_space": ACTIONS}, {"nn_inputs": BATCH}, "get_action_and_log_prob",
                   ["nn_inputs"], False)
CASES["DuelingPolicy"] = ({"network_spec": NET, "action_space": IntBox(3), "units_state_value_stream": 4,
                           "units_advantage_stream": 4}, {"nn_inputs": BATCH}, "get_q_values", ["nn_inputs"], False)
CASES["SharedValueFunctionPolicy"] = ({"network_spec": NET, "action_space": IntBox(3)}, {"nn_inputs": BATCH},
                                      "get_state_values_logits_probabilities_log_probs", ["nn_inputs"], False)
CASES["ActorComponent"] = ({"preprocessor_spec": [{"type": "clip", "min": -1.0, "max": 1.0}],
                            "policy_spec": {"network_spec": NET, "action_space": ACTIONS},
                            "exploration_spec": {"epsilon_spec": {"decay_spec": ["linear", 1.0, 0.1]},
                                                 "noise_spec": {"type": "gaussian", "stddev": 0.1}}},
                           {"states": BATCH, "time_percentage": TIME, "use_exploration": bool},
                           "get_preprocessed_state_and_action", ["states", "time_percentage"], False)
# The stepper takes no inputs: it steps a small grid world (tests/test_environment_stepper.py). Its spec is
# resolved by the maker that rlgraph.environments registers (imported at the top of this file).
CASES["EnvironmentStepper"] = ({"environment_spec": {"type": "grid-world", "world": "2x2"}, "num_steps": 3,
                                "actor_component_spec": {
                                    "preprocessor_spec": [{"type": "reshape", "flatten": True, "flatten_categories": 4}],
                                    "policy_spec": {"network_spec": NET, "action_space": IntBox(4)}},
                                "add_action_probs": True}, {}, "step", [], False)
CASES["VariationalAutoEncoder"] = ({"z_units": 2, "encoder_network_spec": NET,
                                    "decoder_network_spec": [{"type": "dense", "units": 4}]},
                                   {"input_": BATCH, "z_vector": FloatBox(shape=(2,), add_batch_rank=True)}, "loss",
                                   ["input_"], False)
# Container and batch helpers (tests/test_common_components.py).
CASES.update({
    "ContainerMerger": ({"_args": ["a", "b"]}, {"inputs": [BATCH, IntBox(3, add_batch_rank=True)]}, "merge", False),
    "ContainerSplitter": ({"_args": ["b", "a"]}, {"inputs": Dict(a=FloatBox(shape=(2,)), b=IntBox(3),
                                                                 add_batch_rank=True)}, "split", False),
    "Slice": ({"squeeze": True}, {"inputs": BATCH, "start_index": IntBox(2)}, "slice", ["inputs", "start_index"],
              False),
    "BatchApply": ({"sub_component": {"type": "dense", "units": 2}, "api_method_name": "apply"}, {"inputs": SEQ},
                   "apply", False),
    "BatchSplitter": ({"num_shards": 2}, {"inputs": [BATCH, IntBox(3, add_batch_rank=True)]}, "split_batch", False),
    "Sampler": ({"seed": 1}, {"sample_size": int, "inputs": RECORDS}, "sample", ["sample_size", "inputs"], False),
    "LocalResponseNormalizationLayer": ({"depth_radius": 1, "beta": 0.75},
                                        {"inputs": FloatBox(shape=(8, 6, 3), add_batch_rank=True)}, "apply", True),
})
NOT_BUILDABLE_ALONE = {"Component": "the bare base class has no API method",
                       "Memory": "the abstract memory base has no API method",
                       "Distribution": "the abstract base defines no distribution maths",
                       "TimeDependentParameter": "the abstract base defines no formula",
                       "Noise": "the abstract base defines no noise",
                       **{name: "an optimizer updates variables that a parent passes in (tests/test_optimizers.py)"
                          for name in ("Optimizer", "LocalOptimizer", "GradientDescentOptimizer", "SGDOptimizer",
                                       "AdamOptimizer", "NadamOptimizer", "AdagradOptimizer", "AdadeltaOptimizer",
                                       "RMSPropOptimizer")},
                       "HorovodOptimizer": "its spec builds its local optimizer (tests/test_learner_group.py)",
                       "Synchronizable": "it syncs its parent's variables, so it needs a parent "
                                         "(built inside networks in tests/test_synchronizable.py)"}


def _registered():
    return sorted({cls.__name__: cls for cls in Component.__lookup_classes__.values()}.items())


def test_every_registered_class_has_a_case():
    missing = [name for name, _ in _registered() if name not in CASES and name not in NOT_BUILDABLE_ALONE]
    assert not missing, f"add conformance cases for {missing}"


def _sample(space, seed):
    if space is int or space is float:
        return space(2)
    if isinstance(space, list):
        return [_sample(s, seed + i) for i, s in enumerate(space)]
    if isinstance(space, TextBox):
        return np.array(["a b c", "hello", "x y"])
    space.seed(seed)
    if not space.has_batch_rank:
        return space.sample()
    return space.sample((2, 3) if space.has_time_rank else 2)


def _assert_fits(space, value, where):
    if isinstance(space, Dict):
        for key, child in space.items():
            _assert_fits(child, value[key], f"{where}/{key}")
    else:
        lead = int(space.has_batch_rank) + int(space.has_time_rank)
        value = np.asarray(value)
        assert value.shape[lead:] == tuple(space.shape), f"{where}: output shape {value.shape} does not fit {space}"
        assert value.dtype == np.dtype(space.dtype), f"{where}: output dtype {value.dtype} does not fit {space}"


def _spec(name):
    case = CASES[name]
    if len(case) == 4:
        spec, spaces, api, check_space = case
        arg_names = ["inputs"]
    else:
        spec, spaces, api, arg_names, check_space = case
    return dict(spec or {}, type=name), spaces, api, arg_names, check_space


@pytest.mark.parametrize("name", sorted(CASES))
def test_component_builds_runs_copies_and_restores(backend, name, tmp_path):
    spec, spaces, api, arg_names, check_space = _spec(name)
    component = Component.from_spec(spec)
    assert type(component).__name__ == name
    test = ComponentTest(component, input_spaces=spaces, backend=backend)
    args = [_sample(spaces[key], 3 + i) for i, key in enumerate(arg_names)]
    out = test.test((api, args if len(args) != 1 else args[0]) if args else api)
    if check_space:
        expected = component.get_preprocessed_space(spaces["inputs"])
        _assert_fits(expected, out, name)
    # A copy builds on its own, with its own variables.
    clone = component.copy(scope="clone")
    ComponentTest(clone, input_spaces=spaces, backend=backend)
    # Store, scramble, load: the same outputs again (stateless outputs only: reset stateful ones).
    weights = test.graph_executor.get_weights()
    if weights:
        path = test.graph_executor.store_model(str(tmp_path / "ckpt"))
        test.graph_executor.set_weights({k: np.ones_like(v) * 0.123 if v.dtype.kind == "f" else v
                                         for k, v in weights.items()})
        test.graph_executor.load_model(path)
        recursive_assert_almost_equal(test.graph_executor.get_weights(), weights)
