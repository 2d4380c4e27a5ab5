"""The archive service: every archive-side rule, once, for `arkfs serve` and the embedded backend.

- archive: Archive (a bound archive) and ArchiveService (bind, archives, files,
  reconstructions, xorb and shard intake, keyed dedup shards) over an arkfs Store.
"""
