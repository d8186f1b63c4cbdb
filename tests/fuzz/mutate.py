"""Mutators of the fuzz campaign: bytes (segments, payloads, id lists) and text (YAML/JSON/
describe output), seeded so that a failure is reproduced from (target, seed, index)."""

from __future__ import annotations

import random
import struct

#: Integers that break parsers: lengths and counts at the edges of their types.
INTERESTING = [0, 1, -1, 7, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               1 << 20, 1 << 24, 1 << 30]


def mutate_bytes(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """One to eight stacked edits: bit flips, interesting integers written over any position
    (big-endian int16/int32, the Kafka wire sizes), byte runs, deletions, duplications, splices
    with another seed, truncations."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        n = len(out)
        op = rng.randrange(9)
        pos = rng.randrange(n) if n else 0
        if op == 0 and n:
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 1 and n >= 4:
            v = rng.choice(INTERESTING)
            fmt = rng.choice([">i", ">I", ">h", ">H"])
            size = struct.calcsize(fmt)
            p = min(pos, n - size)
            lo, hi = (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1) if fmt.islower() else (0, (1 << 8 * size) - 1)
            out[p:p + size] = struct.pack(fmt, min(max(v if fmt.islower() else v & hi, lo), hi))
        elif op == 2:
            out[pos:pos] = bytes([rng.choice([0, 0x02, 0xFF, rng.randrange(256)])]) * rng.randint(1, 64)
        elif op == 3 and n:
            del out[pos:pos + rng.randint(1, 32)]
        elif op == 4 and n:
            end = min(n, pos + rng.randint(1, 256))
            out[end:end] = out[pos:end] * rng.randint(1, 4)
        elif op == 5 and others:
            other = rng.choice(others)
            if other:
                a = rng.randrange(len(other))
                out[pos:pos] = other[a:a + rng.randint(1, 512)]
        elif op == 6 and n:
            del out[rng.randint(0, n):]
        elif op == 7 and n:
            out[pos] = rng.randrange(256)
        elif op == 8:  # a zig-zag varint of an absurd value (v2 record lengths, counts)
            out[pos:pos] = bytes([0xFF] * rng.randint(1, 9) + [0x7F])
    return bytes(out)


def _deep(rng: random.Random) -> str:
    depth = rng.choice([50, 1000, 30000, 120000])
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return "a:\n" + "".join(" " * min(i, 200) + "- " for i in range(min(depth, 3000))) + "x\n" \
        if rng.random() < 0.3 else "{a: " * depth + "1" + "}" * depth


def _laughs(rng: random.Random) -> str:
    levels = rng.randint(3, 10)
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


SCALARS = ["0", "-1", "2147483647", "2147483648", "1e20", "-1e400", "nan", ".inf", "null", "~", "true", "''",
           '"\\u0000"', "[]", "{}", "[1, [2, [3]]]", "{a: {b: c}}", "!!binary AAAA", "0x7fffffff", "999999999999999999999",
           "'\u2028'", "\"\\ud800\""]


def mutate_text(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """Structure-aware edits of a description: scalars replaced by absurd numbers, lists, maps
    or nulls; deep nesting; alias bombs; control characters and bad UTF-8; huge strings; lines
    duplicated or dropped; and, one time in four, the byte mutator on top."""
    text = data.decode("utf-8", "replace")
    lines = text.splitlines(keepends=True) or [""]
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(10)
        i = rng.randrange(len(lines))
        if op == 0:  # a scalar (the last token of a line) becomes something else
            line = lines[i].rstrip("\n")
            cut = max(line.rfind(" "), line.rfind(":"), line.rfind(","))
            lines[i] = line[:cut + 1] + " " + rng.choice(SCALARS) + "\n"
        elif op == 1:
            lines.insert(i, _deep(rng) + "\n")
        elif op == 2:
            lines.insert(0, _laughs(rng))
        elif op == 3:
            lines[i] = lines[i][:rng.randint(0, len(lines[i]))] + rng.choice(["\x00", "\x1b[2J", "\t", "\r", "\x85", "\ufeff"]) \
                + lines[i][rng.randint(0, len(lines[i])):]
        elif op == 4:
            lines.insert(i, "x" * rng.choice([1000, 100000, 1 << 20]) + "\n")
        elif op == 5:
            lines[i:i] = [lines[i]] * rng.randint(1, 50)
        elif op == 6 and len(lines) > 1:
            del lines[i]
        elif op == 7:  # numbers anywhere become huge
            import re

            lines[i] = re.sub(r"\d+", lambda m: rng.choice(["2147483647", "1000000000", "0", "-5", "1e20"]), lines[i])
        elif op == 8 and others:
            lines.insert(i, rng.choice(others).decode("utf-8", "replace"))
        else:
            lines[i] = lines[i].replace(":", rng.choice([": [", ": {", ":: ", ": &x", ": *x"]), 1)
    out = "".join(lines).encode("utf-8", "surrogatepass")
    if rng.random() < 0.25:
        out = mutate_bytes(rng, out, others)
    return out
