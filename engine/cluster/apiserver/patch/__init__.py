"""Patching and field ownership: JSON merge, JSON and strategic merge patches, server-side apply,
managed fields and the typed walks structured-merge-diff does.
"""
