"""``python -m steptable``."""

from steptable.cli.main import main

raise SystemExit(main())
