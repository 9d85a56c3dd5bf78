"""Generation: the family spec API, the shared kit, the generation rules as checks, `sdebench generate`."""
