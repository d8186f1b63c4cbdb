"""Loading the YAML and JSON documents a user hands kgtool, safe against hostile input.

A described group (``assign GROUP_FILE``, ``--validate``), a topic description
(``coordinator-of --topic-description``) and each line of group-metadata JSON Lines are small
documents, but a fuzzer or a wrong pipe can hand over anything. Every one goes through
:func:`load_yaml`, :func:`load_json` or :func:`load_yaml_or_json`, which return plain data
(dicts, lists, str, int, float, bool, None; YAML timestamps and binaries as PyYAML's
SafeLoader makes them) or raise one :class:`~kgtool.errors.InputError` line naming the source,
the place and the limit:

- a document larger than :data:`MAX_DOCUMENT_BYTES`;
- nesting deeper than :data:`MAX_DEPTH` levels (libyaml's composer recursed on the C stack and
  died with SIGSEGV at ~50,000 levels; Python's ``json`` raises ``RecursionError`` at ~1,000;
  kgtool's documents need fewer than 10);
- more than :data:`MAX_NODES` values, YAML aliases expanded (a "billion laughs" of 291 bytes
  names 43 million values: each alias counts as everything it names); an alias to a node that
  is still open (a recursive structure, which PyYAML builds and every walk of it loops on);
- malformed text, placed by line and column.

YAML is built here from libyaml's event stream (C, iterative; PyYAML's own ``SafeLoader``
parser when libyaml is absent) with an explicit stack, so no nesting reaches a recursion, and
the guards apply while the events arrive, before anything large is built. Scalars are resolved
and constructed by PyYAML's ``SafeLoader`` resolver and constructors (YAML 1.1: ``yes`` is
True, ``010`` is 8, ``2024-01-01`` a date), merge keys (``<<``) are honoured as the YAML 1.1
merge key type defines them, in an order kgtool fixes itself (:meth:`_YamlBuilder.merged`:
PyYAML releases disagree), and an alias is the very object its anchor built, as PyYAML shares
it.

The depth limit is kgtool's whatever the PyYAML release: libyaml's scanner reads ahead of the
events it delivers, and PyYAML 6.0.4's libyaml refuses nesting past its own limit (1,000
levels, "exceeded maximum nesting depth") while doing so, before kgtool sees level 101. When
a parser error could hide nesting past :data:`MAX_DEPTH` (:func:`_may_hide_depth`), the text is
read again by PyYAML's pure-Python parser, whose scanner kgtool stops at level 101
(:class:`_DepthGuard`), and kgtool's message is the one given. Building without PyYAML's node graph (a node and two marks per value) also
takes a tenth of its memory, and the cyclic garbage collector is paused while a document is
built (it would otherwise rescan the growing document again and again: quadratic time).
"""

from __future__ import annotations

import gc
import json
import re
import reprlib
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kgtool.errors import InputError

#: Largest YAML/JSON document read, in bytes (UTF-8). A described group of a million
#: partitions (Kafka's large-group test shape: 500 topics x 2,000 partitions, 2,000 members)
#: is 13 MB of JSON.
MAX_DOCUMENT_BYTES = 64 * 2**20
#: Deepest nesting of lists and mappings accepted (kgtool's documents need fewer than 10).
MAX_DEPTH = 100
#: Most values (scalars, lists, mappings; YAML aliases counted as all they name) in a document.
MAX_NODES = 5_000_000
#: Longest quotation of input in an error message, in characters.
MAX_QUOTE = 80


# ---------------------------------------------------------------------------------------------
# Quoting input in messages


class _ShortRepr(reprlib.Repr):
    """``repr`` that stops early: bounded work and length whatever the value's size or sharing."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = 6
        self.maxstring = MAX_QUOTE
        self.maxlong = 40
        self.maxother = MAX_QUOTE


_SHORT_REPR = _ShortRepr()


def quote(value: object, limit: int = MAX_QUOTE) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for an error message.

    A long string keeps its head and says how long it was; containers show their first items
    (``reprlib``), so a value shared a million times through YAML aliases costs nothing."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[: limit - 20]!r}... ({len(value):,} characters)"
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit + 20 else text[:limit] + "..."


# ---------------------------------------------------------------------------------------------
# Shared guards


def check_size(text: str, source: str) -> None:
    """Refuse a document above :data:`MAX_DOCUMENT_BYTES` (counted as characters, a lower
    bound of its UTF-8 size: no encoding pass)."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise InputError(
            f"{source}: {len(text):,} characters: larger than the {MAX_DOCUMENT_BYTES // 2**20} MiB "
            "a YAML/JSON document may have"
        )


class MalformedJSON(InputError):
    """The text is not JSON at all (as opposed to JSON refused by a guard)."""


def _too_deep(where: str) -> InputError:
    return InputError(f"{where}: nested deeper than {MAX_DEPTH} levels")


def _too_many(where: str) -> InputError:
    return InputError(f"{where}: more than {MAX_NODES:,} values (YAML aliases counted as all they name)")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic GC while a document is built: its generation-2 passes rescan every
    object built so far, which makes building a large document quadratic. Documents hold no
    cycles, so nothing is left for it to find. (Also the driver's, while it decodes and
    combines the tasks' summaries: :mod:`kgtool.spark.job`.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# JSON


def load_json(text: str, source: str, *, line: int | None = None) -> Any:
    """``json.loads`` with the guards of this module.

    Args:
        text: one JSON document.
        source: its name in messages (a path or ``<stdin>``).
        line: for a line of JSON Lines, its line number (messages name it).

    Raises:
        InputError: malformed (line and column), too large, too deep, too many values.
    """
    where = source if line is None else f"{source}: line {line}"
    check_size(text, where)
    # Every value but the first follows a ',' or opens with '[' / '{' (commas inside strings
    # make this an over-estimate, never an under-estimate): refused before json allocates.
    if text.count(",") + text.count("[") + text.count("{") >= MAX_NODES:
        raise _too_many(where)
    try:
        with collector_paused():
            doc = json.loads(text)
    except json.JSONDecodeError as exc:
        lineno = exc.lineno if line is None else line + exc.lineno - 1
        head = f"{source}: line {lineno} column {exc.colno}"
        raise MalformedJSON(f"{head}: malformed JSON: {exc.msg}") from None
    except RecursionError:
        raise _too_deep(where) from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise InputError(f"{where}: malformed JSON: {_number_problem(exc)}") from None
    _check_depth(doc, where)
    if _SURROGATE_ESCAPE.search(text):
        _check_surrogates(doc, where)
    return doc


#: A \\uD800-\\uDFFF escape: json.loads joins a pair into one character, but keeps a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_surrogates(doc: Any, where: str) -> None:
    """Refuse a string holding a lone UTF-16 surrogate: it is not Unicode text (no Kafka id can
    be one: the protocol sends UTF-8), and writing it out would fail."""
    stack = [doc]
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else node if isinstance(node, list) else [node]
        for item in items:
            for value in item if isinstance(node, dict) else (item,):
                if isinstance(value, str):
                    try:
                        value.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InputError(
                            f"{where}: {quote(value)}: a lone UTF-16 surrogate escape is not Unicode text"
                        ) from None
                elif isinstance(value, (dict, list)):
                    stack.append(value)


def _check_depth(doc: Any, where: str) -> None:
    """Refuse a parsed document nested deeper than :data:`MAX_DEPTH` (iteratively)."""
    if not isinstance(doc, (dict, list)):
        return
    stack = [(doc, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > MAX_DEPTH:
            raise _too_deep(where)
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                push((child, depth + 1))


def _number_problem(exc: BaseException) -> str:
    """Python's int() refuses more than sys.get_int_max_str_digits() digits (CVE-2020-10735)
    with advice meant for programmers: say it for users."""
    if "Exceeds the limit" in str(exc):
        return f"an integer of more than {sys.get_int_max_str_digits():,} digits"
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    return next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)


# ---------------------------------------------------------------------------------------------
# YAML


def load_yaml_or_json(text: str, source: str) -> Any:
    """JSON when the text is JSON (``json`` is exact and fast), else YAML (flow YAML such as
    ``{0: 1}`` starts like JSON but is not)."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return load_json(text, source)
        except MalformedJSON:
            pass
    return load_yaml(text, source)


def load_yaml(text: str, source: str) -> Any:
    """One YAML document as plain data (PyYAML ``SafeLoader`` semantics), with the guards of
    this module; an empty document is ``None``.

    Raises:
        InputError: malformed (line and column), several documents, an unknown tag, an
            unhashable key, too large, too deep, too many values, a recursive alias.
    """
    import yaml

    check_size(text, source)
    loader_class = getattr(yaml, "CSafeLoader", None) or _guarded_loader()
    loader = None
    try:
        loader = loader_class(text)  # the pure-Python Reader checks characters here
        with collector_paused():
            return _YamlBuilder(loader, source).build()
    except _TooDeep as exc:  # the pure-Python parser (no libyaml), stopped by its scanner
        raise _too_deep(f"{source}: {_mark(exc.mark)[:-2]}") from None
    except yaml.MarkedYAMLError as exc:
        if loader_class is not _guarded_loader() and _may_hide_depth(text, exc):
            _reread_for_depth(text, source)
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "malformed"
        if exc.problem and exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            what += f" ({exc.context} started on line {exc.context_mark.line + 1})"
        raise InputError(f"{source}: {_mark(mark)}malformed YAML: {shorten(what)}") from None
    except yaml.reader.ReaderError as exc:
        # "unacceptable character #x0001: control characters are not allowed": placed by the
        # character position libyaml gives (its own message adds a second line).
        pos = exc.position if isinstance(exc.position, int) else 0
        if loader_class is not _guarded_loader():  # libyaml counts bytes of the UTF-8 encoding
            pos = len(text.encode("utf-8", "surrogatepass")[:pos].decode("utf-8", "ignore"))
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
        # kgtool's words, not the parser's (libyaml: "control characters are not allowed" for
        # any of them; PyYAML's Reader: "special characters are not allowed").
        kind = "control" if unicodedata.category(chr(char)) == "Cc" else "special"
        raise InputError(
            f"{source}: line {line} column {column}: malformed YAML: unacceptable character "
            f"#x{char:04x}: {kind} characters are not allowed"
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: malformed YAML: {shorten(_first_line(exc))}") from None
    finally:
        if loader is not None:
            loader.dispose()


#: Characters that may open a nesting level (flow collections, block entries, keys and values)
#: or, for ``*``, an alias that adds the height of its anchor.
_OPENERS = re.compile(r"[\[{\-?:*]")


def _may_hide_depth(text: str, exc: Any) -> bool:
    """Whether a parser error may have come before nesting past :data:`MAX_DEPTH` that kgtool
    would have reported first: the parser failed while reading ahead of the events delivered
    (libyaml's own nesting limit fires there), and the unread stretch, from the last event
    kgtool took to the error, holds enough openers to go past the limit. An upper bound, cheap:
    a malformed large document is read once, unless the error follows deep nesting."""
    depth = getattr(exc, "kgtool_depth", None)
    start = getattr(exc, "kgtool_index", None)
    mark = exc.problem_mark or exc.context_mark
    if depth is None or start is None or mark is None:
        return False
    gap = text[start : mark.index + 1]
    if "*" in gap:
        return True
    return depth + len(_OPENERS.findall(gap)) > MAX_DEPTH


def _reread_for_depth(text: str, source: str) -> None:
    """Read ``text`` again with the guarded pure-Python parser: raise kgtool's depth error if
    the nesting goes past :data:`MAX_DEPTH` before the first parser error; else return (the
    caller reports the first parser's error)."""
    import yaml

    loader = None
    try:
        loader = _guarded_loader()(text)
        with collector_paused():
            _YamlBuilder(loader, source).build()
    except _TooDeep as exc:
        raise _too_deep(f"{source}: {_mark(exc.mark)[:-2]}") from None
    except (InputError, yaml.YAMLError):
        return
    finally:
        if loader is not None:
            loader.dispose()


class _TooDeep(Exception):
    """Nesting past :data:`MAX_DEPTH` found by the scanner, at ``mark`` (raised through PyYAML's
    parser, which lets any exception pass)."""

    def __init__(self, mark: Any) -> None:
        super().__init__(_mark(mark))
        self.mark = mark


_GUARDED: list[type] = []


def _guarded_loader() -> type:
    """PyYAML's pure-Python ``SafeLoader`` with kgtool's depth limit in its scanner
    (:class:`_DepthGuard`), built on first use (PyYAML is imported lazily)."""
    if not _GUARDED:
        import yaml
        from yaml import tokens

        starts = (
            tokens.FlowSequenceStartToken,
            tokens.FlowMappingStartToken,
            tokens.BlockSequenceStartToken,
            tokens.BlockMappingStartToken,
        )

        class _DepthGuard(yaml.SafeLoader):
            """The scanner opens a level for each flow collection (``flow_level``) and each
            block collection (``indents``) as it reads ahead of the parser: stopped at the token
            that goes past :data:`MAX_DEPTH`, so no limit of PyYAML's own (a smaller count,
            never more) is reached first. The builder's own check on events, exact, stays."""

            def fetch_more_tokens(self) -> None:
                super().fetch_more_tokens()
                if self.flow_level + len(self.indents) > MAX_DEPTH:
                    mark = next((t.start_mark for t in reversed(self.tokens) if isinstance(t, starts)), None)
                    raise _TooDeep(mark or self.get_mark())

        _GUARDED.append(_DepthGuard)
    return _GUARDED[0]


def shorten(text: str, limit: int = 4 * MAX_QUOTE) -> str:
    """A parser's message, which may quote the input (a tag, an anchor), cut to ``limit``."""
    return text if len(text) <= limit else text[:limit] + "..."


def _short(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else quote(tag, 40)


def _mark(mark: Any) -> str:
    return f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""


_NO_KEY = object()
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
#: Explicit collection tags read as plain lists and mappings (SafeConstructor's !!set, !!omap
#: and !!pairs are refused: no kgtool document has them).
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
#: The scalar tags SafeLoader constructs, for the message refusing any other.
_SCALAR_TAGS = "!!str, !!int, !!float, !!bool, !!null, !!timestamp, !!binary"


class _Frame:
    """An open list or mapping: what it holds so far, for anchors and for merge keys."""

    __slots__ = ("value", "is_map", "key", "key_mark", "anchor", "size", "height", "merges")

    def __init__(self, value: Any, is_map: bool, anchor: str | None) -> None:
        self.value = value
        self.is_map = is_map
        self.key: Any = _NO_KEY
        self.key_mark: Any = None
        self.anchor = anchor
        self.size = 1  # values inside, itself included (aliases counted as all they name)
        self.height = 1  # nesting levels, itself included
        self.merges: list[dict] | None = None  # merge key sources, in the order listed


class _YamlBuilder:
    """Plain data from a YAML event stream, iteratively, with the module's guards."""

    def __init__(self, loader: Any, source: str) -> None:
        from yaml import nodes

        self.loader = loader
        self.source = source
        self.scalar_node = nodes.ScalarNode
        self.constructors = loader.yaml_constructors
        resolvers = loader.yaml_implicit_resolvers
        # Plain scalars whose first character no implicit resolver looks at are strings:
        # resolved without a regular expression (Resolver.resolve would reach the same).
        self.resolved_first = set(resolvers) if None not in resolvers else None
        #: anchor -> (value, values it names, height); height None while the node is open.
        self.anchors: dict[str, tuple[Any, int, int | None]] = {}
        self.nodes = 0

    def where(self, mark: Any) -> str:
        return f"{self.source}: {_mark(mark)[:-2]}" if mark is not None else self.source

    def error(self, mark: Any, message: str) -> InputError:
        return InputError(f"{self.source}: {_mark(mark)}{message}")

    def build(self) -> Any:
        from yaml import YAMLError
        from yaml import events as ev

        get_event = self.loader.get_event
        scalar_event, alias_event = ev.ScalarEvent, ev.AliasEvent
        seq_start, map_start = ev.SequenceStartEvent, ev.MappingStartEvent
        collection_end = (ev.SequenceEndEvent, ev.MappingEndEvent)
        document_start, stream_end = ev.DocumentStartEvent, ev.StreamEndEvent
        stack: list[_Frame] = []
        result: Any = None
        documents = 0
        event: Any = None
        try:
            while True:
                event = get_event()
                kind = type(event)
                if kind is scalar_event:
                    is_key = bool(stack) and stack[-1].is_map and stack[-1].key is _NO_KEY
                    value, size, height = self.scalar(event, is_key), 1, 0
                    self.count(1, event)
                    if event.anchor is not None:
                        self.anchor(event.anchor, value, 1, 0, event)
                elif kind is seq_start or kind is map_start:
                    is_map = kind is map_start
                    if event.tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
                        raise self.error(
                            event.start_mark, f"unsupported YAML tag {_short(event.tag)} (plain lists and mappings only)"
                        )
                    if len(stack) >= MAX_DEPTH:
                        raise _too_deep(self.where(event.start_mark))
                    self.count(1, event)
                    frame = _Frame({} if is_map else [], is_map, event.anchor)
                    if event.anchor is not None:
                        self.anchor(event.anchor, frame.value, 1, None, event)
                    stack.append(frame)
                    continue
                elif kind in collection_end:
                    frame = stack.pop()
                    value, size, height = frame.value, frame.size, frame.height
                    if frame.merges:
                        value = self.merged(frame)
                    if frame.anchor is not None:
                        self.anchors[frame.anchor] = (value, size, height)
                elif kind is alias_event:
                    found = self.anchors.get(event.anchor)
                    if found is None:
                        raise self.error(event.start_mark, f"found undefined alias {quote(event.anchor)}")
                    value, size, height = found
                    if height is None:
                        raise self.error(
                            event.start_mark,
                            f"alias *{event.anchor[:40]} refers to a node that contains it "
                            "(a recursive structure)",
                        )
                    self.count(size, event)
                    if len(stack) + height > MAX_DEPTH:
                        raise _too_deep(self.where(event.start_mark))
                elif kind is document_start:
                    documents += 1
                    if documents > 1:
                        raise self.error(event.start_mark, "malformed YAML: expected a single document, found another")
                    continue
                elif kind is stream_end or event is None:
                    return result
                else:  # StreamStart, DocumentEnd
                    continue
                if not stack:
                    result = value
                    continue
                top = stack[-1]
                top.size += size
                if height + 1 > top.height:
                    top.height = height + 1
                if not top.is_map:
                    top.value.append(value)
                elif top.key is _NO_KEY:
                    if isinstance(value, (list, dict)):
                        raise self.error(event.start_mark, "malformed YAML: a mapping key must be a scalar, found a collection")
                    top.key, top.key_mark = value, event.start_mark
                elif top.key is _MERGE:
                    self.merge_source(top, value, top.key_mark)
                    top.key = _NO_KEY
                else:
                    top.value[top.key] = value
                    top.key = _NO_KEY
        except YAMLError as exc:
            # For _may_hide_depth: how deep kgtool was, and where its last event started.
            exc.kgtool_depth = len(stack)
            exc.kgtool_index = event.start_mark.index if event is not None else 0
            raise

    def count(self, size: int, event: Any) -> None:
        self.nodes += size
        if self.nodes > MAX_NODES:
            raise _too_many(self.where(event.start_mark))

    def anchor(self, name: str, value: Any, size: int, height: int | None, event: Any) -> None:
        # Composer.compose_node: an anchor may be defined once.
        if name in self.anchors:
            raise self.error(event.start_mark, f"malformed YAML: found duplicate anchor {quote(name)}")
        self.anchors[name] = (value, size, height)

    def scalar(self, event: Any, is_key: bool) -> Any:
        value = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if event.implicit[0]:
                first = value[:1]
                if self.resolved_first is not None and first and first not in self.resolved_first:
                    return value
                if value.isdigit() and value.isascii() and (first != "0" or value == "0") and len(value) < 4000:
                    # Decimal [1-9][0-9]*: the int resolver's, and construct_yaml_int's int()
                    # (the float resolver needs a '.', the timestamp one a '-').
                    return int(value)
                tag = self.loader.resolve(self.scalar_node, value, event.implicit)
            else:
                return value  # quoted or block scalar without a tag: a string
        if is_key and tag == _MERGE_TAG:
            return _MERGE
        if is_key and tag == _VALUE_TAG:
            return value  # SafeConstructor.flatten_mapping reads a '=' key as a string
        construct = self.constructors.get(tag)
        if construct is None:  # SafeConstructor.construct_undefined, in kgtool's words
            raise self.error(event.start_mark, f"unsupported YAML tag {_short(tag)} ({_SCALAR_TAGS} only)")
        node = self.scalar_node(tag, value, event.start_mark, event.end_mark, event.style)
        try:
            return construct(self.loader, node)
        except (ValueError, OverflowError) as exc:  # e.g. int() of 5,000 digits
            raise self.error(
                event.start_mark, f"malformed YAML: cannot read {quote(value, 30)} as {_short(tag)}: {_number_problem(exc)}"
            ) from None

    def merge_source(self, frame: _Frame, value: Any, mark: Any) -> None:
        """A merge key's value: ``<<: {map}`` or ``<<: [map, map]``, kept in the order listed
        (several ``<<`` keys in one mapping: in the order they come); see :meth:`merged`."""
        if isinstance(value, dict):
            sources = [value]
        elif isinstance(value, list) and all(isinstance(v, dict) for v in value):
            sources = value
        else:
            raise self.error(mark, "malformed YAML: expected a mapping or list of mappings for merging")
        if frame.merges is None:
            frame.merges = []
        frame.merges.extend(sources)

    @staticmethod
    def merged(frame: _Frame) -> dict:
        """A mapping with merge keys, as the YAML 1.1 merge key type defines it
        (https://yaml.org/type/merge.html): a key of the mapping's own keeps its value ("unless
        the key already exists in it"), and of the merged mappings the one listed first wins
        ("keys in mapping nodes earlier in the sequence override keys specified in later mapping
        nodes"). A merged mapping that has merge keys itself was built by these rules already.

        The spec leaves the order of keys open (a mapping is unordered), so kgtool fixes it:
        the merged keys first, in the order the mappings are listed, each mapping's keys in its
        own order (a key stays where it first appears), then the mapping's own keys that were
        not merged. ``{<<: [{a: 1, b: 2}, {b: 5, z: 0}], c: 3}`` is ``{a: 1, b: 2, z: 0, c: 3}``.

        PyYAML's releases disagree, so none is followed blindly: PyYAML 6.0.4 orders the keys
        this way (6.0.3 and earlier put the last listed mapping's keys first:
        ``{b: 2, z: 0, a: 1, c: 3}``); PyYAML 6.0.3 and earlier give these values (6.0.4 lets a
        later mapping win when the two keys are different string objects:
        ``<<: [{alpha: 1}, {alpha: 2}]`` gives ``alpha: 2``; and a merged mapping's merged key
        over its own). Several ``<<`` keys in one mapping (a duplicate key, which the spec does
        not define) read as one list in the order they come, as in PyYAML 6.0.4 (6.0.3 and
        earlier: the last ``<<`` key wins)."""
        out: dict = {}
        for source in frame.merges or ():
            for key, value in source.items():
                if key not in out:
                    out[key] = value
        out.update(frame.value)
        return out


class _MergeKey:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<<"


_MERGE = _MergeKey()
