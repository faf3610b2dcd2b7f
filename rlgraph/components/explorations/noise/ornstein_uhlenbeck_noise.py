"""`OrnsteinUhlenbeckNoise`: temporally correlated noise, as used by DDPG."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.common.time_dependent_parameters import check_number
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api


class OrnsteinUhlenbeckNoise(Noise):
    """An Ornstein-Uhlenbeck process (Uhlenbeck & Ornstein 1930), discretized with dt = 1.

    The state x (one value per action element, starting at mu) moves on every `get_noise` call:

        x_{t+1} = x_t + theta * (mu - x_t) + sigma * eps_t,    eps_t ~ N(0, 1)

    and the new x is the noise. This AR(1) process reverts to mu; its stationary mean is mu and
    its stationary variance sigma**2 / (1 - (1 - theta)**2) (about sigma**2 / (2 theta) for small
    theta). The defaults are those of DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971).
    The state is the worker-local variable "<scope>/ou_state" (never trained or synchronized).

    Args:
        sigma: Scale of the random kicks (>= 0).
        mu: The mean the process reverts to.
        theta: Reversion rate per step in (0, 1] (1: no memory, x is i.i.d. N(mu, sigma**2)).
        action_space: See `Noise`.
        scope: Default "ornstein-uhlenbeck-noise".

    Raises:
        RLGraphSpecError: For parameters outside those ranges.

    API:
        get_noise() -> the new state x_{t+1}, shaped like the action.
        reset(): Sets the state back to mu (e.g. at the start of an episode).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> noise = OrnsteinUhlenbeckNoise(sigma=0.0, mu=1.0, theta=0.5, action_space=FloatBox(shape=(2,)))
    >>> test = ComponentTest(noise, input_spaces={}, backend="pytorch")
    >>> test.test("get_noise").tolist()  # x starts at mu and stays there without kicks
    [1.0, 1.0]
    """

    def __init__(self, sigma: float = 0.3, mu: float = 0.0, theta: float = 0.15, action_space: Any = None,
                 scope: str = "ornstein-uhlenbeck-noise", **kwargs):
        super().__init__(action_space=action_space, scope=scope, **kwargs)
        where = type(self).__name__
        self.sigma = check_number(sigma, "sigma", where, low=0.0)
        self.mu = check_number(mu, "mu", where)
        self.theta = check_number(theta, "theta", where, low=0.0, high=1.0, low_open=True)
        self.ou_state = None

    def create_variables(self, input_spaces, action_space=None):
        self.ou_state = self.get_variable("ou_state", shape=self.action_space.shape, dtype=self.action_space.dtype,
                                          initializer=self.mu, trainable=False, local=True)

    @graph_fn
    def _graph_fn_noise(self):
        x = self.ou_state
        if get_backend() == "tf":
            import tensorflow as tf
            eps = tf.random.normal(tf.shape(x), dtype=x.dtype)
            x_next = x + self.theta * (self.mu - x) + self.sigma * eps
            self.assign_variable(x, x_next)
            return x_next
        import torch
        with torch.no_grad():
            x_next = x + self.theta * (self.mu - x) + self.sigma * torch_random.randn_like(x)
            x.copy_(x_next)
        return x_next

    @rlgraph_api
    def _graph_fn_reset(self):
        """Sets the state back to mu."""
        if get_backend() == "tf":
            import tensorflow as tf
            self.assign_variable(self.ou_state, tf.fill(tf.shape(self.ou_state),
                                                        tf.constant(self.mu, self.ou_state.dtype)))
        else:
            import torch
            with torch.no_grad():
                self.ou_state.fill_(self.mu)
