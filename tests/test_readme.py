import re

from sdebench.generation import generate

from .helpers import ROOT


def test_readme_family_example_validates(tmp_path):
    text = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n# generators/retry_cap.py\n(.*?)```", text, re.S).group(1)
    gens = tmp_path / "gens"
    gens.mkdir()
    (gens / "retry_cap.py").write_text(code)
    found, errors = generate.discover(gens)
    assert errors == [] and set(found) == {"retry-cap"}
    for source in ("H", "none"):
        outcome = generate.build_task(found["retry-cap"], 1, source, tmp_path / "out", {"backend": "unsafe_local"})
        assert outcome.violations == [] and outcome.written


def test_readme_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 3]
    assert "&& sdebench run " in block[0]
    assert block[1] == "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest"
    assert block[1] in (ROOT / ".ci" / "run").read_text()
