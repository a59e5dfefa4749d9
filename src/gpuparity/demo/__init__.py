"""Demo and test helpers that ship with the package: a fault-injecting OpenAI-compatible server."""
