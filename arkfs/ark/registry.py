"""NAAN registries: the JSON and ANVL forms, shoulder records, and their target templates.

Finding a Resolver Service: a NAAN registry names, per NAAN, where its ARKs resolve. Two
forms are read:

- JSON, as the ARK Alliance publishes it: `{"metadata": ..., "data": [record...]}` (or a
  bare list). A `PublicNAAN` record has `what` (the NAAN); a `PublicNAANShoulder` record
  has `naan` and `shoulder` and routes only the ARKs under that shoulder (the spec's
  namespace-splitting case). Each has `target: {"url": TEMPLATE, "http_code": N}`.
- ANVL ([NAANregistry], the plain-text file): records starting `naa:`, with `what:` the
  NAAN (or NAAN/shoulder) and `where:` the NMA's base URL, which becomes the template
  `WHERE/ark:${content}`.

A shoulder record wins over its NAAN's record for the ARKs under it, the longest shoulder
first. Templates expand as N2T expands them (CDLUC3/resolver, used by CDLUC3/N2T:
rslv/lib_rslv/__init__.py split_identifier_string and piddefine.py parse; substitution in
rslv/routers/resolver.py pid_format), by Python's string.Template rules: `$name` and
`${name}` alike, `$$` a literal `$`, and an unknown name or a stray `$` an error (never
requested literally). For `ark:/12345/x6np1wh8k/c3`:

    ${pid}      ark:12345/x6np1wh8k/c3   the whole ARK (here in normalized form)
    ${scheme}   ark
    ${content}  12345/x6np1wh8k/c3       everything after the label
    ${prefix}   12345                    the NAAN
    ${value}    x6np1wh8k/c3             everything after the NAAN
    ${suffix}   what follows the record's own NAAN/shoulder: x6np1wh8k/c3 for a NAAN
                record, np1wh8k/c3 for the shoulder x6
"""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from string import Template
from typing import Any

import msgspec

from arkfs.ark.anvl import read_records
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.naan import is_naan
from arkfs.ark.repertoire import BETANUMERIC

NAAN_RECORD, SHOULDER_RECORD = "PublicNAAN", "PublicNAANShoulder"


class RegistryError(ArkError, ValueError):
    """A NAAN registry that cannot be read, or a template that cannot be expanded."""


@dataclass(frozen=True)
class RegistryRecord:
    """Where the ARKs of a NAAN (or of one shoulder under it) resolve."""

    naan: str
    shoulder: str  # "" for a NAAN record
    template: str  # the target URL, with ${...} variables
    http_code: int | None = None  # the redirect status the registry asks for
    who: str = ""

    @property
    def kind(self) -> str:
        """ "shoulder" or "naan"."""
        return "shoulder" if self.shoulder else "naan"

    def __str__(self) -> str:
        where = f"{self.naan}/{self.shoulder}" if self.shoulder else self.naan
        return f"{self.kind} record {where}"

    def target(self, ark: Ark) -> str:
        """The template expanded for ark (see the module docstring)."""
        value = str(ark)[len(f"ark:{ark.naan}/") :]
        parts = {
            "pid": str(ark),
            "scheme": "ark",
            "content": f"{ark.naan}/{value}",
            "prefix": ark.naan,
            "value": value,
            "suffix": value[len(self.shoulder) :],
        }
        known = ", ".join(f"${{{p}}}" for p in parts)
        try:
            return Template(self.template).substitute(parts)
        except KeyError as exc:
            raise RegistryError(
                f"{self}: unknown variable ${{{exc.args[0]}}} in target {self.template!r} "
                f"(known: {known})"
            ) from None
        except ValueError:  # a '$' that starts no variable: write a literal '$' as $$
            raise RegistryError(
                f"{self}: a '$' that starts no variable in target {self.template!r} "
                f"(known: {known}; a literal '$' is $$)"
            ) from None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON, for traces."""
        return {
            "kind": self.kind,
            "naan": self.naan,
            "shoulder": self.shoulder,
            "template": self.template,
            "http_code": self.http_code,
            "who": self.who,
        }


Row = tuple[str, str, str, int | None, str]  # naan, shoulder, template, http_code, who


# The JSON form as the ARK Alliance publishes it, decoded straight into these (msgspec:
# fields not named here are skipped without being built, and target and who are kept as
# raw JSON until a lookup needs them). A registry that does not fit them is read by
# _loose_rows. gc=False: they hold no cycles, and a million of them would otherwise set
# off the cyclic collector again and again.
_NULL = msgspec.Raw(b"null")


class _Target(msgspec.Struct, gc=False):
    url: str | None = None
    http_code: int | None = None


class _Who(msgspec.Struct, gc=False):
    name: str | None = None


class _Item(msgspec.Struct, gc=False):
    rtype: str | None = None
    what: str | None = None
    naan: str | None = None
    shoulder: str | None = None
    target: msgspec.Raw = _NULL
    who: msgspec.Raw = _NULL


class _Document(msgspec.Struct, gc=False):
    data: list[_Item] | None = None


_DECODER = msgspec.json.Decoder(_Document | list[_Item])
_TARGET = msgspec.json.Decoder(_Target | str | None)
_WHO = msgspec.json.Decoder(_Who | str | None)
_BLANKS = re.compile(rb"\s*")
_NOT_NAAN_CHAR = re.compile(f"[^{BETANUMERIC}]")


class Registry:
    """The records of one registry, indexed by NAAN and by (NAAN, shoulder), looked up by
    ARK: its longest shoulder record, else its NAAN's.

    Records of the JSON form are indexed as decoded and checked when looked up (the first
    record of a NAAN, or of a shoulder, decides: if it has no usable target, the ARK has
    no record there), so a registry of a million records is indexed in a fraction of a
    second; the ANVL form is checked as it is indexed.
    """

    def __init__(self, records: Iterable[RegistryRecord] = ()) -> None:
        self._naans: dict[str, Row | _Item] = {}
        self._shoulders: dict[tuple[str, str], Row | _Item] = {}
        self._with_shoulders: set[str] = set()  # NAANs that have shoulder records
        self._add((r.naan, r.shoulder, r.template, r.http_code, r.who) for r in records)

    @classmethod
    def from_rows(cls, rows: Iterable[Row]) -> "Registry":
        """A registry of rows (naan, shoulder, template, http_code, who)."""
        registry = cls()
        registry._add(rows)
        return registry

    @classmethod
    def from_items(cls, items: list[_Item]) -> "Registry":
        """A registry of decoded JSON records: the first record of a NAAN (or of a NAAN
        and shoulder) wins. Records are checked when looked up; when some NAAN or shoulder
        needs normalizing (case, blanks: rare), every record is checked now instead."""
        # Earlier records win: each dict is built from the last record to the first.
        naans: dict[str | None, Row | _Item] = {
            item.what: item
            for item in reversed(items)
            if item.shoulder is None and item.rtype != SHOULDER_RECORD
        }
        shoulders: dict[tuple[str | None, str | None], Row | _Item] = {
            (item.naan, item.shoulder): item
            for item in reversed(items)
            if item.shoulder is not None or item.rtype == SHOULDER_RECORD
        }
        naans.pop(None, None)
        with_shoulders = {naan for naan, shoulder in shoulders if naan and shoulder}
        keys = "".join([*naans, *with_shoulders])  # type: ignore[list-item]
        normal = _NOT_NAAN_CHAR.search(keys) is None and "" not in naans
        trimmed = all(n and s and s == s.strip() for n, s in shoulders)
        if not (normal and trimmed):
            return cls.from_rows(row for item in items if (row := _item_row(item)) is not None)
        registry = cls()
        registry._naans = naans  # type: ignore[assignment]
        registry._shoulders = shoulders  # type: ignore[assignment]
        registry._with_shoulders = with_shoulders
        return registry

    def _add(self, rows: Iterable[Row]) -> None:
        for row in rows:
            if row[1]:
                self._shoulders.setdefault((row[0], row[1]), row)
                self._with_shoulders.add(row[0])
            else:
                self._naans.setdefault(row[0], row)  # the first record of a NAAN

    def __len__(self) -> int:
        return len(self._naans) + len(self._shoulders)

    def usable(self) -> bool:
        """Whether the registry holds at least one usable record."""
        entries = chain(self._naans.values(), self._shoulders.values())
        return any(_record(e) for e in entries)

    def find(self, ark: Ark) -> RegistryRecord | None:
        """The record ark resolves by: the longest shoulder record its Name starts with,
        else its NAAN's record, else None (a few dict lookups, whatever the size)."""
        if ark.naan in self._with_shoulders:
            for end in range(len(ark.name), 0, -1):
                entry = self._shoulders.get((ark.naan, ark.name[:end]))
                if entry is not None and (record := _record(entry)) is not None:
                    return record
        entry = self._naans.get(ark.naan)
        return None if entry is None else _record(entry)


def _record(entry: Row | _Item) -> RegistryRecord | None:
    """The record a row or a decoded JSON record stands for, or None if it is unusable."""
    row = _item_row(entry) if isinstance(entry, _Item) else entry
    return None if row is None else RegistryRecord(*row)


def parse_registry(text: str | bytes, source: str = "registry") -> Registry:
    """A registry in either form (JSON if it starts with '{' or '[', else ANVL).

    source names it in messages. Raises RegistryError when it is malformed (nested deeper
    than Python's recursion limit included) or holds no usable record.
    """
    data = text.encode() if isinstance(text, str) else text  # JSON is decoded from UTF-8
    start = _BLANKS.match(data).end()  # type: ignore[union-attr]
    try:
        if data[start : start + 1] in (b"{", b"["):
            registry = _from_json(data, source)
        else:
            registry = Registry(_from_anvl(_text(data, source)))
    except RecursionError:
        raise RegistryError(f"{source} is nested too deeply to be a NAAN registry") from None
    if not registry.usable():
        raise RegistryError(
            f"{source} holds no NAAN record: give the NAAN registry as JSON "
            "(records with what/target) or as ANVL (naa: records with what/where)"
        )
    return registry


def _text(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(f"{source} is not UTF-8 text") from None


def _naan(value: object) -> str | None:
    """value as a NAAN (lowercased, as normalized), or None if it is not one."""
    if not isinstance(value, str):
        return None
    naan = value.strip().lower()
    return naan if is_naan(naan) else None


def _from_json(text: bytes, source: str) -> Registry:
    try:
        document = _DECODER.decode(text)
    except msgspec.ValidationError:  # valid JSON of another shape: read it loosely
        return Registry.from_rows(_loose_rows(text, source))
    except msgspec.DecodeError as exc:
        raise RegistryError(f"{source} is not valid JSON: {exc}") from None
    items = document if isinstance(document, list) else document.data
    if items is None:
        raise RegistryError(f"{source}: a JSON registry is a list of records, or {{'data': [...]}}")
    return Registry.from_items(items)


def _item_row(item: _Item) -> Row | None:
    """One decoded JSON record as a row, or None when it is unusable."""
    try:
        target = _TARGET.decode(item.target)
    except msgspec.MsgspecError:
        return None
    try:
        who = _WHO.decode(item.who)
    except msgspec.MsgspecError:
        who = None
    url, code = (target.url, target.http_code) if isinstance(target, _Target) else (target, None)
    name = who.name if isinstance(who, _Who) else who
    return _row(item.rtype, item.what, item.naan, item.shoulder, url, code, name)


def _loose_rows(text: bytes, source: str) -> Iterator[Row]:
    """The rows of a JSON registry whose records vary in shape (each one read or skipped)."""
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise RegistryError(f"{source} is not valid JSON: {exc}") from None
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise RegistryError(f"{source}: a JSON registry is a list of records, or {{'data': [...]}}")
    for item in items:
        if not isinstance(item, dict):
            continue
        target, who = item.get("target"), item.get("who")
        url, code = (
            (target.get("url"), target.get("http_code"))
            if isinstance(target, dict)
            else (target, None)
        )
        name = who.get("name") if isinstance(who, dict) else who
        row = _row(
            item.get("rtype"), item.get("what"), item.get("naan"), item.get("shoulder"), url,
            code, name,
        )  # fmt: skip
        if row is not None:
            yield row


def _row(
    rtype: object, what: object, naan: object, shoulder: object, url: object, code: object,
    who: object,
) -> Row | None:  # fmt: skip
    """One JSON record as a row, or None when it names no NAAN or has no target URL."""
    if not isinstance(url, str) or not url.strip():
        return None
    http_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    name = str(who or "")
    if rtype == SHOULDER_RECORD or shoulder is not None:
        found = _naan(naan)
        if found is None or not isinstance(shoulder, str) or not shoulder.strip():
            return None
        return found, shoulder.strip(), url.strip(), http_code, name
    found = _naan(what)
    if found is None:
        return None
    return found, "", url.strip(), http_code, name


def _from_anvl(text: str) -> list[RegistryRecord]:
    try:
        parsed = read_records(text)
    except ArkError as exc:
        raise RegistryError(f"the ANVL registry is malformed: {exc}") from None
    records = []
    for elements in parsed:
        if not elements or elements[0][0].lower() != "naa":
            continue
        fields = {label.lower(): value for label, value in elements}
        what, where = fields.get("what", ""), fields.get("where", "").strip()
        naan_text, _, shoulder = what.strip().partition("/")
        naan = _naan(naan_text)
        if naan is None or not where.startswith(("http://", "https://")):
            continue
        template = f"{where.rstrip('/')}/ark:${{content}}"
        records.append(RegistryRecord(naan, shoulder, template, None, fields.get("who", "")))
    return records
