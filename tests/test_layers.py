"""The import layering of the package (docs/architecture.md, "The layers").

Every module under ``src/riskset`` is parsed (no import is executed) and each import
of a riskset module is an arrow, wherever it stands: at the top, inside a function
(a lazy import is an arrow too) or under ``if TYPE_CHECKING``. The rules:

1. a module imports only modules of its own layer or of lower ones (:data:`LAYERS`);
2. no import cycle between packages (``riskset.X``), not even within a layer;
3. the solver sees only the bottom layer: it fits any :class:`riskset.core.interface.Datafit`
   and knows no family, no data set and no kernel;
4. only :mod:`riskset.backend` chooses between CPU and GPU: no other module outside the
   kernels imports :mod:`riskset.kernels.gpu`.

Arrows that break a rule and are being removed on another branch are listed, one by
one, in :data:`ALLOWED`; each must still exist (a stale exception fails the test, so
that it is deleted when the arrow goes).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "src"

#: Layers, low to high; a module belongs to the layer of its longest listed prefix
#: (``riskset.kernels`` holds ``riskset.kernels.cpu.glm``). ``riskset`` alone is the
#: package namespace (``riskset/__init__.py``: ``riskset.fit``, ``riskset.cross_validate`` ...).
LAYERS = (
    # errors, input checks, command-line argument types, the thread budget, the preparation's progress
    # line: used everywhere, use nothing
    ("riskset.exceptions", "riskset.validation", "riskset.arguments", "riskset.cores", "riskset.progress"),
    # the datafit interface, the penalty table, the step and the compiled sweep
    ("riskset.core",),
    # Dataset, ingestion (with its compiled CSC builder), risk-set bookkeeping
    ("riskset.data",),
    # compiled loops over rows: kernels.cpu (Numba), kernels.gpu (Numba-CUDA), device listing
    ("riskset.kernels",),
    # Model (user-facing) and each family's Datafit
    ("riskset.models",),
    # coordinate descent over the Datafit interface; priors
    ("riskset.solver",),
    # where the sweeps run (CPU or GPU); what follows a fit: standard errors and profile
    # intervals, the separability check, FitResult, case.json specifications
    ("riskset.backend", "riskset.inference", "riskset.profile_likelihood", "riskset.separability", "riskset.results",
     "riskset.spec"),
    # one fit (riskset.fit; riskset.sharded: one fit over rows split over Dask workers), survival and
    # cumulative incidence curves from fits
    ("riskset.api", "riskset.sharded", "riskset.likelihood", "riskset.survival", "riskset.competing_risks",
     "riskset.cox_scores", "riskset.robust"),
    # plots of curves, paths and intervals
    ("riskset.plots",),
    # cross-validation, regularization paths, the bootstrap, many analyses (they end with riskset.fit);
    # evidence synthesis (likelihood approximations of profiles, pooled across sites); Cox
    # diagnostics (the proportional-hazards test, with its plot)
    ("riskset.selection", "riskset.synthesis", "riskset.diagnostics"),
    # a comparative cohort study: propensity scores, matching, stratification, weights, balance
    ("riskset.study",),
    # scikit-learn estimators over riskset.fit; simulated data sets
    ("riskset.estimators", "riskset.simulate", "riskset.simulate_sccs"),
    # the package namespace
    ("riskset",),
    # the demo study (through the namespace); the ODE subsystem (a command of its own)
    ("riskset.demo", "riskset.ode"),
    # the command line
    ("riskset.cli",),
)

#: What the solver may import: it fits any Datafit (rule 3); it sizes its dense algebra by the
#: thread budget (riskset.cores, the bottom layer).
SOLVER_SEES = ("riskset.solver", "riskset.core", "riskset.exceptions", "riskset.validation", "riskset.cores")

#: The only modules outside the kernels that may import the GPU kernels (rule 4).
GPU_CHOOSERS = ("riskset.backend",)

#: (importer, imported) arrows that break a rule, each being removed on another branch.
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every riskset module, by name."""
    return {module_name(p): p for p in sorted((SOURCE / "riskset").rglob("*.py"))}


def imported(node: ast.AST, name: str, is_package: bool, known) -> list[str]:
    """The riskset modules an import statement of module ``name`` imports (``from a import b``
    imports module ``a.b`` when there is one, else ``a``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "riskset"]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative: from the package of the module
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    if base.split(".")[0] != "riskset":
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def arrows() -> set[tuple[str, str]]:
    """(importer, imported) for every import of a riskset module by a riskset module."""
    known = modules()
    out = set()
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in imported(node, name, path.name == "__init__.py", known):
                if target != name:
                    out.add((name, target))
    return out


def in_scope(module: str, prefix: str) -> bool:
    return module == prefix or (prefix != "riskset" and module.startswith(prefix + "."))


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the longest prefix of ``module`` listed there."""
    best = None
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if in_scope(module, prefix) and (best is None or len(prefix) > len(best[1])):
                best = (i, prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)")
    return best[0]


def package_of(module: str) -> str:
    """``riskset.X`` of a module (``riskset`` for the namespace itself)."""
    return ".".join(module.split(".")[:2])


def breaking(rule) -> list[str]:
    return sorted(f"{a} -> {b}" for a, b in arrows() - ALLOWED if rule(a, b))


def none_of(found: list, what: str) -> None:
    assert not found, f"{len(found)} {what}:\n  " + "\n  ".join(map(str, found))


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_module_imports_a_higher_layer():
    none_of(breaking(lambda a, b: layer_of(b) > layer_of(a)), "imports of a higher layer")


def test_no_import_cycle_between_packages():
    graph: dict[str, set[str]] = {}
    for a, b in arrows() - ALLOWED:
        if package_of(a) != package_of(b):
            graph.setdefault(package_of(a), set()).add(package_of(b))
    none_of([cycle for cycle in strongly_connected(graph) if len(cycle) > 1], "import cycles between packages")


def test_the_solver_sees_only_the_bottom_layer():
    none_of(breaking(lambda a, b: in_scope(a, "riskset.solver") and not any(in_scope(b, p) for p in SOLVER_SEES)),
            "imports by the solver of more than the bottom layer")


def test_only_the_backend_imports_the_gpu_kernels():
    none_of(breaking(lambda a, b: in_scope(b, "riskset.kernels.gpu") and not in_scope(a, "riskset.kernels")
                     and not any(in_scope(a, p) for p in GPU_CHOOSERS)),
            "imports of the GPU kernels outside the backend")


def test_allowed_exceptions_still_exist():
    """An exception whose arrow is gone must be deleted from ALLOWED."""
    none_of(sorted(ALLOWED - arrows()), "allowed exceptions whose arrow is gone: delete them from ALLOWED")


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` (node -> successors)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("text, expected", [
    ("from riskset import validation", ["riskset.validation"]),
    ("from riskset import __version__", ["riskset"]),
    ("import riskset", ["riskset"]),
    ("from riskset.kernels.cpu import glm", ["riskset.kernels.cpu.glm"]),
    ("from .device import require_device", ["riskset.kernels.gpu.device"]),
    ("from . import dopri", ["riskset.ode.dopri"]),
    ("import numpy as np", []),
])
def test_imports_are_resolved_to_modules(text, expected):
    node = ast.parse(text).body[0]
    name, is_package = ("riskset.ode.solve", False) if "dopri" in text else ("riskset.kernels.gpu", True)
    assert imported(node, name, is_package, modules()) == expected
