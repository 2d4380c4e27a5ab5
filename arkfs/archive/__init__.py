"""Where ARKs meet XET, as pure formats with no I/O.

- manifest: what an ARK-named archive holds (entries with XET file hashes), in msgpack or JSON.
- record: a bound archive as every layer passes it around (manifest, ERC, when bound).
"""
