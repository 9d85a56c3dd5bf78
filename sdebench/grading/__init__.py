"""Grading: pristine-copy, default-fail grading in a sandbox, the in-sandbox runner, rewards."""
