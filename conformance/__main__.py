"""Entry point for ``python -m conformance``."""

from conformance.runner import main

raise SystemExit(main())
