"""The reference reader: hf_xet downloading one file, timed inside its own process.

`python hfxet_read.py MODE URL TOKEN HASH SIZE [ARG]` prints the seconds MODE took:
- `file DEST`: download the whole file to DEST (new_file_download_group);
- `durable DEST`: the same, then fsync DEST, so its bytes are on the disk when the clock
  stops, as `arkfs get`'s are (hf_xet leaves them in the page cache);
- `stream`: stream the whole file into memory and drop it (new_download_stream_group);
- `byte OFFSET`: from a new session to the one byte at OFFSET (a ranged stream).
The clock starts after the import, so interpreter start-up is not charged to hf_xet.
"""

import os
import sys
import time

import hf_xet


def main() -> int:
    """Run one MODE and print its seconds."""
    mode, url, token, file_hash, size_text = sys.argv[1:6]
    size = int(size_text)
    info = hf_xet.XetFileInfo(file_hash, size)
    expiry = int(time.time()) + 3600
    start = time.perf_counter()
    session = hf_xet.XetSession()
    if mode in ("file", "durable"):
        with session.new_file_download_group(
            endpoint=url, token=token, token_expiry_unix_secs=expiry
        ) as group:
            group.start_download_file(info, sys.argv[6])
        if mode == "durable":
            fd = os.open(sys.argv[6], os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    else:
        group = session.new_download_stream_group(
            endpoint=url, token=token, token_expiry_unix_secs=expiry
        )
        begin = int(sys.argv[6]) if mode == "byte" else 0
        end = begin + 1 if mode == "byte" else size
        got = sum(len(block) for block in group.download_stream(info, start=begin, end=end))
        if got != end - begin:
            raise SystemExit(f"hf_xet streamed {got} bytes, expected {end - begin}")
    print(time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
