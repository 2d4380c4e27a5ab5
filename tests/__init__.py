"""The arkfs test suite: a regular package, so that `tests.*` is this one, never a
dependency's stray top-level `tests` package (pairtree, under ocfl-py, installs one)."""
