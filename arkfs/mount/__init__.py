"""The mount: a read-only FUSE filesystem of archives, and the verified data path under it."""
