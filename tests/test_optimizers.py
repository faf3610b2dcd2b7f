"""Optimizers: update rules against the numpy reference, clipping, the gradient split, checkpoints, errors."""
import numpy as np
import pytest

from rlgraph.backend_system import get_backend
from rlgraph.components import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.optimizers.adadelta_optimizer import AdadeltaOptimizer
from rlgraph.components.optimizers.adagrad_optimizer import AdagradOptimizer
from rlgraph.components.optimizers.adam_optimizer import AdamOptimizer
from rlgraph.components.optimizers.gradient_descent_optimizer import GradientDescentOptimizer
from rlgraph.components.optimizers.nadam_optimizer import NadamOptimizer
from rlgraph.components.optimizers.rmsprop_optimizer import RMSPropOptimizer
from rlgraph.components.optimizers.sgd_optimizer import SGDOptimizer
from rlgraph.spaces import FloatBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

KERNEL = np.array([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], dtype=np.float32)
BIAS = np.array([0.1, -0.2], dtype=np.float32)
RNG = np.random.RandomState(3)
X = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 2)).astype(np.float32)
INPUT_SPACES = dict(x=FloatBox(shape=(3,), add_batch_rank=True), y=FloatBox(shape=(2,), add_batch_rank=True))
KEYS = ("root-dense-bias", "root-dense-kernel")


class Regression(Component):
    """Root: a dense layer fitted by `optimizer` to loss = mean_b sum_u (x @ W + b - y)^2."""

    def __init__(self, optimizer, use_time=False, grad_mode=True, trainable=None):
        super().__init__(scope="root")
        self.dense = DenseLayer(units=2, weights_spec=KERNEL, biases_spec=BIAS, scope="dense", trainable=trainable)
        self.optimizer = optimizer
        self.add_components(self.dense, optimizer)
        if use_time:
            rlgraph_api(component=self, name="update_at")(Regression._update_at)
        if not grad_mode:
            rlgraph_api(component=self, name="update_no_grad", no_grad=True)(Regression._update_no_grad)

    def _loss_and_variables(self, x, y):
        predictions = self.dense.apply(x)  # First: the dense layer creates its variables here.
        loss, loss_per_item = self._graph_fn_loss(predictions, y)
        return self._graph_fn_variables(), loss, loss_per_item

    @rlgraph_api
    def update(self, x, y):
        variables, loss, loss_per_item = self._loss_and_variables(x, y)
        return self.optimizer.step(variables, loss, loss_per_item)

    @rlgraph_api
    def gradients(self, x, y):
        variables, loss, _ = self._loss_and_variables(x, y)
        return self.optimizer.calculate_gradients(variables, loss)

    @rlgraph_api
    def split_update(self, x, y):
        variables, loss, _ = self._loss_and_variables(x, y)
        return self.optimizer.apply_gradients(variables, self.optimizer.calculate_gradients(variables, loss))

    @rlgraph_api
    def slots(self):
        return self.optimizer.get_optimizer_variables()

    def _update_at(self, x, y, time_percentage):
        variables, loss, loss_per_item = self._loss_and_variables(x, y)
        return self.optimizer.step(variables, loss, loss_per_item, time_percentage)

    def _update_no_grad(self, x, y):
        variables, loss, loss_per_item = self._loss_and_variables(x, y)
        return self.optimizer.step(variables, loss, loss_per_item)

    @graph_fn
    def _graph_fn_variables(self):
        return self.dense.get_variables(global_scope=True, custom_scope_separator="-")

    @graph_fn(returns=2)
    def _graph_fn_loss(self, predictions, y):
        if get_backend() == "tf":
            import tensorflow as tf
            per_item = tf.reduce_sum(tf.square(predictions - y), axis=-1)
            return tf.reduce_mean(per_item), per_item
        per_item = ((predictions - y) ** 2).sum(-1)
        return per_item.mean(), per_item


def _numpy_gradients(kernel, bias):
    error = X.astype(np.float64) @ kernel + bias - Y
    return {"root-dense-kernel": 2.0 * X.T @ error / len(X), "root-dense-bias": 2.0 * error.sum(0) / len(X)}


def _build(backend, optimizer, **kwargs):
    spaces = dict(INPUT_SPACES, **({"time_percentage": float} if kwargs.get("use_time") else {}))
    root = Regression(optimizer, **kwargs)
    return root, ComponentTest(root, input_spaces=spaces, backend=backend)


def _weights(test, root):
    values = test.read_variable_values(root.dense.variable_registry)
    return {"root-dense-kernel": values["root/dense/kernel"], "root-dense-bias": values["root/dense/bias"]}


def _reference_steps(rule, steps):
    """`steps` updates of both variables with `rule(theta, g, state, t) -> (theta, state)`."""
    theta = {"root-dense-kernel": KERNEL.astype(np.float64), "root-dense-bias": BIAS.astype(np.float64)}
    state = {k: None for k in theta}
    for t in range(1, steps + 1):
        grads = _numpy_gradients(theta["root-dense-kernel"], theta["root-dense-bias"])
        for key in theta:
            theta[key], state[key] = rule(theta[key], grads[key], state[key], t)
    return theta


def _z(state, theta, n):
    return state if state is not None else tuple(np.zeros_like(theta) for _ in range(n))


def _adam_rule(update, lr, **kw):
    def rule(theta, g, state, t):
        m, v = _z(state, theta, 2)
        theta, m, v = update(theta, g, m, v, t, lr, **kw)
        return theta, (m, v)
    return rule


def _rmsprop_rule(lr, **kw):
    def rule(theta, g, state, t):
        ms, mom, mg = _z(state, theta, 3)
        theta, ms, mom, mg = rnp.rmsprop_update(theta, g, ms, lr, moment=mom, mean_grad=mg, **kw)
        return theta, (ms, mom, mg)
    return rule


def _adagrad_rule(lr, initial, epsilon):
    def rule(theta, g, state, t):
        theta, acc = rnp.adagrad_update(theta, g, np.full_like(theta, initial) if state is None else state, lr,
                                        epsilon)
        return theta, acc
    return rule


def _adadelta_rule(lr, rho, epsilon):
    def rule(theta, g, state, t):
        eg, edx = _z(state, theta, 2)
        theta, eg, edx = rnp.adadelta_update(theta, g, eg, edx, lr, rho, epsilon)
        return theta, (eg, edx)
    return rule


def _sgd_rule(lr, momentum=0.0, nesterov=False):
    def rule(theta, g, state, t):
        return rnp.sgd_update(theta, g, lr, momentum, nesterov, state)
    return rule


CASES = {
    "gradient-descent": (lambda: GradientDescentOptimizer(0.1), _sgd_rule(0.1)),
    "sgd": (lambda: SGDOptimizer(0.1), _sgd_rule(0.1)),
    "sgd-momentum": (lambda: SGDOptimizer(0.1, momentum=0.9), _sgd_rule(0.1, 0.9)),
    "sgd-nesterov": (lambda: SGDOptimizer(0.1, momentum=0.9, nesterov=True), _sgd_rule(0.1, 0.9, True)),
    "adam": (lambda: AdamOptimizer(0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3),
             _adam_rule(rnp.adam_update, 0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3)),
    "nadam": (lambda: NadamOptimizer(0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3),
              _adam_rule(rnp.nadam_update, 0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3)),
    "rmsprop": (lambda: RMSPropOptimizer(0.01, decay=0.8, epsilon=1e-3), _rmsprop_rule(0.01, rho=0.8, epsilon=1e-3)),
    "rmsprop-centered-momentum": (
        lambda: RMSPropOptimizer(0.01, rho=0.8, momentum=0.5, epsilon=1e-3, centered=True),
        _rmsprop_rule(0.01, rho=0.8, momentum=0.5, epsilon=1e-3, centered=True)),
    "adagrad": (lambda: AdagradOptimizer(0.1, initial_accumulator_value=0.2, epsilon=1e-3),
                _adagrad_rule(0.1, 0.2, 1e-3)),
    "adadelta": (lambda: AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-2), _adadelta_rule(1.0, 0.9, 1e-2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_steps_match_numpy_rule(backend, case):
    make, rule = CASES[case]
    root, test = _build(backend, make())
    out = test.test(("update", [X, Y]))
    # step returns the loss before the update, and its per-item losses.
    error = X.astype(np.float64) @ KERNEL + BIAS - Y
    np.testing.assert_allclose(out[1], (error ** 2).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(out[0], (error ** 2).sum(-1).mean(), rtol=1e-5)
    for steps in (1, 2):  # Two steps: momentum and bias correction carry over.
        if steps == 2:
            test.test(("update", [X, Y]))
        expected = _reference_steps(rule, steps)
        weights = _weights(test, root)
        for key in KEYS:
            np.testing.assert_allclose(weights[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=f"{key} {steps}")


@pytest.mark.parametrize("fused", [True, False])
def test_pytorch_adam_fused_and_multi_tensor_paths_match_numpy_rule(monkeypatch, fused):
    """PyTorch's Adam runs torch's fused kernel on CPU; without it, multi-tensor ops: both follow the rule."""
    pytest.importorskip("torch")
    from rlgraph.components.optimizers import adam_optimizer
    if not fused:
        monkeypatch.setattr(adam_optimizer, "FUSED_DEVICE_TYPES", ())
    root, test = _build("pytorch", AdamOptimizer(0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3))
    for _ in range(3):
        test.test(("update", [X, Y]))
    expected = _reference_steps(_adam_rule(rnp.adam_update, 0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-3), 3)
    weights = _weights(test, root)
    for key in KEYS:
        np.testing.assert_allclose(weights[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert int(test.test("slots")["step-count"]) == 3


@pytest.mark.parametrize("fused", [True, False])
def test_pytorch_adam_applies_strided_gradients_where_they_belong(monkeypatch, fused):
    """A gradient laid out unlike its variable (a convolution kernel's: the forward pass permutes the
    kernel) updates each element by its own gradient. torch's fused kernel walks memory in order,
    blind to strides; before the gradient was made contiguous it updated elements with the
    gradients of others (every PyTorch conv net learned from scrambled kernel gradients)."""
    torch = pytest.importorskip("torch")
    from rlgraph.backend_system import backend_scope
    from rlgraph.components.optimizers import adam_optimizer
    if not fused:
        monkeypatch.setattr(adam_optimizer, "FUSED_DEVICE_TYPES", ())
    theta = RNG.standard_normal((4, 3)).astype(np.float32)
    c = RNG.standard_normal((3, 4)).astype(np.float32)
    with backend_scope("pytorch"):
        optimizer = AdamOptimizer(learning_rate=0.1, beta_1=0.8, beta_2=0.9, epsilon=1e-3)
        optimizer.when_input_complete(dict(variables=rnp_dict_space(theta)))
        w = torch.tensor(theta, requires_grad=True)
        c_t = torch.tensor(c)
        for _ in range(2):
            grad = torch.autograd.grad((torch.tanh(w.t()) * c_t).sum(), [w])[0]
            assert not grad.is_contiguous()  # The case under test: a transposed gradient.
            optimizer.step({"w": w}, (torch.tanh(w.t()) * c_t).sum(), None)
    expected, m, v = theta.astype(np.float64), np.zeros(theta.shape), np.zeros(theta.shape)
    for t in (1, 2):
        g = (1.0 - np.tanh(expected) ** 2) * c.T
        expected, m, v = rnp.adam_update(expected, g, m, v, t, 0.1, beta_1=0.8, beta_2=0.9, epsilon=1e-3)
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def rnp_dict_space(value):
    from rlgraph.spaces import Dict
    return Dict(w=FloatBox(shape=value.shape))


@pytest.mark.parametrize("fused", [True, False])
def test_tf_adam_fused_kernel_and_generic_ops_match_numpy_rule(monkeypatch, fused):
    """TF's Adam runs the fused ResourceApplyAdam kernel (epsilon rescaled by sqrt(1 - beta_2^t), see
    AdamOptimizer._apply_tf); without it, the rule's generic ops: both follow the rule. A large
    epsilon makes a mistake in its placement show."""
    pytest.importorskip("tensorflow")
    from rlgraph.components.optimizers.local_optimizer import LocalOptimizer
    if not fused:
        monkeypatch.setattr(AdamOptimizer, "_apply_tf", LocalOptimizer._apply_tf)
    root, test = _build("tf", AdamOptimizer(0.05, beta_1=0.8, beta_2=0.9, epsilon=0.5))
    for _ in range(3):
        test.test(("update", [X, Y]))
    expected = _reference_steps(_adam_rule(rnp.adam_update, 0.05, beta_1=0.8, beta_2=0.9, epsilon=0.5), 3)
    plain = _reference_steps(_adam_rule(rnp.adam_update, 0.05, beta_1=0.8, beta_2=0.9, epsilon=0.5 * 0.1), 3)
    weights = _weights(test, root)
    for key in KEYS:
        np.testing.assert_allclose(weights[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
        assert not np.allclose(plain[key], expected[key], rtol=1e-4, atol=1e-6)  # epsilon matters here
    assert int(test.test("slots")["step-count"]) == 3


def test_adam_slots_and_step_count(backend):
    root, test = _build(backend, AdamOptimizer(0.05, beta_1=0.8, beta_2=0.9))
    test.test(("update", [X, Y]), ("update", [X, Y]))
    slots = test.test("slots")
    assert sorted(slots) == ["root-dense-bias-m", "root-dense-bias-v", "root-dense-kernel-m", "root-dense-kernel-v",
                             "step-count"]
    assert int(slots["step-count"]) == 2
    # Second moments by hand: v_2 = 0.9 * 0.1 g_1^2 + 0.1 g_2^2, with g_2 at the weights after step 1.
    g_1 = _numpy_gradients(KERNEL, BIAS)["root-dense-kernel"]
    theta_1 = _reference_steps(_adam_rule(rnp.adam_update, 0.05, beta_1=0.8, beta_2=0.9), 1)
    g_2 = _numpy_gradients(theta_1["root-dense-kernel"], theta_1["root-dense-bias"])["root-dense-kernel"]
    np.testing.assert_allclose(slots["root-dense-kernel-v"], 0.9 * 0.1 * g_1 ** 2 + 0.1 * g_2 ** 2, rtol=1e-5)
    # The slots are component variables (checkpointed with the model).
    assert set(root.optimizer.variable_registry) == {f"root/adam-optimizer/{k}" for k in slots}


def test_clip_grad_norm(backend):
    raw = _numpy_gradients(KERNEL, BIAS)
    norm = np.sqrt(sum(np.sum(g ** 2) for g in raw.values()))
    clip = float(norm) / 4.0
    root, test = _build(backend, GradientDescentOptimizer(0.1, clip_grad_norm=clip))
    grads = test.test(("gradients", [X, Y]))
    clipped, norm_ref = rnp.clip_by_global_norm([raw[k] for k in KEYS], clip)
    np.testing.assert_allclose(norm_ref, norm)
    for key, expected in zip(KEYS, clipped):
        np.testing.assert_allclose(grads[key], expected, rtol=1e-5)
        np.testing.assert_allclose(grads[key], raw[key] / 4.0, rtol=1e-5)  # Clipped to a quarter of the norm.
    test.test(("update", [X, Y]))
    weights = _weights(test, root)
    np.testing.assert_allclose(weights["root-dense-kernel"], KERNEL - 0.1 * raw["root-dense-kernel"] / 4.0,
                               rtol=1e-5)
    # Below the threshold, gradients pass unchanged.
    _, test = _build(backend, GradientDescentOptimizer(0.1, clip_grad_norm=float(norm) * 2.0))
    np.testing.assert_allclose(test.test(("gradients", [X, Y]))["root-dense-bias"], raw["root-dense-bias"], rtol=1e-5)


def test_calculate_and_apply_gradients_equal_step(backend):
    root_a, split = _build(backend, AdamOptimizer(0.05))
    root_b, whole = _build(backend, AdamOptimizer(0.05))
    for _ in range(2):
        assert split.test(("split_update", [X, Y])) is None
        whole.test(("update", [X, Y]))
    for key in KEYS:
        np.testing.assert_allclose(_weights(split, root_a)[key], _weights(whole, root_b)[key], rtol=1e-6)
    slots_a, slots_b = split.test("slots"), whole.test("slots")
    for key in slots_a:
        np.testing.assert_allclose(slots_a[key], slots_b[key], rtol=1e-6)


def test_optimizer_variables_round_trip_through_checkpoint(backend, tmp_path):
    root, test = _build(backend, RMSPropOptimizer(0.01, momentum=0.5))
    test.test(("update", [X, Y]))
    path = test.graph_executor.store_model(str(tmp_path / "model"))
    # Copies: PyTorch results that are variables come back as numpy views of the live tensors.
    stored_slots = {k: np.array(v, copy=True) for k, v in test.test("slots").items()}
    stored_weights = _weights(test, root)
    test.test(("update", [X, Y]))
    assert not np.allclose(test.test("slots")["root-dense-kernel-moment"], stored_slots["root-dense-kernel-moment"])
    test.graph_executor.load_model(path)
    for key, value in test.test("slots").items():
        np.testing.assert_array_equal(value, stored_slots[key])
    for key in KEYS:
        np.testing.assert_array_equal(_weights(test, root)[key], stored_weights[key])


def test_learning_rate_schedule(backend):
    # lr goes linearly from 0.2 to 0.0: at t = 0.75 it is 0.05; without time_percentage it is 0.2 (t = 0).
    root, test = _build(backend, GradientDescentOptimizer(["linear", 0.2, 0.0]), use_time=True)
    raw = _numpy_gradients(KERNEL, BIAS)
    test.test(("update_at", [X, Y, 0.75]))
    np.testing.assert_allclose(_weights(test, root)["root-dense-bias"], BIAS - 0.05 * raw["root-dense-bias"],
                               rtol=1e-5)
    assert root.optimizer.learning_rate_schedule.global_scope == "root/gradient-descent-optimizer/learning-rate"
    _, test = _build(backend, GradientDescentOptimizer({"type": "linear-decay", "from": 0.2, "to": 0.0}))
    test.test(("update", [X, Y]))
    np.testing.assert_allclose(_weights(test, test.component)["root-dense-bias"],
                               BIAS - 0.2 * raw["root-dense-bias"], rtol=1e-5)


def test_pytorch_no_grad_root_api_is_an_error():
    root = Regression(SGDOptimizer(0.1), grad_mode=False)
    with pytest.raises(RLGraphError, match="no autograd graph"):
        ComponentTest(root, input_spaces=INPUT_SPACES, backend="pytorch").test(("update_no_grad", [X, Y]))


def test_frozen_variables_are_an_error(backend):
    with pytest.raises(RLGraphError, match="not trainable variables"):
        _build(backend, SGDOptimizer(0.1), trainable=False)


class _BadVariables(Component):
    """Passes a single variable (not a dict) or a per-item loss to the optimizer."""

    def __init__(self, mode):
        super().__init__(scope="bad")
        self.mode = mode
        self.dense = DenseLayer(units=2, scope="dense")
        self.optimizer = SGDOptimizer(0.1)
        self.add_components(self.dense, self.optimizer)

    @rlgraph_api
    def update(self, x):
        out = self.dense.apply(x)
        variables, loss = self._graph_fn_parts(out)
        return self.optimizer.step(variables, loss, loss)

    @graph_fn(returns=2)
    def _graph_fn_parts(self, out):
        kernel = self.dense.get_variables("kernel")["kernel"]
        per_item = out[:, 0] * out[:, 1]
        if self.mode == "not-a-dict":
            return kernel, per_item[0]
        return {"kernel": kernel}, per_item


@pytest.mark.parametrize("mode, message", [("not-a-dict", "must be a non-empty dict"),
                                           ("per-item-loss", "loss must be a float scalar")])
def test_bad_input_spaces(backend, mode, message):
    with pytest.raises(RLGraphSpaceError, match=message):
        ComponentTest(_BadVariables(mode), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                      backend=backend)


@pytest.mark.parametrize("make, message", [
    (lambda: GradientDescentOptimizer(-0.1), "learning rate must be"),
    (lambda: AdamOptimizer(None), "learning rate is required"),
    (lambda: AdamOptimizer(float("nan")), "learning rate must be"),
    (lambda: AdamOptimizer(["no-such-schedule", 1.0, 0.0]), "unknown type"),
    (lambda: AdamOptimizer(["linear", 0.1, -0.1]), "schedule must stay >= 0"),
    (lambda: AdamOptimizer("fast"), "learning-rate spec|unknown type"),
    (lambda: AdamOptimizer(0.1, beta_1=1.0), "beta_1"),
    (lambda: NadamOptimizer(0.1, beta_2=-0.5), "beta_2"),
    (lambda: AdamOptimizer(0.1, epsilon=-1e-8), "epsilon"),
    (lambda: SGDOptimizer(0.1, momentum=1.5), "momentum"),
    (lambda: SGDOptimizer(0.1, nesterov=True), "Nesterov momentum needs"),
    (lambda: SGDOptimizer(0.1, momentum=0.5, nesterov="yes"), "nesterov must be a bool"),
    (lambda: RMSPropOptimizer(0.1, decay=0.9, rho=0.8), "both given"),
    (lambda: RMSPropOptimizer(0.1, centered=1), "centered must be a bool"),
    (lambda: AdagradOptimizer(0.1, initial_accumulator_value=-1.0), "initial_accumulator_value"),
    (lambda: AdadeltaOptimizer(1.0, epsilon=0.0), "epsilon"),
    (lambda: GradientDescentOptimizer(0.1, clip_grad_norm=0.0), "clip_grad_norm"),
])
def test_bad_specs_raise(make, message):
    with pytest.raises(RLGraphSpecError, match=message):
        make()


def test_from_spec_unknown_key_is_a_spec_error():
    with pytest.raises(RLGraphSpecError, match="beta1|unknown"):
        AdamOptimizer.from_spec({"learning_rate": 0.1, "beta1": 0.9})
    assert AdamOptimizer.from_spec({"learning_rate": 0.1, "beta_1": 0.5}).beta_1 == 0.5
