"""`AgentCore`: the base of the agents' root components, with the acting API every agent serves."""
from __future__ import annotations

from rlgraph.agents.records import check_record_keys
from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api


class PreprocessingCore(Component):
    """The base of the agents' root components: the preprocessing API (`self.preprocessor`, a
    `PreprocessorStack`, is created by the subclass).

    API (batched, without gradients):
        get_preprocessed_states(states)
        reset_preprocessor(): resets stateful preprocessors (at episode starts)
    """

    @rlgraph_api(no_grad=True)
    def get_preprocessed_states(self, states):
        return self.preprocessor.preprocess(states)

    @rlgraph_api(no_grad=True)
    def reset_preprocessor(self):
        return self.preprocessor.reset()


class AgentCore(PreprocessingCore):
    """The acting API of an agent's root component, written once for all agents.

    A subclass creates `self.preprocessor` (a `PreprocessorStack`) and defines two python
    methods that run inside API methods:

        _act(preprocessed_states, time_percentage, use_exploration) -> actions  (exploring: epsilon,
            noise or a sample of the policy)
        _greedy(preprocessed_states) -> actions without exploration (evaluation)

    `Agent.get_action` calls the first pair below, or the greedy pair (`Agent.greedy_apis`) for
    `use_exploration=False`.

    API (all batched, all without gradients):
        get_actions(states, time_percentage, use_exploration) -> (preprocessed_states, actions)
        get_actions_from_preprocessed_states(preprocessed_states, time_percentage, use_exploration)
        get_greedy_actions(states) -> (preprocessed_states, actions without exploration)
        get_greedy_actions_from_preprocessed_states(preprocessed_states)
        and `PreprocessingCore`'s get_preprocessed_states, reset_preprocessor.
    """

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
        preprocessed = self.preprocessor.preprocess(states)
        return preprocessed, self._greedy(preprocessed)

    @rlgraph_api(no_grad=True)
    def get_greedy_actions_from_preprocessed_states(self, preprocessed_states):
        return self._graph_fn_identity(preprocessed_states), self._greedy(preprocessed_states)

    @graph_fn
    def _graph_fn_identity(self, x):
        return x

    # Bodies of the memory API methods that off-policy cores with an in-graph memory (`self.memory`)
    # register on themselves (`rlgraph_api(component=self, name="insert_records")(...)`).
    def _insert_records(self, records):
        check_record_keys(records, f"{self.global_scope}.insert_records(records)")
        return self.memory.insert_records(records)

    def _get_memory_size(self):
        return self.memory.get_size()

    def _update_priorities(self, indices, priorities):
        return self.memory.update_records(indices, priorities)

    @graph_fn
    def _graph_fn_ones_like(self, x):
        """Ones shaped like `x` (the importance weights of a batch that has none)."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.ones_like(x)
        import torch
        return torch.ones_like(x)
