"""`arkfs publish`: chunk a tree, deduplicate, upload xorbs and shards, bind an ARK."""
