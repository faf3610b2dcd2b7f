"""configs/zoo/: rl-baselines3-zoo's table as rlgraph configs, and the same hyperparameters on SB3's side.

The shipped files equal what `zoo_configs.rlgraph_config` makes of `zoo_table` (one source); every
config builds and trains a few hundred steps (PyTorch: all 27; TF: the four `TF_PAIRS`); the SB3
model of each pair holds the numbers the rlgraph config holds (read back from SB3's objects);
`rlgraph train --algo A --env E` trains the pair's zoo config.
"""
from __future__ import annotations

import json
import math
import os

import pytest

from rlgraph.agents import Agent
from rlgraph.benchmarks import zoo_configs
from rlgraph.benchmarks.zoo_table import BY_NAME, ZOO_PAIRS, ZooPair, _pair
from rlgraph.execution.algo_defaults import algo_config, shipped_config
from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
from rlgraph.execution.training import make_agent_and_env, resolve_config
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

ZOO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "zoo")
STEPS = 200
# On TF, what the zoo's configs add to the agents' own TF tests: a discrete pair, the normalize,
# free log-std and schedule pair, Ornstein-Uhlenbeck noise, and a fixed alpha.
TF_PAIRS = ["dqn/Acrobot-v1", "a2c/Pendulum-v1", "td3/MountainCarContinuous-v0", "sac/MountainCarContinuous-v0"]
# (The runs below are a few hundred steps: one gradient step per update, whatever the zoo's number.)
ONE_GRADIENT_STEP = {"dqn": "update_spec.update_steps=1", "td3": "update_spec.update_steps=1",
                     "ddpg": "update_spec.update_steps=1", "sac": "update_spec.num_iterations=1"}


def test_the_table_has_every_pair_of_the_zoo_benchmark_for_these_algorithms():
    assert len(ZOO_PAIRS) == len(BY_NAME) == 27
    per_algo = {algo: sorted(p.env_id for p in ZOO_PAIRS if p.algo == algo) for algo in zoo_configs._ALGO_TYPES}
    assert per_algo["dqn"] == ["Acrobot-v1", "CartPole-v1", "LunarLander-v3", "MountainCar-v0"]
    assert len(per_algo["ppo"]) == len(per_algo["a2c"]) == 7
    for algo in ("sac", "td3", "ddpg"):
        assert per_algo[algo] == ["LunarLanderContinuous-v3", "MountainCarContinuous-v0", "Pendulum-v1"]
    with pytest.raises(KeyError, match="learning_rat"):
        _pair("dqn", "CartPole-v1", 1e4, 0.0, 0.0, learning_rat=1e-3)  # A typo is refused.


def test_shipped_files_are_the_table():
    files = sorted(os.listdir(ZOO_DIR))
    assert files == sorted(pair.config_name for pair in ZOO_PAIRS)
    for pair in ZOO_PAIRS:
        with open(os.path.join(ZOO_DIR, pair.config_name)) as handle:
            text = handle.read()
        assert text == zoo_configs.config_text(pair), \
            f"{pair.config_name} differs from the table: rewrite with zoo_configs.write_configs('configs/zoo')"
        about = json.loads(text)["about"]
        assert "hyperparams/" in about["source"] and about["zoo_score"] == list(pair.published)


def _build_and_step(name: str, backend: str) -> None:
    pair = BY_NAME[name]
    on_policy = pair.algo in ("ppo", "a2c")
    # (Off-policy: small batches from step 50 on, so that a few hundred steps run updates quickly.)
    config = resolve_config(os.path.join(ZOO_DIR, pair.config_name), backend=backend, num_timesteps=STEPS, seed=3,
                            overrides=[] if on_policy else ["update_spec.steps_before_update=50",
                                                            "update_spec.batch_size=32",
                                                            "update_spec.update_interval=4",
                                                            ONE_GRADIENT_STEP[pair.algo]])
    agent, env_spec = make_agent_and_env(config)
    assert isinstance(agent, Agent.resolve_type(pair.algo))
    worker = SingleThreadedWorker(agent, env_spec, num_environments=zoo_configs.num_envs(pair), seed=3)
    try:
        assert worker.execute_timesteps(STEPS)["timesteps_executed"] >= STEPS
        assert on_policy or agent.num_updates > 0
    finally:
        worker.terminate()
        agent.terminate()


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_zoo_config_trains_on_pytorch(name):
    _build_and_step(name, "pytorch")


@pytest.mark.parametrize("name", TF_PAIRS)
def test_zoo_configs_train_on_tf(name):
    pytest.importorskip("tensorflow")
    _build_and_step(name, "tf")


def _start(value) -> float:
    return value[1] if isinstance(value, list) else value


@pytest.mark.filterwarnings("ignore:You have specified a mini-batch size")  # (SB3 on the zoo's own PPO setting.)
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_sb3_gets_the_numbers_the_rlgraph_config_holds(name):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecNormalize
    pair = BY_NAME[name]
    config = zoo_configs.rlgraph_config(pair, seed=1)
    model = zoo_configs.make_sb3_model(pair, seed=1)
    hp = pair.hyperparameters
    try:
        assert model.gamma == config["discount"] and model.n_envs == config["training_spec"]["num_environments"]
        assert isinstance(model.get_env(), VecNormalize) == bool(hp.get("normalize")) == ("preprocessing_spec" in config)
        if hp.get("normalize"):  # VecNormalize's settings, on rlgraph's side.
            vec = model.get_env()
            assert config["observe_spec"]["normalize_rewards"] == {"gamma": vec.gamma, "clip": vec.clip_reward}
            standardize, clip = config["preprocessing_spec"]
            assert standardize["per_episode"] is False and clip["max"] == -clip["min"] == vec.clip_obs
        assert math.isclose(model.lr_schedule(1.0), _start(config["optimizer_spec"]["learning_rate"]))
        units = [layer["units"] for layer in config["network_spec"]]
        assert units == list(hp["net_arch"])
        update = config["update_spec"]
        if pair.algo in ("ppo", "a2c"):
            _check_on_policy(pair, hp, config, update, model)
        else:
            _check_off_policy(pair, config, update, model)
    finally:
        model.get_env().close()


def _check_on_policy(pair, hp, config, update, model):
    assert model.n_steps * model.n_envs == update["batch_size"]
    assert model.gae_lambda == config["gae_lambda"] and model.ent_coef == config["weight_entropy"]
    assert 2 * model.vf_coef == config["weight_vf"] and model.max_grad_norm == \
        config["optimizer_spec"]["clip_grad_norm"]
    assert model.normalize_advantage == config["standardize_advantages"]
    if zoo_configs.is_continuous(pair) and not hp["use_sde"]:  # Both free log-stds start there.
        assert model.policy.log_std.detach().numpy().tolist() == \
            [config["action_adapter_spec"]["log_std_init"]] * model.action_space.shape[0]
    if pair.algo == "ppo":
        assert model.batch_size == update["sample_size"] and model.n_epochs == update["num_epochs"]
        assert math.isclose(model.clip_range(1.0), _start(config["clip_ratio"]))
    else:
        defaults = model.policy.optimizer.defaults
        assert type(model.policy.optimizer).__name__ == "RMSprop"
        assert (defaults["alpha"], defaults["eps"]) == (config["optimizer_spec"]["decay"],
                                                        config["optimizer_spec"]["epsilon"])


def _check_off_policy(pair, config, update, model):
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
    assert model.batch_size == update["batch_size"] and model.learning_starts == update["steps_before_update"]
    assert model.train_freq.frequency == update["update_interval"]
    assert model.buffer_size >= config["memory_spec"]["capacity"] == min(model.buffer_size, pair.steps)
    if pair.algo == "dqn":
        assert model.gradient_steps == update["update_steps"]
        assert model.target_update_interval == update["sync_interval"] and model.tau == 1.0
        assert model.exploration_final_eps == \
            config["exploration_spec"]["epsilon_spec"]["decay_spec"]["to"]
        assert model.max_grad_norm == config["optimizer_spec"]["clip_grad_norm"]
    elif pair.algo == "sac":
        assert model.gradient_steps == update["num_iterations"] and model.tau == update["sync_tau"]
        assert (model.ent_coef_optimizer is None) == (config["target_entropy"] is None)
        if config["target_entropy"] is None:
            assert float(model.ent_coef_tensor) == pytest.approx(config["initial_alpha"])
    else:
        assert model.gradient_steps == update["update_steps"] and model.tau == config["target_critic_update"]
        assert model.learning_starts == config["random_steps"]
        scale = zoo_configs.CONTINUOUS_ENVS[pair.env_id]
        noise, ours = model.action_noise, config["noise_spec"]
        if isinstance(noise, NormalActionNoise):
            assert ours["type"] == "gaussian" and ours["stddev"] == pytest.approx(noise._sigma[0] * scale)
        else:
            assert isinstance(noise, OrnsteinUhlenbeckActionNoise) and ours["type"] == "ornstein-uhlenbeck"
            # SB3: x += theta (mu - x) dt + sigma sqrt(dt) N; rlgraph's process has dt = 1.
            assert ours["theta"] == pytest.approx(noise._theta * noise._dt)
            assert ours["sigma"] == pytest.approx(noise._sigma[0] * math.sqrt(noise._dt) * scale)
        if pair.algo == "td3":
            assert (model.policy_delay, model.target_policy_noise, model.target_noise_clip) == \
                (config["policy_delay"], config["target_policy_noise"], config["target_noise_clip"])
        else:
            # SB3's DDPG draws target noise of 0.1 and clips it to [0, 0]: none, as rlgraph's DDPG.
            assert "policy_delay" not in config and model.policy_delay == 1 and model.target_noise_clip == 0


def test_worked_noise_conversion():
    # td3 on MountainCarContinuous: OU with SB3's noise_std 0.5, theta 0.15, dt 0.01; half-range 1.
    assert zoo_configs.rlgraph_config("td3/MountainCarContinuous-v0")["noise_spec"] == \
        {"type": "ornstein-uhlenbeck", "theta": pytest.approx(0.0015), "sigma": pytest.approx(0.05)}
    # td3 on Pendulum: Gaussian noise_std 0.1 on [-1, 1], Pendulum's half-range is 2.
    assert zoo_configs.rlgraph_config("td3/Pendulum-v1")["noise_spec"] == {"type": "gaussian", "stddev": 0.2}


@pytest.mark.parametrize("algo, env", [("dqn", "CartPole-v1"), ("a2c", "LunarLander-v3"), ("td3", "Pendulum-v1")])
def test_algo_and_env_train_the_pairs_zoo_config(algo, env):
    config, source = algo_config(algo, env)
    name = f"{algo}_{env.lower()}.json"
    assert source == shipped_config(f"zoo/{name}") == os.path.join(ZOO_DIR, name)
    with open(source) as handle:
        assert config == json.load(handle)
    assert config["training_spec"]["num_timesteps"] == BY_NAME[f"{algo}/{env}"].steps


def test_about_is_documentation_and_must_be_a_mapping():
    config = zoo_configs.rlgraph_config("ppo/CartPole-v1", seed=1)
    with pytest.raises(RLGraphSpecError, match="'about' section must be a mapping"):
        resolve_config(dict(config, about="from the zoo"))
    agent = Agent.from_spec({k: v for k, v in config.items() if k not in ("environment_spec", "training_spec")},
                            state_space={"type": "float-box", "shape": (4,)}, action_space={"type": "int-box",
                                                                                           "high": 2})
    assert "about" not in agent.spec
    agent.terminate()


def test_no_deviations_left_and_gsde_is_mirrored_for_ppo_a2c_and_sac():
    assert zoo_configs.deviations(BY_NAME["dqn/CartPole-v1"]) == []
    assert zoo_configs.deviations(BY_NAME["a2c/Pendulum-v1"]) == []  # gSDE: rlgraph's own.
    assert all(zoo_configs.deviations(pair) == [] for pair in BY_NAME.values())  # gSDE included.
    sac = zoo_configs.rlgraph_config("sac/MountainCarContinuous-v0")["action_adapter_spec"]
    assert sac == {"use_sde": True, "log_std_init": -3.67, "clip_mean": 2.0, "sde_matrices": 1, "sde_sample_freq": -1,
                   "weights_spec": "fan_in_uniform", "biases_spec": "fan_in_uniform"}
    config = zoo_configs.rlgraph_config("a2c/Pendulum-v1")
    assert config["action_adapter_spec"]["log_std_init"] == -2.0
    # The zoo's a2c/Pendulum-v1: use_sde, 8 envs, sde_sample_freq -1 (its default).
    assert {k: config["action_adapter_spec"][k] for k in ("use_sde", "sde_matrices", "sde_sample_freq")} == \
        {"use_sde": True, "sde_matrices": 8, "sde_sample_freq": -1}
    mcc = zoo_configs.rlgraph_config("a2c/MountainCarContinuous-v0")["action_adapter_spec"]
    assert (mcc["sde_matrices"], mcc["sde_sample_freq"], mcc["log_std_init"]) == (4, 16, 0.0)
    assert "use_sde" not in zoo_configs.rlgraph_config("ppo/LunarLanderContinuous-v3")["action_adapter_spec"]
    assert config["policy_spec"]["distributions_spec"]["bounded_distribution_type"] == "normal"
    assert isinstance(BY_NAME["sac/Pendulum-v1"], ZooPair)


# --- Initial weights: the same initializers as SB3's networks -------------------------------------------

_ORTHOGONAL_GAINS = (1.0, 0.01, math.sqrt(2.0))


def _initializer(kernel, bias):
    """What drew a dense layer's weights, from the values: (fan_in, kernel initializer, bias zero).
    Orthogonal: equal singular values (one output: a norm of a known gain); uniform: the largest
    |w| within 10% below the bound (fan-in: 1/sqrt(fan_in), torch's `Linear` default; Glorot:
    sqrt(6 / (fan_in + fan_out))); else the largest |w|."""
    import numpy as np
    kernel = np.asarray(kernel, np.float64)
    fan_in, fan_out = kernel.shape
    singular = np.linalg.svd(kernel, compute_uv=False)
    if fan_out >= 2 and singular.max() - singular.min() < 1e-4 * singular.max():
        kind = f"orthogonal {singular.max():.3g}"
    elif fan_out == 1 and any(abs(singular[0] - gain) < 1e-5 * gain for gain in _ORTHOGONAL_GAINS):
        kind = f"orthogonal {singular[0]:.3g}"
    else:
        largest = np.abs(kernel).max()
        kind = f"other (largest |w| {largest:.3g})"
        for name, bound in (("fan-in uniform", 1.0 / math.sqrt(fan_in)),
                            ("glorot uniform", math.sqrt(6.0 / (fan_in + fan_out)))):
            if 0.9 * bound <= largest <= bound * (1 + 1e-6):
                kind = name
    return fan_in, kind, not np.any(bias)


@pytest.mark.filterwarnings("ignore:You have specified a mini-batch size")  # (SB3 on the zoo's own PPO setting.)
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_initial_weights_follow_sb3s_initializers(name):
    # Every dense layer of the online networks (targets are copies) drawn as SB3 draws its layer of
    # the same place: torch's default, or orthogonal gains with `ortho_init`. The layers are
    # compared as sets of (fan_in, initializer, zero bias), which covers the heads that the two
    # libraries split differently (SAC's mean and log-std: one layer here, two in SB3). PyTorch
    # only: what is checked is the config's initializer specs, which draw in numpy alike on both
    # backends (tests/test_dense_and_activations.py builds those layers on both).
    pytest.importorskip("stable_baselines3")
    import torch

    from sb3_peer_helpers import zoo_agent_and_sb3_model
    agent, model = zoo_agent_and_sb3_model(BY_NAME[name])
    try:
        weights = agent.get_weights(sorted(n for n in agent._executor().get_weights()
                                           if n.endswith(("/kernel", "/bias")) and "target" not in n))
        ours = {_initializer(weights[n], weights[n[:-len("kernel")] + "bias"]) for n in weights if n.endswith("/kernel")}
        theirs = {_initializer(m.weight.detach().numpy().T, m.bias.detach().numpy())
                  for n, m in model.policy.named_modules() if isinstance(m, torch.nn.Linear) and "target" not in n}
        assert ours == theirs
    finally:
        agent.terminate()
        model.get_env().close()
