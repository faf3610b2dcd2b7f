"""Every script in examples/ runs to completion (smoke test in a subprocess)."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script):
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            cwd=script.parent.parent)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
