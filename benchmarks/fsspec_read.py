"""The fsspec side of the reach bench: `python fsspec_read.py URL CACHE PATH SIZE` reads
ark://PATH from start to end in 1 MiB reads through the `ark` fsspec filesystem (token
from $ARKFS_TOKEN, an empty chunk cache at CACHE) and prints the seconds it took. The
clock starts once the filesystem is made, as hfxet_read.py's starts after its import."""

import sys
import time

import fsspec

MIB = 1024 * 1024


def main() -> int:
    """Read the file once; print its seconds."""
    url, cache, path, size_text = sys.argv[1:5]
    fs = fsspec.filesystem("ark", server=url, cache_dir=cache)
    start = time.perf_counter()
    got = 0
    with fs.open(path, "rb") as f:
        while block := f.read(MIB):
            got += len(block)
    seconds = time.perf_counter() - start
    fs.client.close()
    if got != int(size_text):
        raise SystemExit(f"fsspec read {got} bytes, expected {size_text}")
    print(seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
