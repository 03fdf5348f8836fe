"""`pods/exec`: a command in a running container of the local node, over a WebSocket with the
channel protocol kubectl speaks.
"""
