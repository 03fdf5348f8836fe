"""Write the observation, action and CEL variable tables of docs/machine-language.md.

The tables are generated from `engine/definition/vocabulary.py`, the one place
the vocabulary is declared, so the reference cannot drift from what the engine
accepts. `--check` exits 1 when the document is out of date (the unit tests
run the same comparison).

    python tools/gen_vocabulary_docs.py [--check] [DOC]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.definition.vocabulary import (
    ACTIONS,
    COMMON_VARIABLES,
    OBSERVATIONS,
    REPLICA_VARIABLES,
    STATUS_VARIABLES,
    STRUCTS,
    SUMMARY_STRUCT,
    TEMPLATE_VARIABLES,
    Variable,
)

BEGIN = "<!-- BEGIN GENERATED: vocabulary (python tools/gen_vocabulary_docs.py) -->"
END = "<!-- END GENERATED: vocabulary -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "machine-language.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def observation_table() -> list[str]:
    lines = ["| observation | level | exclusive group | holds when |", "| --- | --- | --- | --- |"]
    for o in OBSERVATIONS:
        lines.append(f"| `{o.name}` | {o.level} | {o.group or ''} | {_cell(o.meaning)} |")
    return lines


def action_table() -> list[str]:
    lines = ["| action | levels | arguments | does |", "| --- | --- | --- | --- |"]
    for a in ACTIONS:
        args = "<br>".join(
            f"`{arg.name}`{' (required)' if arg.required else ''}, {arg.kind}"
            + (f" ({' / '.join(arg.choices)})" if arg.choices else "")
            + f": {_cell(arg.meaning)}"
            for arg in a.args
        )
        lines.append(f"| `{a.name}` | {', '.join(a.levels)} | {args or '-'} | {_cell(a.meaning)} |")
    return lines


def variable_table(title: str, variables: tuple[Variable, ...]) -> list[str]:
    lines = [f"| {title} | CEL type | value |", "| --- | --- | --- |"]
    for v in variables:
        lines.append(f"| `{v.name}` | `{v.cel_type}` | {_cell(v.meaning)} |")
    return lines


def struct_tables() -> list[str]:
    """One table per engine struct: the fields an expression may read."""
    lines: list[str] = []
    for struct in STRUCTS:
        lines += [f"`{struct.name}` ({struct.label}):", "",
                  "| field | CEL type | value |", "| --- | --- | --- |"]
        lines += [f"| `{f.name}` | `{f.cel_type}` | {_cell(f.meaning)} |" for f in struct.fields]
        if struct is SUMMARY_STRUCT:
            lines.append("| one per phase word | `int` | Replicas of the type in a state of that "
                         "phase, the phase in lowerCamelCase (`running`, `succeededAsChief`). |")
        lines.append("")
    return lines


def generated() -> str:
    """The Markdown between the markers."""
    parts = [
        "#### Observations",
        "",
        *observation_table(),
        "",
        "#### Actions",
        "",
        *action_table(),
        "",
        "#### CEL variables",
        "",
        "Everywhere (job and replica guards, messages, action arguments, `requeueAfter`):",
        "",
        *variable_table("variable", COMMON_VARIABLES),
        "",
        "At replica level, also:",
        "",
        *variable_table("variable", REPLICA_VARIABLES),
        "",
        "In `pod.env`, `pod.labels` and `pod.annotations` (replica level), also:",
        "",
        *variable_table("variable", TEMPLATE_VARIABLES),
        "",
        "In a Native-layout machine's `status` fields (job level), also:",
        "",
        *variable_table("variable", STATUS_VARIABLES),
        "",
        "#### Typed fields",
        "",
        "Expressions are type-checked against these structs field by field: reading a field",
        "a struct does not have is an error at the field, naming the struct's fields.",
        "`RunPolicy` is the run policy's schema (the kind's `runPolicy`), and `Job` the",
        "kind's schema where it is known (`map(string, dyn)` otherwise).",
        "",
        *struct_tables(),
    ]
    return "\n".join(parts)


def updated(text: str) -> str:
    """`text` with the generated block replaced; raises ValueError without the markers."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document needs the markers {BEGIN!r} and {END!r}")
    return text[: start + len(BEGIN)] + "\n" + generated() + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("doc", nargs="?", type=Path, default=DOC)
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale")
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    fresh = updated(text)
    if args.check:
        if fresh != text:
            print(f"{args.doc}: stale vocabulary tables; run python tools/gen_vocabulary_docs.py")
            return 1
        return 0
    if fresh != text:
        args.doc.write_text(fresh, encoding="utf-8")
        print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
