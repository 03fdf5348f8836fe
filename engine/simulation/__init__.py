"""The engine's decisions against a fake world and clock: no cluster, no processes."""
