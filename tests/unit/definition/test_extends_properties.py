"""Property tests of `extends.resolve` on generated documents: an empty extension is its base;
mappings merge by the documented key rules, each node keeping the file it came from; and
transitions come out with exactly the names expected, in the expected order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.definition.extends import DIRECTIVES, RawDefinition, resolve
from engine.definition.positions import Path, object_index

FILES = {"base.yaml": "base", "child.yaml": "derived"}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["x", "y"]))
# Few keys, so that the two sides often share some.
keys = st.sampled_from(["a", "b", "c", "d"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
mappings = st.dictionaries(keys, values, max_size=4)


def document(name: str, spec: dict[str, Any], extends: str | None = None) -> RawDefinition:
    data = {
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "StateMachine",
        "metadata": {"name": name},
        "spec": spec if extends is None else {"extends": extends, **spec},
    }
    file = "base.yaml" if name == "base" else "child.yaml"
    return RawDefinition(data, object_index(data, file), file)


def merge(base: dict[str, Any], derived: dict[str, Any]) -> RawDefinition:
    """`derived` (extending `base`) resolved, with no problem found on the way."""
    resolved, problems = resolve(document("child", derived, "base"),
                                 {"base": document("base", base)}.get)
    assert problems == []
    assert resolved is not None and resolved.bases == ("base",)
    return resolved.raw


# --- (a) nothing but `extends` ----------------------------------------------------------

transition = st.fixed_dictionaries(
    {"name": st.sampled_from(["t1", "t2", "t3"]), "from": st.just("A"), "to": st.just("B")},
    optional={"when": st.just("true"), "reason": st.just("R")},
)
machine = st.fixed_dictionaries(
    {"initial": st.just("A")},
    optional={"transitions": st.lists(transition, max_size=4), "x": values},
)
specs = st.fixed_dictionaries(
    {"job": machine, "replica": machine},
    optional={"abstract": st.booleans(), "pod": mappings, "governs": mappings, "d": values},
)


@settings(max_examples=150, deadline=None)
@given(spec=specs)
def test_an_extension_with_nothing_of_its_own_is_its_base(spec: dict[str, Any]) -> None:
    merged = merge(spec, {})
    assert merged.data["spec"] == {k: v for k, v in spec.items() if k != "abstract"}
    assert merged.data["metadata"] == {"name": "child"}
    origins = {FILES[info.value.file] for path, info in merged.positions.nodes.items()
               if path[:1] == ("spec",) and len(path) > 1}
    assert origins <= {"base"}


# --- (b) mappings: the extending side wins, null deletes, base-only keys stay -------------


def expected(base: Any, derived: Any) -> Any:
    """The documented rules, written directly."""
    if not (isinstance(base, dict) and isinstance(derived, dict)):
        return derived
    out = {k: v for k, v in base.items() if k not in derived}
    for key, value in derived.items():
        if key not in base:
            out[key] = value  # a new key keeps even a null (`Paused:`, an empty state)
        elif value is not None:
            out[key] = expected(base[key], value)
    return out


def nodes(value: Any, path: Path, origin: str) -> dict[Path, str]:
    found = {path: origin}
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        found |= nodes(item, (*path, key), origin)
    return found


def expected_origins(base: Any, derived: Any, path: Path) -> dict[Path, str]:
    """Which side every node of the merged value was written in."""
    if not (isinstance(base, dict) and isinstance(derived, dict)):
        return nodes(derived, path, "derived")
    found = {path: "derived"}
    for key, value in base.items():
        if key not in derived:
            found |= nodes(value, (*path, key), "base")
    for key, value in derived.items():
        if key not in base:
            found |= nodes(value, (*path, key), "derived")
        elif value is not None:
            found |= expected_origins(base[key], value, (*path, key))
    return found


@settings(max_examples=300, deadline=None)
@given(base=mappings, derived=mappings)
def test_mappings_merge_key_by_key(base: dict[str, Any], derived: dict[str, Any]) -> None:
    merged = merge(base, derived)
    assert merged.data["spec"] == expected(base, derived)
    written = {path: FILES[info.value.file] for path, info in merged.positions.nodes.items()
               if path[:1] == ("spec",)}
    assert written == expected_origins(base, derived, ("spec",))


@settings(max_examples=100, deadline=None)
@given(base=mappings, derived=mappings)
def test_a_null_removes_a_base_key_and_base_only_keys_always_stay(
    base: dict[str, Any], derived: dict[str, Any]
) -> None:
    merged = merge(base, derived).data["spec"]
    assert all(key not in merged for key, value in derived.items()
               if value is None and key in base)
    assert all(merged[key] is None for key, value in derived.items()
               if value is None and key not in base)
    assert all(merged[key] == value for key, value in base.items() if key not in derived)
    assert all(merged[key] == value for key, value in derived.items()
               if value is not None and not isinstance(value, dict))


# --- (c) transitions matched by name ------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A base's transitions and what the extending machine writes about them."""

    level: str
    base: tuple[str, ...]
    written: tuple[dict[str, Any], ...]  # in the extending machine's order
    order: tuple[str, ...]  # the `description` of each merged transition, in order
    overridden: frozenset[str]


@st.composite
def plans(draw: Any, *, moves: bool = False) -> Plan:
    base = draw(st.lists(st.sampled_from([f"t{i}" for i in range(8)]), unique=True,
                         max_size=6))
    fates = ["keep", "override", "remove", *(["move"] if moves else [])]
    fate = {name: draw(st.sampled_from(fates)) for name in base}
    if not any(f in ("keep", "override") for f in fate.values()):
        fate = {name: "keep" if f == "move" else f for name, f in fate.items()}
    kept = [name for name in base if fate[name] in ("keep", "override")]
    unanchored = [f"u{i}" for i in range(draw(st.integers(0, 2)))]
    # Anchored transitions (new or moved) go into gaps of the kept list, gap g being just
    # before kept[g]. One gap is reached by one anchor only (all `before: kept[g]` or all
    # `after: kept[g - 1]`), so the order is defined: those sharing a gap keep their
    # written order. The last gap stays free when some go last without an anchor.
    gaps = list(range(len(kept) + (0 if unanchored else 1))) if kept else []
    anchored = [f"n{i}" for i in range(draw(st.integers(0, 3)))] if gaps else []
    anchored += [name for name in base if fate[name] == "move"]
    forms: dict[int, str] = {}
    gap_of: dict[str, int] = {}
    inserts: list[dict[str, Any]] = []
    for name in anchored:
        gap = gap_of[name] = draw(st.sampled_from(gaps))
        if gap not in forms:
            before = gap < len(kept) and (gap == 0 or draw(st.booleans()))
            forms[gap] = "before" if before else "after"
        anchor = ({"before": kept[gap]} if forms[gap] == "before"
                  else {"after": kept[gap - 1]})
        fields = {} if name in fate else {"from": "A", "to": "N", "description": name}
        inserts.append({"name": name, **fields, **anchor})
    named_last = [draw(st.booleans()) for _ in unanchored]
    inserts += [{**({"name": u} if named else {}), "from": "A", "to": "U", "description": u}
                for u, named in zip(unanchored, named_last, strict=True)]
    changes = [{"name": n, "when": f"changed {n}"} for n in base if fate[n] == "override"]
    changes += [{"name": n, "remove": True} for n in base if fate[n] == "remove"]
    written = draw(st.permutations([*inserts, *changes]))
    in_order = [t["name"] for t in written if t.get("name") in gap_of]
    order = [name for gap in range(len(kept) + 1)
             for name in [n for n in in_order if gap_of[n] == gap] + kept[gap:gap + 1]]
    order += [u for t in written if (u := t.get("description")) in unanchored]
    return Plan(draw(st.sampled_from(["job", "replica"])), tuple(base), tuple(written),
                tuple(order), frozenset(n for n in base if fate[n] == "override"))


def with_transitions(level: str, transitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {level: {"initial": "A", "transitions": transitions}}


def check_merged(plan: Plan) -> None:
    base = [{"name": n, "from": "A", "to": "B", "description": n} for n in plan.base]
    merged = merge(with_transitions(plan.level, base),
                   with_transitions(plan.level, list(plan.written)))
    transitions = merged.data["spec"][plan.level]["transitions"]
    assert tuple(t["description"] for t in transitions) == plan.order
    for t in transitions:
        assert set(t).isdisjoint(DIRECTIVES)
        if t["description"] in plan.base:
            assert t == {"name": t["description"], "from": "A", "to": "B",
                         "description": t["description"],
                         **({"when": f"changed {t['name']}"} if t["name"] in plan.overridden
                            else {})}
    other = "replica" if plan.level == "job" else "job"
    assert other not in merged.data["spec"]


@settings(max_examples=300, deadline=None)
@given(plan=plans())
def test_transitions_merge_by_name_into_the_expected_order(plan: Plan) -> None:
    check_merged(plan)


@settings(max_examples=300, deadline=None)
@given(plan=plans(moves=True))
def test_transitions_moved_by_name_land_in_the_expected_order(plan: Plan) -> None:
    check_merged(plan)
