"""Test support that ships with the package: the scripted model server and a tiny sample task."""
