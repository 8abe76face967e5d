"""steptable.table.runinfo: the run's description file: its name per arm and how a run's end is named."""

from __future__ import annotations

from steptable.table import runinfo


def test_how_a_with_block_ended_is_named_plainly() -> None:
    class 显存不足(RuntimeError):
        pass

    class interrupted(Exception):  # a user's exception must not read as an interruption
        pass

    class unclosed(ValueError):  # nor as a process that never closed its logger
        pass

    def closed_generator() -> BaseException:
        try:
            raise GeneratorExit
        except GeneratorExit as e:
            return e

    got = [runinfo.end_of(e) for e in (None, 显存不足(), interrupted(), unclosed(), closed_generator(), SystemExit(2),
                                        OSError())]
    assert got == [None, "RuntimeError", "Exception", "ValueError", None, "interrupted", "OSError"]
    assert [runinfo.warns(e) for e in ("interrupted", "unclosed", "RuntimeError")] == [True, True, False]


def test_arm_names_that_read_alike_as_file_names_keep_their_descriptions_apart() -> None:
    names = {runinfo.file_name(a) for a in ("a/b", "a_b", ".", "arm", "实验", "对照", "x" * 70, "x" * 64 + "y")}
    assert len(names) == 8 and runinfo.file_name("routeA") == "steptable.routeA.json"
    assert runinfo.file_name(None) == runinfo.file_name("") == "steptable.json"


def test_arm_names_that_read_alike_or_are_empty_get_their_own_files() -> None:
    names = ["", ".", "arm", "lr 1e-4", "lr/1e-4", "lr_1e-4"]
    parts = [runinfo.name_part(n) for n in names]
    assert len(set(parts)) == len(names) and all(p and not p.startswith(".") and ".." not in p for p in parts)


def test_earlier_ends_are_read_as_written_and_bad_entries_left_out() -> None:
    """The description keeps how earlier processes ended, each with the step the next resumed at and when it was
    closed; entries that are not of that form (the file is text from the disk) are left out, and at most MAX_EARLIER
    are kept."""
    ends = [("RuntimeError", 40, 1.5), ("interrupted", 65, 2.5)]
    info = runinfo.describe([], None, "m.jsonl", 0.0, None, 0, earlier=ends)
    assert runinfo.earlier(info) == ends
    info["earlier"] += [{"end": "x y", "resumed_at": 3, "closed": 1.0}, {"end": "E", "resumed_at": "3", "closed": 1.0},
                        "junk", {"end": "E", "resumed_at": 3}, {"end": "E", "resumed_at": 3, "closed": True}]
    assert runinfo.earlier(info) == ends
    assert runinfo.earlier(None) == [] and runinfo.earlier({"earlier": {"end": "E"}}) == []
    many = runinfo.describe([], None, "m.jsonl", 0.0, None, 0, earlier=[("E", i, 1.0) for i in range(50)])
    assert [at for _, at, _ in runinfo.earlier(many)] == list(range(50 - runinfo.MAX_EARLIER, 50))
    assert "earlier" not in runinfo.describe([], None, "m.jsonl", 0.0, None, 0)  # (none: no field)
