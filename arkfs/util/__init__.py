"""Plain data structures with no I/O, used by every layer; nothing here imports arkfs."""
