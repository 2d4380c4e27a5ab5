"""Finding where an ARK resolves: NAAN registries, redirect chains, /.well-known/ark, the
fallback resolver, private destinations, and plain HTTP objects at a chain's end."""
