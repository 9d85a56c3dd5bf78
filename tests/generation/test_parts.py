from sdebench.generation.parts import package_files, rule_versions, state_versions


def test_rule_versions_render_each_stage_from_one_renderer():
    got = rule_versions(lambda value, later: f"{value}{'+' if later else ''}", "right", "wrong", "conv",
                        first_wrong="older")
    assert got == {"v1_correct": "right", "v1_buggy": "older", "head_buggy": "wrong+", "oracle": "right+",
                   "conventional": "conv+"}
    assert rule_versions(lambda v, later: v, 1, 2, 3)["v1_buggy"] == 2


def test_package_files_open_with_the_package_and_close_with_the_readme():
    got = package_files("shop", "shop: a till.", "# shop\n", {"shop/till.py": "X = 1\n", "tests/test_till.py": ""})
    assert list(got) == ["shop/__init__.py", "shop/till.py", "tests/test_till.py", "README.md"]
    assert got["shop/__init__.py"] == '"""shop: a till."""\n' and got["README.md"] == "# shop\n"


def test_state_versions_render_the_module_by_state():
    got = state_versions(lambda shape, state, helper: f"{shape}:{state}{'+' if helper else ''}", "s")
    assert got == {"v1_correct": "s:correct", "v1_buggy": "s:buggy", "head_buggy": "s:buggy+", "oracle": "s:correct+",
                   "conventional": "s:conventional+"}
