"""A tour of rlgraph spaces: build, inspect, sample, flatten, convert to and from gymnasium.

Run: python examples/spaces_tour.py
"""
import gymnasium as gym
import numpy as np

from rlgraph.spaces import Dict, FloatBox, IntBox, Space, TextBox, Tuple, space_from_gym, space_to_gym


def main():
    # An observation made of an RGB image, an instruction string and a velocity vector.
    state_space = Dict(
        image=IntBox(256, shape=(80, 80, 3), dtype="uint8"),
        instruction=TextBox(),
        velocity=FloatBox(-1.0, 1.0, shape=(2,)),
        add_batch_rank=True,
    )
    print("space:", state_space)
    print("shape:", state_space.shape)
    print("shape with batch rank:", state_space.get_shape(with_batch_rank=True))
    print("flat dim:", state_space.flat_dim)

    state_space.seed(42)
    batch = state_space.sample(4)
    print("sampled image batch:", batch["image"].shape, batch["image"].dtype)
    print("sampled instructions:", batch["instruction"].tolist())
    assert state_space.contains(batch)

    # Flattening names every primitive space by its path.
    for key, leaf in state_space.flatten().items():
        print(f"  {key:14s} -> {leaf}")

    # Specs: the same spaces from plain data (e.g. a JSON config).
    action_space = Space.from_spec({"type": "int-box", "low": 0, "high": 4})
    assert action_space == IntBox(4) and action_space.num_categories == 4
    print("one-hot action batch shape:",
          action_space.with_batch_rank().get_shape(with_batch_rank=True, with_category_rank=True))
    nested = Space.from_spec([{"type": "float-box", "shape": [3]}, {"speed": float, "gear": {"type": "int", "low": 5}}])
    assert isinstance(nested, Tuple)
    print("nested from spec:", nested)

    # gymnasium interop.
    cartpole = gym.make("CartPole-v1")
    print("CartPole state space:", space_from_gym(cartpole.observation_space))
    print("CartPole action space:", space_from_gym(cartpole.action_space))
    print("back to gymnasium:", space_to_gym(IntBox(4)))
    assert np.all(space_from_gym(cartpole.observation_space).high == cartpole.observation_space.high)


if __name__ == "__main__":
    main()
