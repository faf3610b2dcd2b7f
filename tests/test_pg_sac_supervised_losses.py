"""PPO, actor-critic, SAC, Euclidean-distance and cross-entropy losses vs hand-worked values and numpy."""
import numpy as np
import pytest

from rlgraph.backend_system import backend_scope
from rlgraph.components.loss_functions.actor_critic_loss_function import ActorCriticLossFunction
from rlgraph.components.loss_functions.categorical_cross_entropy_loss import CategoricalCrossEntropyLoss
from rlgraph.components.loss_functions.euclidean_distance_loss import EuclideanDistanceLoss
from rlgraph.components.loss_functions.ppo_loss_function import PPOLossFunction
from rlgraph.components.loss_functions.sac_loss_function import SACLossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

F = FloatBox(add_batch_rank=True)
BOOLS = BoolBox(add_batch_rank=True)


def f32(*values):
    return np.array(values, dtype=np.float32)


def graph_fn_grads(backend, fn, args):
    """Calls a graph function directly on `args` (numpy leaves, tuples allowed) and returns
    (output, grads): the gradient of sum(output) w.r.t. every float leaf, None where none flows."""
    with backend_scope(backend):
        if backend == "tf":
            import tensorflow as tf
            leaves = []

            def to_tf(x):
                if isinstance(x, tuple):
                    return tuple(to_tf(v) for v in x)
                t = tf.constant(x)
                if t.dtype.is_floating:
                    leaves.append(t)
                return t
            with tf.GradientTape(persistent=True) as tape:
                tensors = [to_tf(a) for a in args]
                for t in leaves:
                    tape.watch(t)
                out = fn(*tensors)
                total = tf.reduce_sum(out)
            grads = tape.gradient(total, leaves)
            return out.numpy(), [None if g is None else g.numpy() for g in grads]
        import torch
        leaves = []

        def to_torch(x):
            if isinstance(x, tuple):
                return tuple(to_torch(v) for v in x)
            t = torch.tensor(x)
            if torch.is_floating_point(t):
                t.requires_grad_(True)
                leaves.append(t)
            return t
        tensors = [to_torch(a) for a in args]
        out = fn(*tensors)
        grads = torch.autograd.grad(out.sum(), leaves, allow_unused=True)
        return out.detach().numpy(), [None if g is None else g.numpy() for g in grads]


# --- PPO -------------------------------------------------------------------------------------------------------------

PPO_NAMES = ("log_probs", "prev_log_probs", "advantages", "entropy", "values", "prev_values", "value_targets")


def ppo_inputs():
    # rho = [1.5, 0.5, 1.1, 0.5] with A = [1, 1, -1, -1]: clipped, unclipped, inside, clipped.
    log_probs = np.log(f32(1.5, 0.5, 1.1, 0.5))
    return [log_probs, np.zeros(4, np.float32), f32(1, 1, -1, -1), f32(1, 2, 0, 0), f32(1, 2, 0, 3),
            f32(3, 2, 0, 1), f32(1, 2, 1, 1)]


def test_ppo_clip_active_and_inactive(backend):
    loss_fn = PPOLossFunction(clip_ratio=0.2, weight_entropy=0.1, weight_vf=0.5)
    test = ComponentTest(loss_fn, input_spaces={n: F for n in PPO_NAMES}, backend=backend)
    inputs = ppo_inputs()
    # Policy: -[1.2, 0.5, -1.1, -0.8] - 0.1 * H; value: 0.5 * (v - target)^2 = [0, 0, 0.5, 2].
    policy = f32(-1.3, -0.7, 1.1, 0.8)
    value = f32(0.0, 0.0, 0.5, 2.0)
    expected = policy + 0.5 * value
    np.testing.assert_allclose(test.test(("policy_loss_per_item", inputs[:4])), policy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(test.test(("value_function_loss_per_item", inputs[4:])), value, atol=1e-6)
    total, per_item = test.test(("loss", inputs))
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-5)
    np.testing.assert_allclose(per_item, rnp.ppo_loss(*inputs, weight_entropy=0.1)[2], rtol=1e-5, atol=1e-6)
    policy_loss, value_loss = test.test(("loss_components", inputs))
    np.testing.assert_allclose([policy_loss, value_loss], [policy.mean(), value.mean()], rtol=1e-5)


def test_ppo_value_function_clipping(backend):
    loss_fn = PPOLossFunction(value_function_clipping=0.5, weight_entropy=0.0)
    test = ComponentTest(loss_fn, input_spaces={n: F for n in PPO_NAMES}, backend=backend)
    inputs = ppo_inputs()
    # Item 0: v = 1 = target, but v_old = 3 clips to 2.5: 0.5 * 1.5^2 = 1.125 (the clipped error wins).
    # Item 3: v = 3, v_old = 1 clips to 1.5; the unclipped (3 - 1)^2 = 4 is larger: 2.0.
    value = test.test(("value_function_loss_per_item", inputs[4:]))
    np.testing.assert_allclose(value, f32(1.125, 0.0, 0.5, 2.0), atol=1e-6)
    _, per_item = test.test(("loss", inputs))
    np.testing.assert_allclose(per_item, rnp.ppo_loss(*inputs, value_function_clipping=0.5)[2], rtol=1e-5,
                               atol=1e-6)


def test_ppo_time_rank_averages_over_time(backend):
    spaces = {n: FloatBox(add_batch_rank=True, add_time_rank=True) for n in PPO_NAMES}
    test = ComponentTest(PPOLossFunction(weight_entropy=0.0), input_spaces=spaces, backend=backend)
    inputs = [x.reshape(2, 2) for x in ppo_inputs()]
    _, per_item = test.test(("loss", inputs))
    np.testing.assert_allclose(per_item, rnp.ppo_loss(*inputs)[2].mean(axis=1), rtol=1e-5, atol=1e-6)


def test_ppo_gradients_stop_at_targets(backend):
    loss_fn = PPOLossFunction(value_function_clipping=0.5, weight_entropy=0.1)
    _, grads = graph_fn_grads(backend, loss_fn._graph_fn_policy_loss_per_item, ppo_inputs()[:4])
    d_log_pi, d_log_pi_old, d_adv, d_entropy = grads
    assert d_log_pi_old is None and d_adv is None
    # Clipped items have no gradient; unclipped ones -rho * A.
    np.testing.assert_allclose(d_log_pi, f32(0.0, -0.5, 1.1, 0.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_entropy, np.full(4, -0.1, np.float32), rtol=1e-6)
    _, (d_v, d_v_old, d_target) = graph_fn_grads(backend, loss_fn._graph_fn_value_function_loss_per_item,
                                                 ppo_inputs()[4:])
    assert d_v_old is None and d_target is None
    # Item 0: the clipped branch wins and is flat in v; items 2, 3: v - target.
    np.testing.assert_allclose(d_v, f32(0.0, 0.0, -1.0, 2.0), atol=1e-6)


def test_ppo_errors(backend):
    with pytest.raises(RLGraphSpecError, match="clip_ratio"):
        PPOLossFunction(clip_ratio=0.0)
    with pytest.raises(RLGraphSpecError, match="value_function_clipping"):
        PPOLossFunction(value_function_clipping=-1.0)
    with pytest.raises(RLGraphSpecError, match="weight_entropy"):
        PPOLossFunction(weight_entropy="a lot")
    with pytest.raises(RLGraphSpecError, match="discount"):
        PPOLossFunction(discount=1.5)
    spaces = {n: F for n in PPO_NAMES}
    spaces["log_probs"] = FloatBox(shape=(2,), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="log_probs"):
        ComponentTest(PPOLossFunction(), input_spaces=spaces, backend=backend)
    spaces["log_probs"] = FloatBox(add_batch_rank=True, add_time_rank=True)
    with pytest.raises(RLGraphSpaceError, match="other batch/time ranks"):
        ComponentTest(PPOLossFunction(), input_spaces=spaces, backend=backend)


# --- Actor-critic ----------------------------------------------------------------------------------------------------

def a2c_inputs():
    rng = np.random.RandomState(3)
    log_probs = -rng.uniform(0.1, 2.0, size=(2, 3)).astype(np.float32)
    values = rng.normal(size=(2, 3)).astype(np.float32)
    rewards = f32([2.0, -0.5, 3.0], [-4.0, 0.5, 1.0])
    terminals = np.array([[False, True, False], [False, False, False]])
    entropy = rng.uniform(0.0, 1.0, size=(2, 3)).astype(np.float32)
    return [log_probs, values, rewards, terminals, entropy, f32(10.0, -2.0)]


@pytest.mark.parametrize("reward_clipping", ["clamp_one", "soft_asymmetric", None])
def test_actor_critic_fragments_vs_numpy(backend, reward_clipping):
    loss_fn = ActorCriticLossFunction(discount=0.9, reward_clipping=reward_clipping)
    ft = FloatBox(add_batch_rank=True, add_time_rank=True)
    spaces = dict(log_probs=ft, values=ft, rewards=ft, terminals=BoolBox(add_batch_rank=True, add_time_rank=True),
                  entropy=ft, bootstrapped_value=F)
    test = ComponentTest(loss_fn, input_spaces=spaces, backend=backend)
    inputs = a2c_inputs()
    expected = rnp.actor_critic_loss(*inputs, discount=0.9, reward_clipping=reward_clipping).mean(axis=1)
    total, per_item = test.test(("loss", inputs))
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-5)


def test_actor_critic_time_major_and_hand_worked(backend):
    ft = FloatBox(add_batch_rank=True, add_time_rank=True, time_major=True)
    spaces = dict(log_probs=ft, values=ft, rewards=ft, terminals=BoolBox(add_batch_rank=True, add_time_rank=True,
                                                                         time_major=True),
                  entropy=ft, bootstrapped_value=F)
    loss_fn = ActorCriticLossFunction(discount=0.5, weight_pg=1.0, weight_baseline=1.0, weight_entropy=0.1)
    test = ComponentTest(loss_fn, input_spaces=spaces, backend=backend)
    # One fragment (B = 1) of T = 2 steps, no terminal: R = [0.5 + 0.5 * (1 + 0.5 * 4), 1 + 0.5 * 4] = [2, 3]
    # (reward 2 clamps to 1); A = R - v = [2, 1].
    inputs = [f32([-1.0], [-2.0]), f32([0.0], [2.0]), f32([0.5], [2.0]), np.array([[False], [False]]),
              f32([1.0], [0.0]), f32(4.0)]
    per_step = f32(2.0 + 0.5 * 4.0 - 0.1, 2.0 + 0.5)
    np.testing.assert_allclose(test.test(("loss_per_item", inputs)), [per_step.mean()], rtol=1e-6)


def test_actor_critic_flat_sequence(backend):
    # [B] rows are one time-ordered fragment; the terminal after step 1 cuts the bootstrap (10.0) off
    # steps 0-1, and a new episode starts at step 2.
    spaces = dict(log_probs=F, values=F, rewards=F, terminals=BOOLS, entropy=F, bootstrapped_value=float)
    loss_fn = ActorCriticLossFunction(discount=0.5, reward_clipping=None, weight_baseline=1.0, weight_entropy=0.0)
    test = ComponentTest(loss_fn, input_spaces=spaces, backend=backend)
    inputs = [f32(-1.0, -2.0, -1.0), f32(1.0, 0.0, 0.0), f32(1.0, 2.0, 1.0), np.array([False, True, False]),
              np.zeros(3, np.float32), 10.0]
    # R = [1 + 0.5 * 2, 2, 1 + 0.5 * 10] = [2, 2, 6]; A = [1, 2, 6]; L = -log_pi * A + 0.5 * A^2.
    np.testing.assert_allclose(test.test(("loss_per_item", inputs)), [1.5, 6.0, 24.0], rtol=1e-6)


def test_actor_critic_gradients(backend):
    loss_fn = ActorCriticLossFunction(discount=0.9, reward_clipping=None, weight_pg=1.0, weight_baseline=0.5,
                                      weight_entropy=0.01)
    loss_fn.layout = "batch_major"  # What check_input_spaces sets for [B, T] inputs.
    inputs = a2c_inputs()
    _, (d_log_pi, d_v, d_r, d_entropy, d_bootstrap) = graph_fn_grads(backend, loss_fn._graph_fn_loss_per_item,
                                                                     inputs)
    assert d_r is None and d_bootstrap is None
    returns = rnp.discounted_returns(inputs[2], inputs[3], 0.9, inputs[5])
    advantages = returns - inputs[1]
    # Per-item losses are time means over T = 3 steps.
    np.testing.assert_allclose(d_log_pi, -advantages / 3.0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_v, -0.5 * advantages / 3.0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d_entropy, np.full((2, 3), -0.01 / 3.0), rtol=1e-5)


def test_actor_critic_errors(backend):
    with pytest.raises(RLGraphSpecError, match="reward_clipping"):
        ActorCriticLossFunction(reward_clipping="clamp_two")
    with pytest.raises(RLGraphSpecError, match="weight_pg"):
        ActorCriticLossFunction(weight_pg=-1.0)
    # Flat [B] inputs need a scalar bootstrap value.
    spaces = dict(log_probs=F, values=F, rewards=F, terminals=BOOLS, entropy=F, bootstrapped_value=F)
    with pytest.raises(RLGraphSpaceError, match="bootstrapped_value"):
        ComponentTest(ActorCriticLossFunction(), input_spaces=spaces, backend=backend)
    spaces.update(bootstrapped_value=float, values=FloatBox(add_batch_rank=True, add_time_rank=True))
    with pytest.raises(RLGraphSpaceError, match="values"):
        ComponentTest(ActorCriticLossFunction(), input_spaces=spaces, backend=backend)


# --- SAC -------------------------------------------------------------------------------------------------------------

SAC_NAMES = ("alpha", "log_probs_next_sampled", "q_values_next_sampled", "q_values", "log_probs_sampled",
             "q_values_sampled", "rewards", "terminals")


def sac_inputs():
    return [np.float32(0.5), f32(-2.0, 3.0), (f32(4.0, 1.0), f32(6.0, 2.0)), (f32(3.0, 2.0), f32(5.0, 0.0)),
            f32(-1.0, 1.0), (f32(2.0, 0.0), f32(1.0, 3.0)), f32(1.0, -1.0), np.array([False, True])]


def test_sac_twin_q_with_terminals(backend):
    q = Tuple(F, F)
    spaces = dict(alpha=float, log_probs_next_sampled=F, q_values_next_sampled=q, q_values=q, log_probs_sampled=F,
                  q_values_sampled=q, rewards=F, terminals=BOOLS)
    test = ComponentTest(SACLossFunction(target_entropy=-1.0, discount=0.5), input_spaces=spaces, backend=backend)
    inputs = sac_inputs()
    # y = [1 + 0.5 * (min(4, 6) - 0.5 * -2), -1 (terminal)] = [3.5, -1].
    critic = f32(0.5 * 0.5 ** 2 + 0.5 * 1.5 ** 2, 0.5 * 3.0 ** 2 + 0.5 * 1.0 ** 2)
    actor = f32(0.5 * -1.0 - 1.0, 0.5 * 1.0 - 0.0)
    alpha_loss = f32(-np.log(0.5) * (-1.0 - 1.0), -np.log(0.5) * (1.0 - 1.0))
    components = test.test(("loss_components", inputs))
    np.testing.assert_allclose(components, [actor.mean(), critic.mean(), alpha_loss.mean()], rtol=1e-5)
    total, per_item = test.test(("loss", inputs))
    np.testing.assert_allclose(per_item, actor + critic + alpha_loss, rtol=1e-5)
    np.testing.assert_allclose(total, (actor + critic + alpha_loss).mean(), rtol=1e-5)
    reference = rnp.sac_losses(0.5, *inputs[1:], discount=0.5, target_entropy=-1.0)
    np.testing.assert_allclose(per_item, sum(reference), rtol=1e-5)


def test_sac_single_q_head_with_trailing_one(backend):
    f1 = FloatBox(shape=(1,), add_batch_rank=True)
    spaces = dict(alpha=float, log_probs_next_sampled=F, q_values_next_sampled=f1, q_values=f1, log_probs_sampled=F,
                  q_values_sampled=f1, rewards=F, terminals=BOOLS)
    test = ComponentTest(SACLossFunction(discount=0.9), input_spaces=spaces, backend=backend)
    rng = np.random.RandomState(0)
    inputs = [np.float32(0.2)] + [rng.normal(size=s).astype(np.float32) for s in [(3,), (3, 1), (3, 1), (3,),
                                                                                  (3, 1), (3,)]]
    inputs.append(np.array([False, True, False]))
    actor, critic, alpha_loss = test.test(("loss_components", inputs))
    squeezed = [x[:, 0] if x.ndim == 2 else x for x in inputs[1:]]
    reference = rnp.sac_losses(0.2, *squeezed, discount=0.9)
    np.testing.assert_allclose([actor, critic, alpha_loss], [r.mean() for r in reference], rtol=1e-5, atol=1e-6)
    assert alpha_loss == 0.0


def test_sac_gradients_stop_at_target(backend):
    loss_fn = SACLossFunction(target_entropy=-1.0, discount=0.5)

    def total(*args):
        return sum(loss_fn._graph_fn_losses_per_item(*args))
    _, grads = graph_fn_grads(backend, total, sac_inputs())
    d_alpha, d_logp_next, dq_next1, dq_next2, dq1, dq2, d_logp, dqs1, dqs2, d_r = grads
    assert d_logp_next is None and dq_next1 is None and dq_next2 is None and d_r is None
    # Only the alpha loss reaches alpha: -sum(log_pi + target_entropy) / alpha = -(-2 + 0) / 0.5.
    np.testing.assert_allclose(d_alpha, 4.0, rtol=1e-5)
    np.testing.assert_allclose(dq1, f32(3.0 - 3.5, 2.0 + 1.0), rtol=1e-5)
    np.testing.assert_allclose(dq2, f32(5.0 - 3.5, 0.0 + 1.0), rtol=1e-5)
    # The actor term uses alpha (a constant) and the smaller Q head; the alpha loss has log_pi constant.
    np.testing.assert_allclose(d_logp, f32(0.5, 0.5), rtol=1e-5)
    np.testing.assert_allclose(dqs1, f32(0.0, -1.0), atol=1e-6)
    np.testing.assert_allclose(dqs2, f32(-1.0, 0.0), atol=1e-6)


def test_sac_errors(backend):
    with pytest.raises(RLGraphSpecError, match="target_entropy"):
        SACLossFunction(target_entropy="auto")
    q = Tuple(F, F)
    spaces = dict(alpha=float, log_probs_next_sampled=F, q_values_next_sampled=q, q_values=q, log_probs_sampled=F,
                  q_values_sampled=F, rewards=F, terminals=BOOLS)
    with pytest.raises(RLGraphSpaceError, match="heads"):
        ComponentTest(SACLossFunction(), input_spaces=spaces, backend=backend)
    spaces.update(q_values_sampled=q, log_probs_sampled=FloatBox(shape=(3,), add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError, match="log_probs_sampled"):
        ComponentTest(SACLossFunction(), input_spaces=spaces, backend=backend)


# --- Supervised ------------------------------------------------------------------------------------------------------

def test_euclidean_distance(backend):
    f2 = FloatBox(shape=(2,), add_batch_rank=True)
    test = ComponentTest(EuclideanDistanceLoss(), input_spaces=dict(predictions=f2, labels=f2), backend=backend)
    predictions, labels = f32([4.0, 6.0], [1.0, -1.0], [0.5, 0.5]), f32([1.0, 2.0], [1.0, -1.0], [0.0, 0.0])
    total, per_item = test.test(("loss", [predictions, labels]))
    np.testing.assert_allclose(per_item, [5.0, 0.0, np.sqrt(0.5)], rtol=1e-6)
    np.testing.assert_allclose(total, (5.0 + np.sqrt(0.5)) / 3.0, rtol=1e-6)
    np.testing.assert_allclose(per_item, rnp.euclidean_distance(predictions, labels), rtol=1e-6)


def test_euclidean_distance_time_rank_and_gradient(backend):
    ft = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(EuclideanDistanceLoss(), input_spaces=dict(predictions=ft, labels=ft), backend=backend)
    rng = np.random.RandomState(1)
    predictions, labels = rng.normal(size=(2, 4, 3)).astype(np.float32), rng.normal(size=(2, 4, 3)).astype(np.float32)
    per_step = rnp.euclidean_distance(predictions.reshape(8, 3), labels.reshape(8, 3)).reshape(2, 4)
    np.testing.assert_allclose(test.test(("loss_per_item", [predictions, labels])), per_step.mean(axis=1), rtol=1e-5)
    loss_fn = EuclideanDistanceLoss()
    loss_fn.item_rank = 1
    # (3, 4) - (0, 0) has gradient (0.6, 0.8); a zero distance gets 0 (not NaN); labels get none.
    out, (d_pred, d_labels) = graph_fn_grads(backend, loss_fn._graph_fn_loss_per_item,
                                             [f32([3.0, 4.0], [1.0, 1.0]), f32([0.0, 0.0], [1.0, 1.0])])
    np.testing.assert_allclose(out, [5.0, 0.0])
    np.testing.assert_allclose(d_pred, f32([0.6, 0.8], [0.0, 0.0]), rtol=1e-6)
    assert d_labels is None


def test_categorical_cross_entropy_int_and_soft_labels(backend):
    f2 = FloatBox(shape=(2,), add_batch_rank=True)
    logits = f32([np.log(3.0), 0.0], [np.log(3.0), 0.0], [0.0, 0.0])
    # softmax([ln 3, 0]) = [3/4, 1/4].
    int_labels = IntBox(2, add_batch_rank=True)
    test = ComponentTest(CategoricalCrossEntropyLoss(), input_spaces=dict(predictions=f2, labels=int_labels),
                         backend=backend)
    total, per_item = test.test(("loss", [logits, np.array([0, 1, 1])]))
    np.testing.assert_allclose(per_item, [-np.log(0.75), np.log(4.0), np.log(2.0)], rtol=1e-5)
    np.testing.assert_allclose(total, per_item.mean(), rtol=1e-6)
    test = ComponentTest(CategoricalCrossEntropyLoss(), input_spaces=dict(predictions=f2, labels=f2), backend=backend)
    soft = f32([0.5, 0.5], [0.0, 1.0], [0.25, 0.75])
    per_item = test.test(("loss_per_item", [logits, soft]))
    np.testing.assert_allclose(per_item, [0.5 * (np.log(4.0) - np.log(0.75)), np.log(4.0), np.log(2.0)], rtol=1e-5)
    np.testing.assert_allclose(per_item, rnp.categorical_cross_entropy(logits, soft), rtol=1e-5)
    # The gradient w.r.t. the logits is softmax - labels; soft labels are constants.
    _, (d_logits, d_soft) = graph_fn_grads(backend, test.component._graph_fn_loss_per_item, [logits, soft])
    np.testing.assert_allclose(d_logits, rnp.softmax(logits) - soft, rtol=1e-5, atol=1e-6)
    assert d_soft is None


def test_supervised_errors(backend):
    f2 = FloatBox(shape=(2,), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="labels"):
        ComponentTest(EuclideanDistanceLoss(), input_spaces=dict(predictions=f2, labels=FloatBox(
            shape=(3,), add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="labels"):
        ComponentTest(CategoricalCrossEntropyLoss(), input_spaces=dict(predictions=f2, labels=IntBox(
            3, add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="predictions"):
        ComponentTest(CategoricalCrossEntropyLoss(), input_spaces=dict(
            predictions=FloatBox(shape=(2, 2), add_batch_rank=True), labels=IntBox(2, add_batch_rank=True)),
            backend=backend)
