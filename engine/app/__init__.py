"""Commands that wire several packages into one: `up`, `demo` and a job's picture.

The only package that may put engine.cluster and engine.controller in one
process (they never import each other); the CLI calls into it and nothing else.
"""
