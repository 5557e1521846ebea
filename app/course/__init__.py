"""Teaching: puzzles (built-in and teachers'), their pages, and classes with their dashboards.
Graded runs go through app.dispatch; the verdict is the grader's (sandbox.grading)."""
