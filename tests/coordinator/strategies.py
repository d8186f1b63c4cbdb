"""Hypothesis strategies built from the schema tables: any value a schema version can carry."""

from __future__ import annotations

from hypothesis import strategies as st

from kgtool.coordinator.schema import Field, MessageSchema, uuid_to_str

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

# No lone surrogates: they have no UTF-8 form (Java would write '?', Python refuses).
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


def element_strategy(f: Field, type_: str, version: int) -> st.SearchStrategy:
    if type_ in _INT_RANGES:
        lo, hi = _INT_RANGES[type_]
        return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1])
    if type_ == "float64":
        return st.floats(allow_nan=False)
    if type_ == "bool":
        return st.booleans()
    if type_ == "uuid":
        return st.binary(min_size=16, max_size=16).map(uuid_to_str)
    if type_ == "string":
        return TEXT
    if type_ in ("bytes", "records"):
        return st.binary(max_size=16)
    return struct_strategy(f.fields, version)


def field_strategy(f: Field, version: int) -> st.SearchStrategy:
    if f.is_array:
        s = st.lists(element_strategy(f, f.element_type, version), max_size=3)
    else:
        s = element_strategy(f, f.type, version)
    if f.nullable_in(version):
        s = st.none() | s
    return s


def struct_strategy(fields: tuple[Field, ...], version: int) -> st.SearchStrategy:
    parts = {}
    for f in fields:
        if f.tagged_in(version) or f.present_in(version):
            parts[f.name] = field_strategy(f, version)
    return st.fixed_dictionaries(parts)


def message_strategy(schema: MessageSchema, version: int) -> st.SearchStrategy:
    return struct_strategy(schema.fields, version)


def kafka_view(fields, version: int, obj):
    """What a decode returns for ``obj``: tagged fields equal to their default are left out,
    as in Kafka's JsonConverter (recursively)."""
    from kgtool.coordinator.schema import default_value

    if obj is None:
        return None
    out = {}
    for f in fields:
        if f.name not in obj:
            continue
        v = obj[f.name]
        if f.tagged_in(version) and v == default_value(f):
            continue
        if f.is_struct and v is not None:
            v = [kafka_view(f.fields, version, e) for e in v] if f.is_array else kafka_view(f.fields, version, v)
        out[f.name] = v
    for extra in ("_unknown_tagged_fields",):
        if extra in obj:
            out[extra] = obj[extra]
    return out
