"""The pure core imports neither textual, torch nor loguru (checked in a fresh interpreter), and steptable's public
names load on first use."""

from __future__ import annotations

import json
import subprocess
import sys

PURE = [
    "steptable.table.columns",
    "steptable.table.formatting",
    "steptable.table.render",
    "steptable.schemas",
    "steptable.ingest",
    "steptable.alerts.engine",
    "steptable.summary.report",
]


def test_pure_core_imports_no_heavy_packages() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {PURE!r}:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if not e.name.startswith('steptable'): raise\n"
        "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'torch', 'loguru', 'rich'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_cli_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom steptable.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False")


def test_the_public_names_load_on_first_use() -> None:
    code = (
        "import sys, steptable\n"
        "assert 'steptable.logger.steplogger' not in sys.modules\n"
        "from steptable import Col, StepLogger\n"
        "from steptable.logger.steplogger import StepLogger as S\n"
        "assert StepLogger is S and Col.__module__ == 'steptable.table.columns'\n"
        "try:\n    steptable.nope\nexcept AttributeError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "module 'steptable' has no attribute 'nope'"
