"""``python -m steptable``."""

from steptable.cli import main

raise SystemExit(main())
