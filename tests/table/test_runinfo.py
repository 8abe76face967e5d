"""steptable.table.runinfo: the run's description file: its name per arm and how a run's end is named."""

from __future__ import annotations

from steptable.table import runinfo


def test_how_a_with_block_ended_is_named_plainly() -> None:
    class 显存不足(RuntimeError):
        pass

    class interrupted(Exception):  # a user's exception must not read as an interruption
        pass

    def closed_generator() -> BaseException:
        try:
            raise GeneratorExit
        except GeneratorExit as e:
            return e

    got = [runinfo.end_of(e) for e in (None, 显存不足(), interrupted(), closed_generator(), SystemExit(2), OSError())]
    assert got == [None, "RuntimeError", "Exception", None, "interrupted", "OSError"]


def test_arm_names_that_read_alike_as_file_names_keep_their_descriptions_apart() -> None:
    names = {runinfo.file_name(a) for a in ("a/b", "a_b", ".", "arm", "实验", "对照", "x" * 70, "x" * 64 + "y")}
    assert len(names) == 8 and runinfo.file_name("routeA") == "steptable.routeA.json"
    assert runinfo.file_name(None) == runinfo.file_name("") == "steptable.json"


def test_arm_names_that_read_alike_or_are_empty_get_their_own_files() -> None:
    names = ["", ".", "arm", "lr 1e-4", "lr/1e-4", "lr_1e-4"]
    parts = [runinfo.name_part(n) for n in names]
    assert len(set(parts)) == len(names) and all(p and not p.startswith(".") and ".." not in p for p in parts)
