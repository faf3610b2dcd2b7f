"""Installs rlgraph. See README.md for the two set-up commands (train the default agent; run the tests)."""
import os

from setuptools import find_packages, setup

here = os.path.abspath(os.path.dirname(__file__))
with open(os.path.join(here, "README.md"), encoding="utf-8") as handle:
    long_description = handle.read()

# The documentation site (mkdocs.yml): `mkdocs build --strict`, `mkdocs serve`.
DOCS = ["mkdocs>=1.6,<2", "mkdocs-material>=9.5", "mkdocstrings>=1.0", "mkdocstrings-python>=2.0",
        "mkdocs-gen-files>=0.5", "mkdocs-literate-nav>=0.6", "mkdocs-section-index>=0.3.9"]

# Policy export to ONNX (TorchScript and SavedModel need only the backends).
EXPORT = ["onnx>=1.16", "onnxscript>=0.3", "onnxruntime>=1.18"]

# Watching the agent: GIFs (Pillow), gymnasium's classic-control drawing (pygame); `tensorboard --logdir`.
VIDEO = ["pillow>=10", "pygame>=2.1"]

extras = {
    "tf": ["tensorflow-cpu>=2.16,<3"],
    "torch": ["torch>=2.1"],
    "ray": ["ray>=2.9,<3"],
    "atari": ["ale-py>=0.9", "opencv-python-headless>=4.8"],
    # `training_spec.vectorization: "envpool"`: Atari games stepped in EnvPool's C++ thread pool. envpool's
    # metadata requires its MuJoCo asset packages too (about 740 MB installed), although Atari needs none.
    "envpool": ["envpool>=1.2.5"],
    # LunarLander and LunarLanderContinuous (gymnasium's Box2D envs; the zoo table's configs/zoo/ uses them).
    "box2d": ["box2d>=2.3.10"],
    # `rlgraph benchmark dqn-sb3` runs Stable-Baselines3 as the peer; pyinstrument profiles the runs.
    # The IMPALA peer is RLlib, whose code ships inside the ray wheel. ray[rllib] 2.60 pins gymnasium 1.2.2,
    # which conflicts with the project's gymnasium pin, so the bench extra installs RLlib's own
    # dependencies instead of the `rllib` extra.
    "bench": ["stable-baselines3>=2.3", "pyinstrument>=4.6",
              "ray>=2.9,<3", "pandas>=2.0", "pyarrow>=14", "pydantic>=2.5,<3", "tensorboardX>=2.6",
              "lz4>=4.0", "ormsgpack>=1.7"],
    "docs": DOCS,
    # `Agent.export_policy(path, "onnx")` / `rlgraph export --format onnx`: torch's ONNX exporter (onnx,
    # onnxscript) and onnxruntime, which checks every export before it is put in place.
    "export": EXPORT,
    # `rlgraph evaluate --video out.gif`, `training_spec.record_video_every` and the TensorBoard app.
    "viz": VIDEO + ["tensorboard>=2.16"],
    # The test suite also runs the Atari adapter on the real ALE, the dqn-sb3 benchmark's smoke test,
    # the Ape-X executor on Ray (a local Ray and a `ray start --head` cluster on 127.0.0.1) and the
    # strict build of the documentation site (tests/test_docs_site.py); TensorBoard loads the event files;
    # Box2D runs the LunarLander configs of configs/zoo/; EnvPool's vector env runs against the same games.
    # pytest-xdist spreads the suite over the CPU cores (conftest.py: `python -m pytest` runs `-n auto`).
    "test": ["pytest>=8", "pytest-xdist>=3.6", "hypothesis>=6.100", "scipy>=1.11", "ale-py>=0.9",
             "opencv-python-headless>=4.8", "stable-baselines3>=2.3", "ray>=2.9,<3", "tensorboard>=2.16",
             "box2d>=2.3.10", "envpool>=1.2.5"]
            + DOCS + EXPORT + VIDEO,
}
extras["all"] = sorted({req for reqs in extras.values() for req in reqs})
# `--wandb PROJECT` / `--mlflow EXPERIMENT` (rlgraph/execution/loggers.py): not tested with the real
# packages, not pinned, and not in "all" (mlflow alone brings a web server and a database layer).
extras["wandb"] = ["wandb>=0.16"]
extras["mlflow"] = ["mlflow>=2.10"]

setup(
    name="rlgraph",
    version="0.1.0",
    description="Reinforcement-learning agents built from components, for TensorFlow 2 and PyTorch.",
    long_description=long_description,
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    # The shipped configs (configs/*.json, configs/zoo/*.json) install as rlgraph/configs/, where
    # `rlgraph train --algo` finds them (rlgraph/execution/algo_defaults.py); a checkout reads configs/ itself.
    packages=find_packages(include=["rlgraph", "rlgraph.*"]) + ["rlgraph.configs"],
    package_dir={"rlgraph.configs": "configs"},
    package_data={"rlgraph.configs": ["*.json", "zoo/*.json"]},
    install_requires=[
        "numpy>=1.26",
        "dm-tree>=0.1.8",
        "gymnasium>=1.0,<2",
        "PyYAML>=6.0",
        "tqdm>=4.60",
        "matplotlib>=3.7",  # learning-curve PNGs of `rlgraph train`
    ],
    extras_require=extras,
    entry_points={"console_scripts": ["rlgraph=rlgraph.cli.main:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
