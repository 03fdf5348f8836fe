"""The chaos harness: jobs of every kind and outcome while the engine is killed, the API
server faults and the node is lost, judged by invariants (docs/reliability.md)."""

from engine.testing.chaos.run import ChaosConfig, ChaosReport, run_chaos

__all__ = ["ChaosConfig", "ChaosReport", "run_chaos"]
