"""Name, label and key syntax checks, worded as k8s.io/apimachinery's validation package.

Selectors and built-in validation share these so a bad label key reads the
same in a `labelSelector` error and in an object's 422.
"""

from __future__ import annotations

import re

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")

_QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def _length(value: str, limit: int) -> list[str]:
    return [f"must be no more than {limit} characters"] if len(value) > limit else []


def dns1123_label_errors(value: str) -> list[str]:
    errors = _length(value, 63)
    return errors + ([] if _DNS1123_LABEL.fullmatch(value) else [_DNS1123_LABEL_MSG])


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = _length(value, 253)
    return errors + ([] if _DNS1123_SUBDOMAIN.fullmatch(value) else [_DNS1123_SUBDOMAIN_MSG])


def dns1035_label_errors(value: str) -> list[str]:
    errors = _length(value, 63)
    return errors + ([] if _DNS1035_LABEL.fullmatch(value) else [_DNS1035_LABEL_MSG])


def label_key_errors(key: str) -> list[str]:
    """A qualified name: optional DNS-subdomain prefix and '/', then a name of at most 63."""
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        return [*errors, "name part must be non-empty"]
    if len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(_QUALIFIED_NAME_MSG)
    return errors


def label_value_errors(value: str) -> list[str]:
    errors = _length(value, 63)
    return errors + ([] if _LABEL_VALUE.fullmatch(value) else [_LABEL_VALUE_MSG])


def config_key_errors(key: str) -> list[str]:
    """A ConfigMap or Secret data key."""
    errors = _length(key, 253)
    if not _CONFIG_KEY.fullmatch(key):
        errors.append(_CONFIG_KEY_MSG)
    if key in (".", ".."):
        errors.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors
