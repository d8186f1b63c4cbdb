"""The coordinator record layouts of the Kafka releases kgtool reads: 4.0 to 4.4, from their specs.

Kafka declares every record its coordinators write in JSON message specs
(``group-coordinator``, ``share-coordinator`` and ``transaction-coordinator``, under
``src/main/resources/common/message/``), turned into code by its ``MessageGenerator``. kgtool
ships those specs as each release branch head has them (``kgtool/data/kafka-specs/``: 4.0
``fb2bc813``, 4.1 ``54bc8ff3``, 4.2 ``a79f0c1a``, 4.3 ``0941038d``, 4.4 ``87943b2f``, without
prose) and builds its schemas from them, so a layout kgtool declares is one a release shipped,
and nothing else is (a record type or field that no release has, such as drafts of unmerged
proposals, is unknown to kgtool and reported as such).

A spec's later releases only add to it (a new value version, a new tagged field): kgtool
declares the newest layout of each spec and remembers the release each value version and each
field arrived in (:attr:`Field.since`, :attr:`MessageSchema.version_since`). A spec that a later
release removed (``ShareGroupPartitionMetadata``, 4.0 only) is declared from its last release and
carries :attr:`MessageSchema.until`. ``tests/coordinator/test_release_specs.py`` holds every
release's view of the declarations equal to that release's own spec table.

Kafka's ``FieldSpec`` conventions, kept here:

- ``"default": null`` in the JSON is no default (an absent tagged array reads as empty, not
  null); the string ``"null"`` is a null default;
- a field without ``versions`` exists in its ``taggedVersions``;
- ``"type": "[]X"`` or ``"type": "X"`` names a struct whose fields are inline or in
  ``commonStructs``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from kgtool.coordinator.schema import F, Field, MessageSchema, PRIMITIVE_TYPES, VersionRange, camel_to_snake

__all__ = [
    "RELEASES",
    "release_specs",
    "schema_from_spec",
    "release_schemas",
    "declared_schema",
    "declared_schemas",
    "schema_as_of",
]

#: The release lines kgtool reads, oldest first.
RELEASES: tuple[str, ...] = ("4.0", "4.1", "4.2", "4.3", "4.4")

_INT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint16", "uint32"})


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


@cache
def release_specs(release: str) -> dict[str, dict[str, Any]]:
    """The spec table of one release line: spec name -> the JSON spec (without prose)."""
    if release not in RELEASES:
        raise ValueError(f"kgtool reads Kafka {', '.join(RELEASES)}; not {release!r}")
    text = resources.files("kgtool.data").joinpath("kafka-specs", f"kafka-{release}.json").read_text("utf-8")
    return json.loads(text)["specs"]


def _default(spec_field: dict[str, Any], type_: str) -> Any:
    """A JSON default as kgtool's :class:`Field` holds it (``FieldSpec``'s reading of the JSON)."""
    if "default" not in spec_field or spec_field["default"] is None:
        return None  # no default: the type's own (filled in by F's sentinel below)
    d = spec_field["default"]
    if d == "null":
        return "null"
    if type_ in _INT_TYPES:
        return int(d, 0) if isinstance(d, str) else int(d)
    if type_ == "bool":
        return d if isinstance(d, bool) else str(d).lower() == "true"
    if type_ == "float64":
        return float(d)
    return d


def _fields(spec_fields: list[dict], structs: dict[str, dict]) -> list[Field]:
    out = []
    for sf in spec_fields:
        type_ = sf["type"]
        element = type_[2:] if type_.startswith("[]") else type_
        sub: list[Field] = []
        if element not in PRIMITIVE_TYPES:
            inner = sf.get("fields")
            if inner is None:
                inner = structs[element]["fields"]
            sub = _fields(inner, structs)
        kwargs: dict[str, Any] = {}
        default = _default(sf, element if not type_.startswith("[]") else type_)
        if default is not None:
            kwargs["default"] = default
        out.append(
            F(
                camel_to_snake(sf["name"]),
                type_,
                sf.get("versions"),
                nullable=sf.get("nullableVersions", "none"),
                tag=sf.get("tag"),
                tagged=sf.get("taggedVersions", "none"),
                ignorable=bool(sf.get("ignorable", False)),
                fields=sub,
                **kwargs,
            )
        )
    return out


def schema_from_spec(spec: dict[str, Any], *, api_key: int | None = None) -> MessageSchema:
    """One release's JSON spec as a :class:`MessageSchema` (no release annotations).

    Key specs of 4.0 (``"type": "data"``, ``validVersions`` = the record type, or ``0-1`` for the
    OffsetCommitKey of record types 0 and 1) are read as the 4.1+ ones (``coordinator-key``,
    ``apiKey`` = the record type, version 0): the bytes are the same, an int16 record type before
    the key's fields. ``api_key`` is the record type of a 4.0 value spec (from its key's).
    """
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}
    api_key = spec.get("apiKey", api_key)
    versions = spec["validVersions"]
    fields = spec["fields"]
    if spec.get("apiKey") is None and spec["name"].endswith("Key") and spec.get("type") == "data":
        api_key = VersionRange.parse(versions).highest
        versions = "0"
        fields = [dict(f, versions="0") for f in fields]
    return MessageSchema.of(
        spec["name"],
        api_key=api_key,
        versions=versions,
        flexible=spec.get("flexibleVersions", "none"),
        source=spec.get("file", ""),
        fields=_fields(fields, structs),
    )


@cache
def release_schemas(release: str) -> dict[str, MessageSchema]:
    """One release's spec table as schemas: spec name -> :class:`MessageSchema`."""
    specs = release_specs(release)
    out: dict[str, MessageSchema] = {}
    for name in sorted(specs, key=lambda n: not n.endswith("Key")):  # keys first: values take their record type
        twin = out.get(name[: -len("Value")] + "Key") if name.endswith("Value") else None
        out[name] = schema_from_spec(specs[name], api_key=None if twin is None else twin.api_key)
    return dict(sorted(out.items()))


def _since_fields(fields: tuple[Field, ...], by_release: list[tuple[str, tuple[Field, ...] | None]]) -> tuple[Field, ...]:
    """``fields`` with :attr:`Field.since` set to the first release whose layout has them."""
    out = []
    for f in fields:
        since = None
        nested_history: list[tuple[str, tuple[Field, ...] | None]] = []
        for release, old in by_release:
            match = None if old is None else next((o for o in old if o.name == f.name and o.tag == f.tag), None)
            if match is not None and since is None:
                since = release
            nested_history.append((release, None if match is None else match.fields))
        sub = _since_fields(f.fields, nested_history) if f.fields else f.fields
        out.append(Field(**{**f.__dict__, "fields": sub, "since": since}))
    return tuple(out)


def _same_kind(old: Field, new: Field) -> bool:
    return (old.name, old.type, old.nullable_versions, old.tag) == (new.name, new.type, new.nullable_versions, new.tag)


def _extends(old: tuple[Field, ...], new: tuple[Field, ...], versions: range) -> bool:
    """Does the ``new`` layout read every version in ``versions`` of ``old`` the same way?

    True when each version's untagged fields are the same, in the same order (struct fields
    recursively), and every tagged field of ``old`` keeps its tag and type in ``new``: a later
    release may add versions and tagged fields, nothing else (``MessageDataGenerator``'s
    compatibility rules, which Kafka's own specs keep but for the 4.0 early-access share groups).
    """
    for v in versions:
        o_plain = [f for f in old if f.present_in(v) and not f.tagged_in(v)]
        n_plain = [f for f in new if f.present_in(v) and not f.tagged_in(v)]
        if len(o_plain) != len(n_plain):
            return False
        for a, b in zip(o_plain, n_plain):
            if not _same_kind(a, b) or a.versions != b.versions and v not in b.versions:
                return False
            if a.fields and not _extends(a.fields, b.fields, range(v, v + 1)):
                return False
        n_tagged = {f.tag: f for f in new if f.tagged_in(v)}
        for a in (f for f in old if f.tagged_in(v)):
            b = n_tagged.get(a.tag)
            if b is None or not _same_kind(a, b) or (a.fields and not _extends(a.fields, b.fields, range(v, v + 1))):
                return False
    return True


def _annotated(chain: list[tuple[str, MessageSchema]], superseded: tuple[MessageSchema, ...] = ()) -> MessageSchema:
    """The newest schema of a run of compatible releases, with the release of each part."""
    newest = chain[-1][1]
    version_since: dict[int, str] = {}
    for r, s in chain:
        for v in range(s.valid_versions.lowest, s.valid_versions.highest + 1):
            version_since.setdefault(v, r)
    return MessageSchema(
        name=newest.name,
        valid_versions=newest.valid_versions,
        flexible_versions=newest.flexible_versions,
        fields=_since_fields(newest.fields, [(r, s.fields) for r, s in chain]),
        source=newest.source,
        api_key=newest.api_key,
        version_since=tuple(sorted(version_since.items())),
        until=None if chain[-1][0] == RELEASES[-1] else chain[-1][0],
        superseded=superseded,
    )


@cache
def declared_schemas() -> dict[str, MessageSchema]:
    """Every spec of every release, newest layout first, annotated with the release of each part.

    Returns spec name -> :class:`MessageSchema` whose :attr:`~MessageSchema.version_since` maps
    each value version to the release it arrived in and each :class:`Field` has ``since``. A
    layout that a later release changed incompatibly is kept in
    :attr:`~MessageSchema.superseded`.
    """
    names: dict[str, None] = {}
    for r in RELEASES:
        names.update(dict.fromkeys(release_schemas(r)))
    out: dict[str, MessageSchema] = {}
    for name in sorted(names):
        chains: list[list[tuple[str, MessageSchema]]] = []
        for r in RELEASES:
            s = release_schemas(r).get(name)
            if s is None:
                continue
            last = chains[-1][-1][1] if chains else None
            if last is not None and _extends(last.fields, s.fields, range(last.valid_versions.lowest, last.valid_versions.highest + 1)):
                chains[-1].append((r, s))
            else:
                chains.append([(r, s)])
        older = tuple(_annotated(c) for c in reversed(chains[:-1]))
        out[name] = _annotated(chains[-1], older)
    return out


def declared_schema(name: str) -> MessageSchema:
    """The declaration of one spec (``"OffsetCommitValue"``); ``KeyError`` when no release has it."""
    return declared_schemas()[name]


def _fields_as_of(fields: tuple[Field, ...], release: str) -> tuple[Field, ...]:
    rk = _release_key(release)
    out = []
    for f in fields:
        if f.since is None or _release_key(f.since) > rk:
            continue
        out.append(Field(**{**f.__dict__, "fields": _fields_as_of(f.fields, release), "since": None}))
    return tuple(out)


def schema_as_of(schema: MessageSchema, release: str) -> MessageSchema | None:
    """What one release declares of ``schema``: its versions and fields up to ``release``.

    None when the spec is not in that release. The result carries no release annotations, so it
    compares equal to :func:`schema_from_spec` of that release's own spec when kgtool's
    declaration holds the release's layout.
    """
    rk = _release_key(release)
    for layout in schema.superseded:
        if layout.until is not None and _release_key(layout.version_since[0][1]) <= rk <= _release_key(layout.until):
            schema = layout
            break
    versions = [v for v, r in schema.version_since if _release_key(r) <= rk]
    if not versions or (schema.until is not None and _release_key(schema.until) < rk):
        return None
    return MessageSchema(
        name=schema.name,
        valid_versions=VersionRange(min(versions), max(versions)),
        flexible_versions=schema.flexible_versions,
        fields=_fields_as_of(schema.fields, release),
        source=schema.source,
        api_key=schema.api_key,
    )
