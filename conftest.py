"""Root conftest: names available to the `>>>` examples in rlgraph's docstrings (run as doctests), and
how the suite spreads over CPU cores with pytest-xdist (docs/installation.md, "Running the tests").

Parallel by default: when pytest-xdist is installed (the `test` extra) and the command line names
neither `-n` nor `--tx`, `python -m pytest` runs as `-n auto --dist loadgroup`. This lives here rather
than in pyproject.toml's addopts so that `-p no:xdist`, `-n 0` and an install without pytest-xdist all
still run the suite serially in one process (addopts with `-n` would be an unknown option there).
`-n auto` means one worker per usable core, at most `MAX_AUTO_WORKERS` and at most one per
`GIB_PER_WORKER` of available memory (see `pytest_xdist_auto_num_workers`); `-n N` picks N workers.
Which tests must share a worker (`xdist_group`) is decided in tests/conftest.py.
"""
import json
import os
import shutil
import tempfile

# One backend thread per worker process of a parallel run: the workers already share the cores among
# themselves, and thread pools sized for the whole machine in every worker (torch's OpenMP, TF's two
# pools, OpenBLAS) only oversubscribe them; their waiting threads spin on cores another worker needs
# (measured on 2 cores: the agent test modules took 10% less CPU time). pytest-xdist names the worker
# in the environment before this file is imported, so this comes before numpy, torch and TF start
# their pools; the processes the tests start (seed workers, Ray, subprocesses) inherit it. A variable
# that is already set wins; a test that sets its own thread counts (execution_spec.torch_num_threads,
# tf_num_threads) still gets them.
WORKER_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                           "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in WORKER_THREAD_VARIABLES:
        os.environ.setdefault(_name, "1")

# Ray starts its worker processes (the actors: sample workers, replay shards, learners) at nice 15, so
# that they never starve Ray's own processes. In the suite they then starve behind everything else:
# the other pytest worker, the learning tests' seed processes, and the test's own driver, whose learner
# thread keeps updating (at nice 0) while it waits for them. Measured on 2 cores with two busy
# processes beside it: the Ape-X TF workload of test_apex_ray.py waited over 120 s for its first
# actor (which ran at 3% of a core) and failed; at nice 0 the whole workload took 61 s. Every Ray the
# suite starts (ray.init here, `rlgraph train` and `ray start` in child processes) reads this
# variable; it changes what gets the CPU, not what the tests compute.
os.environ.setdefault("RAY_worker_niceness", "0")

import numpy as np  # noqa: E402 - after the thread variables (see above)
import pytest  # noqa: E402

import rlgraph.spaces  # noqa: E402
from rlgraph.utils.cpus import usable_cpus  # noqa: E402 - the cores: affinity, at most the CPU quota

# Each worker imports TensorFlow and PyTorch (about 1.5 GiB resident) and some tests start more
# processes of their own: a local Ray with its actors, the learning tests' one process per seed (up to
# one per core), mkdocs. 3 GiB a worker leaves room for that on the 24 GiB CI machine.
GIB_PER_WORKER = 3.0
# Beyond 6 workers the wall time is set by the longest work units (the Ray group, the learning tests,
# which already use several processes each), not by the number of workers, while every worker costs
# its imports (about 10 s of CPU) and its memory.
MAX_AUTO_WORKERS = 6


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    for name in rlgraph.spaces.__all__:
        doctest_namespace[name] = getattr(rlgraph.spaces, name)


def _available_gib() -> float:
    """MemAvailable of /proc/meminfo in GiB (infinite where there is none)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return float("inf")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """The number of workers of `-n auto`: min(usable cores, MAX_AUTO_WORKERS, available GiB /
    GIB_PER_WORKER); 0 (serial, in this process) where that is less than 2. The environment variable
    PYTEST_XDIST_AUTO_NUM_WORKERS overrides it, as in pytest-xdist itself."""
    override = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if override:
        return int(override)
    workers = min(usable_cpus(), MAX_AUTO_WORKERS, int(_available_gib() // GIB_PER_WORKER))
    return workers if workers >= 2 else 0


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    """Makes `-n auto --dist loadgroup` the default (before pytest-xdist reads its options)."""
    option = config.option
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        if option.numprocesses is None and not option.tx and not option.collectonly and not option.usepdb:
            option.numprocesses = "auto"
        if option.dist == "no" and not option.distload and (option.numprocesses or option.tx):
            option.dist = "loadgroup"  # pytest-xdist would pick "load", which ignores xdist_group.
    return (yield)


# --- --dist loadgroup ----------------------------------------------------------------------------------
# pytest-xdist 3.8 hands a test's xdist_group to its scheduler by renaming the test ("<id>@<group>"
# through `item._nodeid`), which pytest 9 no longer reads: the groups would be silently ignored. So the
# workers, which see the marks, write {test id: group} to a file, and the scheduler below reads it once
# every worker has collected (each worker sends its collection only after writing the file).
def pytest_configure(config):
    if _distributes(config) and config.option.dist == "loadgroup":
        config.rlgraph_groups_dir = tempfile.mkdtemp(prefix="rlgraph-xdist-")
    if config.getoption("store_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(DURATIONS_FILE), "rlgraph-durations")


def pytest_unconfigure(config):
    groups_dir = getattr(config, "rlgraph_groups_dir", None)
    if groups_dir:
        shutil.rmtree(groups_dir, ignore_errors=True)


def _machine_line(config) -> str:
    """How this run spreads: its workers and what `-n auto` sized them by. CI keeps its output only for a
    failed run, and a suite that ran serially (1 worker) takes twice as long; this line says which."""
    workers = len(config.option.tx) if _distributes(config) else 0
    return (f"rlgraph: {workers or 'no'} pytest-xdist workers ({'serial' if not workers else 'parallel'}); "
            f"usable CPUs {usable_cpus()}, available memory {_available_gib():.1f} GiB")


def pytest_report_header(config):
    return _machine_line(config) if not hasattr(config, "workerinput") else None


def pytest_terminal_summary(terminalreporter, config):
    if not hasattr(config, "workerinput"):
        terminalreporter.write_line(_machine_line(config))


def _distributes(config) -> bool:
    """Whether this is the controller of a pytest-xdist run (not a worker, not a serial run)."""
    return (config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and config.option.dist != "no" and bool(config.option.tx))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Tells each worker the distribution mode (a worker parses only the command line, so it would not
    know about a `--dist loadgroup` chosen above) and where to write its groups."""
    node.workerinput["rlgraph_dist"] = node.config.option.dist
    groups_dir = getattr(node.config, "rlgraph_groups_dir", None)
    if groups_dir:
        node.workerinput["rlgraph_groups_file"] = os.path.join(groups_dir, node.workerinput["workerid"] + ".json")


@pytest.hookimpl(trylast=True)  # After tests/conftest.py has marked the items.
def pytest_collection_modifyitems(config, items):
    path = getattr(config, "workerinput", {}).get("rlgraph_groups_file")
    if not path:
        return
    groups = {}
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    with open(path + ".tmp", "w") as handle:
        json.dump(groups, handle)
    os.replace(path + ".tmp", path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.option.dist != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupFileScheduling(LoadGroupScheduling):
        """`--dist loadgroup` with the groups from the workers' files: the tests of one group form one
        work unit (one worker runs them, one after another); every other test is a unit of its own."""
        groups = None

        def schedule(self):
            if self.groups is None:
                self.groups = {}
                groups_dir = getattr(config, "rlgraph_groups_dir", None)
                files = sorted(name for name in os.listdir(groups_dir) if name.endswith(".json")) if groups_dir else []
                if files:  # The workers collected the same tests (pytest-xdist checks), so one file will do.
                    with open(os.path.join(groups_dir, files[0])) as handle:
                        self.groups = json.load(handle)
            super().schedule()

        def _split_scope(self, nodeid):
            return (self.groups or {}).get(nodeid) or super()._split_scope(nodeid)

        ordered = False  # Whether the work queue is in longest-first order yet.

        def _assign_work_unit(self, node):
            if not self.ordered:  # Before the first unit leaves: the longest units first.
                self.workqueue = longest_first(self.workqueue, load_durations(DURATIONS_FILE))
                self.ordered = True
            super()._assign_work_unit(node)

    return GroupFileScheduling(config, log)


# --- The longest work first --------------------------------------------------------------------------
# Workers are handed the work units (one test, or one xdist group) one at a time; a 2-minute learning
# test handed out last would leave the other worker idle for its whole length. So the scheduler hands
# out the units in order of their duration measured in an earlier run, longest first (the LPT rule),
# from tests/durations.json: {test id: seconds of setup + call + teardown} for the tests that took at
# least MIN_RECORDED_SECONDS. A test it does not list counts UNLISTED_SECONDS. The file decides only
# the order in which the tests run, never whether or how they run; a stale or missing file makes the
# run slower, not different. `python -m pytest --store-durations` updates it with that run's figures.
DURATIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "durations.json")
MIN_RECORDED_SECONDS = 1.0
UNLISTED_SECONDS = 0.2


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true", default=False,
                     help="rlgraph: write each test's duration (at least 1 s) to tests/durations.json, which "
                          "orders the work units of later parallel runs, longest first")


def load_durations(path) -> dict:
    """{test id: seconds} from `path`; {} when it is missing or not such a mapping (the order then
    falls back to pytest-xdist's: the larger groups first, then collection order)."""
    try:
        with open(path) as handle:
            durations = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(durations, dict):
        return {}
    return {key: float(value) for key, value in durations.items()
            if isinstance(key, str) and isinstance(value, (int, float)) and value >= 0}


def longest_first(workqueue, durations):
    """The work units of `workqueue` ({scope: {test id: done}}) as a new OrderedDict, the longest
    first (the sum of their tests' durations, UNLISTED_SECONDS for a test without one); units of equal
    length keep their order."""
    from collections import OrderedDict

    def length(item):
        return sum(durations.get(nodeid, UNLISTED_SECONDS) for nodeid in item[1])
    return OrderedDict(sorted(workqueue.items(), key=length, reverse=True))


class DurationRecorder:
    """Sums each test's setup, call and teardown durations as the reports arrive (in the controller
    under xdist, in the only process otherwise) and writes the file at the end of the session."""

    def __init__(self, path):
        self.path, self.durations = path, {}

    def pytest_runtest_logreport(self, report):
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session):
        """Merges this run into the file: the tests that ran get their new duration (or leave the file
        when they took less than MIN_RECORDED_SECONDS), the others keep theirs."""
        kept = {nodeid: seconds for nodeid, seconds in load_durations(self.path).items()
                if nodeid not in self.durations}
        kept.update({nodeid: round(seconds, 1) for nodeid, seconds in self.durations.items()
                     if seconds >= MIN_RECORDED_SECONDS})
        kept = dict(sorted(kept.items()))
        with open(self.path + ".tmp", "w") as handle:
            json.dump(kept, handle, indent=0)
            handle.write("\n")
        os.replace(self.path + ".tmp", self.path)
