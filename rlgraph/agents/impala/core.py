"""`IMPALACore`: the root component of `IMPALAAgent` (acting for the actors, the V-trace learner update)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, List, Optional

from rlgraph.backend_system import get_backend
from rlgraph.agents.agent_core import PreprocessingCore
from rlgraph.components.component import Component
from rlgraph.components.loss_functions.impala_loss_function import IMPALALossFunction
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.components.action_adapters.action_adapter import ActionAdapter
from rlgraph.components.action_adapters.pre_network import adapter_spec_errors, leaf_adapter_spec
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.spaces import FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import flatten_op


class IMPALACore(PreprocessingCore):
    """Preprocessor, a policy network with action and value heads, the IMPALA loss and the optimizer.

    The network is run the same way for acting and learning: the layers before the first
    recurrent layer see every step as a batch row (B * T rows), the previous action (one-hot) and
    reward are appended to their output if configured, a recurrent layer (LSTM) unrolls over time
    from the rollout's initial internal states (zeroed where an episode began, `resets`), and the
    policy and value heads again see B * T rows. An actor acts on [B, ...] states as sequences of
    one step.

    One learner update on a rollout record (B rows of T steps, states s_0 .. s_{T-1} and the
    bootstrap state s_T preprocessed; `rlgraph/agents/impala/rollouts.py`) reads on one screen:

        logits, V = policy(s_0 .. s_T)                 # [B, T + 1, A], [B, T + 1]
        pi_logits, V_t, V_T = logits[:, :T], V[:, :T], V[:, T]
        record = {"action_probs": mu, "actions": a_t, "rewards": r_t, "terminals": d_t,   # the rollout's
                  "logits_actions_pi": pi_logits, "values": V_t, "bootstrapped_values": V_T}
        loss, loss_per_item = IMPALALossFunction.loss_from_record(record)   # V-trace
        optimizer.step(policy variables, loss)

    Args:
        network_spec: A list of layer specs (or {"layers": [...]}) with at most one LSTM, or a
            feed-forward `NeuralNetwork`; see `split_network`.
        action_space: The action space (IntBox, or a Dict/Tuple of IntBox leaves).
        preprocessing_spec: The preprocessor layer specs (applied when acting).
        loss_function: The `IMPALALossFunction`.
        optimizer: The optimizer component.
        action_adapter_spec: Extra `ActionAdapter` arguments for every action leaf (a
            `pre_network_spec` among them: each adapter's own layers before its action layer), or
            per action name ({"turn": {...}, ...}) as for `Policy`.
        feed_previous_action: Append the one-hot previous action to the recurrent layer's input
            (without one: to the heads' input).
        feed_previous_reward: Append the previous reward likewise.
        scope: Default "impala-core".

    Sub-components: "preprocessor-stack"; "policy" holding "torso", the LSTM, "head",
    "action-adapter-i" per action leaf and the value head "value-function-node"; the loss function
    and the optimizer.

    API (built according to the network; `extras` is a dict of what the network needs:
    "internal_states" (c, h) [B, units], "previous_actions" (nested like the actions) and
    "previous_rewards" [B]):
        get_preprocessed_states(states)
        act(states[, extras]) -> (preprocessed_states, logits, probabilities[, last_internal_states])
        act_preprocessed(preprocessed_states[, extras]) -> the same
        update_from_rollout(rollout, time_percentage) -> (loss, loss_per_item [B])
        get_rollout_loss(rollout) -> (loss, loss_per_item [B]), no update
        reset_preprocessor()
    """

    def __init__(self, network_spec: Any, action_space: Any, preprocessing_spec: list,
                 loss_function: IMPALALossFunction, optimizer: Component, action_adapter_spec: Optional[dict] = None,
                 feed_previous_action: bool = False, feed_previous_reward: bool = False, scope: str = "impala-core"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.action_space = action_space
        self.action_leaves = OrderedDict(action_leaves(action_space))
        self.feed_previous_action = bool(feed_previous_action)
        self.feed_previous_reward = bool(feed_previous_reward)
        torso, rnn, head = split_network(network_spec)
        # The policy: torso -> [previous action/reward appended] -> [LSTM] -> [head] -> action and value heads.
        self.policy = Component(scope="policy")
        self.torso = torso if torso is None or isinstance(torso, Component) else NeuralNetwork(*torso, scope="torso")
        self.rnn = rnn
        self.head = NeuralNetwork(*head, scope="head") if head else None
        adapter_spec = dict(action_adapter_spec or {})
        flat_actions = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
        self.action_adapters = OrderedDict()
        for i, (key, leaf) in enumerate(flat_actions.items()):
            with adapter_spec_errors(type(self).__name__, key):
                self.action_adapters[key] = ActionAdapter.from_spec(
                    leaf_adapter_spec(adapter_spec, list(flat_actions), i), action_space=leaf,
                    scope=f"action-adapter-{i}")
        self.value_head = DenseLayer(units=1, scope="value-function-node")
        self.policy.add_components(*[c for c in (self.torso, self.rnn, self.head) if c is not None],
                                   *self.action_adapters.values(), self.value_head)
        self.recurrent = rnn is not None
        self.loss_function = loss_function
        self.optimizer = optimizer
        self.needs_extras = self.recurrent or self.feed_previous_action or self.feed_previous_reward
        self.add_components(self.preprocessor, self.policy, self.loss_function, self.optimizer)
        if self.needs_extras:
            rlgraph_api(component=self, name="act", no_grad=True)(IMPALACore._act_with_extras)
            rlgraph_api(component=self, name="act_preprocessed", no_grad=True)(
                IMPALACore._act_preprocessed_with_extras)
        else:
            rlgraph_api(component=self, name="act", no_grad=True)(IMPALACore._act)
            rlgraph_api(component=self, name="act_preprocessed", no_grad=True)(IMPALACore._act_preprocessed)

    # --- The network ----------------------------------------------------------------------------
    def _run_network(self, states, extras, reference, resets=None):
        """(flat logits {leaf key: [N, A]}, flat probabilities, values [N, 1], last internal states
        or None) for folded states [N, ...] (N = B * T); `reference` [B, T, ...] gives the unfolded
        shape for the recurrent layer."""
        x = states if self.torso is None else self.torso.apply(states)["output"]
        if self.feed_previous_action or self.feed_previous_reward:
            x = self._graph_fn_append_previous(
                x, extras["previous_actions"] if self.feed_previous_action else None,
                extras["previous_rewards"] if self.feed_previous_reward else None)
        last_internal_states = None
        if self.rnn is not None:
            result = self.rnn.apply(self._graph_fn_unfold(x, reference), extras["internal_states"], None, resets)
            x, last_internal_states = self._graph_fn_fold(result["output"]), result["last_internal_states"]
        if self.head is not None:
            x = self.head.apply(x)["output"]
        logits, probabilities = OrderedDict(), OrderedDict()
        for key, adapter in self.action_adapters.items():
            logits[key], probabilities[key], _ = adapter.get_logits_probabilities_log_probs(x)
        return logits, probabilities, self.value_head.apply(x), last_internal_states

    def _nest(self, flat: "OrderedDict[str, Any]") -> Any:
        return flat[""] if list(flat) == [""] else self.action_space.unflatten(flat)

    # --- Acting ---------------------------------------------------------------------------------
    def _act_common(self, preprocessed, extras):
        reference = self._graph_fn_expand_time(preprocessed) if self.recurrent else None
        logits, probabilities, _, last = self._run_network(preprocessed, extras, reference)
        out = (self._nest(logits), self._nest(probabilities))
        return out + (last,) if self.recurrent else out

    def _act(self, states):
        preprocessed = self.preprocessor.preprocess(states)
        return (preprocessed,) + self._act_common(preprocessed, None)

    def _act_with_extras(self, states, extras):
        preprocessed = self.preprocessor.preprocess(states)
        return (preprocessed,) + self._act_common(preprocessed, extras)

    def _act_preprocessed(self, preprocessed_states):
        return (self._graph_fn_identity(preprocessed_states),) + self._act_common(preprocessed_states, None)

    def _act_preprocessed_with_extras(self, preprocessed_states, extras):
        return (self._graph_fn_identity(preprocessed_states),) + self._act_common(preprocessed_states, extras)


    # --- Learning -------------------------------------------------------------------------------
    def _loss(self, rollout):
        # The network runs over s_0 .. s_T (T + 1 steps); the loss reads steps 0 .. T - 1 and V(s_T).
        states = self._graph_fn_append_step(rollout["states"], rollout["bootstrap_states"])
        extras = None
        if self.needs_extras:
            extras = {}
            if self.recurrent:
                extras["internal_states"] = rollout["initial_internal_states"]
            if self.feed_previous_action:
                extras["previous_actions"] = self._graph_fn_fold(self._graph_fn_append_previous_step(
                    rollout["previous_actions"], rollout["actions"], rollout["terminals"]))
            if self.feed_previous_reward:
                extras["previous_rewards"] = self._graph_fn_fold(self._graph_fn_append_previous_step(
                    rollout["previous_rewards"], rollout["rewards"], rollout["terminals"]))
        resets = self._graph_fn_resets(rollout["terminals"]) if self.recurrent else None
        logits, _, values, _ = self._run_network(self._graph_fn_fold(states), extras, states, resets)
        pi_logits = OrderedDict((k, self._graph_fn_steps(self._graph_fn_unfold(v, states))) for k, v in logits.items())
        v_t, v_T = self._graph_fn_values(self._graph_fn_unfold(values, states))
        # One keyed record: the rollout's fields the loss reads and what the network computed.
        record = {key: rollout[key] for key in ("action_probs", "actions", "rewards", "terminals")}
        record.update(logits_actions_pi=self._nest(pi_logits), values=v_t, bootstrapped_values=v_T)
        return self.loss_function.loss_from_record(record)

    @rlgraph_api
    def update_from_rollout(self, rollout, time_percentage):
        loss, loss_per_item = self._loss(rollout)
        variables = self._graph_fn_policy_variables()
        return self.optimizer.step(variables, loss, loss_per_item, time_percentage)

    @rlgraph_api(no_grad=True)
    def get_rollout_loss(self, rollout):
        return self._loss(rollout)

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_identity(self, x):
        return x

    @graph_fn(split_ops=True, output_space=lambda self, x: x.with_time_rank(False))
    def _graph_fn_fold(self, x):
        """[B, T, ...] -> [B * T, ...]."""
        if get_backend() == "tf":
            import tensorflow as tf
            shape = tf.shape(x)
            return tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))
        return x.reshape((-1,) + tuple(x.shape[2:]))

    @graph_fn(output_space=lambda self, x, reference: x.with_time_rank(True))
    def _graph_fn_unfold(self, x, reference):
        """[B * T, ...] -> [B, T, ...] with B, T those of `reference` [B, T, ...]."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reshape(x, tf.concat([tf.shape(reference)[:2], tf.shape(x)[1:]], axis=0))
        return x.reshape(tuple(reference.shape[:2]) + tuple(x.shape[1:]))

    @graph_fn(output_space=lambda self, x: x.with_time_rank(True))
    def _graph_fn_expand_time(self, x):
        """[B, ...] -> [B, 1, ...] (an actor's step as a sequence of one)."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.expand_dims(x, 1)
        return x.unsqueeze(1)

    @graph_fn(output_space=lambda self, sequence, last: sequence)
    def _graph_fn_append_step(self, sequence, last):
        """[B, T, ...] and [B, ...] -> [B, T + 1, ...]."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.concat([sequence, tf.cast(last, sequence.dtype)[:, None]], axis=1)
        import torch
        return torch.cat([sequence, last.to(sequence.dtype).unsqueeze(1)], dim=1)

    @graph_fn(flatten_ops=True, split_ops=True, output_space=lambda self, previous, values, terminals: previous)
    def _graph_fn_append_previous_step(self, previous, values, terminals):
        """The previous actions (or rewards) of steps 0 .. T: those of steps 0 .. T - 1 [B, T] and,
        for step T, a_{T-1} (r_{T-1}), or 0 if an episode ended at step T - 1."""
        if get_backend() == "tf":
            import tensorflow as tf
            last = tf.where(tf.cast(terminals[:, -1], tf.bool), tf.zeros_like(values[:, -1]), values[:, -1])
            return tf.concat([previous, tf.cast(last, previous.dtype)[:, None]], axis=1)
        import torch
        last = torch.where(terminals[:, -1].to(torch.bool), torch.zeros_like(values[:, -1]), values[:, -1])
        return torch.cat([previous, last.to(previous.dtype).unsqueeze(1)], dim=1)

    @graph_fn(output_space=lambda self, x: x)
    def _graph_fn_steps(self, x):
        """[B, T + 1, ...] -> [B, T, ...] (drops the bootstrap step)."""
        return x[:, :-1]

    @graph_fn(returns=2, output_space=lambda self, values: (FloatBox(add_batch_rank=True, add_time_rank=True),
                                                            FloatBox(add_batch_rank=True)))
    def _graph_fn_values(self, values):
        """[B, T + 1, 1] -> (V_t [B, T], V_T [B])."""
        v = values[:, :, 0]
        return v[:, :-1], v[:, -1]

    @graph_fn(output_space=lambda self, terminals: terminals)
    def _graph_fn_resets(self, terminals):
        """[B, T] terminals -> [B, T + 1] resets: step t + 1 starts an episode where step t ended one."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.concat([tf.zeros_like(terminals[:, :1]), tf.cast(terminals, tf.bool)], axis=1)
        import torch
        terminals = terminals.to(torch.bool)
        return torch.cat([torch.zeros_like(terminals[:, :1]), terminals], dim=1)

    @graph_fn
    def _graph_fn_append_previous(self, x, previous_actions, previous_rewards):
        """[N, n] -> [N, n + sum(A_leaf) + 1]: the one-hot previous actions and the previous reward appended."""
        parts = [x]
        if get_backend() == "tf":
            import tensorflow as tf
            if previous_actions is not None:
                flat = flatten_op(previous_actions)
                parts += [tf.one_hot(tf.cast(flat[k], tf.int32), n, dtype=x.dtype) for k, n in self.action_leaves.items()]
            if previous_rewards is not None:
                parts.append(tf.cast(tf.reshape(previous_rewards, [-1, 1]), x.dtype))
            return tf.concat(parts, axis=-1)
        import torch
        if previous_actions is not None:
            flat = flatten_op(previous_actions)
            parts += [torch.nn.functional.one_hot(flat[k].long(), n).to(x.dtype) for k, n in self.action_leaves.items()]
        if previous_rewards is not None:
            parts.append(previous_rewards.reshape(-1, 1).to(x.dtype))
        return torch.cat(parts, dim=-1)

    @graph_fn
    def _graph_fn_policy_variables(self):
        return self.policy.get_variables(custom_scope_separator="-", trainable_only=True)


RECURRENT_TYPES = ("lstm", "lstm-layer", "lstmlayer")


def split_network(network_spec: Any) -> tuple:
    """(torso layer specs or a component, the recurrent layer or None, head layer specs) of a
    network spec: a list of layer specs (or {"layers": [...]}) split at its first LSTM, or a
    feed-forward `NeuralNetwork`.

    Raises:
        RLGraphSpecError: For a network object with a recurrent layer, or a second recurrent layer.
    """
    from rlgraph.components.layers.nn.lstm_layer import LSTMLayer
    where = "IMPALAAgent(network_spec)"
    if isinstance(network_spec, Component):
        if any(getattr(c, "is_recurrent", False) for c in network_spec.sub_components.values()):
            raise RLGraphSpecError("a recurrent network must be given as a list of layer specs", where=where,
                                   received=type(network_spec).__name__,
                                   hint="IMPALA unrolls the LSTM itself over each rollout: pass the layer specs.")
        return network_spec, None, []
    specs = network_spec.get("layers") if isinstance(network_spec, dict) else network_spec
    if not isinstance(specs, (list, tuple)) or not specs:
        raise RLGraphSpecError("network_spec must be a non-empty list of layer specs", where=where,
                               expected='[{"type": "dense", "units": 64, "activation": "relu"}, ...]',
                               received=repr(network_spec)[:80])

    def is_rnn(spec):
        if isinstance(spec, Component):
            return getattr(spec, "is_recurrent", False)
        return isinstance(spec, dict) and str(spec.get("type", "")).replace("_", "-").lower() in RECURRENT_TYPES

    indices = [i for i, spec in enumerate(specs) if is_rnn(spec)]
    if not indices:
        return list(specs), None, []
    if len(indices) > 1:
        raise RLGraphSpecError("IMPALA networks may hold one recurrent layer", where=where,
                               received=f"{len(indices)} LSTM layers")
    i = indices[0]
    rnn = specs[i] if isinstance(specs[i], Component) else LSTMLayer.from_spec(dict(specs[i], type=LSTMLayer))
    return list(specs[:i]) or None, rnn, list(specs[i + 1:])


def action_leaves(action_space: Any) -> List[tuple]:
    """[(auto-key, num_categories)] of a discrete action space's leaves ("" for a single IntBox)."""
    from rlgraph.spaces.containers import ContainerSpace
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    return [(key, int(leaf.num_categories)) for key, leaf in flat.items()]
