"""What must never be in a log: tokens (derived ones, and those of the tests' token files),
bearer headers and signed URLs' signatures."""

import os
import re
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

PATTERNS = (
    re.compile(r"arkfs1\.(?:read|write|upload)\.\d+\.[0-9a-f]{64}"),  # a token from /v1/token
    re.compile(r"[?&]sig=[0-9a-f]{16}"),  # a signed xorb URL
    re.compile(r"Bearer\s+(?!token\b)[\w.~+/-]{6,}"),  # an Authorization header
    re.compile(r"(?i)x-amz-(?:signature|credential)="),  # a pre-signed S3 URL
    re.compile(r"(?i)x-goog-(?:signature|credential)="),  # a signed GCS URL
    re.compile(r"(?i)[?&](?:access_)?token=[^&\s\"']"),  # a token in a query string
    re.compile(r"https?://[^/\s@:\[\]]+:[^/\s@]*@"),  # userinfo: user:password@host
)
LOG_NAMES = ("*.log", "stderr", "err")  # mount logs, --log files, captured stderr
SERVER_LOGS = "ARKFS_TEST_SERVER_LOGS"  # where tests/support/server.py keeps servers' stderr


def tokens_in(root: Path) -> set[str]:
    """The tokens of every `tokens` file under root (`TOKEN SCOPE` lines), but one-letter
    ones, which any text holds."""
    found = set()
    for path in _files_named(root, ("tokens",)):
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                word = line.split()[0] if line.split() else ""
                if len(word) > 1:
                    found.add(word)
    return found


def leaks(logs: Iterable[Path], tokens: Iterable[str] = ()) -> list[str]:
    """`path: line` for every line of logs that holds a secret."""
    words = [re.compile(rf"(?<![\w-]){re.escape(t)}(?![\w-])") for t in tokens]
    out = []
    for path in logs:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if any(p.search(line) for p in (*PATTERNS, *words)):
                out.append(f"{path}: {line[:300]}")
    return out


def logs_under(*roots: Path) -> list[Path]:
    """The log files under roots."""
    return sorted({p for root in roots for p in _files_named(root, LOG_NAMES) if p.is_file()})


def _files_named(root: Path, patterns: tuple[str, ...]) -> Iterator[Path]:
    """The paths under root whose names match one of patterns: one walk (a session's temp
    tree holds hundreds of thousands of files; an rglob per pattern took 27 s)."""
    for here, _, names in os.walk(root):
        for name in names:
            if any(fnmatch(name, pattern) for pattern in patterns):
                yield Path(here, name)
