"""The shape of the code: layers without import cycles, public names across packages."""

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("geosim", "viz")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run import-linter on the tree at ``root`` with its own pyproject.toml."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True,
                          text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          timeout=120)


def sources() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_layers_hold():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_every_module_has_a_layer():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contract["contracts"] if c["id"] == "layers")["layers"]
    placed = {name.strip(" ()") for layer in layers for name in re.split(r"[|:]", layer)}
    top = {f"geosim.{p.stem}" for p in (ROOT / "geosim").iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert top - placed == set()


def test_a_planted_cycle_breaks_the_contract(tmp_path):
    # A copy of the tree in which the scenario layer imports the model above it.
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    scenario = tmp_path / "geosim" / "scenario.py"
    scenario.write_text(scenario.read_text() + "\n\ndef _planted():\n"
                        "    from geosim.model import GeoModel\n    return GeoModel\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1
    assert "geosim.scenario is not allowed to import geosim.model" in proc.stdout
    assert "Contracts: 0 kept, 2 broken." in proc.stdout


def test_no_module_imports_the_top_level_package():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert graph.find_modules_that_directly_import("geosim") == set()


def test_no_private_name_is_imported_across_packages():
    crossing = []
    for path in sources():
        importer = module_name(path)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            source_package = node.module if (ROOT / node.module.replace(".", "/")).is_dir() \
                else node.module.rpartition(".")[0]
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") \
                        and source_package != package:
                    crossing.append(f"{importer}: {node.module}.{alias.name}")
    assert crossing == []


def test_modules_and_functions_stay_small():
    # About 900 lines a module of geosim/, 150 a function (compiled kernels included).
    large = []
    for path in sources():
        text = path.read_text()
        if path.parts[-2] != "viz" and text.count("\n") > 900:
            large.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                    and node.end_lineno - node.lineno >= 150:
                large.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert large == []


def test_every_cited_document_is_in_the_repository():
    # A Markdown document named in the code or the docs must be one a clone has.
    texts = [*sources(), *ROOT.glob("docs/*.md"), ROOT / "README.md",
             *ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py")]
    missing = sorted({f"{p.relative_to(ROOT)}: {name}" for p in texts
                      for name in re.findall(r"[A-Za-z0-9_./-]+\.md\b", p.read_text())
                      if not (ROOT / name).is_file()})
    assert missing == []
