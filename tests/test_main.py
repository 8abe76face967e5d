"""steptable.__main__: ``python -m steptable`` is the command."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_works() -> None:
    out = subprocess.run([sys.executable, "-m", "steptable", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("steptable ")
