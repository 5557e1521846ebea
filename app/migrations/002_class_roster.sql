-- Migration 2: a class's roster protected, and its submissions bounded (app.course.classes).
ALTER TABLE class ADD COLUMN locked INTEGER NOT NULL DEFAULT 0;  -- its teacher closed it to new students
ALTER TABLE student ADD COLUMN seat TEXT;                        -- a keyed digest of the address it joined from (its seat's holder)
CREATE INDEX IF NOT EXISTS student_by_seat ON student (class_code, seat);
ALTER TABLE submission ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;  -- graded runs it stands for: itself and the older ones pruned before it
ALTER TABLE submission ADD COLUMN size INTEGER NOT NULL DEFAULT 0;      -- bytes it keeps (source, verdict, timing)
UPDATE submission SET size = LENGTH(source) + LENGTH(verdict) + COALESCE(LENGTH(timing), 0);
