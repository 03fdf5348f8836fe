"""The text of a label selector (`?labelSelector=`, `kubectl get -l`), read token by token as
k8s.io/apimachinery's `labels.Parse` reads it (v0.32), with its words for each mistake.

A client shows these words to the user, so the lexer and the recursive descent are
apimachinery's: `in` and `notin` are operators after a key and plain words among values,
`a in ()` is the set of the empty value, a mistake outside a requirement is said bare and
one inside it after `unable to parse requirement: `. What a requirement's key, operator and
values must be is checked by the caller's `build` (NewRequirement's rules), which raises
SelectorError with its words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.apiserver.validation.names import label_key_errors

R = TypeVar("R")

IDENTIFIER, END = "identifier", "end"
# Operators as apimachinery's selection package names them.
EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
IN, NOT_IN, GT, LT = "in", "notin", "gt", "lt"
EXISTS, DOES_NOT_EXIST = "exists", "!"
_SYMBOLS = frozenset({")", ",", "!", "==", "=", ">", "<", "!=", "("})
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
BINARY_OPERATORS = {IN: IN, NOT_IN: NOT_IN, EQUALS: EQUALS, DOUBLE_EQUALS: DOUBLE_EQUALS,
                    NOT_EQUALS: NOT_EQUALS, ">": GT, "<": LT}
"""Each operator token and the operator it is."""
_EXPECTED_OPERATORS = ", ".join(BINARY_OPERATORS.values())

Token = tuple[str, str]
"""A token's kind (IDENTIFIER, END, a keyword or the symbol itself) and its text."""


class SelectorSyntaxError(ValueError):
    """The text is no label selector; the message is apimachinery's."""


def tokens(text: str) -> list[Token]:
    """The lexer's tokens, END last. Go reads bytes and stops at a NUL; every special
    character is ASCII, so reading characters gives the same tokens."""
    found: list[Token] = []
    position, size = 0, len(text)
    while True:
        while position < size and text[position] in _WHITESPACE:
            position += 1
        if position >= size or text[position] == "\0":
            found.append((END, ""))
            return found
        start = position
        if text[position] in _SPECIAL:
            # The longest symbol the run of special characters starts with: every special
            # character is a symbol alone, and the longest symbols (`==`, `!=`) have two.
            pair = text[position:position + 2]
            symbol = pair if pair in _SYMBOLS else text[position]
            position += len(symbol)
            found.append((symbol, symbol))
            continue
        while (position < size and text[position] not in _SPECIAL
               and text[position] not in _WHITESPACE and text[position] != "\0"):
            position += 1
        word = text[start:position]
        found.append((word if word in (IN, NOT_IN) else IDENTIFIER, word))


def parse_selector(text: str, build: Callable[[str, str, list[str]], R]) -> list[R]:
    """The requirements of `text`, each made by `build(key, operator, sorted values)`."""
    return _Parser(tokens(text), build).parse()


class _Parser(Generic[R]):
    """labels.Parser: a position in the tokens, read in one of two contexts."""

    def __init__(self, items: list[Token], build: Callable[[str, str, list[str]], R]) -> None:
        self._items = items
        self._position = 0
        self._build = build

    def _lookahead(self, values: bool = True) -> Token:
        kind, literal = self._items[self._position]
        return (IDENTIFIER if values and kind in (IN, NOT_IN) else kind), literal

    def _consume(self, values: bool = True) -> Token:
        token = self._lookahead(values)
        self._position += 1
        return token

    def parse(self) -> list[R]:
        found: list[R] = []
        while True:
            kind, literal = self._lookahead()
            if kind == END:
                return found
            if kind not in (IDENTIFIER, "!"):
                raise SelectorSyntaxError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                found.append(self._requirement())
            except SelectorSyntaxError as exc:
                raise SelectorSyntaxError(f"unable to parse requirement: {exc}") from exc
            kind, literal = self._consume()
            if kind == END:
                return found
            if kind != ",":
                raise SelectorSyntaxError(f"found '{literal}', expected: ',' or 'end of string'")
            after, literal = self._lookahead()
            if after not in (IDENTIFIER, "!"):
                raise SelectorSyntaxError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> R:
        key, unary = self._key_and_inferred_operator()
        if unary is not None:
            return self._build(key, unary, [])
        kind, literal = self._consume(values=False)
        if kind not in BINARY_OPERATORS:
            raise SelectorSyntaxError(f"found '{literal}', expected: {_EXPECTED_OPERATORS}")
        operator = BINARY_OPERATORS[kind]
        values = self._set() if operator in (IN, NOT_IN) else self._exact_value()
        return self._build(key, operator, sorted(values))

    def _key_and_inferred_operator(self) -> tuple[str, str | None]:
        """The key, and the operator when none follows it: DOES_NOT_EXIST after `!`, else
        EXISTS at the end or a comma; None when an operator follows."""
        kind, literal = self._consume()
        operator = DOES_NOT_EXIST if kind == "!" else None
        if operator is not None:
            kind, literal = self._consume()
        if kind != IDENTIFIER:
            raise SelectorSyntaxError(f"found '{literal}', expected: identifier")
        problems = label_key_errors(literal)
        if problems:
            # validateLabelKey with the parser's path, which is nil: Go prints it "<nil>".
            raise SelectorSyntaxError(
                f"<nil>: Invalid value: {go_quote(literal)}: {'; '.join(problems)}")
        if self._lookahead()[0] in (END, ",") and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return literal, operator

    def _set(self) -> set[str]:
        kind, literal = self._consume()
        if kind != "(":
            raise SelectorSyntaxError(f"found '{literal}' expected: '('")
        kind, literal = self._lookahead()
        if kind == ")":
            self._consume()
            return {""}
        if kind not in (IDENTIFIER, ","):
            raise SelectorSyntaxError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifiers()
        self._consume()  # the `)` the list stopped at
        return values

    def _identifiers(self) -> set[str]:
        """A list of words and commas up to, not including, `)`; a comma with nothing
        before or after it stands for the empty value."""
        values: set[str] = set()
        while True:
            kind, literal = self._consume()
            if kind == IDENTIFIER:
                values.add(literal)
                after, next_literal = self._lookahead()
                if after == ")":
                    return values
                if after != ",":
                    raise SelectorSyntaxError(f"found '{next_literal}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                after = self._lookahead()[0]
                if after == ")":
                    values.add("")
                    return values
                if after == ",":
                    self._consume()
                    values.add("")
            else:
                raise SelectorSyntaxError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._lookahead()[0] in (END, ","):
            return {""}
        kind, literal = self._consume()
        if kind != IDENTIFIER:
            raise SelectorSyntaxError(f"found '{literal}', expected: identifier")
        return {literal}
