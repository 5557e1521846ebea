"""Graded runs: the grader process, which takes only a student's compiled kernel, and the verdict.
May import launch/, run/ and trace/; nothing of the student's module is imported here."""
