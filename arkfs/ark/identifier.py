"""The parsed ARK: its parts, the relations its '/' and '.' reveal, and its string forms."""

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Self

from arkfs.ark.errors import ArkSyntaxError, MissingNameError
from arkfs.ark.naan import SHARED_NAANS, SharedNaan, check_naan
from arkfs.ark.repertoire import check_segment


class Inflection(StrEnum):
    """A THUMP request appended to an ARK: each one asks for metadata, not the object."""

    INFO = "?info"
    # Reserved older forms ('?' brief, '??' more metadata); the URI draft recommends
    # answering them like ?info.
    BRIEF = "?"
    MORE = "??"


_INFLECTIONS = {inflection.value: inflection for inflection in Inflection}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# Optional: Shoulders: the first-digit convention makes a shoulder "primordinal".
_PRIMORDINAL = re.compile(r"[bcdfghjkmnpqrstvwxz]*[0-9]")


@dataclass(frozen=True, slots=True)
class Ark:
    """A normalized ARK: `ark:NAAN/Name[/component...][.variant...]`.

    Equality and hashing follow lexical equivalence: the resolver (NMA) and the query
    (inflection) are identity inert and do not take part. Variant order is significant:
    draft-40 normalization never reorders variants and its implied variant roots are
    prefixes (x54.v18.fr.odf implies x54.v18.fr, not x54.fr), so `x.a.b` and `x.b.a` are
    different ARKs, although the URI draft calls variant order meaningless.
    """

    naan: str
    name: str
    components: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    resolver: str = field(default="", compare=False)
    query: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_naan(self.naan)
        if not self.name:
            raise MissingNameError(
                f"missing Name after NAAN {self.naan!r}: an ARK looks like ark:{self.naan}/Name"
            )
        check_segment(self.name, "Name")
        for component in self.components:
            check_segment(component, "component")
        for variant in self.variants:
            check_segment(variant, "variant")
        if self.query and not self.query.startswith("?"):
            raise ArkSyntaxError(f"query {self.query!r} must start with '?'")

    def __str__(self) -> str:
        """The Compact ARK in normalized form: the canonical key for lookups and indexes."""
        return f"ark:{self.naan}/{self.name}{self.qualifier}"

    def mapping(self, resolver: str | None = None) -> str:
        """The Mapping ARK: resolver (default: the one received) + Compact ARK + query."""
        return f"{self.resolver if resolver is None else resolver}{self}{self.query}"

    @property
    def nma(self) -> str | None:
        """The Name Mapping Authority host (and path), without scheme; None if compact."""
        if not self.resolver:
            return None
        return _SCHEME.sub("", self.resolver, count=1).rstrip("/")

    @property
    def inflection(self) -> Inflection | None:
        """The known inflection the query spells, if any."""
        return _INFLECTIONS.get(self.query)

    @property
    def shoulder(self) -> str:
        """The primordinal shoulder: consonants up to and including the Name's first digit."""
        match = _PRIMORDINAL.match(self.name)
        return match[0] if match else ""

    @property
    def blade(self) -> str:
        """The Name after its shoulder."""
        return self.name[len(self.shoulder) :]

    @property
    def component_path(self) -> str:
        """The ComponentPath, e.g. '/c3/s5'."""
        return "".join(f"/{component}" for component in self.components)

    @property
    def variant_path(self) -> str:
        """The VariantPath, e.g. '.v7.xsl'."""
        return "".join(f".{variant}" for variant in self.variants)

    @property
    def qualifier(self) -> str:
        """ComponentPath followed by VariantPath."""
        return self.component_path + self.variant_path

    @property
    def check_zone(self) -> str:
        """NAAN '/' Name: what a check character covers (ARK Anatomy, Check Zone)."""
        return f"{self.naan}/{self.name}"

    @property
    def shared_naan(self) -> SharedNaan | None:
        """The shared-NAAN meaning when the NAAN is one of 12345, 99152, 99166, 99999."""
        return SHARED_NAANS.get(self.naan)

    @property
    def base(self) -> Self:
        """The Base Compact Name: this ARK without qualifiers."""
        return self._with((), ())

    def parent(self) -> Self | None:
        """The containing object (last component and its variants dropped), or None."""
        # ARKs that Reveal Object Hierarchy: hierarchy does not extend above the Name,
        # and there is no NAAN super object.
        if not self.components:
            return None
        return self._with(self.components[:-1], ())

    def ancestors(self) -> tuple[Self, ...]:
        """Every containing object, nearest first, ending at the base name."""
        return tuple(
            self._with(self.components[:n], ()) for n in reversed(range(len(self.components)))
        )

    def variant_root(self) -> Self:
        """The root name: this ARK without its VariantPath."""
        return self._with(self.components, ())

    def variant_roots(self) -> tuple[Self, ...]:
        """The implied variants, one suffix dropped at a time, nearest first, ending at the root."""
        # ARKs that Reveal Object Variants: x54.v18.fr.odf implies x54.v18.fr, x54.v18, x54.
        return tuple(
            self._with(self.components, self.variants[:n])
            for n in reversed(range(len(self.variants)))
        )

    def implied(self) -> tuple[Self, ...]:
        """Every ARK that publishing this one implies exists: variant roots, then ancestors."""
        return self.variant_roots() + self.ancestors()

    def is_variant_of(self, other: Self) -> bool:
        """Same root name, different suffixes: the assigner declared them variants."""
        return self.variant_root() == other.variant_root() and self.variants != other.variants

    def child(self, component: str) -> Self:
        """This ARK with one more (normalized) component; its variants stay at the end."""
        # Normalization and Lexical Equivalence: variants cannot precede a component, so
        # they move to the end, exactly as parsing f"{self}/{component}" does.
        check_segment(component, "component")
        return self._with((*self.components, component), self.variants)

    def _with(self, components: tuple[str, ...], variants: tuple[str, ...]) -> Self:
        """A related ARK under the same resolver, without the query."""
        return replace(self, components=components, variants=variants, query="")
