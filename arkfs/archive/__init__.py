"""Where ARKs meet XET, as pure formats with no I/O.

- manifest: what an ARK-named archive holds (entries with XET file hashes), in msgpack or JSON.
- record: a version of a bound archive as every layer passes it around (manifest, ERC,
  VersionInfo), and VersionInfo, one version without its manifest.
- changes: files added, removed and changed between two versions, by XET hash.
"""
