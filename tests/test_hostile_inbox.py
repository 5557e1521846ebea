"""A student's inbox of pushed messages: only its student reads or dismisses them, a removed student
has none, and a teacher pushing without end keeps a bounded number per student."""
from app.course import inbox
from tests.test_classes import joined, new_class


def test_only_its_student_reads_and_dismisses_a_message(app, client):
    code = new_class(client, chosen=["constant_add"])["code"]
    (ann, _), (bob, bob_id) = joined(app, code, "Ann"), joined(app, code, "Bob")
    assert client.post(f"/api/classes/{code}/push", json={"text": "Mask the tail"}).json == {"sent_to": 2}
    assert client.post(f"/api/classes/{code}/push", json={"text": "Only Bob", "students": [bob_id]}).json == {"sent_to": 1}
    ann_box, bob_box = ann.get("/api/inbox").json, bob.get("/api/inbox").json
    assert [m["text"] for m in ann_box["messages"]] == ["Mask the tail"] and ann_box["class"]["code"] == code
    assert [m["text"] for m in bob_box["messages"]] == ["Mask the tail", "Only Bob"]
    bobs = bob_box["messages"][1]["id"]
    for stranger in (ann, client, app.test_client()):  # another student, the teacher, a stranger
        assert stranger.get(f"/api/inbox/{bobs}").status_code == 404
        assert stranger.delete(f"/api/inbox/{bobs}").status_code == 404
    assert app.test_client().get("/api/inbox").json == {"class": None, "messages": []}
    assert ann.delete("/api/inbox/not-a-number").status_code == 404
    assert bob.delete(f"/api/inbox/{bobs}").status_code == 200
    assert [m["text"] for m in bob.get("/api/inbox").json["messages"]] == ["Mask the tail"]
    assert bob.delete(f"/api/inbox/{bobs}").status_code == 404  # once
    assert client.delete(f"/api/classes/{code}/students/{bob_id}").status_code == 200
    assert bob.get("/api/inbox").json == {"class": None, "messages": []}  # removed: nothing more of the class


def test_a_student_keeps_the_newest_messages_within_the_bound(app, client, monkeypatch):
    monkeypatch.setattr(inbox, "KEPT_PER_STUDENT", 3)
    code = new_class(client, chosen=["constant_add"])["code"]
    ann, _ = joined(app, code, "Ann")
    for n in range(5):
        assert client.post(f"/api/classes/{code}/push", json={"text": f"hint {n}"}).status_code == 200
    assert [m["text"] for m in ann.get("/api/inbox").json["messages"]] == ["hint 2", "hint 3", "hint 4"]
