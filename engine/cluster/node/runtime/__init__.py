"""Ways of running containers: local processes (with their own mounts and hosts file) or
simulations, and the images the node runs by itself.
"""
