"""A small family whose placements can be made to break the same-shape check, one way at a time.

`family(flaw)` is a valid family for `flaw=None`; each flaw breaks one part of the check:
`own_file` (the K fact lives in a file no other placement has), `extra_commit` (H has one more
commit), `touched` (an H commit also rewrites a file, unchanged, that the others leave alone),
`dangling_adr` and `dangling_path` (a shared ADR names an ADR or a doc that no placement has).
"""

from __future__ import annotations

from dataclasses import replace

from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

README = "# payclient\n\nA payment client.\n"
FLAWS = ("own_file", "extra_commit", "touched", "dangling_adr", "dangling_path")


def client(cap, extra=False):
    """The retry module with `cap` retries (`extra`: after the refactor)."""
    text = f"MAX_RETRIES = {cap}\n\n\ndef attempts(failures):\n    return min(failures, MAX_RETRIES) + 1\n"
    return text + ("\n\ndef describe():\n    return 'retrying client'\n" if extra else "")


def family(flaw: str | None = None) -> Family:
    """The fixture family with `flaw` (one of FLAWS) or none."""

    def tell(variant, cap, source):
        k_file = "docs/adr/0009-gateway.md" if flaw == "own_file" else "docs/CONVENTIONS.md"
        superseded = "Superseded by ADR-0009" if flaw == "dangling_adr" else "Superseded"
        see = " See docs/runbooks/retries.md first." if flaw == "dangling_path" else ""
        story = Story(
            package="payclient", module="payclient/retry.py",
            **rule_versions(client, cap, 2, 3),
            base_files=package_files("payclient", "A payment client.", README, {"tests/test_retry.py":
                "from payclient.retry import attempts\n\n\ndef test_no_failure():\n    assert attempts(0) == 1\n"}),
            repro_tests={"tests/test_repro.py": "from payclient.retry import attempts\n\n\n"
                         "def test_third_failure_is_retried():\n    assert attempts(3) == 4\n"},
            hidden_tests={"tests/test_hidden.py": "from payclient.retry import attempts\n\n\n"
                          "def test_hidden_cap(observe):\n    observe([attempts(n) for n in range(300)])\n"},
            filler=[Commit("util: add a helper", {"payclient/util.py": "X = 1\n"})],
            fact_tokens=(str(cap),),
            **prose(f"""
            -- statement
            Payments fail after a couple of gateway hiccups; see tests/test_repro.py.
            -- fact
            The gateway allows {cap} retries.
            -- conventional_guess
            MAX_RETRIES = 3
            -- intro_msg_fact
            retry: the gateway allows {cap} retries
            -- intro_msg_plain
            retry: add a cap
            -- refactor_msg
            retry: add describe()
            -- K {k_file}
            - The gateway allows {cap} retries per payment.
            -- F
            - (review) Retries are capped at {cap}, not 3.
            -- X
            ## Refund retries
            Fix: refunds retry up to {cap} times, like payments.
            -- docs/adr/0003-retries.md
            # ADR-0003: Retries

            Status: {superseded}

            Payments were retried three times.{see}
            """),
        )
        if source == "H" and flaw == "extra_commit":
            story = replace(story, filler=[*story.filler, Commit("util: tidy", {"payclient/util.py": "X = 2\n"})])
        if source == "H" and flaw == "touched":
            story = replace(story, filler=[Commit("util: add a helper", {"payclient/util.py": "X = 1\n",
                                                                         "README.md": README})])
        return story

    return Family(family="shape-fixture", bottleneck="knowledge-missing", description="retries the gateway allows",
                  variants=(0,), draw=lambda variant: 17, tell=tell, by_source=True)
