"""The HTTP edge of the API server: the aiohttp application, routing, request info, query
parameters, responses, discovery, watch streams, and the subresource endpoints.

Nothing below this package speaks HTTP: admission, storage and the registry take and return
plain objects and `ApiError`s, and this package turns requests into those calls and their
answers into `Status` objects, Tables or protobuf as the client asked.
"""
