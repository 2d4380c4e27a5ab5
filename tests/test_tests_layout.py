"""The test tree's layout, as the README's "Where a test goes" states it: a test that mounts
FUSE lives under tests/mounted/, no unit test does, and every other folder of tests/
mirrors a package of arkfs/ or is one of the few named end-to-end folders."""

import ast
from pathlib import Path

import pytest

import arkfs

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parent
ARKFS = Path(arkfs.__file__).resolve().parent
# Folders of tests/ that mirror no package: helpers, data, and the end-to-end suites.
OWN_FOLDERS = {"support", "data", "mounted", "reach", "scale"}
MOUNTS = "tests.support.mount"  # arkfs_mount: the one way a test mounts FUSE


def imported(path: Path) -> set[str]:
    """The modules path imports (absolute imports only, as the tests write them)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _test_modules() -> list[Path]:
    return [p for p in TESTS.rglob("*.py") if "support" not in p.relative_to(TESTS).parts]


def test_a_test_that_mounts_fuse_is_under_mounted() -> None:
    stray = [
        str(p.relative_to(TESTS))
        for p in _test_modules()
        if MOUNTS in imported(p) and p.relative_to(TESTS).parts[0] != "mounted"
    ]
    assert not stray, f"these mount FUSE, so belong under tests/mounted/: {stray}"


def test_no_unit_test_is_under_mounted() -> None:
    unit = [
        str(p.relative_to(TESTS))
        for p in (TESTS / "mounted").rglob("*.py")
        if "pytest.mark.unit" in p.read_text()
    ]
    assert not unit, f"unit tests mount nothing; move them beside their package: {unit}"


def test_every_other_folder_mirrors_a_package() -> None:
    folders = {p.parent.relative_to(TESTS) for p in TESTS.rglob("*.py")} - {Path()}
    strays = [
        str(f)
        for f in sorted(folders)
        if f.parts[0] not in OWN_FOLDERS and not (ARKFS / f / "__init__.py").is_file()
    ]
    assert not strays, f"these folders mirror no package of arkfs/: {strays}"
