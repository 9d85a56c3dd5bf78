"""Fresh private sets: seeds, digests, fresh facts, names and draws, and the CLI end to end."""

from __future__ import annotations

import dataclasses
import json
import keyword
import os
import subprocess
import sys
import tomllib

import pytest

from sdebench.generation import fresh, generate
from sdebench.generation.fresh import FreshFamily, SeedError, derive
from sdebench.generation.generate import load_generator
from sdebench.generation.seeded import entry_order, salted
from sdebench.generation.spec import Memory
from sdebench.generation.validate import check_placement, head_tree
from sdebench.tasks.artifacts import artifact_kind
from tests.helpers import ROOT

SEED_A = "Gq7v2Lr9XkTz0bWm4NsY8cHd1pJf6uEa3RiKoVx5"
SEED_B = "tR4mZ8qN1vXc6LbK0sHy3GwJ9dPf2aEu7ViOkTnM"
FAMILIES = {"ttlcache": "ttlcache.py", "inventory-reorder": "inventory_reorder.py"}


@pytest.fixture(scope="module")
def keys():
    return derive(SEED_A), derive(SEED_B)


def family(name: str):
    return load_generator(ROOT / "generators" / FAMILIES[name])


def _cli(*args, cwd=ROOT, stdin=None):
    return subprocess.run([sys.executable, "-m", "sdebench.generate", "--no-progress", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, input=stdin)


# --- seeds and digests ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["", "hunter2", "a" * 200, "correct horse battery staple", "0123456789abcdef" * 2,
                                  SEED_A[:20] + "\n" + SEED_A[20:]])
def test_weak_or_malformed_seeds_are_refused(seed):
    with pytest.raises(SeedError) as e:
        derive(seed)
    assert seed.strip() == "" or seed not in str(e.value)


def test_a_bad_seed_is_a_one_line_error_that_does_not_echo_it(tmp_path, capsys):
    def run(*args):
        code = generate.main(["--no-progress", *args])
        return code, capsys.readouterr().err

    code, err = run("--fresh", "hunter2hunter2", "--out", str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1 and "too weak" in err
    assert "hunter2" not in err and not (tmp_path / "out").exists()
    code, err = run("--fresh", f"@{tmp_path / 'missing'}", "--out", str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1 and "cannot read the seed file" in err
    code, err = run("--fresh", SEED_A)
    assert code == 2 and "--fresh needs --out" in err


def test_digest_is_stable_and_keyed_and_reveals_no_key(keys):
    a, b = keys
    assert derive(SEED_A) == a and a.digest != b.digest
    assert a.digest.startswith("fresh1:") and len(a.digest) == len("fresh1:") + 64
    assert SEED_A not in a.digest and a.key.hex() not in a.digest
    assert a.key.hex() not in repr(a) and a.token("x") != b.token("x") and a.token("x") != a.token("y")


def test_new_seed_is_strong_and_new(capsys):
    assert generate.main(["--new-seed"]) == 0
    assert generate.main(["--new-seed"]) == 0
    s1, s2 = capsys.readouterr().out.split()
    assert s1 != s2
    derive(s1)  # strong enough


def test_seed_from_stdin(keys):
    r = subprocess.run([sys.executable, "-c", "from sdebench.generation.fresh import read_seed, derive;"
                        "print(derive(read_seed('-')).digest)"], input=SEED_A + "\n", capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.strip() == keys[0].digest


# --- fresh specs (no sandbox) --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_same_seed_same_spec_other_seed_other_fact(keys, name):
    gen = family(name)
    a, a2, b = FreshFamily(gen, keys[0]), FreshFamily(gen, derive(SEED_A)), FreshFamily(gen, keys[1])
    published = {gen.fact(v) for v in gen.variants}
    drawable = {v for v, _ in gen.space.draw}
    for v in gen.variants[:1 if name == "inventory-reorder" else 2]:
        assert a.build(v, "K") == a2.build(v, "K")
        assert a.fact(v) != b.fact(v)
        assert a.fact(v) in drawable and a.fact(v) not in published
        spec = a.build(v, "K")
        assert spec.set_digest == keys[0].digest and check_placement(spec) == []
        assert spec.task_id == f"{gen.family}-v{v}-K"  # the id names neither the seed nor the fact


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_project_names_are_replaced_everywhere(keys, name):
    gen = family(name)
    published = gen.build(0, "H")
    originals = fresh.project_names(published)
    spec = FreshFamily(gen, keys[0]).build(0, "H")
    new = FreshFamily(gen, keys[0]).names(0)
    assert sorted(new) == sorted(originals) and originals
    text = "\n".join(fresh.spec_texts(spec))
    words = set(fresh._WORD.findall(text))
    for old in originals:
        assert old not in words and old.capitalize() not in words
    for n in new.values():
        assert n.isidentifier() and not keyword.iskeyword(n) and n not in sys.stdlib_module_names and n in words
    assert any(p.startswith(f"{new[originals[0]]}/") for p in head_tree(spec))


def test_the_name_pool_avoids_reserved_names():
    pool = fresh.name_pool()
    assert len(pool) == len(set(pool)) > 500
    assert not set(pool) & (set(sys.stdlib_module_names) | set(keyword.kwlist) | set(dir(__builtins__)))


def test_a_fresh_name_already_in_the_task_is_refused():
    spec = family("ttlcache").build(0, "K")
    with pytest.raises(ValueError, match="already a word"):
        fresh.rename(spec, {"ratecache": "cache"})


def test_distractor_order_is_drawn_but_the_same_in_every_placement(keys):
    gen = FreshFamily(family("ttlcache"), keys[0])

    def entries(source):
        head = head_tree(gen.build(0, source))
        return {p: head[p].split("\n\n") for p in head if artifact_kind(p) is not None}

    base, k = entries("none"), entries("K")
    for path, parts in base.items():
        assert [e for e in k[path] if e in parts] == parts  # distractors in one order, the fact entry among them
    published = {p: c.split("\n\n") for p, c in head_tree(family("ttlcache").build(0, "none")).items()
                 if artifact_kind(p) is not None}
    renamed = fresh.renamer(gen.names(0))
    assert any([renamed(e) for e in published[p]] != base[p] for p in published)


def test_filler_is_drawn_from_the_seed(keys):
    gen = family("inventory-reorder")
    filler = {p for p in head_tree(gen.build(0, "none")) if p.count("/") >= 2}
    sub = fresh.renamer(FreshFamily(gen, keys[0]).names(0))
    mine = {p for p in head_tree(FreshFamily(gen, keys[0]).build(0, "none")) if p.count("/") >= 2}
    assert len(mine) == len(filler) and mine != {sub(p) for p in filler}


def test_published_builds_are_untouched_by_a_fresh_build(keys):
    gen = family("inventory-reorder")
    before = gen.build(0, "K")
    FreshFamily(gen, keys[0]).build(0, "K")
    assert gen.build(0, "K") == before and before.set_digest is None
    m = Memory()
    for e in ("b", "a", "c"):
        m.add("x.md", e)
    assert m.render() == {"x.md": "b\n\na\n\nc\n"}


def test_a_salted_order_keeps_a_file_title_first():
    entries = ["# ADR-0005: Caching\n\nStatus: Accepted", *[f"- entry {i}" for i in range(8)]]
    for token in ("a", "b", "c"):
        with salted(token):
            got = entry_order("docs/adr/0005-caching.md", entries)
        assert got[0] == entries[0] and sorted(got[1:]) == sorted(entries[1:])
    with salted("a"):
        assert entry_order("docs/adr/0005-caching.md", entries[1:]) != entries[1:]  # the rest is drawn


def test_a_family_without_a_space_is_skipped_in_one_line(tmp_path, keys, capsys):
    gens = tmp_path / "gens"
    gens.mkdir()
    (gens / "nospace.py").write_text(
        "import dataclasses\nfrom pathlib import Path\nfrom sdebench.generation.generate import load_generator\n"
        f"BASE = load_generator(Path({str(ROOT / 'generators' / 'ttlcache.py')!r}))\n"
        "GENERATOR = dataclasses.replace(BASE, family='nospace', space=None)\n")
    with pytest.raises(ValueError, match="declares no fact space"):
        FreshFamily(load_generator(gens / "nospace.py"), keys[0])
    seed = tmp_path / "seed"
    seed.write_text(SEED_A + "\n")
    code = generate.main(["--no-progress", "--generators", str(gens), "--fresh", f"@{seed}", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("nospace: declares no fact space; skipped") == 1 and "nothing to generate" in err


# --- the CLI end to end ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh")
    seed = root / "seed"
    seed.write_text(SEED_A + "\n")
    out = root / "tasks"
    r = _cli("--fresh", f"@{seed}", "--out", str(out), "--families", "inventory-reorder", "--variants", "0",
             "--sources", "K,none")
    return root, seed, out, r


@pytest.mark.slow
def test_fresh_set_is_valid_carries_the_digest_and_regenerates_byte_for_byte(fresh_set, keys):
    root, seed, out, r = fresh_set
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2/2 tasks valid" in r.stderr and "rule 7: inventory-reorder v0" in r.stderr
    assert f"fresh set digest: {keys[0].digest}" in r.stderr
    for tid in ("inventory-reorder-v0-K", "inventory-reorder-v0-none"):
        doc = tomllib.loads((out / tid / "task.toml").read_text())
        assert doc["set_digest"] == keys[0].digest
        assert doc["fact"] != tomllib.loads((ROOT / "tasks" / tid / "task.toml").read_text())["fact"]
    assert keys[0].digest in (out / "README.md").read_text()
    again = _cli("--fresh", f"@{seed}", "--check", "--out", str(out), "--families", "inventory-reorder",
                 "--variants", "0", "--sources", "K,none")
    assert again.returncode == 0 and "check: 2 tasks byte-identical" in again.stderr, again.stderr[-2000:]
    other = _cli("--fresh", SEED_B, "--check", "--out", str(out), "--families", "inventory-reorder",
                 "--variants", "0", "--sources", "K,none")
    assert other.returncode == 1 and "not of this seed's set" in other.stderr and other.stderr.count("\n") == 1


@pytest.mark.slow
def test_the_seed_and_its_keys_are_nowhere_in_the_task_dirs(fresh_set, keys, tmp_path):
    root, seed, out, r = fresh_set
    assert r.returncode == 0, r.stderr[-3000:]
    key = keys[0]
    secrets_ = [SEED_A, key.key.hex(), key.token("kit", "inventory-reorder", 0).hex()]
    secrets_ += [s.encode().hex() for s in secrets_[:1]]
    texts = []
    for p in sorted(out.rglob("*")):
        if p.is_file():
            texts.append(p.read_bytes().decode("latin-1"))
    for bundle in sorted(out.glob("*/repo.bundle")):
        clone = tmp_path / bundle.parent.name
        subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, timeout=120)
        log = subprocess.run(["git", "-C", str(clone), "log", "--all", "-p", "--format=%H%n%B"], capture_output=True,
                             text=True, check=True, timeout=120).stdout
        texts.append(log)
        texts += [p.read_text() for p in clone.rglob("*") if p.is_file() and ".git" not in p.parts]
    blob = "\n".join(texts)
    for s in secrets_:
        assert s not in blob


@pytest.mark.slow
def test_episode_records_of_a_fresh_set_carry_its_digest(fresh_set, keys):
    root, seed, out, r = fresh_set
    assert r.returncode == 0, r.stderr[-3000:]
    results = root / "results"
    run = subprocess.run([sys.executable, "-m", "sdebench.run", "agent=oracle", "delivery=squashed", "source=K",
                          "sandbox=unsafe_local", "progress=false", f"tasks_dir={out}", f"results_dir={results}",
                          f"hydra.run.dir={root / 'hydra'}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted(results.rglob("*.json"))]
    assert len(records) == 1
    for rec in records:
        assert rec["identity"]["set_digest"] == keys[0].digest and rec["outcome"]["resolved"] is True
        assert SEED_A not in json.dumps(rec)


def test_task_toml_set_digest_round_trips_and_is_checked(tmp_path, keys):
    import shutil

    from sdebench.tasks.record import TaskError, load, save_meta

    d = tmp_path / "ttlcache-v0-K"
    shutil.copytree(ROOT / "tasks" / "ttlcache-v0-K", d)
    assert load(d).set_digest is None and "set_digest" not in (d / "task.toml").read_text()
    save_meta(dataclasses.replace(load(d), set_digest=keys[0].digest), d)
    assert load(d).set_digest == keys[0].digest
    (d / "task.toml").write_text((d / "task.toml").read_text().replace(keys[0].digest, "fresh1:abc"))
    with pytest.raises(TaskError, match="set_digest"):
        load(d)
