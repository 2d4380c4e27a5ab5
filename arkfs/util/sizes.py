"""Byte counts for people: reading sizes like 10G, writing them like 1.5 GiB."""

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes in a size like 10G, 512M, 1.5GiB or 1000000 (binary units); ValueError if not one."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"size {text!r} is not a number with an optional K, M, G or T suffix")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def human(n: float) -> str:
    """Bytes as a short human size: 1.5 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
