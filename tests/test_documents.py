"""``kgtool.documents``: YAML/JSON loading with depth, alias-expansion and size guards.

Issue "fuzz campaign" defects 11 (YAML 50,000 deep: SIGSEGV), 12 (multi-line YAML errors),
14 (JSON/YAML 100,000 deep: RecursionError), 15 (billion laughs), 16 (200,000-entry YAML slow).
Every hostile input here is built by a small generator.
"""

from __future__ import annotations

import gc

import pytest
import yaml

from kgtool import documents
from kgtool.documents import (
    MAX_DEPTH,
    MAX_NODES,
    load_json,
    load_yaml,
    load_yaml_or_json,
    quote,
)
from kgtool.errors import InputError

# PyYAML's SafeLoader semantics, which load_yaml must keep (YAML 1.1 scalars, anchors shared,
# merge keys, explicit scalar tags, duplicate keys: the last wins).
SAME_AS_SAFE_LOADER = [
    "a: 1",
    "",
    "# only a comment\n",
    "a: b\n...\n",
    "- 010\n- 0x1f\n- 1_000\n- 1:20\n- -5\n- +3\n- 0\n- 00\n- 1.5\n- .inf\n- yes\n- No\n- ~\n- null\n- ''\n"
    "- 2024-01-02\n- 2024-01-02 10:00:00\n- '12'\n- !!str 12\n- !!int '12'\n- !!binary aGVsbG8=\n- =x\n- on\n",
    "a: &x 1\nb: *x",
    "k: &a [1, 2]\nl: *a\nm: [*a, *a]",
    "<<: {a: 1, b: 2}\nb: 3\nc: 4",
    "base: &b {a: 1, b: 2}\nother: &o {b: 5, z: 0}\nx:\n  <<: [*b, *o]\n  c: 3",
    "=: 1",
    "{0: 1, 1: 2}",
    "{1: a, 1: b}",
    "a:\n  - b: [c, d]\n    e: |\n      text\n",
    "? a\n: b",
    "a: 123456789012345678901234567890",
    "x: !!float 1",
]


def plain(value, ordered=True):
    """``value`` as a hashable shape that keeps each value's type (``1``, ``1.0`` and ``True``
    differ) and, if ``ordered``, each mapping's key order."""
    if isinstance(value, dict):
        pairs = [(plain(k, ordered), plain(v, ordered)) for k, v in value.items()]
        return ("dict", tuple(pairs) if ordered else frozenset(pairs))
    if isinstance(value, list):
        return ("list", tuple(plain(v, ordered) for v in value))
    return (type(value).__name__, value)


@pytest.mark.parametrize("text", SAME_AS_SAFE_LOADER)
def test_same_data_as_pyyaml_safe_loader(text):
    # The same data, types included. Key order too, except for merge keys: their order is
    # kgtool's own (test_merge_keys_follow_yaml_1_1 states it), which PyYAML releases disagree on.
    want = yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader is the reference
    got = load_yaml(text, "d.yaml")
    ordered = "<<" not in text
    assert got == want and plain(got, ordered) == plain(want, ordered)


@pytest.mark.parametrize("pure_python", [False, True])
@pytest.mark.parametrize(
    ("text", "items"),
    [
        # Merged keys first, in the order the mappings are listed; the first listed wins.
        ("<<: [{a: 1, b: 2}, {b: 5, z: 0}]\nc: 3", [("a", 1), ("b", 2), ("z", 0), ("c", 3)]),
        ("base: &b {a: 1, b: 2}\nother: &o {b: 5, z: 0}\nx:\n  <<: [*b, *o]\n  c: 3\n", None),
        # Whatever the keys' strings (PyYAML 6.0.4 lets the later mapping win for these).
        ("<<: [{alpha: 1}, {alpha: 2}]", [("alpha", 1)]),
        # The mapping's own keys win, merged or not, wherever the merge key is.
        ("b: 3\n<<: {a: 1, b: 2}\nc: 4", [("a", 1), ("b", 3), ("c", 4)]),
        ("<<: {a: 1, b: 2}\nb: 3\nc: 4", [("a", 1), ("b", 3), ("c", 4)]),
        # A merged mapping with merge keys of its own: its own key wins there too.
        ("<<: {b: 1, <<: {a: 1, b: 2}}", [("a", 1), ("b", 1)]),
        # Several merge keys: one list, in the order they come.
        ("<<: {a: 1}\n<<: [{a: 2, b: 2}]\nc: 3", [("a", 1), ("b", 2), ("c", 3)]),
    ],
)
def test_merge_keys_follow_yaml_1_1(monkeypatch, text, items, pure_python):
    # kgtool's documented merge (documents._YamlBuilder.merged, after
    # https://yaml.org/type/merge.html), whichever PyYAML release is installed.
    if pure_python:
        monkeypatch.setattr(yaml, "CSafeLoader", None, raising=False)
    doc = load_yaml(text, "d.yaml")
    if items is None:
        doc, items = doc["x"], [("a", 1), ("b", 2), ("z", 0), ("c", 3)]
    assert list(doc.items()) == items


def test_anchors_are_shared_as_pyyaml_shares_them():
    doc = load_yaml("a: &x [1, 2]\nb: *x\n", "d.yaml")
    assert doc["a"] is doc["b"]


def test_yaml_nested_far_deeper_than_the_c_stack_is_an_input_error():
    # Defect 11: libyaml's composer recursed once per level and died of SIGSEGV at ~50,000.
    # The mapping is level 1, so the 100th "[" (column 108) opens level 101.
    text = "topics: " + "[" * 50_000 + "]" * 50_000 + "\nmembers: []\n"
    with pytest.raises(InputError) as exc:
        load_yaml(text, "g.yaml")
    assert str(exc.value) == f"g.yaml: line 1 column {8 + MAX_DEPTH}: nested deeper than {MAX_DEPTH} levels"


def test_depth_limit_is_kgtools_when_pyyaml_reads_ahead_past_its_own():
    # PyYAML 6.0.4's libyaml refuses nesting past 1,000 levels ("exceeded maximum nesting
    # depth") while its scanner reads ahead of the events kgtool counts: kgtool's limit and
    # message come first all the same, placed where kgtool places them.
    for text, column in [("[" * 5000, 101), ("a: {b: " + "{" * 3000, 106), ("- " * 50 + "[" * 3000, 151)]:
        with pytest.raises(InputError) as exc:
            load_yaml(text, "d.yaml")
        assert str(exc.value) == f"d.yaml: line 1 column {column}: nested deeper than {MAX_DEPTH} levels"


def test_pure_python_scanner_stops_at_kgtools_depth(monkeypatch):
    # A PyYAML whose pure-Python scanner had a limit of its own (120 levels here) never
    # reaches it: kgtool stops the scanner at level 101, where the message places it.
    monkeypatch.setattr(yaml, "CSafeLoader", None, raising=False)
    fetch = yaml.scanner.Scanner.fetch_flow_collection_start

    def limited(self, token_class):
        if self.flow_level >= 120:
            raise yaml.scanner.ScannerError(None, None, "exceeded maximum nesting depth", self.get_mark())
        fetch(self, token_class)

    monkeypatch.setattr(yaml.scanner.Scanner, "fetch_flow_collection_start", limited)
    text = "topics: " + "[" * 5000 + "]" * 5000
    with pytest.raises(InputError) as exc:
        load_yaml(text, "g.yaml")
    assert str(exc.value) == f"g.yaml: line 1 column {8 + MAX_DEPTH}: nested deeper than {MAX_DEPTH} levels"


def test_a_malformed_document_is_read_once(monkeypatch):
    # The second reading (pure Python) is for errors that may hide deep nesting only.
    monkeypatch.setattr(documents, "_reread_for_depth", lambda *a: pytest.fail("read twice"))
    text = "members:\n" + "".join(f"  - {{id: m{i}, topics: [a, b]}}\n" for i in range(2000)) + "  - [x\n"
    with pytest.raises(InputError, match="malformed YAML"):
        load_yaml(text, "g.yaml")


@pytest.mark.parametrize("block", [False, True])
def test_depth_limit_is_exact(block):
    def nested(depth):
        if block:  # block sequences: "- - - x"
            return "- " * depth + "x\n"
        return "[" * depth + "]" * depth

    assert load_yaml(nested(MAX_DEPTH), "d") is not None
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_yaml(nested(MAX_DEPTH + 1), "d")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a": ' * 100_000 + "1" + "}" * 100_000])
def test_json_nested_100000_deep_is_an_input_error(text):
    # Defect 14: json raised RecursionError (an internal error, exit 3).
    with pytest.raises(InputError, match=f"^d.json: nested deeper than {MAX_DEPTH} levels$"):
        load_json(text, "d.json")
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_yaml_or_json(text, "d.json")


def test_json_depth_between_the_limit_and_python_recursion_is_refused_too():
    text = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(InputError, match="nested deeper"):
        load_json(text, "d.json")
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "d.json") is not None


def billion_laughs(levels: int, width: int = 9) -> str:
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    lines.append(f"partitions: {{0: *a{levels - 1}}}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [8, 9, 30])
def test_billion_laughs_is_refused_while_reading(levels):
    # Defect 15: 291 bytes named 43 million values; quoting them printed a 226 MB error line.
    text = billion_laughs(levels)
    assert len(text) < 2000
    with pytest.raises(InputError) as exc:
        load_yaml(text, "d.yaml")
    message = str(exc.value)
    assert f"more than {MAX_NODES:,} values (YAML aliases counted as all they name)" in message
    assert message.startswith("d.yaml: line ") and len(message) < 200


def test_aliases_below_the_limit_are_fine():
    # A legitimate use: one subscription list shared by many members.
    text = "subs: &s [a, b, c]\nmembers:\n" + "".join(f"  - {{id: m{i}, topics: *s}}\n" for i in range(1000))
    doc = load_yaml(text, "g.yaml")
    assert len(doc["members"]) == 1000 and doc["members"][999]["topics"] == ["a", "b", "c"]


def test_recursive_alias_is_refused():
    # PyYAML builds a list that contains itself: every walk of it never ends.
    with pytest.raises(InputError, match=r"d.yaml: line 1 column 8: alias \*x refers to a node that contains it"):
        load_yaml("a: &x [*x]\n", "d.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: '\x01'", "d.yaml: line 1 column 5: malformed YAML: unacceptable character #x0001: control characters are not allowed"),
        ("a: *nope", "d.yaml: line 1 column 4: found undefined alias 'nope'"),
        ("a: &x 1\nb: &x 2", "d.yaml: line 2 column 4: malformed YAML: found duplicate anchor 'x'"),
        ("--- 1\n--- 2", "d.yaml: line 2 column 1: malformed YAML: expected a single document, found another"),
        ("? [a]\n: 1", "d.yaml: line 1 column 5: malformed YAML: a mapping key must be a scalar, found a collection"),
        ("x: !!set {a}", "d.yaml: line 1 column 4: unsupported YAML tag !!set (plain lists and mappings only)"),
        ("x: !!python/object:os.system 1", "d.yaml: line 1 column 4: unsupported YAML tag !!python/object:os.system "
         "(!!str, !!int, !!float, !!bool, !!null, !!timestamp, !!binary only)"),
        ("x: !custom 1", "d.yaml: line 1 column 4: unsupported YAML tag '!custom' ("),
        ("a: '\ufffe'", "d.yaml: line 1 column 5: malformed YAML: unacceptable character #xfffe: special characters are not allowed"),
        ("a: " + "9" * 5000, "malformed YAML: cannot read '9999999999'... (5,000 characters) as !!int: an integer of more than 4,300 digits"),
        ("<<: 1", "expected a mapping or list of mappings for merging"),
    ],
)
def test_yaml_errors_are_one_line_with_the_place(text, message):
    # Defect 12: libyaml's reader errors added 'in "<unicode string>", position 31' on a second line.
    with pytest.raises(InputError) as exc:
        load_yaml(text, "d.yaml")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value) and "<unicode string>" not in str(exc.value)


def test_pure_python_parser_gives_the_same_data_and_guards(monkeypatch):
    monkeypatch.setattr(yaml, "CSafeLoader", None, raising=False)
    for text in SAME_AS_SAFE_LOADER:
        assert load_yaml(text, "d") == yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506
    with pytest.raises(InputError, match="nested deeper"):
        load_yaml("[" * 5000 + "]" * 5000, "d")
    with pytest.raises(InputError, match="^d: line 1 column 5: malformed YAML: unacceptable character #x0001: control "
                       "characters are not allowed$"):
        load_yaml("a: '\x01'", "d")


def test_plain_scalars_are_built_without_pyyaml_nodes(monkeypatch):
    # Defect 16: a 200,000-entry description took 10 s in PyYAML's pure-Python loader (nodes,
    # marks, then a second pass) with the garbage collector rescanning the growing document.
    # Plain keys and values are built straight from the events, the collector paused.
    built = []

    class Counting(yaml.nodes.ScalarNode):
        def __init__(self, *a, **k):
            built.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(yaml.nodes, "ScalarNode", Counting)
    states = []
    real_build = documents._YamlBuilder.build

    def build(self):
        states.append(gc.isenabled())
        return real_build(self)

    monkeypatch.setattr(documents._YamlBuilder, "build", build)
    text = "{" + ", ".join(f"{i}: broker-{i % 7}" for i in range(20_000)) + "}"
    doc = load_yaml(text, "d.yaml")
    assert len(doc) == 20_000 and doc[19_999] == "broker-0"
    assert built == [] and states == [False] and gc.isenabled()


def test_json_first_then_flow_yaml():
    assert load_yaml_or_json('{"0": 1}', "d") == {"0": 1}
    assert load_yaml_or_json("{0: 1}", "d") == {0: 1}  # flow YAML, not JSON


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [1,\n 2,, 3]}', "d.json: line 2 column 4: malformed JSON: Expecting value"),
        ('{"a": ' + "9" * 5000 + "}", "d.json: malformed JSON: an integer of more than 4,300 digits"),
        ('{"id": "\\ud800"}', "d.json: '\\ud800': a lone UTF-16 surrogate escape is not Unicode text"),
    ],
)
def test_json_errors(text, message):
    with pytest.raises(InputError) as exc:
        load_json(text, "d.json")
    assert str(exc.value) == message


def test_json_surrogate_pairs_are_text():
    assert load_json('["\\ud83d\\ude00", "\\\\ud800"]', "d") == ["\U0001F600", "\\ud800"]


def test_too_many_values_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(documents, "MAX_NODES", 100)
    with pytest.raises(InputError, match="more than 100 values"):
        load_json("[" + ",".join(["0"] * 200) + "]", "d")
    with pytest.raises(InputError, match="more than 100 values"):
        load_yaml("[" + ",".join(["0"] * 200) + "]", "d")


def test_document_size_limit(monkeypatch):
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 1000)
    for load in (load_json, load_yaml):
        with pytest.raises(InputError, match="larger than the 0 MiB a YAML/JSON document may have"):
            load(" " * 1001, "d")


def test_quote_is_bounded_whatever_the_value():
    assert quote("a" * 10) == repr("a" * 10)
    long = quote("a" * 1_000_000)
    assert long.endswith("... (1,000,000 characters)") and len(long) < 120
    shared = [["x"] * 9] * 9
    for _ in range(7):
        shared = [shared] * 9  # 9**9 leaves, shared
    assert len(quote(shared)) < 120


@pytest.mark.parametrize("head", ["ab", "éé", "😀😀"])
def test_reader_errors_are_placed_by_character(head):
    # libyaml gives the byte offset of the UTF-8 encoding: the column counts characters.
    with pytest.raises(InputError, match="^d: line 2 column 5: malformed YAML: unacceptable character #x0001"):
        load_yaml(f"{head}: 1\nb: '\x01'", "d")
