"""Finding where an ARK resolves: NAAN registries, redirect chains, /.well-known/ark, the
fallback resolver (which token each origin gets is arkfs.net.bearer)."""
