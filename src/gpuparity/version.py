"""Version numbers, below every layer (the package's __init__ re-exports them for users)."""

__version__ = "0.1.0"
# Bumped whenever a change makes new figures incomparable with stored ones (mamf-style).
BENCHMARK_VERSION = 2
SCHEMA_VERSION = 2
