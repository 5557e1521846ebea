"""Share links: content-addressed snippets in SQLite."""
import json
import threading
import uuid
from contextlib import closing

import pytest

from app import create_app
from app.db import connect
from tests.support.kernels import vector_add_spec


def share(client, spec, ui=None):
    return client.post("/api/snippets", json={"spec": spec, "ui": ui or {}})


def test_same_spec_same_id_and_it_round_trips(client):
    spec = vector_add_spec(n=123)
    first = share(client, spec, {"pid": [2, 0, 0], "pane": "diagram"}).get_json()
    again = share(client, spec, {"pid": [2, 0, 0], "pane": "diagram"}).get_json()
    assert first["id"] == again["id"] and len(first["id"]) >= 8
    assert first["url"].endswith(f"/s/{first['id']}")
    stored = client.get(f"/api/snippets/{first['id']}").get_json()
    assert stored["spec"]["source"] == spec["source"]
    assert stored["ui"] == {"pid": [2, 0, 0], "pane": "diagram"}
    page = client.get(f"/s/{first['id']}")
    assert page.status_code == 200 and b"add_kernel" in page.data


def test_a_different_spec_gets_a_different_id(client):
    a = share(client, vector_add_spec(n=1)).get_json()["id"]
    b = share(client, vector_add_spec(n=2)).get_json()["id"]
    assert a != b


def test_unknown_snippet_is_a_404_page_and_json(client):
    assert client.get("/s/deadbeef00").status_code == 404
    response = client.get("/api/snippets/deadbeef00")
    assert response.status_code == 404 and "deadbeef00" in response.get_json()["error"]["message"]


def test_too_large_is_refused_with_the_limit(client):
    spec = vector_add_spec()
    spec["source"] += "#" * (120 * 1024) + "\n"
    spec["inputs"]["pad"] = "torch.zeros(1)  # " + "x" * (200 * 1024)
    response = share(client, spec)
    assert response.status_code == 413
    assert "KB" in response.get_json()["error"]["message"]


def test_eight_concurrent_saves_all_land(client, app):
    ids, errors = [None] * 8, []

    def save(i):
        with app.test_client() as c:
            r = share(c, vector_add_spec(n=1000 + i))
            if r.status_code != 200:
                errors.append(r.get_data(as_text=True))
            ids[i] = r.get_json()["id"]

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(ids)) == 8
    for i, snippet_id in enumerate(ids):
        assert client.get(f"/api/snippets/{snippet_id}").get_json()["spec"]["inputs"]["x"] == f"torch.randn({1000 + i})"


def test_snippets_survive_a_server_restart(app):
    snippet_id = share(app.test_client(), vector_add_spec(n=77)).get_json()["id"]
    restarted = create_app({"START_WORKERS": False, "DATABASE": app.config["DATABASE"]})
    assert restarted.test_client().get(f"/api/snippets/{snippet_id}").status_code == 200


def test_a_shared_spec_keeps_its_input_order(client):
    spec = vector_add_spec()
    spec["inputs"] = {"y": "torch.randn(8)", "x": "y * 2", "out": "torch.empty(8)"}
    snippet_id = share(client, spec).get_json()["id"]
    assert list(client.get(f"/api/snippets/{snippet_id}").get_json()["spec"]["inputs"]) == ["y", "x", "out"]
    page = client.get(f"/s/{snippet_id}").get_data(as_text=True)
    assert page.index('"y": "torch.randn(8)"') < page.index('"x": "y * 2"')


def test_the_same_inputs_in_another_order_are_another_snippet(client):
    spec = vector_add_spec()
    spec["inputs"] = {"z": "torch.randn(8)", "x": "torch.randn(8)", "y": "torch.randn(8)", "out": "torch.empty(8)"}
    reordered = {**spec, "inputs": {k: spec["inputs"][k] for k in ("x", "y", "z", "out")}}
    first, second = (share(client, s).get_json()["id"] for s in (spec, reordered))
    assert first != second  # the order of the random draws differs: x gets other numbers
    assert list(client.get(f"/api/snippets/{second}").get_json()["spec"]["inputs"]) == ["x", "y", "z", "out"]


# ---- the UI state: one schema, enforced on save, applied field by field on load ----

@pytest.mark.parametrize("ui, field, words", [
    ({"pane": "settings"}, "ui.pane", "ui.pane must be one of lesson, puzzle, results, diagram, timings, ir, compare, step"),
    ({"pane": '"]<img src=x>'}, "ui.pane", "ui.pane must be one of"),
    ({"pane": ["diagram"]}, "ui.pane", "ui.pane must be one of"),
    ({"pid": [-1, 0, 0]}, "ui.pid", "ui.pid must be null or a list of 1 to 3 non-negative integers"),
    ({"pid": [1, 2, 3, 4]}, "ui.pid", "ui.pid must be"),
    ({"pid": []}, "ui.pid", "ui.pid must be"),
    ({"pid": "2,0,0"}, "ui.pid", "ui.pid must be"),
    ({"pid": [1.5]}, "ui.pid", "ui.pid must be"),
    ({"pid": [True]}, "ui.pid", "ui.pid must be"),
    ({"pid": 2}, "ui.pid", "ui.pid must be"),
    ({"pane": "diagram", "theme": "dark"}, "ui.theme", "unknown field in the UI state: 'theme'; it has only pane, pid"),
    ("diagram", "ui", "ui must be an object"),
    ([1, 2], "ui", "ui must be an object"),
])
def test_an_invalid_ui_is_refused_on_save_naming_the_field(client, ui, field, words):
    response = client.post("/api/snippets", json={"spec": vector_add_spec(n=321), "ui": ui})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert words in error["message"] and error["field"] == field


@pytest.mark.parametrize("ui", [None, {}, {"pane": None, "pid": None}, {"pane": "ir"}, {"pid": [3]},
                                {"pane": "timings", "pid": [1, 2]}, {"pane": "results", "pid": [0, 0, 7]}])
def test_a_valid_ui_is_saved_as_given(client, ui):
    response = client.post("/api/snippets", json={"spec": vector_add_spec(n=322), "ui": ui})
    assert response.status_code == 200, response.get_json()
    assert client.get(f"/api/snippets/{response.get_json()['id']}").get_json()["ui"] == (ui or {})


def insert_snippet(app, body):
    """A row written straight into the database, as one saved before the UI schema may be."""
    snippet_id = uuid.uuid4().hex[:12]
    with closing(connect(app.config["DATABASE"])) as db:
        db.execute("INSERT INTO snippet (id, digest, body) VALUES (?, ?, ?)", (snippet_id, uuid.uuid4().hex, json.dumps(body)))
    return snippet_id


def initial_state(page):
    text = page.get_data(as_text=True)
    start = text.index('<script type="application/json" id="initial-state">') + len('<script type="application/json" id="initial-state">')
    return json.loads(text[start:text.index("</script>", start)])


@pytest.mark.parametrize("stored, loaded", [
    ({"pane": '"]) boom', "pid": [2, 0, 0]}, {"pid": [2, 0, 0]}),
    ({"pane": "timings", "pid": [-1, "a"], "theme": "dark"}, {"pane": "timings"}),
    ({"pane": "diagram", "pid": [1, 2, 3, 4]}, {"pane": "diagram"}),
    ({"pane": 7, "pid": {"x": 1}}, {}),
    ("diagram", {}),
    (None, {}),
])
def test_a_stored_bad_ui_field_is_dropped_on_load_and_the_rest_kept(app, client, stored, loaded):
    spec = vector_add_spec(n=99)
    snippet_id = insert_snippet(app, {"spec": spec, "ui": stored})

    found = client.get(f"/api/snippets/{snippet_id}").get_json()
    assert found["ui"] == loaded and found["spec"] == spec

    page = client.get(f"/s/{snippet_id}")
    assert page.status_code == 200
    state = initial_state(page)
    assert state["snippet_id"] == snippet_id and state["spec"] == spec
    assert {k: v for k, v in state["ui"].items() if v is not None} == loaded
