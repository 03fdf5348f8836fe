"""Tools for testing jobmachine as its users run it: the chaos harness (`engine.testing.chaos`)."""
