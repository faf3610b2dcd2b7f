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
    assert found - RAY_MODULES == set(), \
        f"modules that start Ray but are not in conftest's RAY_MODULES: {found - RAY_MODULES}"
    assert RAY_MODULES - found == set(), f"RAY_MODULES lists modules that start no Ray: {RAY_MODULES - found}"


def test_the_pattern_sees_each_way_of_starting_ray():
    for source in ['ray.init(num_cpus=2)', 'with local_ray_session(tmp) as ray:', '["ray", "start", "--head"]',
                   '"-m", "benchmarks.ray_learners"']:
        assert STARTS_RAY.search(source), source
    for source in ['executor={"mode": "ray"}', 'import ray', 'ray.shutdown()']:
        assert not STARTS_RAY.search(source), source


# --- The longest work units first (root conftest.py) ---------------------------------------------------


def _root_conftest():
    """The repository's root conftest.py as a module of its own (the name `conftest` is this directory's)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("rlgraph_root_conftest", TESTS.parent / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_units_are_handed_out_longest_first_and_equal_ones_keep_their_order():
    root = _root_conftest()
    queue = {"a": {"t::a1": False}, "group": {"t::g1": False, "t::g2": False, "t::g3": False},
             "b": {"t::b": False}, "c": {"t::c": False}, "d": {"t::d": False}}
    durations = {"t::b": 30.0, "t::g1": 10.0, "t::c": 0.2}
    ordered = root.longest_first(queue, durations)
    # b 30; group 10 + 2 x 0.2 = 10.4; then a, c, d at 0.2 each (c listed at exactly the default), as queued.
    assert list(ordered) == ["b", "group", "a", "c", "d"]
    assert ordered["group"] == queue["group"] and root.UNLISTED_SECONDS == 0.2


def test_a_missing_or_damaged_durations_file_gives_no_durations(tmp_path):
    root = _root_conftest()
    path = tmp_path / "durations.json"
    assert root.load_durations(str(path)) == {}
    for text in ["{not json", "[1, 2]", "null"]:
        path.write_text(text)
        assert root.load_durations(str(path)) == {}, text
    path.write_text('{"t::a": 1.5, "t::b": "slow", "t::c": -1, "t::d": 3}')
    assert root.load_durations(str(path)) == {"t::a": 1.5, "t::d": 3.0}


def test_stored_durations_merge_this_run_into_the_file(tmp_path):
    from types import SimpleNamespace
    root = _root_conftest()
    path = tmp_path / "durations.json"
    path.write_text('{"t::fast_now": 5.0, "t::not_run": 7.0, "t::slower": 2.0}')
    recorder = root.DurationRecorder(str(path))
    for nodeid, seconds in [("t::fast_now", 0.3), ("t::slower", 1.0), ("t::slower", 2.04), ("t::slower", 0.5),
                            ("t::new", 1.25), ("t::tiny", 0.9)]:
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))  # setup, call, teardown
    recorder.pytest_sessionfinish(None)
    assert root.load_durations(str(path)) == {"t::new": 1.2, "t::not_run": 7.0, "t::slower": 3.5}
    assert not (tmp_path / "durations.json.tmp").exists()


def test_the_shipped_durations_name_tests_of_this_suite():
    root = _root_conftest()
    durations = root.load_durations(root.DURATIONS_FILE)
    assert len(durations) >= 20
    missing = sorted({nodeid.split("::")[0] for nodeid in durations} - {
        str(path.relative_to(TESTS.parent)) for path in TESTS.glob("test_*.py")})
    assert not missing, f"tests/durations.json names modules that are gone (rerun with --store-durations): {missing}"
