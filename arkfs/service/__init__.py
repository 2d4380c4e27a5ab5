"""The archive service: every archive-side rule, once, for `arkfs serve` and the embedded backend.

- archive: ArchiveService (bind, archives, files, reconstructions, xorb and shard intake,
  keyed dedup shards) over an arkfs Store. The Archive record it hands out is defined in
  arkfs.archive.record.
"""
