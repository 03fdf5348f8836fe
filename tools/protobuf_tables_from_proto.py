"""Write the embedded API server's generated protobuf field tables from kubernetes/api.

`engine/cluster/apiserver/encoding/protobuf_tables_core.py` (Pod, PodTemplate,
ReplicationController), `protobuf_tables_batch.py` (Job, CronJob) and `protobuf_tables_apps.py`
(Deployment, ReplicaSet) are this script's output; edit the script, not them.
Run it from the repository root with a clone (or bare mirror) of
https://github.com/kubernetes/api:

    python tools/protobuf_tables_from_proto.py --api PATH/TO/kubernetes/api --ref v0.32.4

For each package in `PACKAGES` it reads, at REF (through `git show`, so the clone's work tree
does not matter):

- `<group>/<version>/generated.proto`: the messages, their field numbers, and each field's
  wire shape (scalar, message, repeated, map);
- `<group>/<version>/types.go`: the Go struct behind each message, whose tags give each
  field's JSON name, `omitempty`, pointer-ness and `json:",inline"` embedding.

From the root kinds it walks every message they reach and writes one module per package, in
the style of `protobuf_tables`: one `Table` per message (dependencies first) and `KINDS`, the
roots by (apiVersion, kind). A scalar keeps its zero value (`keep_zero`) when its Go field is
a pointer or lacks `omitempty`, as Go's encoder writes it then. apimachinery's messages are not
generated: time, IntOrString, Quantity and RawExtension are decoder kinds, ObjectMeta and
LabelSelector the hand-written tables. A field of any other type stops the script, naming it,
rather than being guessed at.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ENCODING = Path(__file__).resolve().parent.parent / "engine/cluster/apiserver/encoding"
PYTHON_PACKAGE = "engine.cluster.apiserver.encoding"
LINE_LENGTH = 100


@dataclass(frozen=True)
class Package:
    """One API group version: where its sources are and which module its tables go to."""

    directory: str
    api_version: str
    module: str
    roots: tuple[str, ...]


PACKAGES = (
    Package(
        "core/v1", "v1", "protobuf_tables_core", ("Pod", "PodTemplate", "ReplicationController")
    ),
    Package("batch/v1", "batch/v1", "protobuf_tables_batch", ("Job", "CronJob")),
    Package("apps/v1", "apps/v1", "protobuf_tables_apps", ("Deployment", "ReplicaSet")),
)

META = ".k8s.io.apimachinery.pkg.apis.meta.v1."
QUANTITY = ".k8s.io.apimachinery.pkg.api.resource.Quantity"
SCALAR_KINDS = {"string": "string", "int32": "int", "int64": "int", "bool": "bool"}
EXTERNAL_KINDS = {
    META + "Time": "time",
    META + "MicroTime": "micro_time",
    ".k8s.io.apimachinery.pkg.util.intstr.IntOrString": "int_or_string",
    QUANTITY: "quantity",
    ".k8s.io.apimachinery.pkg.runtime.RawExtension": "raw_json",
}
MAP_KINDS = {"string": "string_map", "bytes": "bytes_map", QUANTITY: "quantity_map"}
# Hand-written tables of apimachinery messages: module and name.
EXTERNAL_TABLES = {
    META + "ObjectMeta": ("protobuf_tables", "OBJECT_META"),
    META + "LabelSelector": ("protobuf_tables_auth", "LABEL_SELECTOR"),
}
HELPERS = ("Field", "Table", "boolean", "integer", "message", "of_kind", "string", "strings")

PROTO_PACKAGE = re.compile(r"^package ([\w.]+);$")
PROTO_MESSAGE = re.compile(r"^message (\w+) \{$")
PROTO_FIELD = re.compile(r"^(optional|repeated) (\S+) (\w+) = (\d+);$")
PROTO_MAP = re.compile(r"^map<string, (\S+)> (\w+) = (\d+);$")
GO_STRUCT = re.compile(r"^type (\w+) struct \{$")
GO_FIELD = re.compile(r"^(?:\w+\s+)?([\w.*\[\]]+)\s+`([^`]*)`(?:\s*//.*)?$")
GO_TAG = re.compile(r'(\w+):"([^"]*)"')


class GenerationError(Exception):
    """The sources hold something this script cannot turn into a table."""


@dataclass(frozen=True)
class ProtoField:
    """A field of generated.proto: `type` is a scalar or a fully qualified message name."""

    name: str
    number: int
    type: str
    repeated: bool = False
    map_value: str | None = None


@dataclass(frozen=True)
class GoField:
    """What a Go struct field's tags and type say about its JSON."""

    json_name: str
    proto_name: str
    omitempty: bool
    pointer: bool
    inline: bool


def git_show(api: Path, ref: str, path: str) -> str:
    """A file of the kubernetes/api repository at REF."""
    return subprocess.run(
        ["git", "-C", str(api), "show", f"{ref}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def commit_of(api: Path, ref: str) -> str:
    """The commit REF names, for the generated modules' docstrings."""
    return subprocess.run(
        ["git", "-C", str(api), "rev-parse", f"{ref}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def parse_proto(text: str) -> tuple[str, dict[str, list[ProtoField]]]:
    """The package of a generated.proto and its messages by fully qualified name
    (`.k8s.io.api.core.v1.Pod`)."""
    package, current = "", ""
    messages: dict[str, list[ProtoField]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if match := PROTO_PACKAGE.match(line):
            package = match[1]
        elif match := PROTO_MESSAGE.match(line):
            current = f".{package}.{match[1]}"
            messages[current] = []
        elif line == "}" and current:
            current = ""
        elif current and (match := PROTO_FIELD.match(line)):
            kind, type_, name, field_number = match.groups()
            messages[current].append(
                ProtoField(name, int(field_number), qualified(type_, package), kind == "repeated")
            )
        elif current and (match := PROTO_MAP.match(line)):
            value, name, field_number = match.groups()
            messages[current].append(
                ProtoField(name, int(field_number), "map", map_value=qualified(value, package))
            )
        elif current:
            raise GenerationError(f"generated.proto line {number}: cannot read {line!r}")
    return package, messages


def qualified(type_: str, package: str) -> str:
    """A field's type with its package: scalars stay bare, other messages are fully named."""
    if type_ in SCALAR_KINDS or type_ in MAP_KINDS or type_.startswith("."):
        return type_
    return f".{package}.{type_}"


def parse_types(text: str) -> dict[str, dict[int, GoField]]:
    """Every struct of a types.go with protobuf-tagged fields, by name, fields by number."""
    structs: dict[str, dict[int, GoField]] = {}
    current: dict[int, GoField] | None = None
    block_comment = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if block_comment or line.startswith("/*"):
            block_comment = not line.endswith("*/")
        elif match := GO_STRUCT.match(raw):
            current = structs.setdefault(match[1], {})
        elif raw == "}":
            current = None
        elif current is None or not line or line.startswith("//"):
            continue
        elif match := GO_FIELD.match(line):
            go_type, tags = match[1], dict(GO_TAG.findall(match[2]))
            if "protobuf" in tags:
                proto = tags["protobuf"].split(",")
                json_name, *options = tags.get("json", "").split(",")
                names = [option[5:] for option in proto if option.startswith("name=")]
                current[int(proto[1])] = GoField(
                    json_name,
                    names[0] if names else "",
                    "omitempty" in options,
                    go_type.startswith("*"),
                    "inline" in options,
                )
        else:
            raise GenerationError(f"types.go line {number}: cannot read {line!r}")
    return structs


def split(message: str) -> tuple[str, str]:
    """`.k8s.io.api.core.v1.Pod` -> (`k8s.io.api.core.v1`, `Pod`)."""
    package, name = message[1:].rsplit(".", 1)
    return package, name


def constant(message: str) -> str:
    """`.k8s.io.api.core.v1.HTTPGetAction` -> `HTTP_GET_ACTION`."""
    name = split(message)[1]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).upper()


@dataclass
class Generator:
    """The messages of every package and the Go structs behind them, walked from the roots."""

    proto: Mapping[str, list[ProtoField]]
    go: Mapping[str, Mapping[str, Mapping[int, GoField]]]  # proto package -> struct -> fields
    modules: Mapping[str, str]  # proto package -> Python module

    def order(self, roots: list[str]) -> list[str]:
        """Every message the roots reach, each after the messages its fields hold."""
        done: list[str] = []
        visiting: set[str] = set()

        def visit(message: str) -> None:
            if message in done:
                return
            if message in visiting:
                raise GenerationError(f"{message} contains itself; a table cannot")
            visiting.add(message)
            for field in self.proto[message]:
                if field.type in self.proto:
                    visit(field.type)
            visiting.discard(message)
            done.append(message)

        for root in roots:
            visit(root)
        return done

    def go_fields(self, message: str) -> Mapping[int, GoField]:
        """The Go struct fields behind a message, by protobuf number."""
        package, name = split(message)
        try:
            return self.go[package][name]
        except KeyError:
            raise GenerationError(f"no Go struct {name} in the types.go of {package}") from None

    def field(self, message: str, proto: ProtoField) -> tuple[str, set[tuple[str, str]]]:
        """The Python expression of one field and the (module, name) imports it needs."""
        go = self.go_fields(message).get(proto.number)
        where = f"{message}.{proto.name} ({proto.type})"
        if go is None or go.json_name == "-" or go.proto_name not in ("", proto.name):
            raise GenerationError(f"{where}: no Go field tagged protobuf number {proto.number}")
        keep = go.pointer or not go.omitempty
        needs: set[tuple[str, str]] = set()
        if go.inline:
            table = self.table_of(proto.type, needs, where)
            return f'message("", {table}, inline=True)', needs
        name = f'"{go.json_name}"'
        if proto.map_value is not None:
            if proto.map_value not in MAP_KINDS:
                raise GenerationError(f"{where}: no decoder kind for a map of {proto.map_value}")
            return f'of_kind({name}, "{MAP_KINDS[proto.map_value]}")', needs
        if proto.type in SCALAR_KINDS or proto.type in EXTERNAL_KINDS:
            kind = SCALAR_KINDS.get(proto.type) or EXTERNAL_KINDS[proto.type]
            return scalar(name, kind, repeated=proto.repeated, keep_zero=keep), needs
        table = self.table_of(proto.type, needs, where)
        repeated = ", repeated=True" if proto.repeated else ""
        return f"message({name}, {table}{repeated})", needs

    def table_of(self, message: str, needs: set[tuple[str, str]], where: str) -> str:
        """The Python name of a message's table, its import added to `needs`."""
        if message in EXTERNAL_TABLES:
            needs.add(EXTERNAL_TABLES[message])
            return EXTERNAL_TABLES[message][1]
        if message not in self.proto:
            raise GenerationError(f"{where}: no table and no decoder kind for {message}")
        needs.add((self.modules[split(message)[0]], constant(message)))
        return constant(message)


def scalar(name: str, kind: str, *, repeated: bool, keep_zero: bool) -> str:
    """A scalar or decoder-kind field through the shortest helper that states it."""
    if repeated:
        return f"strings({name})" if kind == "string" else f'Field({name}, "{kind}", repeated=True)'
    keep = ", keep_zero=True" if keep_zero else ""
    helper = {"string": "string", "int": "integer", "bool": "boolean"}.get(kind)
    if helper:
        return f"{helper}({name}{keep})"
    return f'of_kind({name}, "{kind}"{keep})'


def entry(key: str, expression: str) -> Iterator[str]:
    """`key: expression,` on one line, or with the call's arguments one to a line as ruff
    formats it (no generated argument holds a comma)."""
    line = f"    {key}: {expression},"
    if len(line) <= LINE_LENGTH:
        yield line
        return
    call, arguments = expression.split("(", 1)
    yield f"    {key}: {call}("
    yield from (f"        {argument.strip()}," for argument in arguments[:-1].split(","))
    yield "    ),"


def render(
    package: Package,
    proto_package: str,
    generator: Generator,
    messages: list[str],
    *,
    ref: str,
    commit: str,
) -> str:
    """One generated module: docstring, imports, tables, KINDS."""
    body: list[str] = []
    imports: set[tuple[str, str]] = {("protobuf_tables", "Table")}
    for message in messages:
        body += ["", f"# {package.directory} {split(message)[1]}"]
        body.append(f"{constant(message)}: Table = {{")
        for proto in generator.proto[message]:
            expression, needs = generator.field(message, proto)
            imports |= {need for need in needs if need[0] != package.module}
            imports |= {("protobuf_tables", name) for name in HELPERS if f"{name}(" in expression}
            body.extend(entry(str(proto.number), expression))
        body.append("}")
    body += ["", "KINDS: Mapping[tuple[str, str], Table] = {"]
    body += [
        f'    ("{package.api_version}", "{root}"): {constant(f".{proto_package}.{root}")},'
        for root in package.roots
    ]
    body.append("}")
    lines = [
        *heading(package),
        "",
        "GENERATED by tools/protobuf_tables_from_proto.py; do not edit. Read from kubernetes/api",
        f"{ref} (commit {commit}):",
        f"{package.directory}/generated.proto for the field numbers and wire shapes, and",
        f"{package.directory}/types.go for the JSON names, omitempty, pointers and inline",
        "structs. Regenerate with",
        "",
        f"    python tools/protobuf_tables_from_proto.py --api PATH/TO/kubernetes/api --ref {ref}",
        "",
        "`keep_zero` marks a pointer or a field without omitempty, whose zero value Go's JSON",
        'writes; `inline=True` a struct embedded with `json:",inline"`, whose fields join its',
        "parent's.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping",
        "",
        *import_lines(imports),
        *body,
    ]
    return "\n".join(lines) + "\n"


def heading(package: Package) -> list[str]:
    """The docstring's opening sentence: `... and every message`, then `beneath them.`; when
    `every message` has no room on the line, it goes down with `beneath them.` (never split)."""
    roots = ", ".join(package.roots)
    opening = f'"""Protobuf field tables of k8s.io/api {package.directory}: {roots} and'
    *lines, last = textwrap.wrap(opening, LINE_LENGTH)
    if len(f"{last} every message") <= LINE_LENGTH:
        return [*lines, f"{last} every message", "beneath them."]
    return [*lines, last, "every message beneath them."]


def import_lines(imports: set[tuple[str, str]]) -> Iterator[str]:
    """Sorted as ruff's isort sorts them: constants, then classes, then functions."""
    for module in sorted({module for module, _ in imports}):
        names = sorted(
            (name for owner, name in imports if owner == module),
            key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name),
        )
        yield f"from {PYTHON_PACKAGE}.{module} import ("
        yield from (f"    {name}," for name in names)
        yield ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--api", type=Path, required=True, help="a git clone of kubernetes/api")
    parser.add_argument("--ref", default="v0.32.4", help="tag or commit (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=ENCODING, help="where the modules go")
    args = parser.parse_args()
    proto: dict[str, list[ProtoField]] = {}
    go: dict[str, dict[str, dict[int, GoField]]] = {}
    packages: dict[str, Package] = {}  # proto package -> Package
    for package in PACKAGES:
        sources = f"{package.directory}/generated.proto", f"{package.directory}/types.go"
        proto_package, messages = parse_proto(git_show(args.api, args.ref, sources[0]))
        proto |= messages
        go[proto_package] = parse_types(git_show(args.api, args.ref, sources[1]))
        packages[proto_package] = package
    generator = Generator(proto, go, {key: value.module for key, value in packages.items()})
    # Walked from every root at once: a core message only batch reaches is still core's.
    everything = generator.order(
        [f".{key}.{root}" for key, package in packages.items() for root in package.roots]
    )
    commit = commit_of(args.api, args.ref)
    for proto_package, package in packages.items():
        own = [message for message in everything if split(message)[0] == proto_package]
        path = args.out / f"{package.module}.py"
        path.write_text(render(package, proto_package, generator, own, ref=args.ref, commit=commit))
        print(f"wrote {path}: {len(own)} tables")


if __name__ == "__main__":
    main()
