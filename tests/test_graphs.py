"""The named-graph layout: one set of graphs per project, the system graph apart."""

from __future__ import annotations

import pytest

from kg.errors import ValidationError
from kg.graphs import SYSTEM_KNOWLEDGE, long_term, project_graphs, project_of_graph, sessions


def test_project_graphs_are_distinct_and_recognised() -> None:
    graphs = project_graphs("alpha")
    assert len(set(graphs)) == 4 and long_term("alpha") in graphs and sessions("alpha") in graphs
    assert all(project_of_graph(g) == "alpha" for g in graphs)
    assert project_of_graph(SYSTEM_KNOWLEDGE) is None
    assert set(graphs).isdisjoint(project_graphs("beta"))


@pytest.mark.parametrize("bad", ["", "a b", "x/../y", "é", "a" * 129, None, 7])
def test_invalid_project_ids_are_refused(bad: object) -> None:
    with pytest.raises(ValidationError, match="project id"):
        long_term(bad)  # type: ignore[arg-type]
