"""`python -m sdebench.run`: run the selected tasks under one delivery, agent and model (see `sdebench.runs.run`)."""

from sdebench.runs.run import main

if __name__ == "__main__":
    main()
