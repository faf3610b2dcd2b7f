"""`DQNCore`: the root component of `DQNAgent` (acting, memory, loss, optimizer, target sync)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.decorators import graph_fn, rlgraph_api

_RECORD_KEYS = ("states", "actions", "rewards", "next_states", "terminals")


class DQNCore(Component):
    """Preprocessor, online and target Q-policies, exploration, memory, loss(es) and optimizer.

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
        insert_records(preprocessed_states, actions, rewards, next_states, terminals)
        update_from_memory(batch_size, time_percentage) -> (loss, loss_per_item)
        update_priorities(indices, priorities): for an in-graph prioritized memory
        get_memory_size() -> the number of stored records (in-graph memories)
        update_from_external_batch(preprocessed_states, actions, rewards, terminals, next_states,
            importance_weights, time_percentage) -> (loss, loss_per_item, td_errors)
        get_td_loss(preprocessed_states, actions, rewards, terminals, next_states,
            importance_weights) -> (loss, loss_per_item, td_errors), no update
        sync_target_qnet()
        reset_preprocessor()
    """

    def __init__(self, policy: Component, preprocessing_spec: list, exploration_spec: Any, memory: Any,
                 optimizer: Component, discount: float, double_q: bool, huber_loss: bool, n_step: int,
                 sync_tau: float, action_keys: list, store_last_q_table: bool = False, scope: str = "dqn-core"):
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
        self.record_space = None  # Set by the agent: the memory's record space (with batch rank).
        self.loss_functions = OrderedDict(
            (key, DQNLossFunction(discount=discount, double_q=double_q, huber_loss=huber_loss, n_step=n_step,
                                  importance_weights=True, scope=f"loss-function-{i}" if key else "loss-function"))
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

    # --- Acting ---------------------------------------------------------------------------------
    def _act(self, preprocessed, time_percentage, use_exploration):
        greedy = self.policy.get_deterministic_action(preprocessed)
        return self.exploration.get_action(greedy, time_percentage, use_exploration)

    @rlgraph_api(no_grad=True)
    def get_actions(self, states, time_percentage, use_exploration=True):
        preprocessed = self.preprocessor.preprocess(states)
        return preprocessed, self._act(preprocessed, time_percentage, use_exploration)

    @rlgraph_api(no_grad=True)
    def get_actions_from_preprocessed_states(self, preprocessed_states, time_percentage, use_exploration=True):
        return self._graph_fn_identity(preprocessed_states), \
            self._act(preprocessed_states, time_percentage, use_exploration)

    @rlgraph_api(no_grad=True)
    def get_greedy_actions(self, states):
        """(preprocessed states, greedy actions): acting without exploration (evaluation)."""
        preprocessed = self.preprocessor.preprocess(states)
        return preprocessed, self.policy.get_deterministic_action(preprocessed)

    @rlgraph_api(no_grad=True)
    def get_greedy_actions_from_preprocessed_states(self, preprocessed_states):
        return self._graph_fn_identity(preprocessed_states), \
            self.policy.get_deterministic_action(preprocessed_states)

    @rlgraph_api(no_grad=True)
    def get_preprocessed_states(self, states):
        return self.preprocessor.preprocess(states)

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

    @rlgraph_api(no_grad=True)
    def reset_preprocessor(self):
        return self.preprocessor.reset()

    # --- Memory and learning --------------------------------------------------------------------
    def _insert_records(self, preprocessed_states, actions, rewards, next_states, terminals):
        records = self._graph_fn_record(preprocessed_states, actions, rewards, next_states, terminals)
        return self.memory.insert_records(records)

    def _get_memory_size(self):
        return self.memory.get_size()

    def _update_priorities(self, indices, priorities):
        return self.memory.update_records(indices, priorities)

    def _update_from_memory(self, batch_size, time_percentage):
        if self.prioritized:
            records, indices, weights = self.memory.get_records(batch_size)
        else:
            records = self.memory.get_records(batch_size)
            weights = self._graph_fn_ones_like_rewards(records)
        # Declared: shapes alone would lose e.g. the actions' bounds.
        states, actions, rewards, next_states, terminals = self._graph_fn_split_record(records)
        loss, loss_per_item, td = self._loss(states, actions, rewards, terminals, next_states, weights)
        if self.prioritized:
            self.memory.update_records(indices, td)
        variables = self._graph_fn_policy_variables()
        return self.optimizer.step(variables, loss, loss_per_item, time_percentage)

    @rlgraph_api
    def update_from_external_batch(self, preprocessed_states, actions, rewards, terminals, next_states,
                                   importance_weights, time_percentage):
        loss, loss_per_item, td = self._loss(preprocessed_states, actions, rewards, terminals, next_states,
                                             importance_weights)
        variables = self._graph_fn_policy_variables()
        step_loss, step_loss_per_item = self.optimizer.step(variables, loss, loss_per_item, time_percentage)
        return step_loss, step_loss_per_item, td

    @rlgraph_api(no_grad=True)
    def get_td_loss(self, preprocessed_states, actions, rewards, terminals, next_states, importance_weights):
        return self._loss(preprocessed_states, actions, rewards, terminals, next_states, importance_weights)

    def _loss(self, states, actions, rewards, terminals, next_states, weights):
        """(loss, loss_per_item, td_errors), summed over the action leaves."""
        q_s = self.policy.get_q_values(states)
        qt_sp = self.target_policy.get_q_values(next_states)
        q_sp = self.policy.get_q_values(next_states) if self.double_q else qt_sp
        losses, per_items, tds = [], [], []
        for key, loss_function in self.loss_functions.items():
            leaf = (lambda x: x) if not key else (lambda x, k=key: self._graph_fn_leaf(x, k))
            loss, per_item, td = loss_function.loss_and_td_error(leaf(q_s), leaf(actions), rewards, terminals,
                                                                 leaf(qt_sp), leaf(q_sp), weights)
            losses.append(loss)
            per_items.append(per_item)
            tds.append(td)
        if len(losses) == 1:
            return losses[0], per_items[0], tds[0]
        return self._graph_fn_sum_leaves(losses, per_items, tds)

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_identity(self, x):
        return x

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

    @graph_fn(output_space=lambda self, *spaces: self.record_space)
    def _graph_fn_record(self, states, actions, rewards, next_states, terminals):
        return OrderedDict(states=states, actions=actions, rewards=rewards, next_states=next_states,
                           terminals=terminals)

    @graph_fn(returns=5, output_space=lambda self, records: tuple(
        self.memory.record_space[k].with_batch_rank() for k in _RECORD_KEYS))
    def _graph_fn_split_record(self, records):
        return tuple(records[k] for k in _RECORD_KEYS)

    @graph_fn
    def _graph_fn_ones_like_rewards(self, records):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.ones_like(records["rewards"])
        import torch
        return torch.ones_like(records["rewards"])

    @graph_fn
    def _graph_fn_policy_variables(self):
        return self.policy.get_variables(custom_scope_separator="-", trainable_only=True)


def action_leaf_keys(action_space: Any) -> Optional[list]:
    """The auto-keys of a container action space's leaves (None for a primitive space)."""
    from rlgraph.spaces.containers import ContainerSpace
    if not isinstance(action_space, ContainerSpace):
        return None
    return list(action_space.flatten().keys())
