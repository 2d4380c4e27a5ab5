"""Finding where an ARK resolves: NAAN registries, redirect chains, /.well-known/ark, the
fallback resolver (which token each origin gets is arkfs.net.bearer)."""

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    """`arkfs.resolve(ark)` is the Python API's resolve (arkfs/api.py), although this
    package, once imported, stands at the name arkfs.resolve: calling it calls that."""

    def __call__(self, ark: str) -> Any:
        from arkfs.api import resolve

        return resolve(ark)


sys.modules[__name__].__class__ = _CallablePackage
