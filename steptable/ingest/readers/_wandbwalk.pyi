"""The W&B reader's chunk walk in C (``_wandbwalk.c``): see its docstrings."""

class Walker:
    def walk(self, data: bytes | memoryview, i: int, base: int, max_rows: int, max_bytes: int, /
             ) -> tuple[int, bytes, int, int]: ...

def crc32(data: bytes | memoryview, value: int = 0, /) -> int: ...
