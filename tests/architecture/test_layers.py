"""The import contract: packages form layers, and a module imports only its own layer or lower.

The layers, lowest first, are listed in `LAYERS` (docs/architecture.md explains each). Every
`import` counts, including those inside functions: a deferred import of a higher layer is still
a dependency on it. Beside the layers, two packages inside the simulation must stay apart
(policies know nothing of the cluster, nor the cluster of policies), and the lower layers must
not import the heavy libraries that the fast paths avoid.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simsched"

LAYERS = [
    "simsched.errors",
    "simsched.config",
    "simsched.workload",
    "simsched.sim",
    "simsched.results",
    "simsched.outputs",
    "simsched.studies",
    "simsched.cli",
]
INDEPENDENT = [("simsched.sim.policies", "simsched.sim.cluster")]
# Third-party libraries a layer must not import (SimPy stays in the simulation; plots and Dask
# stay out of everything that `simsched validate` or `import simsched` loads).
FORBIDDEN_LIBRARIES = {
    "simsched.config": {"simpy", "pandas", "matplotlib", "dask", "numpy"},
    "simsched.workload": {"simpy", "matplotlib", "dask"},
    "simsched.sim": {"matplotlib", "dask"},
    "simsched.results": {"matplotlib", "dask"},
}


def module_name(path: Path, top: Path = PACKAGE.parent) -> str:
    parts = path.relative_to(top).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, top: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = module_name(path, top)
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            if base != "simsched":  # `from simsched import x` is judged by x alone
                found.append((node.lineno, base))
    return found


def layer_of(module: str) -> int | None:
    for index, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return index
    return None


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# What a layered module may take from the top-level package itself; everything else there is the
# lazy public API, which would load a higher layer behind the contract's back.
TOP_LEVEL_ALLOWED = {"simsched.__version__", "simsched.errors"}


def through_the_top(target: str) -> bool:
    ours = target == "simsched" or (target.startswith("simsched.") and target.count(".") == 1)
    return ours and target not in TOP_LEVEL_ALLOWED


def violations(package_root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(package_root.rglob("*.py")):
        importer = module_name(path, package_root.parent)
        own = layer_of(importer)
        for line, target in imported_modules(path, package_root.parent):
            where = f"{path.relative_to(package_root.parent)}:{line}: {importer} imports {target}"
            theirs = layer_of(target)
            if own is not None and theirs is not None and theirs > own:
                problems.append(f"{where} (a higher layer)")
            if own is not None and theirs is None and through_the_top(target):
                problems.append(f"{where} (the lazy top-level API)")
            for a, b in INDEPENDENT:
                if (within(importer, a) and within(target, b)) or (
                    within(importer, b) and within(target, a)
                ):
                    problems.append(f"{where} ({a} and {b} are independent)")
            for layer, libraries in FORBIDDEN_LIBRARIES.items():
                if within(importer, layer) and target.split(".")[0] in libraries:
                    problems.append(f"{where} (not in {layer})")
    return sorted(set(problems))


def test_imports_point_down_only():
    assert violations() == []


def test_no_more_than_five_modules_at_the_top():
    assert len(list(PACKAGE.glob("*.py"))) <= 5


def test_a_lower_layer_importing_a_higher_one_is_caught(tmp_path):
    # The contract must be able to fail: a config module that imports the simulation.
    fake = tmp_path / "simsched"
    (fake / "config").mkdir(parents=True)
    (fake / "config" / "bad.py").write_text("from simsched.sim.engine import run_variant\n")
    (fake / "config" / "heavy.py").write_text("def f():\n    import pandas\n")
    (fake / "config" / "lazy.py").write_text("from simsched import simulate\n")
    (fake / "config" / "lazier.py").write_text("import simsched\n")
    found = violations(fake)
    assert any("config.lazy imports simsched.simulate" in p for p in found)
    assert any("config.lazier imports simsched " in p for p in found)
    assert any("config.bad imports simsched.sim.engine" in p for p in found)
    assert any("config.heavy imports pandas" in p for p in found)


@pytest.mark.parametrize("layer", LAYERS[1:])
def test_every_layer_is_a_package(layer):
    assert (PACKAGE.parent / layer.replace(".", "/") / "__init__.py").is_file()
