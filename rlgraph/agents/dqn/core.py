"""`DQNCore`: the root component of `DQNAgent` (acting, memory, loss, optimizer, target sync)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

from rlgraph.agents.records import check_record_keys
from rlgraph.agents.agent_core import AgentCore
from rlgraph.backend_system import get_backend
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.decorators import graph_fn, rlgraph_api


class DQNCore(AgentCore):
    """Preprocessor, online and target Q-policies, exploration, memory, loss(es) and optimizer.

    Learning reads one record: a dict of batched transitions with the keys `RECORD_KEYS`
    (`rlgraph/agents/records.py`), states already preprocessed:

        records = {"states": s_t, "actions": a_t, "rewards": r_t, "terminals": d_t, "next_states": s_tp1}

    It goes into the in-graph memory as it is (`insert_records`), comes out of it as it is
    (`update_from_memory`), or comes from outside (`update_from_external_batch`, `get_td_loss`:
    a python-side memory, Ape-X workers). One update, per action leaf (`DQNLossFunction`; numpy
    reference `rlgraph.utils.numpy.dqn_loss_per_item`), with Q the policy and Qt the target policy:

        q_s, qt_sp, q_sp = Q(s_t), Qt(s_tp1), Q(s_tp1)                 # policy.get_q_values
        loss, loss_per_item, td = loss_function.loss_from_record(dict(    # one keyed dict
            q_values_s=q_s, actions=a_t, rewards=r_t, terminals=d_t, qt_values_sp=qt_sp,
            q_values_sp=q_sp (double_q only), importance_weights=w))
          # q_tm1 = q_s[a_t];  a_star = argmax q_sp if double_q else argmax qt_sp
          # y = r_t + gamma**n_step * (1 - d_t) * qt_sp[a_star]        # a constant (no gradient)
          # td = y - q_tm1;  loss_per_item = w * (huber(td) if huber_loss else 0.5 * td**2)
          # loss = mean(loss_per_item)
        optimizer.step(policy variables, loss)                       # prioritized: |td| -> priorities

    The target network (`target_policy`) follows the policy through `sync_target_qnet`.

    One `DQNLossFunction` per leaf of the action space (all IntBox); a container action space
    sums the leaves' losses (and their absolute TD errors for priorities), as if each leaf were
    an independent Q-head.

    API (all batched):
        get_actions(states, time_percentage, use_exploration) -> (preprocessed_states, actions)
        get_actions_from_preprocessed_states(preprocessed_states, time_percentage, use_exploration)
        get_greedy_actions(states) -> (preprocessed_states, actions without exploration)
        get_greedy_actions_from_preprocessed_states(preprocessed_states)
        get_preprocessed_states(states)
        get_q_values(preprocessed_states) -> Q [B, num_actions] (nested for containers)
        get_target_q_values_and_actions(preprocessed_states) -> (Qt, greedy target actions)
        insert_records(records): for an in-graph memory
        update_from_memory(batch_size, time_percentage) -> (loss, loss_per_item [B]): samples
            the in-graph memory, steps the optimizer and, if prioritized, updates the priorities
        update_priorities(indices, priorities): for an in-graph prioritized memory
        get_memory_size() -> the number of stored records (in-graph memories)
        update_from_external_batch(records, importance_weights, time_percentage)
            -> (loss, loss_per_item [B], td_errors [B])
        get_td_loss(records, importance_weights) -> (loss, loss_per_item [B], td_errors [B]),
            no update
        sync_target_qnet()
        reset_preprocessor()

    Raises:
        RLGraphError: When a record argument is not a dict with the `RECORD_KEYS` (checked on its
            keys, at build and in define-by-run calls).
    """

    # One loss function per action leaf, made with the DQN arguments plus `loss_kwargs` (DQfD's subclass).
    loss_function_class = DQNLossFunction

    def __init__(self, policy: Component, preprocessing_spec: list, exploration_spec: Any, memory: Any,
                 optimizer: Component, discount: float, double_q: bool, huber_loss: bool, n_step: int,
                 sync_tau: float, action_keys: list, store_last_q_table: bool = False, scope: str = "dqn-core",
                 loss_kwargs: Optional[dict] = None):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.policy = policy
        self.policy.add_components(Synchronizable(scope="synchronizable"))
        self.target_policy = policy.copy(scope="target-policy", trainable=False)
        self.target_policy.sub_components["synchronizable"].sync_tau = float(sync_tau)
        self.exploration = exploration_spec if isinstance(exploration_spec, Exploration) else \
            Exploration.from_spec(exploration_spec or {})
        self.memory = memory  # None: the agent keeps a python-side memory.
        self.prioritized = isinstance(memory, PrioritizedReplay)
        self.optimizer = optimizer
        self.double_q = double_q
        self.action_keys = action_keys  # None: a single IntBox action.
        self.store_last_q_table = store_last_q_table
        self.loss_functions = OrderedDict(
            (key, self.loss_function_class(discount=discount, double_q=double_q, huber_loss=huber_loss, n_step=n_step,
                                           importance_weights=True, **(loss_kwargs or {}),
                                           scope=f"loss-function-{i}" if key else "loss-function"))
            for i, key in enumerate(action_keys or [""]))
        components = [self.preprocessor, self.policy, self.target_policy, self.exploration, self.optimizer,
                      *self.loss_functions.values()]
        if memory is not None:
            components.append(memory)
        self.add_components(*components)
        if memory is not None:
            rlgraph_api(component=self, name="insert_records")(DQNCore._insert_records)
            rlgraph_api(component=self, name="update_from_memory")(DQNCore._update_from_memory)
            rlgraph_api(component=self, name="get_memory_size", no_grad=True)(DQNCore._get_memory_size)
        if self.prioritized:
            rlgraph_api(component=self, name="update_priorities")(DQNCore._update_priorities)

    # --- Acting (the API: `AgentCore`) ------------------------------------------------------------
    def _greedy(self, preprocessed_states):
        return self.policy.get_deterministic_action(preprocessed_states)

    def _act(self, preprocessed, time_percentage, use_exploration):
        greedy = self.policy.get_deterministic_action(preprocessed)
        return self.exploration.get_action(greedy, time_percentage, use_exploration)

    @rlgraph_api(no_grad=True)
    def get_q_values(self, preprocessed_states):
        return self.policy.get_q_values(preprocessed_states)

    @rlgraph_api(no_grad=True)
    def get_target_q_values_and_actions(self, preprocessed_states):
        """The target network's Q-values and greedy actions (e.g. to inspect how far it lags)."""
        return self.target_policy.get_q_values(preprocessed_states), \
            self.target_policy.get_deterministic_action(preprocessed_states)

    @rlgraph_api(no_grad=True)
    def sync_target_qnet(self):
        values = self.policy.sub_components["synchronizable"].get_sync_values()
        return self.target_policy.sub_components["synchronizable"].sync(values)

    # --- Memory and learning --------------------------------------------------------------------
    def _update_from_memory(self, batch_size, time_percentage):
        if self.prioritized:
            records, indices, weights = self.memory.get_records(batch_size)
        else:
            records = self.memory.get_records(batch_size)
            weights = self._graph_fn_ones_like(records["rewards"])
        loss, loss_per_item, td = self._loss(records, weights)
        if self.prioritized:
            self.memory.update_records(indices, td)
        variables = self._graph_fn_policy_variables()
        return self.optimizer.step(variables, loss, loss_per_item, time_percentage)

    @rlgraph_api
    def update_from_external_batch(self, records, importance_weights, time_percentage):
        check_record_keys(records, f"{self.global_scope}.update_from_external_batch(records)")
        loss, loss_per_item, td = self._loss(records, importance_weights)
        variables = self._graph_fn_policy_variables()
        step_loss, step_loss_per_item = self.optimizer.step(variables, loss, loss_per_item, time_percentage)
        return step_loss, step_loss_per_item, td

    @rlgraph_api(no_grad=True)
    def get_td_loss(self, records, importance_weights):
        check_record_keys(records, f"{self.global_scope}.get_td_loss(records)")
        return self._loss(records, importance_weights)

    def _loss(self, records, weights, **keys):
        """(loss, loss_per_item [B], td_errors [B]) of a record, summed over the action leaves.

        The record's fields are picked by key here, in python: no graph function packs or splits it.
        Each leaf's loss reads one keyed dict (`DQNLossFunction.loss_from_record`); `keys` are
        further keys of it (DQfD: `expert_mask`).
        """
        q_s = self.policy.get_q_values(records["states"])
        qt_sp = self.target_policy.get_q_values(records["next_states"])
        q_sp = self.policy.get_q_values(records["next_states"]) if self.double_q else None
        losses, per_items, tds = [], [], []
        for key, loss_function in self.loss_functions.items():
            leaf = (lambda x: x) if not key else (lambda x, k=key: self._graph_fn_leaf(x, k))
            loss_record = dict(q_values_s=leaf(q_s), actions=leaf(records["actions"]), rewards=records["rewards"],
                               terminals=records["terminals"], qt_values_sp=leaf(qt_sp), importance_weights=weights,
                               **keys)
            if self.double_q:
                loss_record["q_values_sp"] = leaf(q_sp)
            loss, per_item, td = loss_function.loss_from_record(loss_record)
            losses.append(loss)
            per_items.append(per_item)
            tds.append(td)
        if len(losses) == 1:
            return losses[0], per_items[0], tds[0]
        return self._graph_fn_sum_leaves(losses, per_items, tds)

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_leaf(self, nested, key):
        return flatten_op(nested)[key]

    @graph_fn(returns=3)
    def _graph_fn_sum_leaves(self, losses, per_items, tds):
        """Sums over the action leaves; the TD errors as absolute values (for priorities)."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.add_n(losses), tf.add_n(per_items), tf.add_n([tf.abs(td) for td in tds])
        return sum(losses), sum(per_items), sum(td.abs() for td in tds)

    @graph_fn
    def _graph_fn_policy_variables(self):
        return self.policy.get_variables(custom_scope_separator="-", trainable_only=True)


def action_leaf_keys(action_space: Any) -> Optional[list]:
    """The auto-keys of a container action space's leaves (None for a primitive space)."""
    from rlgraph.spaces.containers import ContainerSpace
    if not isinstance(action_space, ContainerSpace):
        return None
    return list(action_space.flatten().keys())
