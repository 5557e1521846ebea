-- Migration 3: what a class's teacher pushes, kept for each student until they dismiss it (app.course.inbox).
CREATE TABLE IF NOT EXISTS class_message (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id TEXT NOT NULL REFERENCES student (id),
    text TEXT NOT NULL,
    link TEXT,                      -- a checked link (app.course.classes.pushed_link), or null
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS class_message_by_student ON class_message (student_id);
