"""The command line: argument parsing and rendering only; the work lives in domain modules."""
