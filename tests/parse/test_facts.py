"""The built-in judge's completeness check: every fact of a statement must be on the page it cites."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.builtin import facts as facts_mod, rationale_contradicts_label
from sourcecheckup.judges.builtin.facts import FACT_BREAKS, PAGE_SENTENCES, split_facts
from sourcecheckup.models import Label, decided_by
from tests.support.paths import ROOT

# a cited web page as the app reads it: title, navigation, the article, the footer
PAGE = """(meta data) TITLE: Dana Whitlock: a life on stage and screen - The Northern Courier
Skip to content
Home | News | Arts | Sport
# Dana Whitlock: a life on stage and screen
By Ruth Calder, 12 March 2019
Dana Whitlock was born in Leeds in 1961 and trained at the Bristol Old Vic Theatre School.
She joined the Royal Shakespeare Company in 1984, where she played Rosalind in As You Like It.
Her first film role came in 1989, in the drama The Quiet Harbour.
She went on to appear in The Long Field (1994) and Winter Lights (2001).
In 2006 she won the Laurence Olivier Award for Best Actress for her role in The Glass Menagerie.
Whitlock has taught acting at the Leeds Conservatoire since 2012.
She lives in Harrogate with her husband, the composer Martin Hale.
Related stories
Share this article
\u00a9 The Northern Courier 2019"""


@pytest.fixture(scope="module")
def judge():
    """The screen's completeness gate (the default judge's reader decides on whole pages: its own tests below)."""
    return make_judge("builtin:screen")


@pytest.fixture(scope="module")
def default_judge():
    return make_judge("builtin")


@pytest.mark.parametrize("rule", FACT_BREAKS, ids=[f"{b.kind}:{b.example[:30]}" for b in FACT_BREAKS])
def test_each_splitting_rule_splits_its_own_example(rule):
    assert len(split_facts(rule.example)) >= 2, rule


def test_a_short_piece_without_a_name_or_figure_stays_with_its_clause():
    assert split_facts("The couple married in New York, and their son was born the next year.") == [
        "The couple married in New York", "their son was born the next year"]
    assert split_facts("Adults can take 200 mg every 4 to 6 hours.") == ["Adults can take 200 mg every 4 to 6 hours"]


def test_a_page_that_backs_every_fact_supports_the_statement(judge):
    for statement in ("In 2006 she won the Laurence Olivier Award for Best Actress for her role in The Glass Menagerie.",
                      "She was born in Leeds in 1961 and trained at the Bristol Old Vic Theatre School.",
                      "Whitlock has taught acting at the Leeds Conservatoire since 2012."):
        v = judge.score_pairs([(statement, SourceText.from_text(PAGE))])[0]
        assert v.label is Label.SUPPORTED, (statement, v.rationale)
        assert "does not hold every part" not in v.rationale


def test_a_page_that_backs_one_fact_of_two_does_not_support_and_the_rationale_names_the_missing_part(judge):
    statement = ("In 2006 she won the Laurence Olivier Award for Best Actress, and in 2010 she received "
                 "an honorary doctorate from the University of York.")
    v = judge.score_pairs([(statement, SourceText.from_text(PAGE))])[0]
    assert v.label is Label.NOT_SUPPORTED
    assert v.rationale.startswith("not supported: the page does not hold every part of the statement")
    assert "'in 2010 she received an honorary doctorate from the University of York'" in v.rationale
    assert "University" in v.rationale and "York" in v.rationale


def test_a_missing_figure_alone_is_named(judge):
    v = judge.score_pairs([("Her first film role came in 1987, in the drama The Quiet Harbour.",
                            SourceText.from_text(PAGE))])[0]
    assert v.label is Label.NOT_SUPPORTED, v.rationale


def test_the_default_judge_reads_the_page_and_a_year_the_page_never_gives_rules_support_out(default_judge):
    page = SourceText.from_text(PAGE)
    (v,) = default_judge.score_pairs([("Her first film role came in 1987, in the drama The Quiet Harbour.", page)])
    assert v.label is Label.NOT_SUPPORTED and decided_by(v.flags) == "figure" and v.review_first, v.rationale
    assert v.rationale.startswith("not supported: the page never gives 1987")
    (v,) = default_judge.score_pairs([("Her first film role came in 1989, in the drama The Quiet Harbour.", page)])
    assert v.label is Label.SUPPORTED and decided_by(v.flags) == "reader_page", v.rationale
    # the end of a year range is no figure of its own ("2018–19" where a page says "2018-2019")
    (a,) = default_judge.analyse_pairs([("She toured in the 1989–90 season.",
                                         SourceText.from_text(PAGE.replace("in 1989,", "in the 1989-1990 season,")))])
    assert a.facts is not None and a.facts.absent_figures("She toured in the 1989–90 season.") == []
    for statement in ("In 2006 she won the Laurence Olivier Award for Best Actress, and in 2010 she received "
                      "an honorary doctorate from the University of York.",
                      ):
        (v,) = default_judge.score_pairs([(statement, page)])
        assert v.label is Label.NOT_SUPPORTED, (statement, v.rationale)
    # a name the page never gives, or a weak fact just above the gate's threshold, leaves a supported verdict to a
    # person, and the rationale names the part (the page gate passes these joined claims at 0.57-0.60; vetoing
    # every missing name would cost 0.03 on WiCE dev)
    for statement, part in (("She joined the Royal Shakespeare Company in 1984 and later won an Oscar.",
                             "'later won an Oscar' (Oscar found nowhere on the page)"),
                            ("Whitlock joined the Royal Shakespeare Company in 1984 and has since appeared in over "
                             "fifty films.", "'has since appeared in over fifty films' (fifty, films found nowhere")):
        (v,) = default_judge.score_pairs([(statement, page)])
        assert v.label is Label.NOT_SUPPORTED or v.review_first, v.rationale
        assert v.label is Label.NOT_SUPPORTED or f"review first: the page may not hold all of {part}" in v.rationale, \
            v.rationale
        assert not rationale_contradicts_label(v.label, v.rationale)


def test_the_gate_reads_whole_pages_not_short_excerpts(judge):
    excerpt = "Dana Whitlock was born in Leeds in 1961. She trained at the Bristol Old Vic Theatre School."
    (short,) = judge.analyse_pairs([("She was born in Leeds.", SourceText.from_text(excerpt))])
    (page,) = judge.analyse_pairs([("She was born in Leeds.", SourceText.from_text(PAGE))])
    assert short.facts is None
    assert page.facts is not None and len(SourceText.from_text(PAGE).passages) > 0
    assert PAGE_SENTENCES <= len(PAGE.splitlines())


def test_without_the_embedding_model_the_lexical_gate_still_rules_partial_support_out():
    lexical = make_judge("builtin", use_embeddings=False)
    statement = ("In 2006 she won the Laurence Olivier Award for Best Actress, and in 2010 she received "
                 "an honorary doctorate from the University of York.")
    v = lexical.score_pairs([(statement, SourceText.from_text(PAGE))])[0]
    assert v.label is Label.NOT_SUPPORTED and v.model_version.endswith("/lexical")


def test_a_threshold_in_the_spec_also_applies_on_a_page():
    strict = make_judge("builtin:0.99")
    v = strict.score_pairs([("Whitlock has taught acting at the Leeds Conservatoire since 2012.",
                             SourceText.from_text(PAGE))])[0]
    assert v.label is Label.NOT_SUPPORTED or v.score >= 0.99


def test_verify_pairs_writes_review_first_for_each_pair(tmp_path):
    from sourcecheckup.cli import main

    pairs = tmp_path / "pairs.jsonl"
    rows = [{"id": "a", "claim": "Whitlock has taught acting at the Leeds Conservatoire since 2012.", "evidence": PAGE},
            {"id": "b", "claim": "Whitlock joined the Royal Shakespeare Company in 1984 and has since appeared "
                                 "in over fifty films.", "evidence": PAGE}]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["verify-pairs", str(pairs), "--judge", "builtin", "-o", str(out), "-q"]) == 0
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["id"] for g in got] == ["a", "b"]
    assert all(isinstance(g["review_first"], bool) for g in got)
    assert got[0]["label"] == "supported" and got[0]["review_first"] is False
    # the second holds a fact the page never gives: never a plain "supported"
    assert got[1]["label"] == "not_supported" or got[1]["review_first"] is True


def test_the_gate_was_trained_on_wice_and_its_cross_validated_figure_is_recorded():
    from sourcecheckup.judges.builtin import load_params

    meta = load_params().meta["facts_training"]
    assert meta["file"] == "wice_dev.jsonl" and meta["page_sentences"] == facts_mod.PAGE_SENTENCES
    assert meta["facts"]["cv_balanced_accuracy"] >= 0.75


def test_no_verdict_on_the_smoke_pairs_or_a_page_has_a_rationale_that_contradicts_its_label(judge):

    from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label

    assert rationale_contradicts_label(Label.SUPPORTED, "not supported: the page does not hold every part of it.")
    assert rationale_contradicts_label(Label.NOT_SUPPORTED, "Best passage shares 90%; no inconsistency found.")
    smoke = ROOT.parent / "shared" / "data" / "smoke" / "quantity_smoke.jsonl"
    rows = [json.loads(line) for line in smoke.read_text(encoding="utf-8").splitlines()] if smoke.is_file() else []
    pairs = [(r["claim"], SourceText.from_text(r["evidence"])) for r in rows]
    pairs += [(s, SourceText.from_text(PAGE)) for s in split_facts(PAGE.replace("\n", " "))[:20]]
    for (statement, _), v in zip(pairs, judge.score_pairs(pairs)):
        assert not rationale_contradicts_label(v.label, v.rationale), (statement, v.label, v.rationale)
