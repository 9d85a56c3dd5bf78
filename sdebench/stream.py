"""`python -m sdebench.stream`: run an ordered stream of tasks with carried memory (see `sdebench.runs.stream`)."""

from sdebench.runs.stream import main

if __name__ == "__main__":
    main()
