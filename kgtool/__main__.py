"""``python -m kgtool``: the same entry point as the ``kgtool`` console script."""

from kgtool.cli.main import main

if __name__ == "__main__":  # pragma: no cover - exercised through subprocess tests
    main()
