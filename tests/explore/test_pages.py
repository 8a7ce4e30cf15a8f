"""The explorer's pages through Flask's test client: what each shows, filters, auth, forms."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

from flask import Flask
from flask.testing import FlaskClient
from pyoxigraph import QueryBoolean

from api.explore.access import COOKIE, form_secret
from api.memory import memory_service
from kg.explore import Cursor, Explorer, PageQuery
from kg.memory import memory_iri
from kg.store import Store
from tests.explore.conftest import ADMIN, READ, SCOPED, WRITE, Seeded, make_app, seed

ASK_RETIRED = ("PREFIX jido: <https://jido.ai/ontology#>\n"
               "SELECT ?m WHERE { GRAPH ?g { ?m jido:retiredAt ?r } }")


def text(response: object) -> str:
    """The page's visible text, tags removed and white space collapsed."""
    html = response.get_data(as_text=True)  # type: ignore[attr-defined]
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def retired_ids(store: Store) -> set[str]:
    rows = store.query(ASK_RETIRED)
    return {row["m"].value.rsplit("/", 1)[-1] for row in rows}  # type: ignore[union-attr]


def test_index_lists_projects_with_counts(web: FlaskClient, seeded: Seeded) -> None:
    page = web.get("/explore")
    assert page.status_code == 200
    body = text(page)
    assert re.search(r"demo 2 1 3", body), body  # current, retired, all
    assert re.search(r"other 1 0 1", body), body
    assert page.headers["Server-Timing"].startswith("app;dur=")


def test_scoped_token_sees_only_its_project(web: FlaskClient, seeded: Seeded) -> None:
    body = text(web.get("/explore", headers=auth(SCOPED)))
    assert "other" in body and "demo" not in body
    assert web.get("/explore/demo", headers=auth(SCOPED)).status_code == 403


def test_project_list_shows_current_memories_newest_first(web: FlaskClient,
                                                          seeded: Seeded) -> None:
    html = web.get("/explore/demo").get_data(as_text=True)
    ids = re.findall(r'data-memory-id="([0-9a-f]+)"', html)
    assert ids == [seeded.pytest, seeded.postgres]  # the retired SQLite decision is hidden
    body = text(web.get("/explore/demo"))
    assert "architectural_decision high 0.92" in body
    assert "convention low 0.35" in body
    assert "s-design" in body


def test_retired_toggle_and_filters(web: FlaskClient, seeded: Seeded) -> None:
    def ids(url: str) -> list[str]:
        return re.findall(r'data-memory-id="([0-9a-f]+)"', web.get(url).get_data(as_text=True))

    assert ids("/explore/demo?retired=1") == [seeded.pytest, seeded.postgres, seeded.sqlite]
    assert ids("/explore/demo?type=convention") == [seeded.pytest]
    assert ids("/explore/demo?level=high") == [seeded.postgres]
    assert ids("/explore/demo?level=medium&retired=1") == [seeded.sqlite]
    assert ids("/explore/demo?session=s-design&retired=1") == [seeded.postgres, seeded.sqlite]
    assert ids("/explore/demo?until=2000-01-01") == []
    assert ids("/explore/demo?since=2000-01-01") == [seeded.pytest, seeded.postgres]
    bad = web.get("/explore/demo?since=yesterday")
    assert bad.status_code == 400 and "since must be a date" in text(bad)
    assert web.get("/explore/demo?type=nonsense").status_code == 400


def test_search_ranks_the_right_memory_first_with_scores(web: FlaskClient,
                                                         seeded: Seeded) -> None:
    html = web.get("/explore/demo?q=which+database+server+postgresql").get_data(as_text=True)
    ids = re.findall(r'data-memory-id="([0-9a-f]+)"', html)
    assert ids[0] == seeded.postgres
    assert re.search(r'class="num score">\d\.\d{3}<', html)


def test_pages_follow_on_with_a_keyset_cursor(store: Store) -> None:
    app = make_app(store)
    with app.app_context():
        service = memory_service()
        made = [service.remember("many", f"Note number {i} about topic {i}").id
                for i in range(57)]
        explorer = Explorer(service.store, service.long_term)
        seen: list[str] = []
        cursor: Cursor | None = None
        while True:
            page = explorer.page("many", PageQuery(size=20), after=cursor)
            seen += [m.id for m in page.memories]
            if page.next is None:
                break
            cursor = Cursor.parse(page.next.text())
    assert seen == made[::-1]
    client = app.test_client()
    first = client.get("/explore/many").get_data(as_text=True)
    link = unescape(re.search(r'<a rel="next" href="([^"]+)"', first).group(1))  # type: ignore[union-attr]
    assert "after" in parse_qs(urlsplit(link).query)
    second = client.get(link).get_data(as_text=True)
    first_ids = re.findall(r'data-memory-id="([0-9a-f]+)"', first)
    second_ids = re.findall(r'data-memory-id="([0-9a-f]+)"', second)
    assert len(first_ids) == 50 and len(second_ids) == 7
    assert first_ids + second_ids == made[::-1]


def test_retired_memory_page_shows_reason_replacement_and_turtle(
    web: FlaskClient, seeded: Seeded
) -> None:
    page = web.get(f"/explore/demo/memories/{seeded.sqlite}")
    html, body = page.get_data(as_text=True), text(page)
    assert "several writers need a server database" in body
    assert f'href="/explore/demo/memories/{seeded.postgres}"' in html
    assert "jido:retiredAt" in body and "jido:supersededBy" in body
    found = re.search(r'<a href="([^"]+)" id="open-query"', html)
    assert found is not None
    link = urlsplit(unescape(found.group(1)))
    assert link.path == "/"  # the query page
    query = parse_qs(link.query)
    assert "CONSTRUCT" in query["query"][0]
    assert memory_iri(seeded.sqlite).value in query["query"][0]
    assert "Forget this memory" not in body  # anonymous reader; and it is already retired
    newer = text(web.get(f"/explore/demo/memories/{seeded.postgres}"))
    assert "Replaces" in newer and "SQLite" in newer and "planner" in newer


def test_forget_needs_write_and_retires(explore_app: Flask, web: FlaskClient,
                                        seeded: Seeded) -> None:
    url = f"/explore/demo/memories/{seeded.pytest}/forget"
    form = {"reason": "we switched to a test double after all", "replacement": ""}
    assert web.post(url, data=form).status_code == 401
    denied = web.post(url, data=form, headers=auth(READ))
    assert denied.status_code == 403 and "does not allow write" in text(denied)
    reader = text(web.get(f"/explore/demo/memories/{seeded.pytest}", headers=auth(READ)))
    assert "Forget this memory" not in reader
    writer = text(web.get(f"/explore/demo/memories/{seeded.pytest}", headers=auth(WRITE)))
    assert "Forget this memory" in writer and "Purge" not in writer
    done = web.post(url, data=form, headers=auth(WRITE))
    assert done.status_code == 303
    assert seeded.pytest in retired_ids(memory_service_store(explore_app))
    assert "switched to a test double" in text(web.get(done.headers["Location"]))
    again = web.post(url, data=form, headers=auth(WRITE))
    assert again.status_code == 409


def memory_service_store(app: Flask) -> Store:
    with app.app_context():
        return memory_service().store


def test_token_cookie_and_form_secret(explore_app: Flask, web: FlaskClient,
                                      seeded: Seeded) -> None:
    bad = web.post("/explore/token", data={"token": "nope", "next": "/explore/demo"})
    assert bad.status_code == 401 and "not valid" in text(bad)
    ok = web.post("/explore/token", data={"token": WRITE, "next": "https://evil.example/"})
    assert ok.status_code == 303 and ok.headers["Location"] == "/explore/"
    cookie = ok.headers["Set-Cookie"]
    assert f"{COOKIE}={WRITE}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = web.get(f"/explore/demo/memories/{seeded.pytest}")
    assert "Forget this memory" in text(page)
    url = f"/explore/demo/memories/{seeded.pytest}/forget"
    forged = web.post(url, data={"reason": "posted from another site"})
    assert forged.status_code == 403
    with explore_app.test_request_context():
        from flask import g
        g.explore_token = WRITE
        secret = form_secret()
    assert f'value="{secret}"' in page.get_data(as_text=True)
    assert web.post(url, data={"reason": "from the page", "csrf": secret}).status_code == 303
    cleared = web.post("/explore/token", data={"action": "clear", "next": "/explore"})
    assert f"{COOKIE}=;" in cleared.headers["Set-Cookie"]


def test_without_anonymous_reads_pages_ask_for_a_token(store: Store) -> None:
    app = make_app(store, anonymous_read=False)
    client = app.test_client()
    page = client.get("/explore/demo")
    assert page.status_code == 401 and "Use another token" in text(page)
    assert client.get("/explore", headers=auth(READ)).status_code == 200
    client.set_cookie(COOKIE, READ, path="/explore")
    assert client.get("/explore").status_code == 200
    client.set_cookie(COOKIE, "rotated-away", path="/explore")
    stale = client.get("/explore")
    assert stale.status_code == 401 and "no longer valid" in text(stale)


def test_purge_is_for_admins_behind_a_confirmation(explore_app: Flask, web: FlaskClient,
                                                   seeded: Seeded) -> None:
    page = f"/explore/demo/memories/{seeded.sqlite}"
    assert "Purge" in text(web.get(page, headers=auth(ADMIN)))
    assert web.get(page + "/purge", headers=auth(WRITE)).status_code == 403
    assert "Type the memory's id" in text(web.get(page + "/purge", headers=auth(ADMIN)))
    wrong = web.post(page + "/purge", data={"confirm": "yes"}, headers=auth(ADMIN))
    assert wrong.status_code == 400
    done = web.post(page + "/purge", data={"confirm": seeded.sqlite}, headers=auth(ADMIN))
    assert done.status_code == 303
    assert web.get(page).status_code == 404
    store = memory_service_store(explore_app)
    ask = store.query("ASK { GRAPH ?g { ?m ?p ?o } }",
                      substitutions={"m": memory_iri(seeded.sqlite)})
    assert isinstance(ask, QueryBoolean) and not bool(ask)


def test_timeline_marks_retired_memories(web: FlaskClient, seeded: Seeded) -> None:
    html = web.get("/explore/demo/timeline").get_data(as_text=True)
    assert f'class="retired" data-memory-id="{seeded.sqlite}"' in html
    assert f'class="current" data-memory-id="{seeded.postgres}"' in html
    assert '<circle' in html and 'tick retired' in html
    assert "several writers need a server database" in text(web.get("/explore/demo/timeline"))


def test_graph_shows_the_neighbourhood(web: FlaskClient, seeded: Seeded) -> None:
    page = web.get(f"/explore/demo/memories/{seeded.postgres}/graph")
    html, body = page.get_data(as_text=True), text(page)
    assert page.status_code == 200 and "<svg" in html
    for kind in ("node memory", "node session", "node agent"):
        assert kind in html
    assert "supersededBy" in body and "assertedIn" in body and "assertedBy" in body
    assert f"/explore/demo/memories/{seeded.sqlite}/graph" in html  # neighbours are links


def test_unknown_memory_and_bad_cursor(web: FlaskClient, seeded: Seeded) -> None:
    assert web.get("/explore/demo/memories/nothere").status_code == 404
    assert web.get("/explore/demo?after=garbage").status_code == 400
    assert web.get("/explore/bad%20project").status_code == 400


def test_seed_is_reusable(store: Store) -> None:
    app = make_app(store)
    with app.app_context():
        ids = seed(memory_service())
    assert len({ids.postgres, ids.sqlite, ids.pytest, ids.other}) == 4
