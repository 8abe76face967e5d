"""The cursor's text (steptable.cli.tailcursor): the forms --since takes, the token of several runs read back as
written, and what is refused."""

from __future__ import annotations

import hashlib

import pytest

from steptable.cli.tailcursor import KEY_BYTES, Mark, encode, one_run, parse, short_key


def test_the_forms_given_before_runs_were_named_read_as_they_did() -> None:
    assert parse("12").mark("any", alone=True) == Mark(12)
    assert parse("-1").mark("any", alone=False) == Mark(-1)
    assert parse("12:5").mark("a", alone=True) == Mark(12, 5, 0)
    assert parse("12:5:3").mark("a", alone=True) == Mark(12, 5, 3)
    assert parse("12:5:3").mark("a", alone=False) == Mark(12)  # (several runs: the counts are no one's)


def test_one_runs_cursor_names_its_run() -> None:
    """``STEP:CELLS[:EDITS]@KEY``: its mark is the named run's; another run is new to it (from its start)."""
    text = one_run("a/metrics.jsonl", Mark(40, 7, 2))
    assert text == f"40:7:2@{short_key('a/metrics.jsonl')}" and len(short_key("a")) == 3
    since = parse(text)
    assert since.mark("a/metrics.jsonl", alone=False) == Mark(40, 7, 2)
    assert since.mark("b/metrics.jsonl", alone=True) is None
    assert one_run("a", Mark(40, 7, 0)) == f"40:7@{short_key('a')}" and one_run("a", Mark(40, 0, 2)) == "40"


def test_a_token_of_several_runs_reads_back_each_runs_mark() -> None:
    marks = [("vanilla/metrics.jsonl", Mark(1200, 14, 3)), ("routeA/metrics.jsonl", Mark(1200, 14, 0)),
             ("absorb/metrics.jsonl", Mark(-3, 0, 0)), ("late/metrics.jsonl", Mark(10**15, 200, 70_000))]
    token = encode(marks)
    assert token[0].isalpha() and token.replace("-", "").replace("_", "").isalnum()  # (safe as a shell word)
    since = parse(token)
    assert {r: since.mark(r, alone=False) for r, _ in marks} == dict(marks)
    assert since.mark("new/metrics.jsonl", alone=True) is None  # (a run not in it: from its start)
    assert parse(encode([])).marks == {}


def test_runs_in_step_cost_a_key_and_a_byte_each() -> None:
    """Each run's step and cells are written as the difference from the run before it: a run in step with it is
    its key and one byte (the first run's step and cells, a few bytes more; the version byte, the 2-byte check)."""
    same = encode([(f"seed{k}", Mark(1200, 14, 0)) for k in range(100)])
    assert len(same) <= (1 + 100 * (KEY_BYTES + 1) + 3 + 2) * 4 / 3 + 1


def test_two_runs_whose_keys_would_be_alike_get_wider_keys() -> None:
    seen: dict[bytes, str] = {}
    for i in range(1_000_000):  # (a pair whose 3-byte keys are alike: a few thousand names in)
        name = f"run{i}"
        key = hashlib.blake2b(name.encode(), digest_size=16).digest()[:KEY_BYTES]
        if key in seen:
            break
        seen[key] = name
    pair = [(seen[key], Mark(5, 2, 0)), (name, Mark(9, 3, 1))]
    since = parse(encode(pair))
    assert since.width > KEY_BYTES and {r: since.mark(r, alone=False) for r, _ in pair} == dict(pair)


@pytest.mark.parametrize("bad", ["9:x", "9:-1", "x", "9:", ":2", "9:2:", "9:2:1:1", "9@abc", "9:2@ab", "9:2@a b",
                                 "9:2@abcd", "E", "Ezz", "é"])
def test_what_is_not_a_cursor_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse(bad)


def test_a_token_miscopied_is_refused() -> None:
    """A token is copied back by an agent: a character changed, dropped or added is refused (its check), not read
    as other steps."""
    token = encode([("a", Mark(1200, 14, 3)), ("b", Mark(1190, 14, 0))])
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for i in range(1, len(token)):
        for c in alphabet[::7]:
            if c != token[i]:
                with pytest.raises(ValueError):
                    parse(token[:i] + c + token[i + 1 :])
    for cut in (token[:-1], token[:-3], token + "A"):
        with pytest.raises(ValueError):
            parse(cut)
