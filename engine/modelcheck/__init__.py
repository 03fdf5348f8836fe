"""`jobmachine check`: every reachable situation of a machine, explored with the engine's
own decisions."""
