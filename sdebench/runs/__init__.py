"""Runs: the episode loop, `sdebench run`, streams, episode records, trajectories, progress."""
