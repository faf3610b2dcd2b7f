"""The suite's own layout under pytest-xdist (tests/conftest.py): every test module that starts a Ray,
in its own process or in a child it runs, belongs to the serial "ray" group, so that two Rays never
run at once on the 2-core machine (they would fight over the dashboard agent's fixed port and the
token file). Checked from the sources, so that a new Ray test module cannot slip past the group."""
import re
from pathlib import Path

from conftest import RAY_MODULES, TESTS

# What starts a Ray in a test module: a local `ray.init(...)` (in the module or in a child script it
# runs), the helper that wraps it, a `ray start --head` cluster, the benchmark that starts its own Ray.
STARTS_RAY = re.compile(r'ray\.init\(|local_ray_session\(|"start",\s*"--head"|benchmarks\.ray_learners')


def _modules_starting_ray():
    return {path.name for path in TESTS.glob("test_*.py")
            if path.name != Path(__file__).name and STARTS_RAY.search(path.read_text())}


def test_every_module_that_starts_ray_is_in_the_serial_ray_group():
    found = _modules_starting_ray()
    assert found, "the pattern found no Ray test module at all: it no longer matches how tests start Ray"
    assert found - RAY_MODULES == set(), f"modules that start Ray but are not in conftest's RAY_MODULES: {found - RAY_MODULES}"
    assert RAY_MODULES - found == set(), f"RAY_MODULES lists modules that start no Ray: {RAY_MODULES - found}"


def test_the_pattern_sees_each_way_of_starting_ray():
    for source in ['ray.init(num_cpus=2)', 'with local_ray_session(tmp) as ray:', '["ray", "start", "--head"]',
                   '"-m", "benchmarks.ray_learners"']:
        assert STARTS_RAY.search(source), source
    for source in ['executor={"mode": "ray"}', 'import ray', 'ray.shutdown()']:
        assert not STARTS_RAY.search(source), source
