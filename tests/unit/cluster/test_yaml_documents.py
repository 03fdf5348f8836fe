"""The YAML decoder's alias limit: go-yaml's counts, computed without building the document."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.encoding.yaml_documents import (
    YamlLimitError,
    allowed_alias_ratio,
    load_yaml,
)


def laughs(levels: int, width: int = 9) -> str:
    """The "billion laughs" document: each level lists the one before `width` times."""
    lines = ['l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines)


@pytest.mark.parametrize("levels", [5, 8, 10, 30])
def test_nested_aliases_that_expand_too_far_are_refused_with_go_yamls_words(levels: int) -> None:
    with pytest.raises(YamlLimitError, match=r"^yaml: document contains excessive aliasing$"):
        load_yaml(laughs(levels))


def test_a_few_aliases_are_decoded_as_ever() -> None:
    text = laughs(2)  # 1 + 9 + 81 strings: what a kustomize-style anchor file looks like
    assert load_yaml(text) == yaml.safe_load(text)
    assert len(load_yaml(text)["l2"]) == 9


def test_many_aliases_to_small_nodes_in_a_large_document_pass_as_in_go_yaml() -> None:
    # 300 aliases of a scalar among 3,000 plain nodes: 10% aliased, far below 99%.
    plain = {f"k{i}": list(range(i, i + 9)) for i in range(300)}
    text = yaml.safe_dump(plain) + "anchor: &v shared\n" + "".join(
        f"a{i}: *v\n" for i in range(300))
    assert load_yaml(text)["a299"] == "shared"


def test_an_anchor_inside_itself_is_refused() -> None:
    with pytest.raises(YamlLimitError, match="contains itself"):
        load_yaml("&a [1, *a]")


def test_an_empty_document_is_none_and_two_documents_are_an_error() -> None:
    assert load_yaml("") is None
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: 1\n---\nb: 2\n")


def test_the_ratio_falls_from_99_to_10_percent_between_400_thousand_and_4_million() -> None:
    assert allowed_alias_ratio(1000) == 0.99
    assert allowed_alias_ratio(400_000) == 0.99
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert allowed_alias_ratio(4_000_000) == 0.10
    assert allowed_alias_ratio(10**9) == 0.10


_SCALARS = st.one_of(st.integers(), st.booleans(), st.none(),
                     st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]),
                             max_size=8))
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text("abcxyz", min_size=1, max_size=4), inner, max_size=4),
    max_leaves=30,
)


@given(_DOCUMENTS)
def test_a_document_without_aliases_decodes_as_pyyaml_decodes_it(document: Any) -> None:
    text = yaml.safe_dump(document)
    assert load_yaml(text) == yaml.safe_load(text)


@given(st.integers(min_value=1, max_value=6), st.integers(min_value=2, max_value=6))
def test_whatever_it_accepts_is_what_pyyaml_builds(levels: int, width: int) -> None:
    text = laughs(levels, width)
    try:
        loaded = load_yaml(text)
    except YamlLimitError:
        assert width**levels > 100  # refused only once aliases stand for many nodes
        return
    assert loaded == yaml.safe_load(text)
