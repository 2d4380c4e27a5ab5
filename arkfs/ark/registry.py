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

import json
from collections.abc import Iterable
from dataclasses import dataclass
from string import Template
from typing import Any

from arkfs.ark.anvl import read_records
from arkfs.ark.errors import ArkError, ArkSyntaxError
from arkfs.ark.identifier import Ark
from arkfs.ark.naan import check_naan

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


class Registry:
    """The records of one registry, looked up by ARK: its shoulder record, else its NAAN's."""

    def __init__(self, records: Iterable[RegistryRecord]) -> None:
        self._naans: dict[str, RegistryRecord] = {}
        self._shoulders: dict[str, list[RegistryRecord]] = {}
        for record in records:
            if record.shoulder:
                self._shoulders.setdefault(record.naan, []).append(record)
            else:
                self._naans.setdefault(record.naan, record)  # the first record of a NAAN
        for group in self._shoulders.values():
            group.sort(key=lambda r: len(r.shoulder), reverse=True)

    def __len__(self) -> int:
        return len(self._naans) + sum(len(g) for g in self._shoulders.values())

    def find(self, ark: Ark) -> RegistryRecord | None:
        """The record ark resolves by: the longest shoulder record its Name starts with,
        else its NAAN's record, else None."""
        for record in self._shoulders.get(ark.naan, ()):
            if ark.name.startswith(record.shoulder):
                return record
        return self._naans.get(ark.naan)


def parse_registry(text: str, source: str = "registry") -> Registry:
    """A registry in either form (JSON if it starts with '{' or '[', else ANVL).

    source names it in messages. Raises RegistryError when it holds no usable record.
    """
    stripped = text.lstrip()
    records = _from_json(stripped, source) if stripped[:1] in ("{", "[") else _from_anvl(text)
    registry = Registry(records)
    if not len(registry):
        raise RegistryError(
            f"{source} holds no NAAN record: give the NAAN registry as JSON "
            "(records with what/target) or as ANVL (naa: records with what/where)"
        )
    return registry


def _naan(value: object) -> str | None:
    """value as a NAAN (lowercased, as normalized), or None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        check_naan(value.strip().lower())
    except ArkSyntaxError:
        return None
    return value.strip().lower()


def _from_json(text: str, source: str) -> list[RegistryRecord]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RegistryError(f"{source} is not valid JSON: {exc}") from None
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise RegistryError(f"{source}: a JSON registry is a list of records, or {{'data': [...]}}")
    records = []
    for item in items:
        if isinstance(item, dict) and (record := _json_record(item)) is not None:
            records.append(record)
    return records


def _json_record(item: dict[str, Any]) -> RegistryRecord | None:
    """One JSON record, or None when it names no NAAN or has no target URL."""
    target = item.get("target")
    url, code = (
        (target.get("url"), target.get("http_code"))
        if isinstance(target, dict)
        else (
            target,
            None,
        )
    )
    if not isinstance(url, str) or not url.strip():
        return None
    who = item.get("who")
    name = who.get("name") if isinstance(who, dict) else who
    http_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if item.get("rtype") == SHOULDER_RECORD or "shoulder" in item:
        naan, shoulder = _naan(item.get("naan")), item.get("shoulder")
        if naan is None or not isinstance(shoulder, str) or not shoulder.strip():
            return None
        return RegistryRecord(naan, shoulder.strip(), url.strip(), http_code, str(name or ""))
    naan = _naan(item.get("what"))
    if naan is None:
        return None
    return RegistryRecord(naan, "", url.strip(), http_code, str(name or ""))


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
