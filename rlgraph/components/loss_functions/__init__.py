"""Loss functions: DQN, DQfD, IMPALA, PPO, actor-critic, SAC, DDPG and supervised losses."""
from rlgraph.components.loss_functions.actor_critic_loss_function import ActorCriticLossFunction
from rlgraph.components.loss_functions.categorical_cross_entropy_loss import CategoricalCrossEntropyLoss
from rlgraph.components.loss_functions.container_loss_function import ContainerLossFunction
from rlgraph.components.loss_functions.ddpg_loss_function import DDPGLossFunction
from rlgraph.components.loss_functions.dqfd_loss_function import DQFDLossFunction
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.components.loss_functions.euclidean_distance_loss import EuclideanDistanceLoss
from rlgraph.components.loss_functions.impala_loss_function import IMPALALossFunction
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.components.loss_functions.ppo_loss_function import PPOLossFunction
from rlgraph.components.loss_functions.sac_loss_function import SACLossFunction

__all__ = ["LossFunction", "DQNLossFunction", "IMPALALossFunction", "PPOLossFunction", "ActorCriticLossFunction",
           "DQFDLossFunction", "SACLossFunction", "DDPGLossFunction", "EuclideanDistanceLoss", "CategoricalCrossEntropyLoss",
           "ContainerLossFunction"]
