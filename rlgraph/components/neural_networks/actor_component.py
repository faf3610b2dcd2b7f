"""`ActorComponent`: preprocessor, policy and exploration in one acting pipeline."""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.components.component import Component
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.utils.decorators import rlgraph_api


class ActorComponent(Component):
    """From an environment state to an action: preprocess, run the policy, explore.

    Args:
        preprocessor_spec: A `PreprocessorStack`, or a list of preprocessor specs (None or []: none).
        policy_spec: A `Policy` or a policy spec (e.g. {"type": "dueling-policy", ...} or a dict of
            `Policy` arguments).
        exploration_spec: An `Exploration` or its spec (None: an `Exploration` with default epsilon).
        max_likelihood: Overrides the policy's `max_likelihood` when not None (True: the policy's
            deterministic action before exploration; False: a sample).
        scope: Default "actor-component".

    API:
        get_preprocessed_state_and_action(states, time_percentage, use_exploration=True,
            internal_states=None) -> (preprocessed_states, actions)
        get_preprocessed_state_action_and_action_probs(states, time_percentage,
            use_exploration=True, internal_states=None) -> (preprocessed_states, actions,
            (logits, probabilities, log_probs)) for discrete action spaces.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> actor = ActorComponent(None, {"network_spec": [{"type": "dense", "units": 4}], "action_space": IntBox(2)},
    ...                        {"epsilon_spec": {"decay_spec": ["constant", 0.0]}})
    >>> test = ComponentTest(actor, input_spaces=dict(states=FloatBox(shape=(3,), add_batch_rank=True),
    ...                      time_percentage=float, use_exploration=bool), backend="pytorch")
    >>> states, actions = test.test(("get_preprocessed_state_and_action", [np.ones((2, 3), np.float32), 0.5]))
    >>> actions.shape
    (2,)
    """

    def __init__(self, preprocessor_spec: Any, policy_spec: Any, exploration_spec: Any = None,
                 max_likelihood: Optional[bool] = None, scope: str = "actor-component", **kwargs):
        # Imported here: policies build on neural networks, which this package also holds.
        from rlgraph.components.explorations.exploration import Exploration
        from rlgraph.components.policies.policy import Policy
        if isinstance(preprocessor_spec, PreprocessorStack):
            preprocessor = preprocessor_spec
        else:
            preprocessor = PreprocessorStack(*(preprocessor_spec or []))
        if isinstance(policy_spec, Policy):
            policy = policy_spec
        elif isinstance(policy_spec, dict) and "type" not in policy_spec:
            policy = Policy(**policy_spec)
        else:
            policy = Policy.from_spec(policy_spec)
        if isinstance(exploration_spec, Exploration):
            exploration = exploration_spec
        else:
            exploration = Exploration.from_spec(exploration_spec or {})
        super().__init__(preprocessor, policy, exploration, scope=scope, **kwargs)
        self.preprocessor, self.policy, self.exploration = preprocessor, policy, exploration
        self.max_likelihood = max_likelihood

    def _policy_action(self, preprocessed, internal_states):
        deterministic = self.policy.max_likelihood if self.max_likelihood is None else self.max_likelihood
        if deterministic:
            actions = self.policy.get_deterministic_action(preprocessed, internal_states)
        else:
            actions = self.policy.get_stochastic_action(preprocessed, internal_states)
        return actions  # In the policy's action space, bounds included (see `Distribution.value_space`).

    @rlgraph_api
    def get_preprocessed_state_and_action(self, states, time_percentage, use_exploration=True, internal_states=None):
        preprocessed = self.preprocessor.preprocess(states)
        actions = self._policy_action(preprocessed, internal_states)
        return preprocessed, self.exploration.get_action(actions, time_percentage, use_exploration)

    @rlgraph_api
    def get_preprocessed_state_action_and_action_probs(self, states, time_percentage, use_exploration=True,
                                                       internal_states=None):
        preprocessed = self.preprocessor.preprocess(states)
        actions = self._policy_action(preprocessed, internal_states)
        probabilities = self.policy.get_logits_probabilities_log_probs(preprocessed, internal_states)
        return preprocessed, self.exploration.get_action(actions, time_percentage, use_exploration), probabilities
