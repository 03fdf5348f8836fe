"""Pictures of machine definitions (DOT, Mermaid, SVG, PNG), pure: no network, no clock.

`render.render_file` is the entry point; `path` turns one job's history into a highlight.
"""
