"""The NOID Check Digit Algorithm (NCDA) over an ARK's Check Zone.

Each character's value (its index in ALPHABET; 0 for any other character, such as '/')
is multiplied by its position, counting from 1; the check character is the one whose
value is the sum mod 29. It catches every single-character error and every transposition
of two adjacent characters in zones shorter than 29 characters. The Check Zone starts at
the first character of the NAAN (see `Ark.check_zone`).
"""

ALPHABET = "0123456789bcdfghjkmnpqrstvwxz"
_VALUE = {char: value for value, char in enumerate(ALPHABET)}


def check_character(zone: str) -> str:
    """The NCDA check character for zone (the Check Zone without its check character)."""
    total = sum(position * _VALUE.get(char, 0) for position, char in enumerate(zone, start=1))
    return ALPHABET[total % len(ALPHABET)]


def verify(zone: str) -> bool:
    """Whether zone ends in the right check character for the characters before it."""
    return len(zone) > 1 and check_character(zone[:-1]) == zone[-1]
