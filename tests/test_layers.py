"""The layers of the README's architecture, read from the import graph: a lower layer never
imports a higher one, the format packages stand alone, and the mount's names never import
its data path (nor either its FUSE handlers)."""

import ast
from pathlib import Path

import pytest

import arkfs

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ROOT = Path(arkfs.__file__).parent

# Lowest first; a package may import its own layer and those below.
LAYERS = (
    ("arkfs", "arkfs.util"),
    ("arkfs.xet", "arkfs.ark", "arkfs.archive"),
    ("arkfs.net", "arkfs.store", "arkfs.service", "arkfs.backend", "arkfs.resolver"),
    (
        "arkfs.server",
        "arkfs.publish",
        "arkfs.mount",
        "arkfs.export",
        "arkfs.api",
        "arkfs.download",
        "arkfs.fsspec_ark",
        "arkfs.cli",
        "arkfs.__main__",
    ),
)
# Loaded on first use only: the Python API, by the root package (arkfs.open, arkfs.resolve,
# arkfs.Client).
LAZY = {("arkfs", "arkfs.api")}
# Packages that import nothing of arkfs but themselves and these.
ALONE = {
    "arkfs.ark": ("arkfs.ark",),
    "arkfs.xet": ("arkfs.xet",),
}
# Within the mount: (importer, imported) pairs that must not exist.
FORBIDDEN = (
    ("arkfs.mount.names", "arkfs.mount.data"),
    ("arkfs.mount.names", "arkfs.mount.fuse"),
    ("arkfs.mount.data", "arkfs.mount.fuse"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every arkfs module path imports, at any depth (imports inside functions count)."""
    found: set[str] = set()
    package = module_name(path)  # what a relative import is relative to
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found |= {f"{base}.{a.name}" for a in node.names} | {base}
    return {m for m in found if m == "arkfs" or m.startswith("arkfs.")}


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int:
    """The layer of the deepest package of LAYERS that holds module."""
    best, depth = -1, -1
    for i, packages in enumerate(LAYERS):
        for p in packages:
            if under(module, p) and p.count(".") > depth:
                best, depth = i, p.count(".")
    assert best >= 0, f"{module} is in no layer of LAYERS: add it where the README puts it"
    return best


GRAPH = {module_name(p): imports(p) for p in sorted(ROOT.rglob("*.py"))}


def test_the_graph_is_read() -> None:
    assert len(GRAPH) > 100
    assert any(under(m, "arkfs.xet") for m in GRAPH["arkfs.backend.base"])


def test_no_layer_imports_a_higher_one() -> None:
    wrong = [
        f"{module} (layer {layer_of(module)}) imports {imported} (layer {layer_of(imported)})"
        for module, imported_set in GRAPH.items()
        for imported in sorted(imported_set)
        if layer_of(imported) > layer_of(module)
        and not any(module == m and under(imported, i) for m, i in LAZY)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_format_packages_stand_alone() -> None:
    wrong = [
        f"{module} imports {imported}"
        for package, allowed in ALONE.items()
        for module, imported_set in GRAPH.items()
        if under(module, package)
        for imported in sorted(imported_set)
        if imported != "arkfs" and not any(under(imported, a) for a in allowed)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_mount_names_never_import_the_data_path() -> None:
    wrong = [
        f"{module} imports {imported}"
        for importer, imported_package in FORBIDDEN
        for module, imported_set in GRAPH.items()
        if under(module, importer)
        for imported in sorted(imported_set)
        if under(imported, imported_package)
    ]
    assert not wrong, "\n".join(wrong)


# File names any layer may have its own of; every other name means one thing.
SHARED_NAMES = {"__init__.py", "base.py", "errors.py", "config.py"}


def test_one_meaning_per_file_name() -> None:
    by_name: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT.parent)))
    twins = {n: ps for n, ps in by_name.items() if len(ps) > 1 and n not in SHARED_NAMES}
    assert not twins, twins
