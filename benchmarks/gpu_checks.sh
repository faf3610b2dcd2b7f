#!/bin/bash
# The GPU checks of one device call, on a PyTorch-only GPU machine with 16 cores (as lent to some
# sessions: no TensorFlow, no network), run from the repository root:
#   1. a PPO Pong training run (configs/ppo_pong.json, EnvPool, CUDA) in the background on cores
#      TRAIN_CPUS, stopped with SIGTERM (it writes a checkpoint) before the deadline;
#   2. the PyTorch suite on CUDA (without the learning tests) on cores MAIN_CPUS;
#   3. `rlgraph benchmark atari --device cuda` (rlgraph against SB3) on MAIN_CPUS;
#   4. `rlgraph benchmark device`, `update` and `act` on CUDA;
# then packs the results into $OUT/results.tgz (and the whole output into $OUT/log.txt).
#
# Packages the machine lacks travel in SITE (default .dev/site, git-ignored): gymnasium,
# farama-notifications, ale-py, dm-tree, stable-baselines3 and EnvPool for CPython 3.12, made
# here with `pip install --no-deps --only-binary=:all: --python-version 3.12 --target .dev/site`.
# EnvPool's wheel holds every env family (147 MB): keep envpool/atari, make envpool/entry.py
# import only `envpool.atari.registration`, and copy envpool_assets/atari/roms beside it.
# Each stage has a time cap; DEADLINE (seconds) bounds the whole script. SUITE_ARGS: test paths (default: all).
set -u
ROOT=$PWD
export PYTHONPATH=${SITE-$ROOT/.dev/site}:$ROOT PYTHONUNBUFFERED=1 RLGRAPH_BACKEND=pytorch MPLBACKEND=Agg
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/res
DEADLINE=${DEADLINE:-540}; TRAIN_S=${TRAIN_S:-500}; SUITE_S=${SUITE_S:-200}; ATARI_S=${ATARI_S:-200}
TRAIN_CPUS=${TRAIN_CPUS:-8-15}; MAIN_CPUS=${MAIN_CPUS:-0-7}; DEV=${DEV:-cuda}; NW=${NW:-8}
PPO_STEPS=${PPO_STEPS:-20480}; DQN_STEPS=${DQN_STEPS:-5000}
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
cap() { local l; l=$(( $(left) - ${2:-20} )); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
rlg() { python3 -c 'import sys; from rlgraph.cli.main import main; sys.exit(main(sys.argv[1:]))' "$@"; }
exec > >(tee -a "$OUT/log.txt") 2>&1
el start; nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, numpy, gymnasium, envpool, ale_py, stable_baselines3 as s; print('torch', torch.__version__, torch.cuda.is_available(), 'numpy', numpy.__version__, 'gymnasium', gymnasium.__version__, 'envpool', envpool.__version__, 'ale-py', ale_py.__version__, 'sb3', s.__version__)" || exit 3
el "train: PPO Pong, EnvPool, $DEV, cores $TRAIN_CPUS, ${TRAIN_S}s"
( taskset -c "$TRAIN_CPUS" timeout -s TERM "$TRAIN_S" bash -c "$(declare -f rlg); rlg train configs/ppo_pong.json \
    --device $DEV --seed 1 --set 'training_spec.vectorization=\"envpool\"' --output-dir /tmp/ppo-pong --no-progress" \
    > /tmp/res/train.log 2>&1; echo "train exit $?" >> /tmp/res/train.log ) &
TRAIN_PID=$!
el "suite: PyTorch on $DEV, cores $MAIN_CPUS"
taskset -c "$MAIN_CPUS" timeout "$(cap "$SUITE_S")" python3 -m pytest -q -p no:cacheprovider -n "$NW" --timeout 120 -rfEs \
    --junitxml=/tmp/res/junit.xml -m "${MARK:-not learning}" ${SUITE_ARGS:-} > /tmp/res/suite.log 2>&1; echo "suite exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" /tmp/res/suite.log | tail -80
el "atari throughput (cores $MAIN_CPUS)"
taskset -c "$MAIN_CPUS" timeout "$(cap "$ATARI_S")" bash -c "$(declare -f rlg); rlg benchmark atari --device $DEV \
    --steps $PPO_STEPS --dqn-steps $DQN_STEPS --out /tmp/res/atari.json \
    --contenders rlgraph-envpool rlgraph-async rlgraph-sync sb3-subproc sb3-dummy dqn-rlgraph dqn-sb3"; echo "atari exit $?"
el "update benchmarks on $DEV"
taskset -c "$MAIN_CPUS" timeout "$(cap 90)" bash -c "$(declare -f rlg); rlg benchmark device --device $DEV --calls 300 --rounds 3 --out /tmp/res/device.json"; echo "device exit $?"
taskset -c "$MAIN_CPUS" timeout "$(cap 40)" bash -c "$(declare -f rlg); rlg benchmark update --device $DEV --backends pytorch --calls 1000 --rounds 3 --compile --out /tmp/res/update.json"; echo "update exit $?"
taskset -c "$MAIN_CPUS" timeout "$(cap 30)" bash -c "$(declare -f rlg); rlg benchmark act --device $DEV --backends pytorch --calls 5000 --rounds 3 --out /tmp/res/act.json"; echo "act exit $?"
W=$(( $(left) - 15 )); [ "$W" -gt 0 ] && el "waiting up to ${W}s for the training run" && timeout "$W" tail --pid=$TRAIN_PID -f /dev/null
pkill -TERM -f "configs/ppo_pong.json" 2>/dev/null; wait $TRAIN_PID 2>/dev/null
tail -5 /tmp/res/train.log
for f in episodes.csv evaluations.csv summary.json learning_curve.png; do cp "/tmp/ppo-pong/$f" /tmp/res/ 2>/dev/null; done
tar czf "$OUT/results.tgz" -C /tmp res; ls -la "$OUT"; el done
