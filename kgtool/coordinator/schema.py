"""Kafka's message-JSON type system: schema tables compiled into fast decoders, and encoders.

Kafka describes every coordinator record (and the consumer protocol) in JSON message specs
(``group-coordinator/src/main/resources/common/message/*.json``, read by Kafka's
``MessageGenerator``). kgtool keeps its own transcription of those specs as Python data
(:mod:`kgtool.coordinator.schemas`) built from :class:`Field` and :class:`MessageSchema`, and
this module turns a (schema, version) pair into code, the way Kafka's generator does:

.. code-block:: text

    type          non-flexible version          flexible version (KIP-482)
    int8/16/32/64 big-endian, fixed width       same
    uint16 uint32 big-endian, unsigned          same
    float64       IEEE 754 big-endian           same
    bool          1 byte, non-zero = true       same
    uuid          16 bytes                      same
    string        int16 length (-1 = null)      uvarint length+1 (0 = null), UTF-8
    bytes         int32 length (-1 = null)      uvarint length+1 (0 = null)
    []T           int32 count (-1 = null)       uvarint count+1 (0 = null)
    struct        its fields in order           its fields, then its tagged fields
    nullable      int8 marker: -1 null, 1 present, then the struct
    struct
    tagged fields  (never)                      uvarint count, then per field:
                                                uvarint tag, uvarint size, value

A field exists in the versions of its ``versions`` range; a tagged field is written only when it
differs from its default (``MessageDataGenerator``), and an absent one reads as its default.
Decoded dicts are Kafka's JSON view of the message (``JsonConverterGenerator``): the fields of
the version in schema order, a tagged field only when it differs from its default.
Unknown tags are kept (``_unknown_tagged_fields``) and reported, as Kafka keeps them as
``RawTaggedField`` and writes them back.

Speed: each (schema, version) is compiled once into Python source (``exec``) in which runs of
fixed-width fields are read by one precompiled ``struct.Struct.unpack_from`` and every length and
count is checked against the bytes remaining *before* anything is sliced or allocated. A failure
raises :class:`kgtool.errors.DecodeError` whose ``position`` is the byte offset inside the
decoded buffer and whose ``context`` is the field path (``members[2].subscription``).
"""

from __future__ import annotations

import base64
import re
import struct
from dataclasses import dataclass, field as dc_field
from typing import Any, Callable

from kgtool.codec.primitives import VarintError, read_unsigned_varint, write_unsigned_varint
from kgtool.errors import DecodeError

__all__ = [
    "Field",
    "MessageSchema",
    "VersionRange",
    "decode_message",
    "encode_message",
    "default_value",
    "uuid_to_str",
    "uuid_from_str",
    "ZERO_UUID",
    "strict_decoder",
    "DECODER_FAILURES",
    "UNKNOWN_TAGGED_FIELD",
]

#: How the warning of a tagged field the schema does not know starts (Kafka's generated readers
#: keep it as a ``RawTaggedField``): counted by the audit's coverage (``unknown_tagged_fields``).
UNKNOWN_TAGGED_FIELD = "unknown tagged field "

# ---------------------------------------------------------------------------------------------
# Version ranges ("0+", "3+", "1", "0-2", "none"), as in Kafka's ``Versions.parse``.


@dataclass(frozen=True)
class VersionRange:
    lowest: int
    highest: int  # inclusive; 0x7FFF stands for "+"

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text == "none":
            return _EMPTY_RANGE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), 0x7FFF)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        v = int(text)
        return cls(v, v)

    def __contains__(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    def __str__(self) -> str:
        if self.lowest > self.highest:
            return "none"
        if self.highest == 0x7FFF:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


_EMPTY_RANGE = VersionRange(1, 0)

# ---------------------------------------------------------------------------------------------
# Schema data model

#: Fixed-width primitives: struct format and size.
FIXED_TYPES: dict[str, tuple[str, int]] = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
    "bool": ("?", 1),
    "uuid": ("16s", 16),
}
VARIABLE_TYPES = ("string", "bytes", "records")
PRIMITIVE_TYPES = frozenset(FIXED_TYPES) | frozenset(VARIABLE_TYPES)

_NO_DEFAULT = object()

#: Kafka's ``Uuid.ZERO_UUID`` in its string form (url-safe base64, no padding).
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: url-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str | bytes) -> bytes:
    """Inverse of :func:`uuid_to_str`; also accepts 16 raw bytes or a ``uuid.UUID``."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) != 16:
            raise ValueError(f"a uuid has 16 bytes, got {len(text)}")
        return bytes(text)
    if hasattr(text, "bytes") and not isinstance(text, str):  # uuid.UUID
        return text.bytes  # type: ignore[union-attr]
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return raw


@dataclass(frozen=True)
class Field:
    """One field of a message spec: name (Kafka's, in snake_case), type and version ranges.

    ``type`` is Kafka's spelling: ``int32``, ``string``, ``[]int32``, ``[]TopicPartition``
    (an array of the struct described by ``fields``) or ``ClassicMemberMetadata`` (a struct).
    """

    name: str
    type: str
    versions: VersionRange
    nullable_versions: VersionRange = _EMPTY_RANGE
    tag: int | None = None
    tagged_versions: VersionRange = _EMPTY_RANGE
    default: Any = _NO_DEFAULT
    ignorable: bool = False
    fields: tuple[Field, ...] = ()
    #: The Kafka release line the field arrived in (``"4.1"``), for schemas built from the
    #: release specs (:mod:`kgtool.coordinator.release_specs`); not part of the layout.
    since: str | None = dc_field(default=None, compare=False)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """The field (or its array's element) is a struct."""
        return self.element_type not in PRIMITIVE_TYPES

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions


def F(
    name: str,
    type: str,
    versions: str | None = "0+",
    *,
    nullable: str = "none",
    tag: int | None = None,
    tagged: str = "none",
    default: Any = _NO_DEFAULT,
    ignorable: bool = False,
    fields: list[Field] | tuple[Field, ...] = (),
) -> Field:
    """Build a :class:`Field` with the spec's notation (``"0+"``, ``"3+"``, ``"1"``, ``"none"``).

    A tagged field written without ``versions`` (as in TransactionLogValue.json) exists in its
    ``taggedVersions``.
    """
    if versions is None:
        versions = tagged
    if (type[2:] if type.startswith("[]") else type) not in PRIMITIVE_TYPES and not fields:
        raise ValueError(f"struct field {name!r} of type {type!r} needs its fields")
    return Field(
        name=name,
        type=type,
        versions=VersionRange.parse(versions),
        nullable_versions=VersionRange.parse(nullable),
        tag=tag,
        tagged_versions=VersionRange.parse(tagged),
        default=default,
        ignorable=ignorable,
        fields=tuple(fields),
    )


@dataclass(frozen=True)
class MessageSchema:
    """A message spec: Kafka's name, valid and flexible versions, fields, and its source file."""

    name: str
    valid_versions: VersionRange
    flexible_versions: VersionRange
    fields: tuple[Field, ...]
    source: str
    api_key: int | None = None
    notes: str = ""
    #: ``((version, release), ...)``: the Kafka release line each version arrived in.
    version_since: tuple[tuple[int, str], ...] = dc_field(default=(), compare=False)
    #: The last release line that has the spec, when a later one removed it.
    until: str | None = dc_field(default=None, compare=False)
    #: Older layouts of the same spec that a later release changed incompatibly (Kafka 4.0's
    #: early-access share-group records), newest first; each carries its own releases.
    superseded: tuple[MessageSchema, ...] = dc_field(default=(), compare=False)
    _cache: dict = dc_field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def of(
        cls,
        name: str,
        *,
        versions: str,
        flexible: str,
        fields: list[Field],
        source: str,
        api_key: int | None = None,
        notes: str = "",
    ) -> MessageSchema:
        return cls(
            name=name,
            valid_versions=VersionRange.parse(versions),
            flexible_versions=VersionRange.parse(flexible),
            fields=tuple(fields),
            source=source,
            api_key=api_key,
            notes=notes,
        )

    def supports(self, version: int) -> bool:
        return version in self.valid_versions

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    @property
    def snake_name(self) -> str:
        return camel_to_snake(self.name)


def camel_to_snake(name: str) -> str:
    """``OffsetCommitValue`` -> ``offset_commit_value``, ``leaderEpoch`` -> ``leader_epoch``."""
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def default_value(f: Field) -> Any:
    """The value a field takes when absent, following Kafka's ``FieldSpec`` defaults."""
    d = f.default
    if f.is_array:
        if d is None or d == "null":
            return None
        return [] if d is _NO_DEFAULT else list(d)
    if f.is_struct:
        if d is None or (d == "null"):
            return None
        return {sub.name: default_value(sub) for sub in f.fields}
    t = f.type
    if d == "null":
        return None
    if d is not _NO_DEFAULT:
        if t == "uuid" and isinstance(d, bytes):
            return uuid_to_str(d)
        return d
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0
    if t == "float64":
        return 0.0
    if t == "bool":
        return False
    if t == "uuid":
        return ZERO_UUID
    if t == "string":
        return ""
    return b""


# ---------------------------------------------------------------------------------------------
# Decoding: errors raised by generated code


class _Fail(Exception):
    """Raised inside generated decoders; turned into DecodeError with the field path."""

    __slots__ = ("pos", "reason", "segs")

    def __init__(self, pos: int, reason: str, seg: str | None = None) -> None:
        self.pos = pos
        self.reason = reason
        self.segs = [seg] if seg else []

    def path(self) -> str:
        out = ""
        for seg in reversed(self.segs):
            if not out:
                out = seg
            elif seg.startswith("["):
                out += seg
            else:
                out += "." + seg
        return out


def _short(p: int, n: int, parts: tuple) -> None:
    """A run of fixed-width fields does not fit: name the first field that is cut."""
    for size, name, typ in parts:
        if p + size > n:
            raise _Fail(p, f"expected {size} bytes for {typ}, {max(n - p, 0)} remaining", name)
        p += size
    raise AssertionError("unreachable")  # pragma: no cover


def _uv(b: bytes, p: int, n: int, what: str) -> tuple[int, int]:
    """``ByteUtils.readUnsignedVarint`` (the codec's reader) as Java returns it: an ``int``.

    Bits past 32 are lost and values of 2**31 and up come out negative (a length of -1 or less
    then means null, as in Kafka).
    """
    try:
        value, p = read_unsigned_varint(b, p, n)
    except VarintError as e:
        start = e.args[0]
        if e.truncated:
            raise _Fail(start, f"truncated varint ({what}), {n - start} bytes remaining") from None
        raise _Fail(start, f"varint ({what}) longer than 5 bytes") from None
    return (value - 0x100000000 if value >= 0x80000000 else value), p


_STRUCTS: dict[str, Callable] = {}


def _unpacker(fmt: str) -> Callable:
    fn = _STRUCTS.get(fmt)
    if fn is None:
        fn = _STRUCTS[fmt] = struct.Struct(">" + fmt).unpack_from
    return fn


# ---------------------------------------------------------------------------------------------
# Code generation


class _Codegen:
    """Emits one Python function per (struct, version); see the module docstring."""

    def __init__(self, schema_name: str, lenient: bool) -> None:
        self.schema_name = schema_name
        self.lenient = lenient
        self.ns: dict[str, Any] = {
            "_Fail": _Fail,
            "_short": _short,
            "_uv": _uv,
            "_uuid_str": uuid_to_str,
            "_unpack_from": struct.unpack_from,
        }
        self.chunks: list[str] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any, prefix: str = "_k") -> str:
        name = self.fresh(prefix)
        self.ns[name] = value
        return name

    # -- functions ----------------------------------------------------------------------------

    def struct_function(self, fields: tuple[Field, ...], version: int, flexible: bool) -> str:
        fname = self.fresh("_dec_")
        lines: list[str] = [f"def {fname}(b, p, n, w):"]
        body: list[str] = []
        values: list[tuple[str, str]] = []  # (field name, variable)
        pending: list[tuple[Field, str]] = []

        def flush() -> None:
            if not pending:
                return
            fmt = "".join(FIXED_TYPES[f.type][0] for f, _ in pending)
            size = sum(FIXED_TYPES[f.type][1] for f, _ in pending)
            parts = tuple((FIXED_TYPES[f.type][1], f.name, f.type) for f, _ in pending)
            un = self.const(_unpacker(fmt), "_st")
            pc = self.const(parts, "_parts")
            body.append(f"if p + {size} > n: _short(p, n, {pc})")
            vars_ = ", ".join(v for _, v in pending)
            body.append(f"{vars_}{',' if len(pending) == 1 else ''} = {un}(b, p)")
            body.append(f"p += {size}")
            for f, v in pending:
                if f.type == "uuid":
                    body.append(f"{v} = _uuid_str({v})")
            pending.clear()

        tagged: list[Field] = []
        for f in fields:
            if f.tagged_in(version):
                tagged.append(f)
                continue
            if not f.present_in(version):
                continue
            var = self.fresh("v")
            values.append((f.name, var))
            if f.type in FIXED_TYPES:
                pending.append((f, var))
                continue
            flush()
            self.emit_field(body, f, var, version, flexible, "n")
        flush()
        tagged_vars: dict[str, str] = {}
        if flexible:
            tagged_vars = self.emit_tagged_section(body, tagged, version)
        if not tagged_vars:
            items = ", ".join(f"{name!r}: {var}" for name, var in values)
            body.append(f"_r = {{{items}}}")
        else:
            # Schema order, and a tagged field only when it differs from its default: the view
            # Kafka's generated JsonConverter.write() gives (generateNonDefaultValueCheck).
            plain = dict(values)
            body.append("_r = {}")
            for f in fields:
                if f.name in tagged_vars:
                    var = tagged_vars[f.name]
                    dv = default_value(f)
                    if dv is None:
                        body.append(f"if {var} is not None: _r[{f.name!r}] = {var}")
                    else:
                        dk = self.const(dv, "_def")
                        body.append(f"if {var} != {dk}: _r[{f.name!r}] = {var}")
                elif f.name in plain:
                    body.append(f"_r[{f.name!r}] = {plain[f.name]}")
        if flexible:
            body.append("if _unk: _r['_unknown_tagged_fields'] = _unk")
        body.append("return _r, p")
        lines.extend("    " + line for line in body)
        self.chunks.append("\n".join(lines))
        return fname

    # -- fields -------------------------------------------------------------------------------

    def emit_field(
        self, out: list[str], f: Field, var: str, version: int, flexible: bool, end: str,
        tagged: bool = False,
    ) -> None:
        """Emit code reading field ``f`` into ``var``; ``end`` bounds the readable bytes.

        ``tagged``: the field is read from its tagged-field slot, where a nullable struct has an
        unsigned-varint marker (0 = null) instead of the int8 one (MessageDataGenerator
        ``generateStructReader(field, versions, tagged=true)``: ``readUnsignedVarint() <= 0``).
        """
        name = f.name
        nullable = f.nullable_in(version)
        if f.type in FIXED_TYPES:
            fmt, size = FIXED_TYPES[f.type]
            un = self.const(_unpacker(fmt), "_st")
            pc = self.const(((size, name, f.type),), "_parts")
            out.append(f"if p + {size} > {end}: _short(p, {end}, {pc})")
            out.append(f"{var}, = {un}(b, p)")
            out.append(f"p += {size}")
            if f.type == "uuid":
                out.append(f"{var} = _uuid_str({var})")
            return
        if f.is_array:
            self.emit_array(out, f, var, version, flexible, end, nullable)
            return
        if f.type in ("string", "bytes", "records"):
            self.emit_blob(out, f.type, name, var, flexible, end, nullable)
            return
        # a (possibly nullable) struct
        sub = self.struct_function(f.fields, version, flexible)
        if nullable and tagged:
            # _uv gives the marker as Java's int: 2**31 and up are negative, so null too.
            out.append(f"_mk, p = _uv(b, p, {end}, 'null marker of ' + {name!r})")
            out.append("if _mk <= 0:")
            out.append(f"    {var} = None")
            out.append("else:")
            out.append("    try:")
            out.append(f"        {var}, p = {sub}(b, p, {end}, w)")
            out.append("    except _Fail as _e:")
            out.append(f"        _e.segs.append({name!r}); raise")
        elif nullable:
            out.append(f"if p + 1 > {end}: raise _Fail(p, 'expected the null marker of a struct, 0 bytes remaining', {name!r})")
            out.append("if b[p] >= 128:")
            out.append(f"    {var} = None; p += 1")
            out.append("else:")
            out.append("    p += 1")
            out.append("    try:")
            out.append(f"        {var}, p = {sub}(b, p, {end}, w)")
            out.append("    except _Fail as _e:")
            out.append(f"        _e.segs.append({name!r}); raise")
        else:
            out.append("try:")
            out.append(f"    {var}, p = {sub}(b, p, {end}, w)")
            out.append("except _Fail as _e:")
            out.append(f"    _e.segs.append({name!r}); raise")

    def emit_length(
        self, out: list[str], lvar: str, kind: str, name: str, flexible: bool, end: str, width: int
    ) -> None:
        """Read a length/count prefix into ``lvar`` (-1 = null), positions kept in ``_lp``."""
        out.append("_lp = p")
        if flexible:
            out.append(f"if p < {end} and b[p] < 128:")
            out.append(f"    {lvar} = b[p] - 1; p += 1")
            out.append("else:")
            out.append(f"    {lvar}, p = _uv(b, p, {end}, {kind + ' of ' + name!r}); {lvar} -= 1")
        else:
            fmt = "h" if width == 2 else "i"
            un = self.const(_unpacker(fmt), "_st")
            out.append(
                f"if p + {width} > {end}: raise _Fail(p, 'expected {width} bytes for the {kind} "
                f"of {name}, ' + str(max({end} - p, 0)) + ' remaining', {name!r})"
            )
            out.append(f"{lvar}, = {un}(b, p); p += {width}")

    def emit_blob(
        self, out: list[str], typ: str, name: str, var: str, flexible: bool, end: str, nullable: bool
    ) -> None:
        lv = self.fresh("_l")
        self.emit_length(out, lv, "length", name, flexible, end, 2 if typ == "string" else 4)
        out.append(f"if {lv} < 0:")
        if nullable:
            # Kafka's generated read() takes any negative length as null.
            out.append(f"    if {lv} != -1: w.append('length ' + str({lv}) + ' of {name} at byte ' + str(_lp) + ' read as null, as Kafka does')")
            out.append(f"    {var} = None")
        else:
            out.append(
                f"    raise _Fail(_lp, 'null (length ' + str({lv}) + ') in the non-nullable {typ} field', {name!r})"
            )
        out.append(f"elif {lv} > {end} - p:")
        out.append(
            f"    raise _Fail(_lp, 'length ' + str({lv}) + ' exceeds ' + str({end} - p) + ' bytes remaining', {name!r})"
        )
        out.append("else:")
        if typ == "string":
            errors = "'replace'" if self.lenient else "'strict'"
            out.append(f"    {var} = b[p:p + {lv}].decode('utf-8', {errors}); p += {lv}")
        else:
            out.append(f"    {var} = b[p:p + {lv}]; p += {lv}")

    def emit_array(
        self, out: list[str], f: Field, var: str, version: int, flexible: bool, end: str, nullable: bool
    ) -> None:
        name = f.name
        et = f.element_type
        cv = self.fresh("_c")
        self.emit_length(out, cv, "count", name, flexible, end, 4)
        min_size = max(1, _min_size_of_type(f, et, version, flexible))
        out.append(f"if {cv} < 0:")
        if nullable:
            out.append(f"    if {cv} != -1: w.append('array count ' + str({cv}) + ' of {name} at byte ' + str(_lp) + ' read as null, as Kafka does')")
            out.append(f"    {var} = None")
        else:
            out.append(
                f"    raise _Fail(_lp, 'null (count ' + str({cv}) + ') in the non-nullable array field', {name!r})"
            )
        out.append(f"elif {cv} * {min_size} > {end} - p:")
        out.append(
            f"    raise _Fail(_lp, 'array count ' + str({cv}) + ' needs at least ' + str({cv} * {min_size}) + "
            f"' bytes, ' + str({end} - p) + ' remaining', {name!r})"
        )
        out.append("else:")
        inner: list[str] = []
        if et in FIXED_TYPES and et != "uuid" and et != "bool":
            fmt, size = FIXED_TYPES[et]
            inner.append(f"{var} = list(_unpack_from('>' + str({cv}) + {fmt!r}, b, p)); p += {cv} * {size}")
        else:
            iv = self.fresh("_i")
            ev = self.fresh("_e")
            inner.append(f"{var} = []")
            inner.append(f"for {iv} in range({cv}):")
            loop: list[str] = []
            if f.is_struct:
                sub = self.struct_function(f.fields, version, flexible)
                loop.append(f"{ev}, p = {sub}(b, p, {end}, w)")
            else:
                elem = Field(name=f"{name}", type=et, versions=f.versions)
                self.emit_field(loop, elem, ev, version, flexible, end)
            loop.append(f"{var}.append({ev})")
            inner.append("    try:")
            inner.extend("        " + line for line in loop)
            inner.append("    except _Fail as _x:")
            if f.is_struct:
                inner.append(f"        _x.segs.append({name!r} + '[' + str({iv}) + ']'); raise")
            else:
                inner.append(f"        _x.segs[-1:] = [{name!r} + '[' + str({iv}) + ']']; raise")
        out.extend("    " + line for line in inner)

    def emit_tagged_section(self, out: list[str], tagged: list[Field], version: int) -> dict[str, str]:
        """Emit the tagged-field section; returns {field name: variable} of the known tags."""
        tag_vars: dict[int, tuple[Field, str]] = {}
        for f in tagged:
            var = self.fresh("t")
            dv = default_value(f)
            if isinstance(dv, (list, dict)):
                dk = self.const(dv, "_def")
                out.append(f"{var} = _copy({dk})")
                self.ns["_copy"] = _deepcopy
            else:
                out.append(f"{var} = {dv!r}")
            tag_vars[f.tag] = (f, var)  # type: ignore[index]
        out.append("_unk = None")
        out.append("if p < n and b[p] < 128:")
        out.append("    _tc = b[p]; p += 1")
        out.append("else:")
        out.append("    _tc, p = _uv(b, p, n, 'tagged field count')")
        out.append("if _tc:")
        body: list[str] = []
        body.append("if _tc * 2 > n - p: raise _Fail(p, 'tagged field count ' + str(_tc) + ' exceeds ' + str(n - p) + ' bytes remaining', '_tagged_fields')")
        body.append("for _ in range(_tc):")
        loop: list[str] = []
        loop.append("_tp = p")
        loop.append("_tag, p = _uv(b, p, n, 'tag')")
        loop.append("_tsz, p = _uv(b, p, n, 'tagged field size')")
        loop.append(
            "if _tsz < 0 or _tsz > n - p: raise _Fail(_tp, 'tagged field ' + str(_tag) + ' size ' + str(_tsz) + ' exceeds ' + str(n - p) + ' bytes remaining', '_tagged_fields')"
        )
        loop.append("_te = p + _tsz")
        first = True
        for tag in sorted(tag_vars):
            f, var = tag_vars[tag]
            loop.append(f"{'if' if first else 'elif'} _tag == {tag}:")
            first = False
            branch: list[str] = []
            self.emit_field(branch, f, var, version, True, "_te", tagged=True)
            branch.append(
                f"if p != _te: raise _Fail(_tp, 'tagged field {f.name} (tag {tag}) declared ' + str(_tsz) + ' bytes but its value took ' + str(p - _te + _tsz), {f.name!r})"
            )
            loop.extend("    " + line for line in branch)
        prefix = "else:" if not first else "if True:"
        loop.append(prefix)
        loop.append("    if _unk is None: _unk = []")
        loop.append("    _unk.append({'tag': _tag, 'data': b[p:_te]})")
        loop.append(
            f"    w.append({UNKNOWN_TAGGED_FIELD!r} + str(_tag) + ' (' + str(_tsz) + ' bytes) in {self.schema_name} v{version} kept raw')"
        )
        loop.append("    p = _te")
        body.extend("    " + line for line in loop)
        out.extend("    " + line for line in body)
        return {f.name: var for f, var in tag_vars.values()}

    def build(self) -> dict[str, Any]:
        src = "\n\n".join(self.chunks)
        code = compile(src, f"<kgtool schema {self.schema_name}>", "exec")
        exec(code, self.ns)  # noqa: S102 - our own generated source, from our own tables
        self.ns["__source__"] = src
        return self.ns


def _deepcopy(v: Any) -> Any:
    if isinstance(v, list):
        return [_deepcopy(x) for x in v]
    if isinstance(v, dict):
        return {k: _deepcopy(x) for k, x in v.items()}
    return v


def _min_size_of_type(f: Field, et: str, version: int, flexible: bool) -> int:
    if et in FIXED_TYPES:
        return FIXED_TYPES[et][1]
    if et == "string":
        return 1 if flexible else 2
    if et in ("bytes", "records"):
        return 1 if flexible else 4
    return _min_struct_size(f.fields, version, flexible)


def _min_struct_size(fields: tuple[Field, ...], version: int, flexible: bool) -> int:
    total = 1 if flexible else 0
    for f in fields:
        if f.tagged_in(version) or not f.present_in(version):
            continue
        if f.is_array:
            total += 1 if flexible else 4
        elif f.is_struct:
            total += 1 if f.nullable_in(version) else _min_struct_size(f.fields, version, flexible)
        else:
            total += _min_size_of_type(f, f.type, version, flexible)
    return total


def _compiled(schema: MessageSchema, version: int, lenient: bool) -> Callable:
    key = (version, lenient)
    fn = schema._cache.get(key)
    if fn is None:
        gen = _Codegen(schema.name, lenient)
        fname = gen.struct_function(schema.fields, version, schema.is_flexible(version))
        ns = gen.build()
        fn = ns[fname]
        fn.__kgtool_source__ = ns["__source__"]  # type: ignore[attr-defined]
        schema._cache[key] = fn
    return fn


#: What a decoder from :func:`strict_decoder` may raise; catch it and call
#: :func:`decode_message` for the lenient retry or the exact :class:`DecodeError`.
DECODER_FAILURES = (_Fail, UnicodeDecodeError)


def strict_decoder(schema: MessageSchema, version: int) -> Callable:
    """The compiled decoder ``fn(data, pos, end, warnings) -> (dict, pos)`` of a version.

    For hot loops: no wrapping, so it raises :data:`DECODER_FAILURES` (internal exceptions);
    on those, call :func:`decode_message`, which retries leniently or raises the
    :class:`DecodeError` with position and path. ``data`` must be ``bytes``.
    """
    fn = schema._cache.get(version)
    if fn is None:
        fn = schema._cache[version] = _compiled(schema, version, False)
    return fn


def decode_message(
    schema: MessageSchema,
    version: int,
    data: bytes,
    pos: int = 0,
    end: int | None = None,
    *,
    context: str = "",
    warnings: list[str] | None = None,
) -> tuple[dict, int]:
    """Decode one ``schema`` message of ``version`` from ``data[pos:end]``.

    Returns the decoded dict (Kafka's field names in snake_case; bytes as ``bytes``, uuids in
    Kafka's string form) and the position after it. Warnings (unknown tagged fields, invalid
    UTF-8 replaced by U+FFFD as Java's ``new String(bytes, UTF_8)`` does) are appended to
    ``warnings``. Raises :class:`DecodeError` with ``position`` relative to ``data`` and
    ``context`` = ``context`` + the field path.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    n = len(data) if end is None else end
    w: list[str] = [] if warnings is None else warnings
    mark = len(w)
    try:
        try:
            return _compiled(schema, version, False)(data, pos, n, w)
        except UnicodeDecodeError:
            del w[mark:]
            result = _compiled(schema, version, True)(data, pos, n, w)
            w.append(f"invalid UTF-8 in a string of {schema.name} v{version}, replaced by U+FFFD")
            return result
    except _Fail as e:
        path = e.path()
        ctx = context + ("." if context and path else "") + path
        raise DecodeError(e.reason, position=e.pos, context=ctx or None) from None


# ---------------------------------------------------------------------------------------------
# Encoding: a straightforward interpreter over the same tables (an independent second reading of
# the spec; tests check encode(decode(x)) == x against Kafka-written bytes).

_PACKERS = {t: struct.Struct(">" + fmt).pack for t, (fmt, _) in FIXED_TYPES.items() if t != "uuid"}


def _write_uvarint(out: bytearray, value: int) -> None:
    """``ByteUtils.writeUnsignedVarint`` of a Java ``int`` (a negative one as its 32 bits)."""
    out += write_unsigned_varint(value & 0xFFFFFFFF)


def _write_length(out: bytearray, length: int, flexible: bool, width: int) -> None:
    if flexible:
        _write_uvarint(out, length + 1)
    elif width == 2:
        out += struct.pack(">h", length)
    else:
        out += struct.pack(">i", length)


def _is_default(f: Field, value: Any) -> bool:
    dv = default_value(f)
    if f.type == "uuid" and value is not None and not isinstance(value, str):
        return uuid_from_str(value) == uuid_from_str(dv)
    return value == dv


def _encode_value(f: Field, value: Any, version: int, flexible: bool, out: bytearray, path: str) -> None:
    nullable = f.nullable_in(version)
    t = f.type
    if t in FIXED_TYPES:
        if t == "uuid":
            out += uuid_from_str(value)
        else:
            try:
                out += _PACKERS[t](value)
            except struct.error as exc:
                raise ValueError(f"{path}: {value!r} does not fit {t}: {exc}") from None
        return
    if value is None:
        if not nullable:
            raise ValueError(f"{path}: None in a non-nullable field (v{version})")
        if f.is_array or t in VARIABLE_TYPES:
            _write_length(out, -1, flexible, 2 if t == "string" else 4)
        else:
            out.append(0xFF)  # struct null marker -1
        return
    if f.is_array:
        _write_length(out, len(value), flexible, 4)
        et = f.element_type
        for i, item in enumerate(value):
            if f.is_struct:
                _encode_struct(f.fields, item, version, flexible, out, f"{path}[{i}]")
            else:
                elem = Field(name=f.name, type=et, versions=f.versions)
                _encode_value(elem, item, version, flexible, out, f"{path}[{i}]")
        return
    if t == "string":
        raw = value.encode("utf-8")
        if not flexible and len(raw) > 0x7FFF:
            raise ValueError(f"{path}: string of {len(raw)} bytes exceeds 32767")
        _write_length(out, len(raw), flexible, 2)
        out += raw
        return
    if t in ("bytes", "records"):
        _write_length(out, len(value), flexible, 4)
        out += bytes(value)
        return
    if nullable:
        out.append(1)
    _encode_struct(f.fields, value, version, flexible, out, path)


def _encode_struct(
    fields: tuple[Field, ...], obj: dict, version: int, flexible: bool, out: bytearray, path: str
) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"{path or 'message'}: expected a dict, got {type(obj).__name__}")
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        fpath = f"{path}.{f.name}" if path else f.name
        if f.tagged_in(version):
            if f.name in obj and not _is_default(f, obj[f.name]):
                buf = bytearray()
                if f.is_struct and not f.is_array and f.nullable_in(version):
                    # MessageDataGenerator: a tagged nullable struct is written as an unsigned
                    # varint marker (1, then the struct; 0 for null). Null is written whenever
                    # the default is not "null" (a JSON null default means the empty struct).
                    if obj[f.name] is None:
                        buf.append(0)
                    else:
                        buf.append(1)
                        _encode_struct(f.fields, obj[f.name], version, True, buf, fpath)
                else:
                    _encode_value(f, obj[f.name], version, True, buf, fpath)
                tagged.append((f.tag, bytes(buf)))  # type: ignore[arg-type]
            continue
        if not f.present_in(version):
            # Kafka's generated write(): a non-default value in a field the version lacks is
            # dropped if the field is ignorable, an UnsupportedVersionException otherwise.
            if f.name in obj and not f.ignorable and not _is_default(f, obj[f.name]):
                raise ValueError(f"{fpath}: field not in version {version} (and not ignorable)")
            continue
        value = obj[f.name] if f.name in obj else default_value(f)
        _encode_value(f, value, version, flexible, out, fpath)
    if flexible:
        for raw in obj.get("_unknown_tagged_fields") or ():
            tagged.append((int(raw["tag"]), bytes(raw["data"])))
        tagged.sort(key=lambda item: item[0])
        _write_uvarint(out, len(tagged))
        for tag, data in tagged:
            _write_uvarint(out, tag)
            _write_uvarint(out, len(data))
            out += data


def encode_message(schema: MessageSchema, version: int, obj: dict) -> bytes:
    """Encode ``obj`` (a dict as :func:`decode_message` returns) as ``schema`` ``version``.

    Missing fields take their defaults; raises ``ValueError`` for a value that cannot be
    written (None in a non-nullable field, an int out of range, an unsupported version).
    """
    if not schema.supports(version):
        raise ValueError(f"{schema.name} has no version {version} (valid {schema.valid_versions})")
    out = bytearray()
    _encode_struct(schema.fields, obj, version, schema.is_flexible(version), out, "")
    return bytes(out)
