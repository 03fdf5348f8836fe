"""Encodings of request and response bodies besides plain JSON: Kubernetes protobuf (and its field
tables), and the JSON documents' private copies and nesting limit.
"""
