"""What another package plugs into the web side, registered at start and never imported here
(Flask's init_app pattern): app.create_app hands the package the app's Hooks, and the package adds

  prepare        spec -> spec, before a run is queued (a puzzle's hidden check: app.course)
  keepers        spec -> keep(result) or None, called in the run's request; `keep` gets the result
                 before its client does (a class's graded run: the verdict is kept first)
  rooms          () -> the Socket.IO rooms a page joins as it connects (a class's student's)
  events         Socket.IO event name -> handler(data) -> its ack (a teacher's dashboard)
  health         /healthz's field -> () -> its value (the puzzles' solutions warming up)

and uses what the web side lends it: `notifier` (Socket.IO, through which the package sends: it
never imports the app's server) and `render_editor` (the editor page, for a package's pages that
are the editor with a spec of its own: a puzzle's).
"""
from dataclasses import dataclass, field
from typing import Callable

from flask import current_app
from flask_socketio import join_room


class Notifier:
    """Socket.IO as another package may use it: an event to rooms, this event's client into a
    room, a room closed (its members leave it)."""

    def __init__(self, socketio):
        self.socketio = socketio

    def emit(self, event, data, to):
        self.socketio.emit(event, data, to=to)

    def join(self, room):
        join_room(room)

    def close_room(self, room):
        self.socketio.close_room(room)


@dataclass
class Hooks:
    notifier: Notifier
    render_editor: Callable
    prepare: list = field(default_factory=list)
    keepers: list = field(default_factory=list)
    rooms: list = field(default_factory=list)
    events: dict = field(default_factory=dict)
    health: dict = field(default_factory=dict)


def hooks():
    """The app's hooks (app.extensions["hooks"], made by app.create_app)."""
    return current_app.extensions["hooks"]
