"""CEL expressions of a definition: type-checked once, compiled once, evaluated cheaply.

Google's checker (`cel_expr_python`) types every expression against the
variables and functions of vocabulary.py at load time; the `cel` evaluator
runs them. An expression is accepted only if both implementations support
everything it uses, so nothing that validated can fail for lack of a function
at run time.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import cel as celpy
from cel.stdlib import STDLIB_FUNCTIONS
from cel_expr_python import cel as celcpp
from cel_expr_python.ext import ext_encoders, ext_math, ext_strings

from engine.definition.cel_types import UNTYPED_JOB, CelTypes, TypeContext, cel_types
from engine.definition.errors import name_list, nearest_hint
from engine.definition.ssh_keys import ssh_key_pair
from engine.definition.strategic_patch import strategic_patch
from engine.definition.vocabulary import FUNCTIONS, CelFunction, Level, Variable, variables_for

# Functions the `cel` evaluator has without registration (operators aside).
_EVALUATOR_BUILTINS = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches", "string", "int", "uint",
        "double", "bytes", "dyn", "type", "duration", "timestamp", "getHours", "getMinutes",
        "getSeconds", "getMilliseconds", "getFullYear", "getMonth", "getDayOfMonth",
        "getDayOfWeek", "getDayOfYear", "getDate",
    }
)


def _extensions_by_short_name() -> dict[str, dict[str, Any]]:
    """Extension functions by the name `Program.functions()` reports (`greatest` for
    `math.greatest`), each with the full names the evaluator must know them by."""
    found: dict[str, dict[str, Any]] = {}
    for full_name, function in STDLIB_FUNCTIONS.items():
        found.setdefault(full_name.rsplit(".", 1)[-1], {})[full_name] = function
    return found


_EXTENSIONS = _extensions_by_short_name()

_INT64 = range(-(2**63), 2**63)


def _sum(values: list[Any]) -> int:
    """`sum(list(int))`: ints only (a `dyn` element may be anything at run time, and
    Python would count booleans and add doubles), and the total must fit an int64."""
    total = 0
    for value in values:
        if type(value) is not int:
            raise TypeError(f"sum takes ints, not {value!r}")
        total += value
    if total not in _INT64:
        raise OverflowError(f"sum {total} does not fit in a CEL int")
    return total


_MAX_INTERVAL = 10**7
"""More indexes than a Job may have completions (10^5 without elastic limits): a guard."""


def _indexes(text: str) -> list[int]:
    """`indexes(string)`: the ascending indexes of an interval list ('1,3-5'); a malformed
    one is an evaluation error, as the Job API refuses it."""
    if type(text) is not str:
        raise TypeError(f"indexes takes a string, not {text!r}")
    found: set[int] = set()
    for part in filter(None, text.split(",")):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"indexes: {part!r} is not an index or a range a-b")
        first, last = int(low), int(high or low)
        if last < first or last - first > _MAX_INTERVAL or len(found) > _MAX_INTERVAL:
            raise ValueError(f"indexes: {part!r} is not an ascending range of indexes")
        found.update(range(first, last + 1))
    return sorted(found)


def _first_index(values: list[Any]) -> int:
    """`firstIndex(list(bool))`: where the first true is, or -1."""
    for position, value in enumerate(values):
        if type(value) is not bool:
            raise TypeError(f"firstIndex takes bools, not {value!r}")
        if value:
            return position
    return -1


def _merge(first: Any, second: Any) -> dict[Any, Any]:
    """`merge(map, map)`: the first map's entries, then the second's over them."""
    if not isinstance(first, Mapping) or not isinstance(second, Mapping):
        raise TypeError(f"merge takes two maps, not {first!r} and {second!r}")
    return {**first, **second}


def _sha1(text: Any) -> str:
    """`sha1(string)`: the hex SHA-1 of the string's UTF-8 bytes."""
    if not isinstance(text, str):
        raise TypeError(f"sha1 takes a string, not {text!r}")
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _sort(values: Any) -> list[str]:
    """`sort(list(string))`: the strings in ascending order (by code point, as Go sorts)."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError(f"sort takes a list of strings, not {values!r}")
    return sorted(values)


def _patch(target: Any, patch: Any) -> Any:
    """`patch(map, map)`: `target` with `patch` applied as a JSON merge patch (RFC 7386)."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _patch(merged.get(key), value)
    return merged


def _upsert(entries: Any, added: Any, key: Any) -> list[Any]:
    """`upsert(list, list, string)`: `entries` with each map of `added` in the place of the
    one with the same value at `key`, else appended (Kubernetes' merge of env by name)."""
    if not isinstance(entries, list) or not isinstance(added, list) or not isinstance(key, str):
        raise TypeError(f"upsert takes two lists and a key, not {entries!r}, {added!r}, {key!r}")
    result = list(entries)
    for item in added:
        if not isinstance(item, Mapping) or key not in item:
            raise TypeError(f"upsert: {item!r} is not a map with {key!r}")
        at = next((i for i, old in enumerate(result)
                   if isinstance(old, Mapping) and old.get(key) == item[key]), None)
        if at is None:
            result.append(item)
        else:
            result[at] = item
    return result


# The evaluator's implementation of each function vocabulary.FUNCTIONS declares.
_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "sum": _sum, "indexes": _indexes, "firstIndex": _first_index, "merge": _merge,
    "sha1": _sha1, "patch": _patch, "upsert": _upsert, "sort": _sort,
    "strategicPatch": strategic_patch, "sshKeyPair": ssh_key_pair}

UNREPEATABLE = frozenset({"sshKeyPair"})
"""Functions whose value differs at each call: an expression that calls one is evaluated
every time, never answered from remembered values (every job must get a key pair of its
own, whatever else its expression reads)."""


@dataclass(frozen=True)
class EngineFunction:
    """A function of the language: its declaration and the evaluator's implementation."""

    spec: CelFunction
    implementation: Callable[..., Any]

    def checker_declaration(self) -> Any:
        """The checker's `FunctionDecl`: one global overload with the declared types."""
        parameters = [cel_type(p) for p in self.spec.parameters]
        overload_id = "_".join(re.findall(r"\w+", f"{self.spec.name} {self.spec.parameters}"))
        overload = celcpp.Overload(overload_id, cel_type(self.spec.result), parameters)
        return celcpp.FunctionDecl(self.spec.name, [overload])


def _engine_functions() -> dict[str, EngineFunction]:
    declared = {f.name for f in FUNCTIONS}
    if declared != _IMPLEMENTATIONS.keys():
        raise RuntimeError(
            f"CEL functions declared {sorted(declared)} but implemented "
            f"{sorted(_IMPLEMENTATIONS)}: vocabulary.py and cel.py must agree"
        )
    return {f.name: EngineFunction(f, _IMPLEMENTATIONS[f.name]) for f in FUNCTIONS}


ENGINE_FUNCTIONS = _engine_functions()

_ERROR_LINE = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")
_UNDECLARED = re.compile(r"undeclared reference to '([^']+)'")
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']+)' not found in struct '([^']+)'")


@dataclass(frozen=True)
class CelProblem:
    """One problem in an expression; `line` and `column` are 1-based, inside the expression."""

    line: int
    column: int
    message: str


class CelCompileError(Exception):
    """An expression that does not parse, type-check, or use only supported functions."""

    def __init__(self, problems: list[CelProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p.line}:{p.column}: {p.message}" for p in problems))


class CelEvaluationError(Exception):
    """An expression that failed at run time (a missing key, a division by zero, ...)."""


def failure_words(exc: Exception) -> str:
    """Why an evaluation failed, in words: a missing map key or field is `no such key: x`
    (as Kubernetes' CEL says it), not the bare key a Python KeyError prints."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return f"no such key: {exc.args[0]}"
    return str(exc)


@dataclass(frozen=True)
class Scope:
    """Where an expression is written: which level's variables it sees."""

    level: Level
    template: bool = False
    validation: bool = False
    status: bool = False
    child: bool = False
    """A spec.child status expression: it sees the job and the child only."""
    types: TypeContext = UNTYPED_JOB

    @property
    def variables(self) -> tuple[Variable, ...]:
        return variables_for(self.level, template=self.template, validation=self.validation,
                             status=self.status, child=self.child)

    @property
    def variable_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variables)


_ABSENT = object()


class Activation:
    """The variables of one evaluation round, each converted into the evaluator once.

    Converting a value into the evaluator costs about a microsecond per string it
    holds, far more than evaluating a guard (the `job` object alone costs about 80 µs);
    so only the variables an expression reads are converted, lazily, and expressions of
    the same step share them. Activations made `sharing` another use its evaluator
    context too: a value already converted there (the same object) is not converted
    again, so the job's and all its replicas' steps in one decision convert `job` once.
    Values must not be changed while an activation that holds them is in use, and a
    shared context must stay in one thread.
    """

    __slots__ = ("_bound", "_contents", "_context", "variables")

    def __init__(self, variables: Mapping[str, Any], *, sharing: Activation | None = None
                 ) -> None:
        self.variables = variables
        if sharing is None:
            self._context = celpy.Context()
            self._bound: dict[str, object] = {}
            self._contents: dict[Hashable, tuple[object, Any]] = {}
        else:
            self._context, self._bound = sharing._context, sharing._bound
            self._contents = sharing._contents

    def inputs(self, expression: CompiledExpression) -> Hashable | None:
        """What the value of `expression` depends on, as plain bytes: the content of each
        variable it reads (of a map whose entries it only selects fields of,
        `replicas[t].failed`, those fields of every entry; of a map it only selects fields
        of, `job.spec`, those fields); None when a variable is missing or cannot be
        pickled, or when the expression calls a function whose value differs from call to
        call (`UNREPEATABLE`): such a value is never handed out again."""
        if not UNREPEATABLE.isdisjoint(expression.functions):
            return None
        parts: list[object] = []
        for name in expression.names:
            value = self.variables.get(name, _ABSENT)
            if value is _ABSENT:
                return None
            try:
                parts.append(self._read_content(expression.source, name, value))
            except (pickle.PicklingError, TypeError, AttributeError):
                return None
        # The program stands for the expression (the same object for as long as the key is
        # kept; hashed by identity), the names for the order of `parts`.
        return (expression.program, expression.names, tuple(parts))

    def _read_content(self, source: str, name: str, value: object) -> object:
        """The content of what `source` reads of variable `name` (`inputs`)."""
        if type(value) is list:
            paths = _list_entry_paths(source, name)
            if paths is not None:
                return self.projected(value, paths)[1]
        if type(value) is dict and _only_counted(source, name):
            return ("size", len(value))
        if type(value) is dict:
            entry_fields = _entry_fields(source, name)
            if entry_fields is not None:
                return self.entries(value, entry_fields)[1]
            fields = _selected_fields(source, name)
            if fields is not None:
                status = _status_view(value, source, name, fields)
                if status is not None:
                    others = tuple(f for f in fields if f != _STATUS)
                    return (self.fields_content(value, others),
                            self.fields_content(value[_STATUS], status))
                return self.fields_content(value, fields)
        return self.content(value)

    def entries(self, value: dict[str, Any], fields: tuple[str, ...]
                ) -> tuple[dict[str, Any], bytes]:
        """`value` with each of its entries that is a map cut down to `fields`, and that
        view's content; kept as `content` is, and with the value itself while remembering
        values when it never changes (`unchanging`: a remembered replica summary, handed
        to thousands of activations)."""
        kept = (id(value), "entries", fields)
        known = self._contents.get(kept)
        if known is None or known[0] is not value:
            lasting = _unchanging_contents(value)
            known = None if lasting is None else lasting.get(kept)
            if known is None:
                view = {key: {f: entry[f] for f in fields if f in entry}
                        if type(entry) is dict else entry for key, entry in value.items()}
                known = (value, (view, pickle.dumps(view, pickle.HIGHEST_PROTOCOL)))
                if lasting is not None:
                    lasting[kept] = known
            self._contents[kept] = known
        return known[1]

    def projected(self, value: list[Any], paths: frozenset[tuple[str, ...]]
                  ) -> tuple[list[Any], bytes]:
        """`value` with each entry that is a map cut down to `paths` (`_projected`), and
        that view's content; kept as `content` is."""
        known = self._contents.get((id(value), "paths", paths))
        if known is None or known[0] is not value:
            view = [_projected(entry, paths) for entry in value]
            known = (value, (view, pickle.dumps(view, pickle.HIGHEST_PROTOCOL)))
            self._contents[(id(value), "paths", paths)] = known
        return known[1]

    def content(self, value: object) -> bytes:
        """`value` pickled: equal bytes unpickle to equal values, so they convert alike.
        Kept per object, which must not change while the activation is in use (and with
        an `unchanging` value for as long as it lives)."""
        known = self._contents.get(id(value))
        if known is None or known[0] is not value:
            lasting = _unchanging_contents(value)
            known = None if lasting is None else lasting.get(id(value))
            if known is None:
                known = (value, pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
                if lasting is not None:
                    lasting[id(value)] = known
            self._contents[id(value)] = known
        return known[1]

    def fields_content(self, value: dict[str, Any], fields: tuple[str, ...]
                       ) -> tuple[object, ...]:
        """The content of each of `fields` of `value` (None for one it lacks), kept as
        `content` is."""
        known = self._contents.get((id(value), fields))
        if known is None or known[0] is not value:
            contents = tuple(self.content(value[f]) if f in value else None for f in fields)
            known = (value, contents)
            self._contents[(id(value), fields)] = known
        return known[1]

    def context_for(self, expression: CompiledExpression) -> Any:
        for name in expression.names:
            value = self.variables.get(name, _ABSENT)
            if self._bound.get(name, _ABSENT) is value:
                continue
            if value is _ABSENT:
                raise CelEvaluationError(f"no variable {name!r} here")
            self._context.add_variable(name, value)
            self._bound[name] = value
        for name, function in expression.functions.items():
            if self._bound.get(name, _ABSENT) is not function:
                self._context.add_function(name, function)
                self._bound[name] = function
        return self._context


@dataclass(frozen=True)
class CompiledExpression:
    """A checked, compiled expression and what it needs from an activation."""

    source: str
    result_type: str
    program: Any = field(repr=False, compare=False)
    names: tuple[str, ...] = ()
    functions: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def evaluate(self, variables: Mapping[str, Any] | Activation) -> Any:
        """The value of the expression; raises `CelEvaluationError`."""
        if not isinstance(variables, Activation):
            variables = Activation(variables)
        remembered = _REMEMBERED.get()
        if remembered is not None:
            return remembered.evaluate(self, variables)
        return self.run(variables)

    def run(self, variables: Activation) -> Any:
        """Evaluate in the evaluator, whatever is remembered."""
        try:
            return self.program.execute(variables.context_for(self))
        except Exception as exc:
            raise CelEvaluationError(f"{self.source!r}: {failure_words(exc)}") from exc


class RememberedValues:
    """The values of expressions by the content of what they read, for a caller that
    evaluates the same expressions over the same values again and again (the model
    checker: one machine, thousands of situations).

    An expression's value depends only on the variables it reads (the functions are
    pure, but for `UNREPEATABLE` ones, whose expressions are never kept), so one
    evaluated before over equal contents is answered from here without
    converting anything into the evaluator. Errors are not kept: they are evaluated
    each time. A value that is a list or a map is handed out as a fresh copy.
    """

    LIMIT = 200_000
    """Values kept at most; all are forgotten when full (memory stays bounded)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self._outcomes: dict[Hashable, Hashable] = {}
        """Values' outcomes (`outcome`) by the same keys: a replayed step asks for them."""
        self._contexts: dict[tuple[str, ...], _BoundByContent] = {}
        self._tape: Tape | None = None
        self.unchanging: dict[int, tuple[object, dict[Hashable, Any]]] = {}
        """Values declared never to change (`unchanging`), by id, each with the contents
        activations worked out of it (`Activation.entries`, `Activation.content`)."""

    @contextmanager
    def recording(self, tape: Tape) -> Iterator[None]:
        """Within this block, every expression evaluated goes on `tape` with its outcome."""
        before, self._tape = self._tape, tape
        try:
            yield
        finally:
            self._tape = before

    def outcome(self, expression: CompiledExpression, variables: Activation) -> Hashable:
        """What evaluating `expression` gives, as a comparable outcome: the value's content,
        or the error's message. A value's outcome found before over equal contents is handed
        out again, not copied and pickled anew (a replayed step asks for one outcome per
        expression it passes, nearly all of them found before); errors are evaluated each
        time, as values' errors are."""
        key = variables.inputs(expression)
        if key is not None:
            found = self._outcomes.get(key)
            if found is not None:
                return found
        try:
            value = self._value(key, expression, variables)
        except CelEvaluationError as exc:
            return ("error", str(exc))
        found = ("value", pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
        if key is not None:
            if len(self._outcomes) >= self.LIMIT:
                self._outcomes.clear()
            self._outcomes[key] = found
        return found

    def evaluate(self, expression: CompiledExpression, variables: Activation) -> Any:
        tape = self._tape
        if tape is None:
            return self._remembered(expression, variables)
        try:
            value = self._remembered(expression, variables)
        except CelEvaluationError as exc:
            tape.outcomes.append((expression, ("error", str(exc))))
            raise
        tape.outcomes.append((expression, ("value",
                                           pickle.dumps(value, pickle.HIGHEST_PROTOCOL))))
        return value

    def _remembered(self, expression: CompiledExpression, variables: Activation) -> Any:
        return self._value(variables.inputs(expression), expression, variables)

    def _value(self, key: Hashable | None, expression: CompiledExpression,
               variables: Activation) -> Any:
        """The value of `expression`, remembered under `key` (its `inputs`; None: not
        remembered)."""
        if key is None:
            return expression.run(variables)
        found = self._values.get(key, _ABSENT)
        if found is not _ABSENT:
            return _fresh(found)
        value = self._run(expression, variables)
        if len(self._values) >= self.LIMIT:
            self._values.clear()
        self._values[key] = _fresh(value)
        return value

    def _run(self, expression: CompiledExpression, variables: Activation) -> Any:
        """Evaluate in a context kept from one activation to the next, where a variable is
        converted again only when its content changed (converting `job` took about 0.4 ms,
        the replica summary 0.2 ms, and each pass made new ones of equal content).

        A map the expression only selects fields of, none of them `status`, is bound
        without its status (the part of an object that changes from pass to pass), so the
        rest stays bound across passes; one it selects the status of is bound with only
        the fields it selects; a map of maps whose entries it only selects fields of
        (`replicas[t].failed`), with only those fields in each entry. Each gives the same
        value, as the rest is not read. A list of maps it reads only through macros whose
        variable selects fields (`children.filter(c, c.observation == 'childFailed')`) is
        bound with only those fields of each entry (`_list_entry_paths`): a JobSet's
        `children` hold whole Jobs, converted again at every pass that changed one.
        Expressions that read a status, such a list, or such a map whole use a context of
        their own, so that they do not rebind the others' values."""
        bindings: list[tuple[str, object, Any]] = []
        whole: list[str] = []
        for name in expression.names:
            value = variables.variables.get(name, _ABSENT)
            if value is _ABSENT:
                return expression.run(variables)  # says which variable is missing
            paths = _list_entry_paths(expression.source, name) if type(value) is list else None
            if paths is not None:
                whole.append(f"{name}[{','.join(sorted('.'.join(p) for p in paths))}]")
                cut, cut_content = variables.projected(value, paths)
                bindings.append((name, cut_content, cut))
                continue
            if type(value) is dict and _only_counted(expression.source, name):
                # Only its size is read (TrainJob's `size(child) == 0`): its keys will do.
                whole.append(f"size({name})")
                bindings.append((name, ("size", len(value)), dict.fromkeys(value)))
                continue
            entry_fields = _entry_fields(expression.source, name)
            if type(value) is dict and _STATUS not in value and entry_fields is not None:
                view, view_content = variables.entries(value, entry_fields)
                bindings.append((name, view_content, view))
                continue
            if type(value) is dict and _STATUS in value:
                fields = _selected_fields(expression.source, name)
                kept = fields if fields is not None and _STATUS in fields else tuple(
                    k for k in value if k != _STATUS)
                status = None if fields is None else _status_view(value, expression.source,
                                                                   name, fields)
                if fields is None or kept is fields:
                    whole.append(f"{name}.{','.join(fields or ('*',))}"
                                 + ("" if status is None else f":{','.join(status)}"))
                if fields is not None and status is not None:
                    # Only the status fields it reads: the record beside them changes
                    # every pass, and they seldom do.
                    others = tuple(k for k in kept if k != _STATUS)
                    view = {k: value[k] for k in others if k in value}
                    view[_STATUS] = {f: value[_STATUS][f] for f in status
                                     if f in value[_STATUS]}
                    bindings.append((name, (kept, variables.fields_content(value, others),
                                            variables.fields_content(value[_STATUS], status)),
                                     view))
                    continue
                if fields is not None:
                    bindings.append((name, (kept, variables.fields_content(value, kept)),
                                     {k: value[k] for k in kept if k in value}))
                    continue
            bindings.append((name, variables.content(value), value))
        mode = tuple(whole)
        bound = self._contexts.get(mode)
        if bound is None:
            bound = self._contexts[mode] = _BoundByContent()
        for name, content, value in bindings:
            bound.bind(name, content, value)
        for name, function in expression.functions.items():
            bound.bind_function(name, function)
        try:
            return expression.program.execute(bound.context)
        except Exception as exc:
            raise CelEvaluationError(f"{expression.source!r}: {failure_words(exc)}") from exc


_STATUS = "status"


class _BoundByContent:
    """An evaluator context whose variables stay bound, each with the content it was bound
    with (`Activation.content`): a value of equal content is not converted again."""

    __slots__ = ("contents", "context")

    def __init__(self) -> None:
        self.context = celpy.Context()
        self.contents: dict[str, object] = {}

    def bind(self, name: str, content: object, value: Any) -> None:
        if self.contents.get(name, _ABSENT) != content:
            self.context.add_variable(name, value)
            self.contents[name] = content

    def bind_function(self, name: str, function: Callable[..., Any]) -> None:
        if self.contents.get(name, _ABSENT) is not function:
            self.context.add_function(name, function)
            self.contents[name] = function


class Tape:
    """The expressions evaluated while it is on (`RememberedValues.recording`), in order,
    each with its outcome; a caller may note outcomes of its own on it."""

    __slots__ = ("outcomes",)

    def __init__(self) -> None:
        self.outcomes: list[tuple[Any, Hashable]] = []


_REMEMBERED: ContextVar[RememberedValues | None] = ContextVar("remembered", default=None)


def remembered_values() -> RememberedValues | None:
    """The values remembered in this block, if `remembering_values` switched it on."""
    return _REMEMBERED.get()


@contextmanager
def remembering_values(remembered: RememberedValues | None = None) -> Iterator[None]:
    """Within this block (in this thread or task), expressions evaluated over the same
    contents as before are answered from memory (`RememberedValues`): `remembered`, to go
    on with one kept from an earlier block, else a new one."""
    token = _REMEMBERED.set(remembered or RememberedValues())
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


def unchanging(value: object) -> None:
    """Declare that `value` will never change (a replica summary the model checker
    remembers and hands to many decisions): while remembering values, the contents worked
    out of it are kept with it across activations, not worked out again by each. It is
    held as long as the memory (at most `RememberedValues.LIMIT` such values)."""
    remembered = _REMEMBERED.get()
    if remembered is not None:
        if len(remembered.unchanging) >= RememberedValues.LIMIT:
            remembered.unchanging.clear()
        remembered.unchanging[id(value)] = (value, {})


def _unchanging_contents(value: object) -> dict[Hashable, Any] | None:
    """The contents kept with `value` if it was declared `unchanging`, else None."""
    remembered = _REMEMBERED.get()
    if remembered is None:
        return None
    known = remembered.unchanging.get(id(value))
    return known[1] if known is not None and known[0] is value else None


def _fresh(value: Any) -> Any:
    """A copy of the lists and maps in `value` (the rest is immutable)."""
    if type(value) is list:
        return [_fresh(item) for item in value]
    if type(value) is dict:
        return {key: _fresh(item) for key, item in value.items()}
    return value


@lru_cache(maxsize=4096)
def _code(source: str) -> str:
    """`source` with the text of each string literal blanked out (its quotes kept): a
    name in a string ('jobset.sigs.k8s.io/job-key') is no mention of a variable. Quotes
    are CEL's: ' or ", tripled or not, with backslash escapes except in raw strings
    (r'...')."""
    out: list[str] = []
    at, size = 0, len(source)
    while at < size:
        char = source[at]
        if char not in "'\"":
            out.append(char)
            at += 1
            continue
        quote = source[at:at + 3] if source[at:at + 3] in ("'''", '"""') else char
        start = at
        while start > 0 and source[start - 1] in "rRbB":
            start -= 1
        raw = "r" in source[start:at].lower() and not (
            start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"))
        end = at + len(quote)
        while end < size and not source.startswith(quote, end):
            end += 2 if source[end] == "\\" and not raw else 1
        out.append(quote + " " * (min(end, size) - at - len(quote)) + quote)
        at = end + len(quote)
    return "".join(out)


@lru_cache(maxsize=4096)
def _selected_fields(source: str, name: str) -> tuple[str, ...] | None:
    """The fields of variable `name` that `source` selects (`job.spec`, `job.metadata`),
    when every mention of the name is such a selection; None otherwise (the name is used
    whole, indexed, called on, or bound by a macro), and then the whole value counts.
    Names in string literals are no mentions (`_code`)."""
    source = _code(source)
    mentions = re.findall(rf"\b{name}\b", source)
    selected = re.findall(rf"\b{name}\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()", source)
    if len(selected) != len(mentions):
        return None
    return tuple(sorted(set(selected)))


_FIELD_CHAIN = re.compile(r"(?:\s*\.\s*[A-Za-z_]\w*\b(?!\s*\())*")


@lru_cache(maxsize=4096)
def selected_paths(source: str, name: str) -> frozenset[tuple[str, ...]]:
    """The chain of fields `source` selects from variable `name` at each mention of it
    (`job.metadata.name` gives ('metadata', 'name')); a mention that selects no field (the
    name used whole, indexed, called on, bound by a macro) gives (), the whole value.
    Whatever the expression reads of the variable lies within the values at these paths.
    Names in string literals are no mentions (`_code`)."""
    source = _code(source)
    return frozenset(
        tuple(re.findall(r"[A-Za-z_]\w*", chain.group(0)))
        for mention in re.finditer(rf"\b{name}\b", source)
        if (chain := _FIELD_CHAIN.match(source, mention.end())) is not None)


def _status_view(value: dict[str, Any], source: str, name: str, fields: tuple[str, ...]
                 ) -> tuple[str, ...] | None:
    """The fields of `name.status` that `source` reads, when it selects the status, the
    status is a map and every mention of it selects one of its fields or asks whether
    it is there (`_status_fields`); None otherwise (the status counts whole)."""
    if _STATUS not in fields or type(value.get(_STATUS)) is not dict:
        return None
    return _status_fields(source, name)


_STATUS_MENTION_FIELD = re.compile(r"\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()")
_DYN_STATUS_FIELD = re.compile(r"\s*\)\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()")


@lru_cache(maxsize=4096)
def _status_fields(source: str, name: str) -> tuple[str, ...] | None:
    """The fields of `name.status` that `source` reads, when every mention of it selects a
    field (`job.status.conditions`, `dyn(job.status).restartAttempt`) or only asks whether
    it is there (`has(job.status)`, which a view of some of its fields answers alike);
    None otherwise. Names in string literals are no mentions (`_code`)."""
    source = _code(source)
    fields: set[str] = set()
    for mention in re.finditer(rf"\b{name}\s*\.\s*{_STATUS}\b", source):
        before, after = source[:mention.start()].rstrip(), source[mention.end():]
        selected = _STATUS_MENTION_FIELD.match(after) or (
            _DYN_STATUS_FIELD.match(after) if before.endswith("dyn(") else None)
        if selected is not None:
            fields.add(selected.group(1))
        elif not (before.endswith("has(") and after.lstrip().startswith(")")):
            return None
    return tuple(sorted(fields))


_MAP_MACRO = re.compile(r"\s*\.\s*(?:all|exists|exists_one|filter|map)\s*\(")
_ENTRY_FIELD = re.compile(
    r"\s*(?:\.\s*[A-Za-z_]\w*|\[[^\[\]]*\])\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()")
_KEY_ASKED = re.compile(r"\bin\s*$")


@lru_cache(maxsize=4096)
def _entry_fields(source: str, name: str) -> tuple[str, ...] | None:
    """The fields of the entries of map variable `name` that `source` reads, when every
    mention of the name selects a field of one entry (`replicas[t].failed`,
    `replicas.Chief.states`), iterates its keys with a macro (`replicas.exists(t, ..)`) or
    asks for a key (`'Chief' in replicas`); None otherwise. The keys are always read.
    Names in string literals are no mentions (`_code`)."""
    source = _code(source)
    fields: set[str] = set()
    for mention in re.finditer(rf"\b{name}\b", source):
        after = source[mention.end():]
        entry = _ENTRY_FIELD.match(after)
        if entry is not None:
            fields.add(entry.group(1))
        elif _MAP_MACRO.match(after) is None and not (
                _KEY_ASKED.search(source, 0, mention.start())
                and not after.lstrip().startswith((".", "["))):
            return None
    return tuple(sorted(fields))


_MACRO_CALL = re.compile(r"\s*\.\s*(all|exists|exists_one|filter|map)\s*\(")
_MACRO_VARIABLE = re.compile(r"\s*([A-Za-z_]\w*)\s*,")
_MACRO_OPENED = re.compile(r"\.\s*(?:all|exists|exists_one|filter|map)\s*\(\s*$")
_SIZE_CALLED = re.compile(r"\s*\.\s*size\s*\(\s*\)")


@lru_cache(maxsize=4096)
def _list_entry_paths(source: str, name: str) -> frozenset[tuple[str, ...]] | None:
    """The paths into the entries of list variable `name` that `source` reads
    (('object', 'status', 'active') for `c.object.status.active`), when it reads them only
    so: every mention of the name is counted (`size(children)`) or iterated by macros
    (`children.filter(c, ...).exists(d, ...)`) whose variables, in their bodies, only
    select fields (`c.observation`, `has(c.object.status)`), and a filter's result
    (entries themselves) is only counted, iterated so, or indexed to select fields
    (`[0].object.metadata.name`); None otherwise, and then the whole list counts. What
    lies outside these paths is not read, so a view of the entries cut down to them gives
    the expression the same value. Names in string literals are no mentions (`_code`)."""
    code = _code(source)
    paths: set[tuple[str, ...]] = set()
    for mention in re.finditer(rf"\b{name}\b", code):
        if not _entries_read(code, mention.start(), mention.end(), paths):
            return None
    return frozenset(paths)


@lru_cache(maxsize=4096)
def _only_counted(source: str, name: str) -> bool:
    """Whether every mention of variable `name` in `source` is `size(name)`: only the
    number of its entries is read (a TrainJob renders its JobSet's spec while
    `size(child) == 0`, and the child's status changes every pass). Names in string
    literals are no mentions (`_code`)."""
    code = _code(source)
    mentions = len(re.findall(rf"\b{name}\b", code))
    counted = len(re.findall(rf"(?<![\w.])size\s*\(\s*{name}\s*\)", code))
    return mentions > 0 and mentions == counted


def _entries_read(code: str, start: int, end: int, paths: set[tuple[str, ...]]) -> bool:
    """Whether the list that `code[start:end]` gives is read only as `_list_entry_paths`
    allows, adding to `paths` the paths read into its entries."""
    while True:
        call = _MACRO_CALL.match(code, end)
        if call is not None:
            variable = _MACRO_VARIABLE.match(code, call.end())
            close = _closing(code, call.end())
            if variable is None or close is None:
                return False
            body = code[variable.end():close]
            for use in re.finditer(rf"\b{variable.group(1)}\b", body):
                if _MACRO_OPENED.search(body, 0, use.start()):
                    continue  # a macro within names its own variable so (shadowing it)
                fields = _chain(body, use.end())
                if not fields:
                    return False
                paths.add(fields)
            if call.group(1) != "filter":
                return True  # a truth, or a list made of the fields selected
            end = close + 1  # the entries the filter keeps: read on
            continue
        if _SIZE_CALLED.match(code, end):
            return True
        index = re.compile(r"\s*\[").match(code, end)
        if index is not None:
            close = _closing(code, index.end())
            fields = _chain(code, close + 1) if close is not None else ()
            if fields:
                paths.add(fields)
                return True
            return False
        before, after = code[:start].rstrip(), code[end:]
        if not (before.endswith("(") and after.lstrip().startswith(")")):
            return False
        called = before[:-1].rstrip()
        if re.search(r"(?<![\w.])size$", called):
            return True
        if called and (called[-1].isalnum() or called[-1] in "_.])"):
            return False  # an argument of some other function
        # Parentheses that only group it: read on around them.
        start, end = len(before) - 1, end + (len(after) - len(after.lstrip())) + 1


def _chain(code: str, at: int) -> tuple[str, ...]:
    """The fields selected one after another from `at` (`.object.status`), () for none."""
    chain = _FIELD_CHAIN.match(code, at)
    return tuple(re.findall(r"[A-Za-z_]\w*", chain.group(0))) if chain else ()


def _closing(code: str, at: int) -> int | None:
    """Where the bracket opened just before `at` closes (string literals blanked)."""
    depth = 1
    for index in range(at, len(code)):
        char = code[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _projected(value: Any, paths: frozenset[tuple[str, ...]]) -> Any:
    """`value` with only what lies at `paths` (a map cut down to the fields they begin
    with, each cut down to the rest of its paths; anything else whole)."""
    if () in paths or type(value) is not dict:
        return value
    heads: dict[str, set[tuple[str, ...]]] = {}
    for path in paths:
        heads.setdefault(path[0], set()).add(path[1:])
    return {key: _projected(item, frozenset(heads[key]))
            for key, item in value.items() if key in heads}


def combine(expressions: list[CompiledExpression]) -> CompiledExpression:
    """One program giving the list of the values of `expressions` (already checked)."""
    source = "[" + ", ".join(f"({e.source})" for e in expressions) + "]"
    names = tuple(dict.fromkeys(n for e in expressions for n in e.names))
    functions = {k: v for e in expressions for k, v in e.functions.items()}
    return CompiledExpression(source, "list", _program(source), names, functions)


@lru_cache(maxsize=4096)
def _program(source: str) -> Any:
    """The evaluator's program of `source`, kept: the same sources are compiled under
    several scopes (360 distinct of 4,228 compiled while loading `machines/`)."""
    return celpy.compile(source)


def cel_type(signature: str, types: CelTypes | None = None) -> Any:
    """The checker's type for a vocabulary signature: bool, int, list(T), map(K, V), or a
    struct of `types` (`Job` without a known schema is `map(string, dyn)`)."""
    signature = signature.strip()
    simple = {
        "bool": celcpp.Type.BOOL, "int": celcpp.Type.INT, "uint": celcpp.Type.UINT,
        "double": celcpp.Type.DOUBLE, "string": celcpp.Type.STRING, "dyn": celcpp.Type.DYN,
        "bytes": celcpp.Type.BYTES, "duration": celcpp.Type.DURATION,
        "timestamp": celcpp.Type.TIMESTAMP,
    }
    if signature in simple:
        return simple[signature]
    if signature.startswith("list(") and signature.endswith(")"):
        return celcpp.Type.List(cel_type(signature[5:-1], types))
    if signature.startswith("map(") and signature.endswith(")"):
        key, value = _split_top_level(signature[4:-1])
        return celcpp.Type.Map(cel_type(key, types), cel_type(value, types))
    if types is not None and signature in types.struct_types:
        return celcpp.Type(types.struct_types[signature])
    if signature == "Job":
        return celcpp.Type.Map(celcpp.Type.STRING, celcpp.Type.DYN)
    raise ValueError(f"unsupported CEL type signature {signature!r}")


def _split_top_level(text: str) -> tuple[str, str]:
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            return text[:i], text[i + 1 :]
    raise ValueError(f"expected two type arguments in {text!r}")


@lru_cache(maxsize=512)
def _checker(scope: Scope) -> Any:
    """The checker of one scope (bounded, as the type contexts it depends on)."""
    types = cel_types(scope.types)
    variables = {v.name: cel_type(v.cel_type, types) for v in scope.variables}
    extensions = [ext_strings.ExtStrings(), ext_math.ExtMath(), ext_encoders.ExtEncoders()]
    functions = [f.checker_declaration() for f in ENGINE_FUNCTIONS.values()]
    return celcpp.NewEnv(descriptor_pool=types.pool, variables=variables,
                         extensions=extensions, functions=functions)


@lru_cache(maxsize=4096)
def compile_expression(source: str, scope: Scope) -> CompiledExpression:
    """Check and compile `source`; raises `CelCompileError` with positions inside it.

    Kept per source and scope (a failure is not kept): loading `machines/` compiled 995
    distinct ones 3,408 times (validation, then the compiled machine; each replica
    type's templates), a third of loading's CPU. The result is immutable."""
    if not source.strip():
        raise CelCompileError([CelProblem(1, 1, "empty CEL expression")])
    try:
        checked = _checker(scope).compile(source)
    except Exception as exc:
        raise CelCompileError(_problems(str(exc), source, scope, "CEL type error")) from exc
    try:
        program = _program(source)
    except Exception as exc:
        unsupported = "not supported by the expression evaluator"
        raise CelCompileError(_problems(str(exc), source, scope, unsupported)) from exc
    functions: dict[str, Any] = {}
    for name in program.functions():
        if name in ENGINE_FUNCTIONS:
            functions[name] = ENGINE_FUNCTIONS[name].implementation
        elif name in _EXTENSIONS:
            functions.update(_EXTENSIONS[name])
        elif name not in _EVALUATOR_BUILTINS and name[:1] not in ("_", "@", "!", "-"):
            column = source.find(name) + 1 or 1
            message = f"function '{name}' is not supported by the expression evaluator"
            raise CelCompileError([CelProblem(*_line_column(source, column - 1), message)])
    names = tuple(n for n in program.variables() if n in scope.variable_names)
    return CompiledExpression(
        source, _type_name(checked.return_type()), program, names, functions
    )


def _type_name(cel_result: Any) -> str:
    for name in ("bool", "int", "uint", "double", "string", "dyn", "duration", "timestamp"):
        if cel_result == getattr(celcpp.Type, name.upper()):
            return name
    if cel_result.is_message():
        # An object (a message of cel_types, a Struct) is a map to the evaluator.
        return "dyn" if str(cel_result.name()) == "google.protobuf.Value" else "map"
    return str(cel_result.name()).lower()


def _line_column(source: str, index: int) -> tuple[int, int]:
    before = source[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def _problems(text: str, source: str, scope: Scope, kind: str) -> list[CelProblem]:
    found = [
        _problem(
            int(m.group(1)), int(m.group(2)), m.group(3).strip(), source, scope=scope, kind=kind
        )
        for m in _ERROR_LINE.finditer(text)
    ]
    # Later checker errors are usually consequences of the first (`*error*` operands).
    return [p for p in found if "'*error*'" not in p.message][:3] or found[:1] or [
        CelProblem(1, 1, text.strip().splitlines()[0] if text.strip() else "invalid expression")
    ]


_MESSAGE_TYPE = re.compile(r"jobmachine\.cel\.\w+")


def _readable_types(message: str, scope: Scope) -> str:
    """The checker's message with the engine's message types named as the reference names
    them (`job.spec`, `replica`), not by their generated protobuf names."""
    messages = cel_types(scope.types).messages

    def label(match: re.Match[str]) -> str:
        info = messages.get(match.group(0))
        return f"object {info.label}" if info else match.group(0)

    return _MESSAGE_TYPE.sub(label, message)


def _unknown_field(line: int, column: int, name: str, message_type: str,
                   scope: Scope) -> CelProblem:
    """A field the type does not have, said at the field's name (the checker points at the
    dot before it), with the type's fields and the nearest of them."""
    info = cel_types(scope.types).messages.get(message_type)
    if info is None:
        return CelProblem(line, column + 1, f"unknown field '{name}'")
    return CelProblem(line, column + 1, f"unknown field '{name}' of {info.label}"
                      f"{nearest_hint(name, info.fields)}; its fields: {name_list(info.fields)}")


def _problem(
    line: int, column: int, message: str, source: str, *, scope: Scope, kind: str
) -> CelProblem:
    undeclared = _UNDECLARED.search(message)
    undefined = _UNDEFINED_FIELD.search(message)
    if undefined is not None:
        return _unknown_field(line, column, undefined.group(1), undefined.group(2), scope)
    if message.startswith(("Syntax error: ", "unsupported syntax")):
        detail = message.removeprefix("Syntax error: ")
        return CelProblem(line, column, f"CEL syntax error: {detail}")
    if undeclared is None:
        return CelProblem(line, column, f"{kind}: {_readable_types(message, scope)}")
    text = (source.splitlines() or [""])[line - 1] if line <= len(source.splitlines()) else ""
    if text[column - 1 : column] == "(":
        function = undeclared.group(1)
        start = text.rfind(function.split(".")[-1], 0, column) + 1 or column
        if function in ENGINE_FUNCTIONS:
            usage = ENGINE_FUNCTIONS[function].spec.signature
            return CelProblem(line, start, f"function '{function}' is called as {usage}")
        return CelProblem(line, start, f"unknown function '{function}'")
    # The checker names a plain name where it starts, and a dotted path (`pod.phase`) at
    # its last dot: point at the path's start, written just before that dot.
    path = undeclared.group(1).split(".")
    name = path[0]
    head = re.search(r"\s*\.\s*".join(map(re.escape, path[:-1])) + r"\s*$", text[:column - 1])
    start = head.start() + 1 if len(path) > 1 and head is not None else column
    visible = name_list(scope.variable_names)
    return CelProblem(line, start, f"unknown variable '{name}'; visible here: {visible}")
