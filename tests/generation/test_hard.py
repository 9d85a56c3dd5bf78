"""The hard tier's kit (sdebench.generation.hard): steps told per placement, stories with decoys in
every placement, spellings."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from sdebench.generation.facts import (
    decimal_draw,
    decimal_range,
    decimal_spellings,
    far_from,
    integer_draw,
    non_round,
)
from sdebench.generation.hard import (
    HARD,
    HardStory,
    Step,
    dated_table,
    hard_family,
    hard_prose,
    hard_versions,
)
from sdebench.generation.kit import CONVENTIONS, assemble
from sdebench.generation.validate import check_placement
from sdebench.tasks.artifacts import COMPETENCIES, PREFERENCES, SOURCES
from sdebench.tasks.tokens import find_tokens


def test_hard_is_every_competency_but_recall():
    assert set(HARD) == set(COMPETENCIES) - {"recall"} and len(HARD) == 5


def test_a_step_is_told_per_placement_with_the_same_paths():
    step = Step("rates: tidy", {"p/rates.py": "RATE = 1\n"}, h_message="rates: 4.17% from 2024", h_files={"p/rates.py": "RATE = 4.17\n"})
    assert step.commit("H").message == "rates: 4.17% from 2024" and step.commit("H").files == {"p/rates.py": "RATE = 4.17\n"}
    for source in ("K", "F", "X", "none"):
        assert step.commit(source).message == "rates: tidy" and step.commit(source).files == {"p/rates.py": "RATE = 1\n"}
    # without H parts a step is the same commit everywhere
    plain = Step("docs: tidy", {"p/a.py": "A = 1\n"})
    assert plain.commit("H") == plain.commit("none")


def test_a_step_refuses_other_paths_in_h():
    with pytest.raises(ValueError, match="same shape"):
        Step("rates: tidy", {"p/rates.py": "A\n"}, h_files={"p/other.py": "B\n"})


def _story(fact: str = "4.17") -> HardStory:
    module = "p/rates.py"
    return HardStory(
        package="p", module=module, early="RATE = 2.75\n", head_buggy="RATE = 27.5\n",
        oracle=f"RATE = {fact}\nX = 1\n", conventional="RATE = 2.75\nX = 1\n",
        intro_msg="rates: 2.75%", refactor_msg="rates: percent",
        base_files={"p/__init__.py": "", "tests/test_rates.py": "def test_x():\n    assert True\n"},
        repro_tests={"tests/test_repro.py": "def test_repro():\n    assert True\n"},
        hidden_tests={"tests/test_hidden.py": "def test_hidden():\n    assert True\n"},
        fact_entries={"K": (CONVENTIONS, f"- The rate is {fact}% since 2024."),
                      "F": (PREFERENCES, f"- (review) The rate is {fact}%."),
                      "X": (".agent/past_fixes.md", f"## Rate\nFix: {fact}%.")},
        decoys=[(CONVENTIONS, "- The rate is 2.75% (2021)."), (PREFERENCES, "- (review, 2024-10-01) 2.75% stays.")],
        statement="Rates are wrong.", fact=f"The rate is {fact}%.", fact_tokens=(fact,),
        conventional_guess="2.75", competency="conflict",
        before=[Step("rates: tidy", {module: "RATE = 2.75\n# tidy\n"}, h_message=f"rates: {fact}% from 2024",
                     h_files={module: f"RATE = {fact}\n# tidy\n"})],
        after=[Step("rates: note", {"p/__init__.py": '"""p."""\n'})],
    )


def _spec(hard: HardStory, source: str):
    story = hard.story(source)
    return assemble(story, family="f", variant=0, source=source, bottleneck="knowledge-missing", project="p",
                    statement=story.statement, fact=story.fact, fact_tokens=story.fact_tokens,
                    conventional_guess=story.conventional_guess)


def test_a_story_places_the_fact_in_one_source_and_keeps_the_shape():
    hard = _story()
    specs = {s: _spec(hard, s) for s in SOURCES}
    for source, spec in specs.items():
        assert spec.competency == "conflict"
        assert check_placement(spec) == [], source
        # the same commits, touching the same paths, in every placement
        shape = [sorted(c.files) for c in spec.commits]
        assert shape == [sorted(c.files) for c in specs["none"].commits], source
    # the first version of the rule is the same everywhere and holds no fact token
    assert specs["H"].commits[1] == specs["none"].commits[1]
    assert not find_tokens(specs["H"].commits[1].files["p/rates.py"], ("4.17",))
    # the decoys are in every placement
    for spec in specs.values():
        assert any("2024-10-01) 2.75% stays" in (c.files.get(PREFERENCES) or "") for c in spec.commits)


def test_a_story_names_a_known_competency():
    with pytest.raises(ValueError, match="unknown competency"):
        HardStory(**{**_story().__dict__, "competency": "cleverness"})


def test_decimal_spellings_cover_percent_share_and_units():
    assert decimal_spellings(Decimal("3.17"), 2, percent=True) == ("3.17", "3,17", "0.0317", "317 bp", "317 basis points")
    assert decimal_spellings(Decimal("1.37"), 2, units=("EUR",)) == ("1.37", "1,37", "1.37 EUR")
    assert decimal_spellings(Decimal("3.247"), 3, comma=False) == ("3.247",)
    # the bare number is found before any unit, and not inside a longer number
    assert find_tokens("costs 3.17% now", decimal_spellings(Decimal("3.17"), 2))
    assert not find_tokens("costs 3.175% now", decimal_spellings(Decimal("3.17"), 2))


def test_round_and_distance_helpers():
    assert not non_round(Decimal("2.75")) and non_round(Decimal("2.76"))
    assert not non_round(Decimal("3.300"), "0.005") and non_round(Decimal("3.302"), "0.005")
    assert far_from(Decimal("2.80"), [Decimal("2.75")], "0.03") and not far_from(Decimal("2.77"), [Decimal("2.75")], "0.03")
    assert decimal_range("1.00", "1.05", "0.01") == [Decimal(x) for x in ("1.00", "1.01", "1.02", "1.03", "1.04", "1.05")]


def test_decimal_and_integer_draws_keep_their_space_and_exclusions():
    draw = decimal_draw("fam-rate", "1.51", "1.99", "0.01", (Decimal("1.75"),), "0.11",
                        exclude=lambda v: (Decimal("1.52"),) if v == 1 else ())
    assert all(non_round(v) and far_from(v, [Decimal("1.75")], "0.03") for v in draw.values)
    assert draw.space.values()[0] == Decimal("1.75") and Decimal("1.40") in draw.space.values()
    assert draw(0) == draw(0) and draw(1) != Decimal("1.52") and draw(0) in draw.values
    ints = integer_draw("fam-days", 201, 299, (250,), lambda n: n % 5 != 0)
    assert ints(3) in ints.values and 196 in ints.space.values() and 305 not in ints.space.values()


def test_hard_versions_and_the_dated_table_render_from_one_place():
    got = hard_versions(lambda v, bug, later: f"{v}{'!' if bug else ''}{'+' if later else ''}", "old", "new")
    assert got == {"early": "old", "head_buggy": "old!+", "oracle": "new+", "conventional": "old+"}
    assert hard_versions(lambda v, bug, later: v, "old", "new", "guess")["conventional"] == "guess"
    code = dated_table("RATES", [(date(2024, 1, 1), Decimal("2.5")), (date(2024, 6, 1), 3)], "rate_on", "day",
                       "The rate on `day`.", "rate", "no rate on", checked=True)
    assert '(date(2024, 1, 1), Decimal("2.50")),\n    (date(2024, 6, 1), 3),' in code
    namespace = {"date": date, "Decimal": Decimal}
    exec(code, namespace)
    assert namespace["rate_on"](date(2024, 7, 1)) == 3 and namespace["rate_on"](date(2024, 2, 1)) == Decimal("2.50")
    with pytest.raises(ValueError, match="no rate on 2023-01-01"):
        namespace["rate_on"](date(2023, 1, 1))
    with pytest.raises(TypeError):
        namespace["rate_on"]("2024-01-01")


def test_hard_prose_reads_several_sheets_and_the_family_spells_the_fact():
    shared = """
    -- docs/shared.md
    Shared by both variants.
    """
    words = hard_prose("""
        -- statement
        Rates are wrong.
        -- fact
        The rate is 4.17%.
        -- conventional_guess
        2.75
        -- intro_msg_plain
        rates: 2.75%
        -- refactor_msg
        rates: percent
        -- K docs/CONVENTIONS.md
        - The rate is 4.17% since 2024.
        -- docs/CONVENTIONS.md
        - The rate is 2.75% (2021).
        """, shared)
    assert words["intro_msg"] == "rates: 2.75%" and words["fact_entries"] == {"K": (CONVENTIONS, "- The rate is 4.17% since 2024.")}
    assert words["decoys"] == [(CONVENTIONS, "- The rate is 2.75% (2021)."), ("docs/shared.md", "Shared by both variants.")]
    with pytest.raises(ValueError, match="two sheets"):
        hard_prose("-- fact\nA.", "-- fact\nB.")
    base = _story()

    def tell(fact, source):
        return HardStory(**{**base.__dict__, "fact_tokens": ()})

    family = hard_family("f", "a rate", decimal_draw("f-rate", "4.11", "4.19", "0.01", (), "0.01"), (tell,),
                         lambda variant, value: (f"{value}",))
    assert family.variants == (0,) and family.by_source
    assert family.build(0, "K", Decimal("4.17")).fact_tokens == ("4.17",)
