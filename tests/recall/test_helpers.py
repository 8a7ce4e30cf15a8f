"""Every query helper on a small real store, with the rows it must return."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyoxigraph import Literal, NamedNode, Quad, QuerySolutions

from kg.graphs import long_term
from kg.longterm.triples import datetime_literal
from kg.memory import Memory
from kg.namespaces import JIDO
from kg.recall.analyzer import stems
from kg.resources import query_text
from tests.recall.conftest import Recall


def link(recall: Recall, a: Memory, relation: str, b: Memory | NamedNode) -> None:
    target = b if isinstance(b, NamedNode) else b.iri
    recall.store.add([Quad(a.iri, JIDO[relation], target, long_term(a.project))])


@pytest.fixture
def project(recall: Recall) -> dict[str, Memory]:
    r = recall.memory

    def add(key: str, content: str, type: str = "fact", session: str = "s1") -> None:
        made[key] = r.remember(content, project="p1", session=session, type=type).memory
        recall.clock.tick()

    made: dict[str, Memory] = {}
    add("fact_db", "The database is PostgreSQL 16")
    add("fact_db2", "PostgreSQL backups run nightly", session="s2")
    add("fact_other", "The frontend uses Svelte", session="s2")
    add("hyp_db", "PostgreSQL might need more memory", type="hypothesis")
    add("dec1", "Use PostgreSQL over MySQL", type="architectural_decision")
    add("alt_mysql", "MySQL", type="alternative")
    add("alt_pg", "PostgreSQL", type="alternative")
    add("dec2", "Use pytest for tests", type="decision", session="s3")
    add("conv", "Names are snake_case", type="coding_standard", session="s4")
    add("conv2", "Every PR needs one review", type="process_convention")
    add("err", "Deadlock in the job queue", type="bug", session="s3")
    add("err_other", "Timeout in the web layer", type="error", session="s3")
    add("lesson", "Take row locks in id order", type="lesson_learned", session="s3")
    add("lesson2", "Always set statement timeouts", type="lesson_learned", session="s3")
    recall.memory.remember("PostgreSQL in project two", project="p2", session="s1")
    link(recall, made["dec1"], "hasAlternative", made["alt_mysql"])
    link(recall, made["dec1"], "hasAlternative", made["alt_pg"])
    link(recall, made["dec1"], "selectedAlternative", made["alt_pg"])
    queue = NamedNode("https://jido.ai/data/module/jobs.queue")
    recall.store.add([Quad(queue, JIDO["moduleName"], Literal("jobs.queue"), long_term("p1"))])
    link(recall, made["err"], "affectsModule", queue)
    link(recall, made["err"], "producedLesson", made["lesson"])
    recall.store.add([Quad(made["lesson2"].iri, JIDO["relatedError"], made["err"].iri,
                           long_term("p1"))])
    link(recall, made["fact_db2"], "refines", made["fact_db"])
    link(recall, made["conv"], "relatedTo", made["fact_db2"])
    return made


def ids(memories: list[Memory]) -> list[str]:
    return [m.id for m in memories]


def test_facts_about(recall: Recall, project: dict[str, Memory]) -> None:
    found = recall.helpers.facts_about("p1", "postgresql")
    assert ids(found) == [project["fact_db2"].id, project["fact_db"].id]  # newest first
    assert ids(recall.helpers.facts_about("p1", "postgresql backups")) == [project["fact_db2"].id]
    assert recall.helpers.facts_about("p1", "svelte")[0].content == "The frontend uses Svelte"


def test_facts_about_hides_superseded_unless_asked(recall: Recall,
                                                   project: dict[str, Memory]) -> None:
    before = recall.clock.tick()
    recall.clock.tick()
    recall.memory.forget(project["fact_db"].id, project="p1", reason="upgraded")
    assert ids(recall.helpers.facts_about("p1", "postgresql")) == [project["fact_db2"].id]
    assert len(recall.helpers.facts_about("p1", "postgresql", include_superseded=True)) == 2
    assert len(recall.helpers.facts_about("p1", "postgresql", as_of=before)) == 2
    early = project["fact_db2"].recorded_at - timedelta(seconds=1)
    assert ids(recall.helpers.facts_about("p1", "postgresql", as_of=early)) == [
        project["fact_db"].id]


def test_facts_about_query_checks_kind_retirement_and_validity(recall: Recall) -> None:
    """queries/facts_about.rq alone: a fact visible at the moment passes, nothing else does."""
    r, now = recall.memory, recall.clock()
    later, earlier = now + timedelta(days=1), now - timedelta(days=1)
    made = {
        "current": r.remember("Redis is the cache", project="p1", session="s1"),
        "hypothesis": r.remember("Redis may be slow", project="p1", session="s1",
                                 type="hypothesis"),
        "not yet valid": r.remember("Valkey replaces Redis", project="p1", session="s1",
                                    valid_from=later),
        "expired": r.remember("Memcached was the cache", project="p1", session="s1",
                              valid_until=earlier),
        "retired": r.remember("Redis runs on port 6380", project="p1", session="s1"),
    }
    recall.clock.tick()
    r.forget(made["retired"].memory.id, project="p1", reason="moved")
    at = recall.clock.tick()

    def confirmed(key: str, superseded: bool) -> bool:
        result = recall.store.query(
            query_text("facts_about"), default_graph=[long_term("p1")],
            substitutions={"memory": made[key].memory.iri, "at": datetime_literal(at),
                           "includeSuperseded": Literal(superseded)})
        assert isinstance(result, QuerySolutions)
        return any(True for _ in result)

    assert [k for k in made if confirmed(k, False)] == ["current"]
    assert [k for k in made if confirmed(k, True)] == ["current", "retired"]


@pytest.mark.parametrize("topic", ["postgresql", "postgresql backups", "svelte", "mysql"])
@pytest.mark.parametrize("superseded", [False, True])
def test_facts_about_matches_the_graph(recall: Recall, project: dict[str, Memory], topic: str,
                                       superseded: bool) -> None:
    """The helper answers from the index; the graph query must agree on every memory."""
    recall.memory.forget(project["fact_db"].id, project="p1", reason="upgraded")
    at = recall.clock.tick()
    words = set(stems(topic))

    def visible_fact(memory: Memory) -> bool:
        result = recall.store.query(
            query_text("facts_about"), default_graph=[long_term("p1")],
            substitutions={"memory": memory.iri, "at": datetime_literal(at),
                           "includeSuperseded": Literal(superseded)})
        assert isinstance(result, QuerySolutions)
        return any(True for _ in result)

    expected = sorted((m for m in recall.memory.iter_memories("p1")
                       if words <= set(stems(m.content)) and visible_fact(m)),
                      key=lambda m: m.timestamp, reverse=True)
    got = recall.helpers.facts_about("p1", topic, include_superseded=superseded, as_of=at)
    assert ids(got) == ids(expected)


def test_decisions_with_alternatives_stops_at_the_limit_oldest_first(recall: Recall) -> None:
    """Only decisions with alternatives count; the limit keeps the oldest of them."""
    r = recall.memory
    alternative = r.remember("Option B", project="p1", session="s1", type="alternative").memory
    decisions = []
    for i in range(6):
        recall.clock.tick()
        decisions.append(r.remember(f"Decision number {i}", project="p1", session="s1",
                                    type="decision").memory)
    for decision in decisions[1:]:  # the oldest decision considered no alternative
        link(recall, decision, "hasAlternative", alternative)
    link(recall, decisions[3], "selectedAlternative", alternative)
    rows = recall.helpers.decisions_with_alternatives("p1", limit=2)
    assert [row.decision.id for row in rows] == [decisions[1].id, decisions[2].id]
    rows = recall.helpers.decisions_with_alternatives("p1", limit=3)
    assert [row.decision.id for row in rows] == [d.id for d in decisions[1:4]]
    assert rows[2].selected == alternative and rows[0].selected is None


def test_decisions_in_order(recall: Recall, project: dict[str, Memory]) -> None:
    assert ids(recall.helpers.decisions_in_order("p1")) == [project["dec1"].id,
                                                            project["dec2"].id]
    recall.memory.forget(project["dec1"].id, project="p1", reason="reverted",
                         replacement_id=project["dec2"].id)
    assert ids(recall.helpers.decisions_in_order("p1")) == [project["dec2"].id]
    assert len(recall.helpers.decisions_in_order("p1", include_superseded=True)) == 2
    assert recall.helpers.decisions_in_order("p2") == []


def test_decisions_with_alternatives(recall: Recall, project: dict[str, Memory]) -> None:
    [row] = recall.helpers.decisions_with_alternatives("p1")
    assert row.decision.id == project["dec1"].id
    assert {a.content for a in row.alternatives} == {"MySQL", "PostgreSQL"}
    assert row.selected is not None and row.selected.id == project["alt_pg"].id


def test_project_conventions(recall: Recall, project: dict[str, Memory]) -> None:
    assert set(ids(recall.helpers.project_conventions("p1"))) == {project["conv"].id,
                                                                  project["conv2"].id}
    assert recall.helpers.project_conventions("p2") == []


def test_errors_for_module(recall: Recall, project: dict[str, Memory]) -> None:
    assert ids(recall.helpers.errors_for_module("p1", "jobs.queue")) == [project["err"].id]
    assert recall.helpers.errors_for_module("p1", "web") == []
    assert recall.helpers.errors_for_module("p2", "jobs.queue") == []
    assert recall.helpers.errors_for_module("p1", '"} . ?x ?y ?z #') == []


def test_lessons_for_error(recall: Recall, project: dict[str, Memory]) -> None:
    assert ids(recall.helpers.lessons_for_error("p1", project["err"].id)) == [
        project["lesson"].id, project["lesson2"].id]
    assert recall.helpers.lessons_for_error("p1", project["err_other"].id) == []


def test_session_memories(recall: Recall, project: dict[str, Memory]) -> None:
    assert ids(recall.helpers.session_memories("p1", "s3")) == [
        project[k].id for k in ("dec2", "err", "err_other", "lesson", "lesson2")]
    assert recall.helpers.session_memories("p2", "s3") == []


def test_recent_memories(recall: Recall, project: dict[str, Memory]) -> None:
    assert ids(recall.helpers.recent_memories("p1", limit=2)) == [project["lesson2"].id,
                                                                   project["lesson"].id]
    assert len(recall.helpers.recent_memories("p2")) == 1


def test_related_memories(recall: Recall, project: dict[str, Memory]) -> None:
    related = {r.memory.id: r for r in recall.helpers.related_memories(
        "p1", project["fact_db"].id, depth=1)}
    assert related[project["fact_db2"].id].relation == "refines"
    assert related[project["fact_db2"].id].inverse is True
    assert related[project["hyp_db"].id].relation == "assertedIn"  # same session
    assert project["fact_other"].id not in related  # other session, no link
    deeper = {r.memory.id: r for r in recall.helpers.related_memories(
        "p1", project["fact_db"].id, depth=2)}
    assert project["conv"].id not in related
    assert deeper[project["fact_db2"].id].depth == 1
    assert deeper[project["conv"].id].depth == 2  # conv relatedTo fact_db2, which refines it
    assert deeper[project["conv"].id].relation == "relatedTo"
    assert project["fact_other"].id not in deeper  # sessions are not walked past depth 1


@pytest.mark.parametrize(("helper", "query"), [
    ("decisions_in_order", "decisions_in_order"), ("project_conventions", "project_conventions"),
    ("recent_memories", "recent_memories"), ("session_memories", "memories_in_session"),
])
@pytest.mark.parametrize("superseded", [False, True])
def test_index_ordered_helpers_match_the_graph_queries(
        recall: Recall, project: dict[str, Memory], helper: str, query: str,
        superseded: bool) -> None:
    """The helpers read ids and order from the index; the graph-only queries must agree."""
    from pyoxigraph import QuerySolutions

    from kg.longterm.triples import datetime_literal
    from kg.memory import session_iri
    from kg.resources import query_text

    recall.memory.forget(project["dec2"].id, project="p1", reason="changed")
    recall.memory.forget(project["conv2"].id, project="p1", reason="changed")
    recall.clock.tick()
    at = recall.clock()
    extra = {"session": session_iri("s3")} if helper == "session_memories" else {}
    result = recall.store.query(query_text(query), default_graph=[long_term("p1")],
                                substitutions={"at": datetime_literal(at),
                                               "includeSuperseded": Literal(superseded),
                                               **extra})
    assert isinstance(result, QuerySolutions)
    expected = list(dict.fromkeys(
        str(row["memory"].value).rsplit("/", 1)[-1] for row in result))
    args = ("s3",) if helper == "session_memories" else ()
    got = getattr(recall.helpers, helper)("p1", *args, include_superseded=superseded, as_of=at)
    assert ids(got) == expected and expected
