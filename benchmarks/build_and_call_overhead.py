"""Build and call overhead of a 50-component tree, against hand-written raw-backend code.

The tree: a root with 10 chains of 5 `Scale` components (x * w + b), 100 variables, as in
tests/test_component_build.py. The raw baseline creates the same 100 variables by hand and runs the
same arithmetic (TF: one tf.function; PyTorch: plain tensor code). Run:

    python -m benchmarks.build_and_call_overhead [--backends tf pytorch] [--calls 2000]

(or `python benchmarks/build_and_call_overhead.py ...`; either way tests/ goes on sys.path for the
test components).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from components_for_tests import Chain  # noqa: E402
from rlgraph.backend_system import is_backend_installed  # noqa: E402
from rlgraph.spaces import FloatBox  # noqa: E402
from rlgraph.tests import ComponentTest  # noqa: E402

WIDTH, DEPTH = 10, 5


def raw_tf(x):
    import tensorflow as tf
    start = time.perf_counter()
    ws = [[tf.Variable(np.full((4,), 1.0 + 0.01 * (i + j), np.float32)) for j in range(DEPTH)] for i in range(WIDTH)]
    bs = [[tf.Variable(0.0) for _ in range(DEPTH)] for _ in range(WIDTH)]

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def run(x):
        outs = []
        for i in range(WIDTH):
            y = x
            for j in range(DEPTH):
                y = y * ws[i][j] + bs[i][j]
            outs.append(y)
        return tf.stack(outs, axis=1)
    run.get_concrete_function()
    build = time.perf_counter() - start
    return build, lambda: run(x).numpy()


def raw_torch(x):
    import torch
    start = time.perf_counter()
    ws = [[torch.nn.Parameter(torch.full((4,), 1.0 + 0.01 * (i + j))) for j in range(DEPTH)] for i in range(WIDTH)]
    bs = [[torch.nn.Parameter(torch.zeros(())) for _ in range(DEPTH)] for _ in range(WIDTH)]

    def run():
        xt = torch.from_numpy(x)
        outs = []
        for i in range(WIDTH):
            y = xt
            for j in range(DEPTH):
                y = y * ws[i][j] + bs[i][j]
            outs.append(y)
        return torch.stack(outs, dim=1).detach().numpy()
    build = time.perf_counter() - start
    return build, run


def timed(fn, calls):
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", nargs="+", default=["tf", "pytorch"])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    x = np.random.RandomState(0).randn(8, 4).astype(np.float32)
    for backend in args.backends:
        if not is_backend_installed(backend):
            print(f"{backend}: not installed, skipped")
            continue
        raw_build, raw_call = (raw_tf if backend == "tf" else raw_torch)(x)  # also warms up the backend import
        test = ComponentTest(Chain(WIDTH, DEPTH, scope="chain"),
                             input_spaces=dict(x=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
        stats = test.build_stats
        ours = timed(lambda: test.test(("run", x)), args.calls)
        raw = timed(raw_call, args.calls)
        print(f"{backend}: {stats['component_count']} components, {stats['variable_count']} variables, "
              f"{stats['passes']} pass(es)")
        print(f"  build: total {stats['total_build_time'] * 1e3:.1f} ms = backend {stats['backend_time'] * 1e3:.1f} ms"
              f" + overhead {stats['build_overhead'] * 1e3:.1f} ms; raw-backend build {raw_build * 1e3:.1f} ms "
              f"(ratio {stats['total_build_time'] / raw_build:.2f}x)")
        print(f"  call:  rlgraph execute {ours * 1e6:.1f} us, raw {raw * 1e6:.1f} us (ratio {ours / raw:.2f}x)")


if __name__ == "__main__":
    main()
