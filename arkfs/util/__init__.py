"""Small helpers below every layer; nothing here imports the rest of arkfs.

- lru: the one weighted LRU type.
- atomic: crash-safe file writes (temp file, fsync, rename) and removing their leftovers.
- paths: default directories (XDG).
- sizes: sizes for people (10G in, 1.5 GiB out).
"""
