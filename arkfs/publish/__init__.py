"""`arkfs publish`: chunk a tree, deduplicate, upload xorbs and shards, bind an ARK."""

VERSION_NAMES_OPTION = "--allow-version-names"  # accepts root entries named like @vN
