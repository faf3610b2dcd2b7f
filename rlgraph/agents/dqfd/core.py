"""`DQFDCore`: `DQNCore` plus an expert (demonstration) memory and the large-margin loss."""
from __future__ import annotations

from rlgraph.agents.dqn.core import DQNCore
from rlgraph.agents.records import check_record_keys
from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.loss_functions.dqfd_loss_function import DQFDLossFunction
from rlgraph.spaces import BoolBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import map_structure


class DQFDCore(DQNCore):
    """The root component of `DQFDAgent` (Hester et al. 2017, https://arxiv.org/abs/1704.03732).

    Everything `DQNCore` has (its docstring writes the TD update out), with `DQFDLossFunction` as
    the loss of each action leaf and a second, uniform replay memory `demo_memory` that holds the
    demonstrations and is never overwritten by the agent's own experience. One update on a batch of
    `batch_size` own records and `demo_batch_size` demonstrations:

        records = concat(memory.sample(batch_size), demo_memory.sample(demo_batch_size))
        expert_mask = [False] * batch_size + [True] * demo_batch_size
        w = concat(importance weights of the memory (1 if not prioritized), ones)
        loss, loss_t, td = loss_function.loss_from_record(dict(     # DQNCore's keys plus the mask
            q_values_s=Q(s_t), actions=a_t, ..., importance_weights=w, expert_mask=expert_mask))
          # loss_t = w_t * (dqn_loss_t + supervised_weight * expert_mask_t * J_E_t)
          # J_E_t = max_a [Q(s_t, a) + expert_margin * (a != a_t)] - Q(s_t, a_t)
        optimizer.step(policy variables, mean(loss_t))       # prioritized: |td| of the own records

    Added or changed API (all batched):
        insert_demos(records): into the demonstration memory.
        get_demo_memory_size() -> the number of stored demonstrations.
        update_from_demos(batch_size, time_percentage) -> (loss, loss_per_item): demonstrations only
            (pre-training).
        update_from_memory_and_demos(batch_size, demo_batch_size, time_percentage)
            -> (loss, loss_per_item [batch_size + demo_batch_size]): own records first.
        update_from_external_batch(records, importance_weights, expert_mask, time_percentage)
            -> (loss, loss_per_item, td_errors).
        get_td_loss(records, importance_weights, expert_mask) -> (loss, loss_per_item, td_errors).
    `update_from_memory(batch_size, time_percentage)` (own records only, no expert rows) stays; its
    records get an all-False `expert_mask`, so that every update path gives the loss the same keys.

    Args:
        demo_memory: The demonstration memory (a `ReplayMemory`).
        expert_margin: See `DQFDLossFunction`.
        supervised_weight: See `DQFDLossFunction`.
        **kwargs: `DQNCore` arguments (the memory must be an in-graph one).
    """

    loss_function_class = DQFDLossFunction

    def __init__(self, demo_memory: Component, expert_margin: float, supervised_weight: float, **kwargs):
        super().__init__(loss_kwargs=dict(expert_margin=expert_margin, supervised_weight=supervised_weight),
                         **kwargs)
        self.demo_memory = demo_memory
        self.add_components(demo_memory)

    # --- The demonstration memory ---------------------------------------------------------------
    @rlgraph_api
    def insert_demos(self, records):
        check_record_keys(records, f"{self.global_scope}.insert_demos(records)")
        return self.demo_memory.insert_records(records)

    @rlgraph_api(no_grad=True)
    def get_demo_memory_size(self):
        return self.demo_memory.get_size()

    # --- Learning -------------------------------------------------------------------------------
    @rlgraph_api
    def update_from_demos(self, batch_size, time_percentage):
        records = self.demo_memory.get_records(batch_size)
        weights = self._graph_fn_ones_like(records["rewards"])
        expert_mask = self._graph_fn_expert_mask(None, records["rewards"])
        loss, loss_per_item, _ = self._loss(records, weights, expert_mask=expert_mask)
        return self.optimizer.step(self._graph_fn_policy_variables(), loss, loss_per_item, time_percentage)

    @rlgraph_api
    def update_from_memory_and_demos(self, batch_size, demo_batch_size, time_percentage):
        if self.prioritized:
            own, indices, own_weights = self.memory.get_records(batch_size)
        else:
            own = self.memory.get_records(batch_size)
            own_weights = self._graph_fn_ones_like(own["rewards"])
        demos = self.demo_memory.get_records(demo_batch_size)
        records = self._graph_fn_concat_records(own, demos)
        weights = self._graph_fn_concat_records(own_weights, self._graph_fn_ones_like(demos["rewards"]))
        expert_mask = self._graph_fn_expert_mask(own["rewards"], demos["rewards"])
        loss, loss_per_item, td = self._loss(records, weights, expert_mask=expert_mask)
        if self.prioritized:
            self.memory.update_records(indices, self._graph_fn_head(td, own_weights))
        return self.optimizer.step(self._graph_fn_policy_variables(), loss, loss_per_item, time_percentage)

    @rlgraph_api
    def update_from_external_batch(self, records, importance_weights, expert_mask, time_percentage):
        check_record_keys(records, f"{self.global_scope}.update_from_external_batch(records)")
        loss, loss_per_item, td = self._loss(records, importance_weights, expert_mask=expert_mask)
        step_loss, step_loss_per_item = self.optimizer.step(self._graph_fn_policy_variables(), loss, loss_per_item,
                                                            time_percentage)
        return step_loss, step_loss_per_item, td

    @rlgraph_api(no_grad=True)
    def get_td_loss(self, records, importance_weights, expert_mask):
        check_record_keys(records, f"{self.global_scope}.get_td_loss(records)")
        return self._loss(records, importance_weights, expert_mask=expert_mask)

    def _loss(self, records, weights, expert_mask=None):
        """`DQNCore._loss` with `expert_mask` in each leaf's loss record: the given one, or all
        False (own records only: `update_from_memory`). Every update path hands the loss the same
        keys, so its `record` argument has one space."""
        if expert_mask is None:
            expert_mask = self._graph_fn_expert_mask(records["rewards"], None)
        return super()._loss(records, weights, expert_mask=expert_mask)

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn(output_space=lambda self, first, second: first)
    def _graph_fn_concat_records(self, first, second):
        """Every leaf of `first` followed by the same leaf of `second` along the batch rank."""
        if get_backend() == "tf":
            import tensorflow as tf
            return map_structure(lambda a, b: tf.concat([a, b], axis=0), first, second)
        import torch
        return map_structure(lambda a, b: torch.cat([a, b], dim=0), first, second)

    @graph_fn(output_space=BoolBox(add_batch_rank=True))
    def _graph_fn_expert_mask(self, own_rewards, demo_rewards):
        """[B_own + B_demo] bool: False for the own records, True for the demos (either None: none of them)."""
        if get_backend() == "tf":
            import tensorflow as tf
            parts = ([tf.zeros_like(own_rewards, dtype=tf.bool)] if own_rewards is not None else []) + \
                ([tf.ones_like(demo_rewards, dtype=tf.bool)] if demo_rewards is not None else [])
            return parts[0] if len(parts) == 1 else tf.concat(parts, 0)
        import torch
        parts = ([torch.zeros_like(own_rewards, dtype=torch.bool)] if own_rewards is not None else []) + \
            ([torch.ones_like(demo_rewards, dtype=torch.bool)] if demo_rewards is not None else [])
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    @graph_fn(output_space=lambda self, values, like: values)
    def _graph_fn_head(self, values, like):
        """The first len(like) rows of `values` (the own records' TD errors)."""
        if get_backend() == "tf":
            import tensorflow as tf
            return values[:tf.shape(like)[0]]
        return values[:like.shape[0]]
