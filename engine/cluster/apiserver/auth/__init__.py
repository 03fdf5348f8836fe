"""Who a request comes from and what it may do: authentication (tokens), authorization (RBAC,
impersonation), access reviews, bound service-account tokens and the audit log.
"""
