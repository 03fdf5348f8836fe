"""What a container is given from its pod before it starts: its environment and command line, and
its volumes with the ConfigMaps, Secrets and tokens they read.
"""
