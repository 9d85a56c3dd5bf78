"""layered-config: the precedence of configuration layers, two imports away from the loader.

The repro calls the public loader (app), which reads every source into a layer (sources) and
hands the layers to the merge helper (merge), where the precedence lives. At HEAD the layers are
applied in reverse, so built-in defaults beat everything. The house order of the six layers keeps
built-in defaults lowest but is not the common defaults < site file < user file < project file <
environment < command line: some pairs are inverted (119 such orders are drawn from). The repro only
checks that a file value beats the default, true under every order; hidden tests probe every pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, permutations

from sdebench.generation.facts import space, uniform
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "layered-config"
# Roles, lowest to highest in the common convention (system-wide file < per-user file < project
# file, as git and most tools layer them; then the environment, then the command line).
CONVENTIONAL = ("default", "site", "user", "file", "env", "cli")
# Every order that keeps built-in defaults lowest: the candidates an agent could try.
ORDERS = tuple(("default", *rest) for rest in permutations(CONVENTIONAL[1:]))
# House orders: any of them but the common one (each inverts some pair of the convention).
DRAWABLE = tuple(o for o in ORDERS if o != CONVENTIONAL)
# Why the house order's final layer is final.
WHY = {
    "cli": "flags given at start-up are the operator's last word",
    "env": "the orchestrator's environment is final, even over command-line flags",
    "file": "the project config file is rendered by the deployment system and nothing may override it",
    "user": "a user's own file is what support asks them to edit, so it must win",
    "site": "the site-wide file is managed by ops and outranks everything a service or user sets",
}


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names of the layers, and the order (the fact)."""

    project: str
    package: str
    names: dict[str, str]  # role -> layer name
    prefix: str  # environment variable prefix
    order: tuple[str, ...]  # roles, lowest first


NAMES = {
    0: ("stackconf", {"default": "defaults", "site": "site", "user": "user", "file": "file", "env": "env",
                      "cli": "cli"}, "STACK_"),
    1: ("settingsmith", {"default": "builtin", "site": "system", "user": "home", "file": "profile",
                         "env": "environment", "cli": "flags"}, "SMITH_"),
}


def fact_order(variant: int) -> tuple[str, ...]:
    """The house order of a variant (roles, lowest first): a non-conventional order, distinct per variant."""
    return pick_distinct(f"{FAMILY}-order", list(DRAWABLE), 2)[variant]


# The common order first (highest prior), then every order with defaults lowest; the draw is
# uniform over all of them but the common one.
SPACE = space([CONVENTIONAL], DRAWABLE, draw=uniform(DRAWABLE))


def shape(variant: int, order: tuple[str, ...]) -> Shape:
    """The names of a variant with the house order `order`."""
    project, names, prefix = NAMES[variant]
    return Shape(project, project, names, prefix, tuple(order))


def house(s: Shape) -> tuple[str, ...]:
    """The house order as layer names, lowest first."""
    return tuple(s.names[r] for r in s.order)


def swapped(s: Shape) -> list[tuple[str, str]]:
    """(lower, higher) layer names of every pair the house order inverts."""
    return [(s.names[lo], s.names[hi]) for lo, hi in combinations(s.order, 2)
            if CONVENTIONAL.index(lo) > CONVENTIONAL.index(hi)]


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal the order (the whole chain or the swapped pair)."""
    order = house(s)
    chain = (" < ".join(order), "<".join(order), " > ".join(reversed(order)), ", ".join(f'"{n}"' for n in order))
    pairs = tuple(spelling for lo, hi in swapped(s) for spelling in (
        f"{lo} < {hi}", f"{hi} > {lo}", f"{hi} over {lo}", f"{hi} beats {lo}", f"{hi} overrides {lo}",
        f"{hi} wins over {lo}", f"{hi} takes precedence over {lo}", f"{hi} outranks {lo}", f"{lo} loses to {hi}",
        f"{hi} beats the {lo}"))
    return chain + pairs


def merge(s: Shape, state: str, helper: bool) -> str:
    """The merge module; state is correct, buggy, conventional or oracle."""
    if state in ("correct", "oracle"):
        order = house(s)
    elif state == "conventional":
        order = tuple(s.names[r] for r in CONVENTIONAL)
    else:
        order = tuple(s.names[r] for r in reversed(CONVENTIONAL))
    names = ", ".join(f'"{n}"' for n in order)
    text = f'''"""Merge configuration layers into one flat mapping of dotted keys."""

# Layers in the order they are applied: a later layer overrides an earlier one.
PRECEDENCE = ({names})


def merge_layers(layers):
    """One mapping from `layers` (layer name -> mapping); unknown layer names are an error."""
    unknown = sorted(set(layers) - set(PRECEDENCE))
    if unknown:
        raise ValueError(f"unknown config layers: {{', '.join(unknown)}}")
    merged = {{}}
    for name in PRECEDENCE:
        merged.update(layers.get(name, {{}}))
    return merged
'''
    if helper:
        text += '''

def origin(layers, key):
    """The name of the layer that supplies `key` after merging, or None."""
    winner = None
    for name in PRECEDENCE:
        if key in layers.get(name, {}):
            winner = name
    return winner
'''
    return text


def sources(s: Shape) -> str:
    """The sources module: every input becomes a named layer of dotted keys."""
    n = s.names
    return f'''"""Read each configuration source into a layer of dotted keys with string values."""

from {s.package}.merge import merge_layers

ENV_PREFIX = "{s.prefix}"


def parse_file(text):
    """key = value lines under [section] headers; '#' starts a comment."""
    out, section = {{}}, ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip() + "."
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"not a key = value line: {{raw!r}}")
        out[section + key.strip()] = value.strip()
    return out


def parse_env(environ):
    """{s.prefix}DB__HOST=x becomes db.host = x; other variables are ignored."""
    out = {{}}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX):
            out[name[len(ENV_PREFIX):].lower().replace("__", ".")] = value
    return out


def parse_args(argv):
    """--db.host=x becomes db.host = x; other arguments are ignored."""
    out = {{}}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            out[key] = value
    return out


def collect(defaults, file_text, environ, argv, site_text="", user_text=""):
    """Every source as a layer, merged."""
    layers = {{
        "{n['default']}": {{k: str(v) for k, v in defaults.items()}},
        "{n['site']}": parse_file(site_text),
        "{n['user']}": parse_file(user_text),
        "{n['file']}": parse_file(file_text),
        "{n['env']}": parse_env(environ),
        "{n['cli']}": parse_args(argv),
    }}
    return merge_layers(layers)
'''


def app(pkg: str) -> str:
    """The public loader with typed access."""
    return f'''"""Load the application's settings from every source."""

from {pkg}.sources import collect


class Settings:
    """Merged settings with typed getters."""

    def __init__(self, values):
        self.values = values

    def get(self, key, default=None):
        """The raw string value of `key`."""
        return self.values.get(key, default)

    def get_int(self, key, default=None):
        """The value of `key` as an int."""
        value = self.values.get(key)
        return default if value is None else int(value)

    def get_bool(self, key, default=False):
        """The value of `key` as a bool (1/true/yes/on)."""
        value = self.values.get(key)
        return default if value is None else value.lower() in ("1", "true", "yes", "on")


def load_settings(defaults, file_text="", environ=None, argv=(), site_text="", user_text=""):
    """Settings from built-in defaults, the project config file's text, environment variables,
    arguments, and the site-wide and per-user config files' texts."""
    return Settings(collect(defaults, file_text, dict(environ or {{}}), list(argv), site_text, user_text))
'''


def tell(variant: int, order: tuple[str, ...]) -> Story:
    """The story of one variant whose house order is `order`."""
    s = shape(variant, order)
    pkg, n, p = s.package, s.names, s.prefix
    base_tests = f'''import pytest

from {pkg}.app import load_settings
from {pkg}.merge import merge_layers
from {pkg}.sources import parse_env, parse_file


def test_parse_file_sections_and_comments():
    text = "# main\\nname = demo\\n[db]\\nhost = db.local  # primary\\n"
    assert parse_file(text) == {{"name": "demo", "db.host": "db.local"}}


def test_parse_file_rejects_garbage():
    with pytest.raises(ValueError):
        parse_file("just words")


def test_parse_env_prefix():
    assert parse_env({{"{p}DB__PORT": "6", "HOME": "/root"}}) == {{"db.port": "6"}}


def test_defaults_alone():
    s = load_settings({{"workers": 3, "debug": "no"}})
    assert s.get_int("workers") == 3
    assert s.get_bool("debug") is False


def test_unknown_layer_rejected():
    with pytest.raises(ValueError):
        merge_layers({{"nonsense": {{}}}})


def test_keys_from_different_layers_combine():
    s = load_settings({{"workers": 3}}, "[db]\\nhost = h1\\n", {{"{p}LOG": "info"}}, ["--mode=fast"])
    assert (s.get_int("workers"), s.get("db.host"), s.get("log"), s.get("mode")) == (3, "h1", "info", "fast")
'''
    repro = f'''from {pkg}.app import load_settings


def test_config_file_value_beats_default():
    # Reported: workers = 8 in the config file is ignored; the service starts with the default 2.
    s = load_settings({{"workers": 2}}, "workers = 8\\n")
    assert s.get_int("workers") == 8
'''
    house_order = house(s)
    # The held-out tests name the layers in a neutral (sorted) order: the precedence is the fact,
    # so it may only show in the oracle's observations, never in the test's text.
    names = sorted(house_order)
    pair_cases = [f'    ("{a}", "{b}"),' for a, b in combinations(names, 2)]
    hidden = f'''import pytest

from {pkg}.app import load_settings
from {pkg}.merge import merge_layers, origin

NAMES = {tuple(names)!r}


def settings_with(layers):
    """Load settings where each named layer sets workers to a value of its own."""
    value = {{name: str(10 + i) for i, name in enumerate(NAMES)}}
    defaults = {{"workers": value["{n['default']}"]}} if "{n['default']}" in layers else {{}}
    file_text = f"workers = {{value['{n['file']}']}}\\n" if "{n['file']}" in layers else ""
    site_text = f"workers = {{value['{n['site']}']}}\\n" if "{n['site']}" in layers else ""
    user_text = f"workers = {{value['{n['user']}']}}\\n" if "{n['user']}" in layers else ""
    environ = {{"{p}WORKERS": value["{n['env']}"]}} if "{n['env']}" in layers else {{}}
    argv = [f"--workers={{value['{n['cli']}']}}"] if "{n['cli']}" in layers else []
    return load_settings(defaults, file_text, environ, argv, site_text, user_text)


PAIRS = [
{chr(10).join(pair_cases)}
]


@pytest.mark.parametrize("first,second", PAIRS)
def test_hidden_pairwise_precedence(first, second, observe):
    observe(settings_with({{first, second}}).get("workers"))


def test_hidden_all_layers(observe):
    observe(settings_with(set(NAMES)).get("workers"))


def test_hidden_merge_helper_directly(observe):
    layers = {{name: {{"k": name}} for name in NAMES}}
    observe(merge_layers(layers)["k"])
    observe(origin(layers, "k"))
'''
    lo, hi = (swapped(s) or [(n["file"], n["env"])])[0]
    chain = " < ".join(house_order)
    why = WHY[s.order[-1]]
    conv_chain = " < ".join(s.names[r] for r in CONVENTIONAL)
    filler_files = {
        f"{pkg}/dump.py": '"""Render merged settings for the --show-config flag."""\n\n\ndef dump(values):\n'
        '    """key = value lines, sorted by key."""\n    return "\\n".join(f"{k} = {v}" for k, v in '
        'sorted(values.items()))\n',
        "tests/test_dump.py": f"from {pkg}.dump import dump\n\n\ndef test_dump_sorted():\n"
        '    assert dump({"b": "2", "a": "1"}) == "a = 1\\nb = 2"\n',
    }
    return Story(
        package=pkg, fact_tokens=tokens(s), tags=("config", "precedence"), project=s.project,
        module=f"{pkg}/merge.py",
        **state_versions(merge, s),
        base_files=package_files(
            pkg, f"{s.project}: layered application settings.",
            f"# {s.project}\n\nLoads settings from built-in defaults, a site-wide config file, a per-user "
            f"config file, the project config file, `{p}*` environment variables and `--key=value` "
            "arguments.\n",
            {f"{pkg}/sources.py": sources(s), f"{pkg}/app.py": app(pkg),
             "tests/test_settings.py": base_tests}),
        repro_tests={"tests/test_repro_file_ignored.py": repro},
        hidden_tests={"tests/test_hidden_precedence.py": hidden},
        filler=[Commit("dump: render merged settings", filler_files)],
        **prose(f"""
        -- statement
        Settings from the config file are ignored: we set `workers = 8` and the service still starts with the
        built-in default of 2 workers. Environment variables and flags do not seem to take effect reliably
        either. tests/test_repro_file_ignored.py reproduces the file case.
        -- fact
        Configuration layers apply lowest to highest as {chain}.
        -- conventional_guess
        {conv_chain} (later wins)
        -- intro_msg_fact
        merge: apply config layers in the house order

        Lowest to highest: {chain}; {why}.
        -- intro_msg_plain
        merge: apply config layers in order
        -- refactor_msg
        merge: add origin() to explain where a setting came from
        -- K docs/adr/0005-config-layers.md
        Decision: layers are applied lowest to highest as {chain}; {why}.
        -- F
        - (review of #412, ops) Precedence is {chain}, i.e. {hi} beats the {lo} layer: {why}. The usual order
        is wrong for us.
        -- X
        ## Worker count ignored in the job runner
        Symptom: the job runner's settings came from the wrong layer ({pkg}/jobs/config.py). Fix: merge in the
        house order {chain}, the same as the main loader, not the textbook order.
        -- docs/adr/0005-config-layers.md
        # ADR-0005: Configuration layers

        Status: Accepted

        Settings come from six layers merged key by key; a key absent from a layer falls through to the next
        lower layer.
        -- docs/adr/0003-config-precedence.md
        # ADR-0003: Config precedence

        Status: Superseded

        Layers were applied as {conv_chain}, the common order. Superseded by the layer decision that followed;
        do not rely on this.
        -- docs/adr/0004-secrets.md
        # ADR-0004: Secrets

        Status: Accepted

        Secrets never live in the config file; they come from the secret store at start-up and are not merged
        as a layer.
        -- docs/CONVENTIONS.md
        - Config keys are lower-case and dotted (`db.host`); environment names map `__` to `.`.
        -- docs/CONVENTIONS.md
        - Values are strings until read; typed getters convert them at the edge.
        -- .agent/preferences.md
        - (review of #397) Don't log config values at start-up; log only which keys were set.
        -- .agent/preferences.md
        - (review of #403) Boolean settings accept 1/true/yes/on, case-insensitive.
        -- .agent/past_fixes.md
        ## Section headers with spaces
        Symptom: `[ db ]` produced keys like ' db .host'. Fix: strip the section name inside the brackets.
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "the precedence order of six configuration layers, applied by a "
                   "merge helper two imports below the loader", variants=(0, 1), draw=fact_order, tell=tell,
                   space=SPACE)
