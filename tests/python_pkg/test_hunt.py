"""flashref.hunt and verify(capabilities=...): a callable that declares fp32/fp16 forward only is never called
outside that space and every hunt draw is judged; a broken callable (the scale applied twice) is found, clustered as
wrong and shrunk; an --impl string hunts a mutant; findings are written under out; Ctrl-C in the callable stops the
hunt and is re-raised, leaving no findings."""

import json

import pytest

import flashref

CAPS = {"format": "flashref-capabilities/1", "ops": {"fwd": {"dtypes": ["fp32", "fp16"], "topk": "none"}}}


def _inside(c):
    assert c.op == "fwd" and c.dtype in ("fp32", "fp16"), (c.op, c.dtype)
    assert c.topk_indices is None


def correct(c):
    _inside(c)
    return c.attention()


def test_hunt_correct_callable_every_draw_judged():
    f = flashref.hunt(correct, budget=0, max_draws=12, seed=5, capabilities=CAPS)
    assert f["format"] == "flashref-hunt/1" and f["draws"] == 12
    assert f["judged"] == 12 and f["judged_share"] == 1.0, f
    assert f["clusters"] == [], f["clusters"]


def test_hunt_broken_callable_found_and_shrunk(tmp_path):
    def broken(c):
        _inside(c)
        return c.attention(scale=c.scale * 2)

    f = flashref.hunt(broken, budget=0, max_draws=8, seed=5, capabilities=CAPS, max_shrink=1, out=tmp_path / "h")
    assert f["clusters"], f
    c = f["clusters"][0]
    assert c["kind"] == "wrong" and c["verdict"] == "FAIL" and c["shrink_runs"] > 0, c
    on_disk = json.loads((tmp_path / "h" / "findings.json").read_text())
    assert on_disk["clusters"][0]["diagnosis"] == c["diagnosis"]
    assert (tmp_path / "h" / "findings.markdown").read_text().startswith("# flashref hunt")
    assert (tmp_path / "h" / "cluster_1" / "case" / "case.json").exists()
    assert "no repro hook" in c["repro_note"]


def test_hunt_impl_string():
    f = flashref.hunt("mutant:gqa-mod", budget=0, max_draws=20, seed=3, max_shrink=0)
    assert any(c["diagnosis"] == "gqa-map" for c in f["clusters"]), f["clusters"]


def test_verify_skips_outside_the_declaration():
    seen = []

    def impl(c):
        seen.append((c.op, c.dtype))
        return c.attention()

    r = flashref.verify(impl, set="quick", capabilities=CAPS)
    assert seen and all(op == "fwd" and dt in ("fp32", "fp16") for op, dt in seen)
    skipped = [x for x in r if x.verdict == "SKIP" and "outside the declared capabilities" in x.why]
    assert skipped, r.summary()
    with pytest.raises(flashref.FlashrefError):
        flashref.verify(impl, set="quick", capabilities={"format": "flashref-capabilities/1", "ops": {"fwd": 3}})


def test_hunt_interrupted(tmp_path):
    calls = []

    def impl(c):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return c.attention()

    with pytest.raises(KeyboardInterrupt):
        flashref.hunt(impl, budget=600, seed=5, capabilities=CAPS, out=tmp_path / "h")
    assert len(calls) == 3
    assert not (tmp_path / "h" / "findings.json").exists()
    assert [p.name for p in (tmp_path / "h").iterdir()] == []  # the staging folder is gone too
