"""Numba's cache of geosim's kernels follows every source a kernel is built from."""

import shutil
import subprocess
import sys
from pathlib import Path

from geosim import jit

ROOT = Path(__file__).resolve().parents[1]

# ``fold_groups`` (geosim/engine/step.py) folds with ``fmin`` of geosim/engine/base.py:
# its compiled code holds ``fmin``'s.
PROBE = """
import numpy as np
from geosim.engine.step import fold_groups
out = np.array([5.0])
fold_groups(np.array([3.0, 1.0]), np.array([0]), np.array([0, 0]), out, False, 0, 1)
print(out[0])
"""


def test_a_modules_sources_are_its_own_and_what_it_imports():
    names = {Path(p).relative_to(ROOT / "geosim").as_posix()
             for p in jit.sources("geosim.engine.subspans")}
    assert {"engine/subspans.py", "engine/step.py", "engine/base.py", "engine/sharing.py",
            "processes.py", "jit.py"} <= names
    routes = {Path(p).relative_to(ROOT / "geosim").as_posix()
              for p in jit.sources("geosim.routes")}
    assert "routes.py" in routes and not any(n.startswith("engine/") for n in routes)
    # Imports inside functions and under TYPE_CHECKING cannot reach a kernel.
    assert not any(n.startswith("schedulers/") for n in names)


def test_the_stamp_follows_the_contents(tmp_path, monkeypatch):
    pkg = tmp_path / "geosim"
    shutil.copytree(ROOT / "geosim", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(jit, "_ROOT", str(pkg))
    before = jit.stamp("geosim.engine.step")
    assert jit.stamp("geosim.engine.step") == before
    base = pkg / "engine" / "base.py"
    base.write_text(base.read_text() + "\n# an edit\n")
    assert jit.stamp("geosim.engine.step") != before
    assert jit.stamp("geosim.routes") == jit.stamp("geosim.routes")


def test_a_kernel_is_compiled_anew_when_a_module_it_calls_changes(tmp_path):
    shutil.copytree(ROOT / "geosim", tmp_path / "geosim",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def probe() -> float:
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, check=True,
                             capture_output=True, text=True,
                             env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
        return float(out.stdout)

    assert probe() == 1.0
    assert list((tmp_path / "geosim" / "engine" / "__pycache__").glob("step.fold_groups*.nbi"))
    base = tmp_path / "geosim" / "engine" / "base.py"
    text = base.read_text()
    assert "return a if a <= b or a != a else b" in text
    base.write_text(text.replace("return a if a <= b or a != a else b",
                                 "return a if a >= b or a != a else b"))
    # step.py is unchanged; Numba alone would load fold_groups as compiled before.
    assert probe() == 5.0
