"""Finding where an ARK resolves: NAAN registries, redirect chains, /.well-known/ark, the
fallback resolver, and which token each origin gets."""
