"""Teaching: puzzles (built-in and teachers'), their pages, and classes with their dashboards.
Graded runs go through app.dispatch; the verdict is the grader's (sandbox.grading).

It plugs into the web side at start (init_app) through the hooks the web side hands it
(app.web.hooks): a run naming a puzzle gets its hidden check, a class's student's graded run is
kept before its result reaches the student, a student's page joins its room, a teacher's dashboard
watches its class. It sends over Socket.IO through the notifier it is lent, and imports nothing of
app.web."""
from app.course import class_api, inbox, puzzles, solutions, views
from app.course.classes import keeper, student_rooms, watch_class


def init_app(app, hooks):
    app.extensions["puzzle_solutions"] = solved = solutions.Solutions(app.config, app.extensions["dispatcher"])
    app.register_blueprint(views.bp)
    app.register_blueprint(class_api.bp)
    app.register_blueprint(inbox.bp)
    hooks.prepare.append(views.graded)
    hooks.keepers.append(keeper)
    hooks.rooms.append(student_rooms)
    hooks.events["watch_class"] = watch_class
    hooks.health["puzzle_solutions"] = solved.health


def start(app):
    """Once the workers start: the built-in puzzles' solutions are solved ahead (PUZZLE_WARMUP)."""
    if app.config["PUZZLE_WARMUP"]:
        app.extensions["puzzle_solutions"].warm_up(puzzles.builtin_names())
