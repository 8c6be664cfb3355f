"""Answers as people have them: HTML pasted from a chat app, a saved chat page, ChatGPT's and Claude's
exports, Word documents and PDFs. Each gives the statements and statement-to-source links of the same
answer written in Markdown; every link of a pasted page is kept or reported; each type audits end to end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.ingest import load_path, load_text
from sourcecheckup.ingest.pages import load_html
from sourcecheckup.ingest.paste import read_pasted_html
from sourcecheckup.ingest.records import InputText
from sourcecheckup.ingest.redirects import unwrap_redirect
from sourcecheckup.models import Response
from sourcecheckup.parse import BuiltinParser
from tests.support.documents import build_docx, build_pdf
from tests.support.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
PASTE_SHAPES = ["perplexity", "chatgpt", "copilot", "gemini", "references", "references_unlinked"]
BP_GUIDELINE = "https://www.ahajournals.org/doi/10.1161/HYP.0000000000000065"
BP_PDF_LINES = [
    [("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher, per ", None),
     ("the ACC/AHA guideline", BP_GUIDELINE), (".", None)],
    [("The DASH diet can lower systolic blood pressure by about 11 mm Hg, see "
      "https://www.nhlbi.nih.gov/education/dash-eating-plan.", None)],
    [("Cutting sodium to less than 1,500 mg a day lowers it further (PMID: 11136953).", None)],
    [("Regular aerobic exercise also helps ", None),
     ("(NHS)", "https://www.nhs.uk/conditions/high-blood-pressure-hypertension/prevention/"), (".", None)],
]


def statement_links(response: Response) -> list[tuple[str, frozenset[str]]]:
    """Each statement as a reader sees it, with the URLs of the sources it cites."""
    return [(s.text, frozenset(response.citations[i] for i in s.cited))
            for s in BuiltinParser().parse_sync(response)]


def markdown_answer(path: Path) -> Response:
    (response,) = load_text(path.read_text(encoding="utf-8")).responses
    return response


def assert_same_answer(got: Response, markdown: Response) -> None:
    assert statement_links(got) == statement_links(markdown)
    assert set(got.citations) == set(markdown.citations)
    assert any(cited for _, cited in statement_links(got)), "the answer should cite something"


# --------------------------------------------------------------------------- rich paste


@pytest.mark.parametrize("shape", PASTE_SHAPES)
def test_pasted_html_of_each_chat_app_gives_the_statements_and_sources_of_its_markdown_form(shape: str) -> None:
    html = (FIXTURES / "paste" / f"{shape}.html").read_text(encoding="utf-8")
    page = read_pasted_html(html)
    assert page is not None
    (pasted,) = page.result.responses
    assert_same_answer(pasted, markdown_answer(FIXTURES / "paste" / f"{shape}.md"))
    # the box shows Markdown that, read again at Audit, is the same answer
    (reread,) = load_text(page.markdown).responses
    assert statement_links(reread) == statement_links(pasted)
    assert page.summary.startswith(f"{page.statements} statements, {len(pasted.citations)} sources from the pasted page")


def test_numbered_markers_keep_their_own_source_not_the_nth_of_the_page() -> None:
    # Copilot's [2][3] after the NSAID sentence are the FDA and ACOG pages, unwrapped from their trackers
    page = read_pasted_html((FIXTURES / "paste" / "copilot.html").read_text(encoding="utf-8"))
    links = dict(statement_links(page.result.responses[0]))
    nsaids = next(text for text in links if text.startswith("Ibuprofen and other NSAIDs"))
    assert {u.split("/")[2] for u in links[nsaids]} == {"www.fda.gov", "www.acog.org"}


def test_written_references_keep_their_dois_and_pmids_and_the_reference_as_written() -> None:
    page = read_pasted_html((FIXTURES / "paste" / "references.html").read_text(encoding="utf-8"))
    (answer,) = page.result.responses
    assert answer.citations[:2] == ("https://doi.org/10.1056/NEJMoa073286", "https://pubmed.ncbi.nlm.nih.gov/31335359/")
    assert answer.references[0].startswith("Allen KJ, Gurrin LC, Constantine CC, et al. Iron-overload-related disease")
    assert "References" not in answer.text and "^" not in answer.text


def test_every_link_in_a_pasted_page_is_kept_or_reported_with_why() -> None:
    html = (FIXTURES / "paste" / "tracking_and_hidden.html").read_text(encoding="utf-8")
    page = read_pasted_html(html)
    assert page is not None
    fates = {f.href: f for f in page.links}
    kept = {href: f.url for href, f in fates.items() if f.kept}
    assert kept == {
        "https://www.google.com/url?q=https%3A%2F%2Fwww.nhs.uk%2Fconditions%2Freyes-syndrome%2F&sa=D&source=docs":
            "https://www.nhs.uk/conditions/reyes-syndrome/",
        "https://l.facebook.com/l.php?u=https%3A%2F%2Fwww.medicinesforchildren.org.uk%2Fmedicines%2Fibuprofen-for-pain-"
        "and-fever%2F&h=AT3xyz&s=1": "https://www.medicinesforchildren.org.uk/medicines/ibuprofen-for-pain-and-fever/",
        "https://eur01.safelinks.protection.outlook.com/?url=https%3A%2F%2Fbnfc.nice.org.uk%2Fdrugs%2Fparacetamol%2F"
        "&data=05%7C02%7C&sdata=abc%3D&reserved=0": "https://bnfc.nice.org.uk/drugs/paracetamol/",
        "https://www.nhs.uk/medicines/ibuprofen-for-children/": "https://www.nhs.uk/medicines/ibuprofen-for-children/",
    }
    left_out = {href: f.how for href, f in fates.items() if not f.kept}
    assert left_out == {
        "https://ads.example/hidden-offer": "left out: inside a hidden element, a script or a button",
        "https://hidden.example/attribute": "left out: inside a hidden element, a script or a button",
        "https://screenreader.example/only": "left out: inside a hidden element, a script or a button",
        "https://noscript.example/": "left out: inside a hidden element, a script or a button",
        "https://button.example/": "left out: inside a hidden element, a script or a button",
        "mailto:pharmacy@example.org": "left out: not a web address (mailto:)",
        "tel:+441234567890": "left out: not a web address (tel:)",
        "javascript:void(0)": "left out: not a web address (javascript:)",
        "/local/help": "left out: a relative link with no page address to read it against",
        "#top": "left out: it points at #top in the page, which is not there",
        "#missing-note": "left out: it points at #missing-note in the page, which is not there",
    }
    # every <a href> of the page is one of the two (a link written by a script is not a link of the page)
    assert len(page.links) == html.count("<a href=") - 1 == len(kept) + len(left_out)
    assert "hidden offer" not in page.markdown and "screen-reader" not in page.markdown
    assert page.summary == "4 statements, 4 sources from the pasted page; 11 link(s) left out"
    # the file import reports the same links in its notes
    result, _ = load_html(InputText(html, "pasted.html", "pasted", None, None), whole_page=True)
    assert "pasted.html: 4 of 15 link(s) kept as citations or markers" in result.notes
    assert "pasted.html: link mailto:pharmacy@example.org (e-mail the pharmacy) left out: not a web address (mailto:)" \
        in result.notes


@pytest.mark.parametrize(("href", "target", "via"), [
    ("https://www.google.com/url?q=https://www.cdc.gov/flu/&sa=D", "https://www.cdc.gov/flu/", "google.com"),
    ("https://www.google.co.uk/url?url=https%3A%2F%2Fwww.nhs.uk%2F&rct=j", "https://www.nhs.uk/", "google.com"),
    ("https://l.facebook.com/l.php?u=https%3A%2F%2Fwww.who.int%2F&h=AT0", "https://www.who.int/", "l.facebook.com"),
    ("https://nam12.safelinks.protection.outlook.com/?url=https%3A%2F%2Fwww.google.com%2Furl%3Fq%3Dhttps%3A%2F%2F"
     "www.nice.org.uk%2F&data=05", "https://www.nice.org.uk/", "Outlook safelinks"),
    ("https://www.youtube.com/redirect?q=https://www.bmj.com/&v=1", "https://www.bmj.com/", "YouTube"),
    ("https://www.google.com/search?q=metformin", "https://www.google.com/search?q=metformin", None),
    ("https://l.facebook.com/l.php?u=javascript:alert(1)", "https://l.facebook.com/l.php?u=javascript:alert(1)", None),
])
def test_tracking_redirects_are_unwrapped_to_the_page_they_lead_to(href: str, target: str, via: str | None) -> None:
    assert unwrap_redirect(href) == (target, via)


def test_html_without_links_pastes_as_plain_text() -> None:
    assert read_pasted_html("<p>Metformin is <b>first-line</b> for type 2 diabetes.</p>") is None


def test_a_saved_chat_page_gives_one_answer_per_turn_with_its_question() -> None:
    result = load_path(FIXTURES / "pages" / "chatgpt_saved_page.html")
    first, second = result.responses
    assert (first.question, first.model) == ("Do statins commonly cause muscle pain?", "ChatGPT")
    assert second.question == "What should I do if I get muscle pain on a statin?"
    assert_same_answer(first, markdown_answer(FIXTURES / "pages" / "chatgpt_saved_page.md"))
    # a turn written in two parts (split by "Thought for 4s") is one answer
    assert_same_answer(second, markdown_answer(FIXTURES / "pages" / "chatgpt_saved_page_2.md"))
    assert "New chat" not in first.text and "Copy" not in first.text and "ChatGPT said" not in first.text
    assert "chatgpt_saved_page.html: read as a saved ChatGPT page: 2 answer(s)" in result.notes
    assert ("chatgpt_saved_page.html: link https://help.openai.com/ (Help) left out: outside the answers "
            "(the page's navigation, sidebar or questions)") in result.notes


# --------------------------------------------------------------------------- chat exports


def test_chatgpt_export_makes_one_answer_per_assistant_turn_on_the_branch_shown() -> None:
    result = load_path(FIXTURES / "exports" / "chatgpt_conversations.json")
    assert [r.id for r in result.responses] == [
        "metformin-and-kidney-function-1", "metformin-and-kidney-function-2", "painkillers-in-pregnancy-1"]
    for response in result.responses:
        expected = markdown_answer(FIXTURES / "exports" / "as_markdown" / f"{response.id}.md")
        assert (response.question, response.model) == (expected.question, expected.model)
        assert_same_answer(response, expected)
    first = result.responses[0]
    assert first.extra["conversation"] == "Metformin and kidney function"
    assert first.extra["created"] == "2024-06-03T07:33:25+00:00"
    assert "regenerated" not in first.text and "\ue200" not in first.text
    assert [(s.origin, s.problem) for s in result.skipped] == [
        ("chatgpt_conversations.json conversation 2 (Painkillers in pregnancy) turn 2",
         "the assistant's turn has no answer text (multimodal_text)"),
        ("chatgpt_conversations.json conversation 3 (New chat)", "no assistant answer in this conversation"),
    ]
    assert result.notes == [
        "chatgpt_conversations.json conversation 1 (Metformin and kidney function): left out 1 answer(s) on other "
        "branches (regenerated or edited), 2 tool call(s), tool result(s) or reasoning step(s), 1 search result(s) "
        "the answers did not cite",
        "chatgpt_conversations.json: read as a ChatGPT export: 3 conversation(s), 3 answer(s), 2 skipped",
    ]


def test_claude_export_cites_each_text_block_its_own_sources() -> None:
    result = load_path(FIXTURES / "exports" / "claude_conversations.json")
    assert [r.id for r in result.responses] == ["vitamin-d-in-older-adults-1", "vitamin-d-in-older-adults-2"]
    for response in result.responses:
        expected = markdown_answer(FIXTURES / "exports" / "as_markdown" / f"{response.id}.md")
        assert response.question == expected.question
        assert_same_answer(response, expected)
    assert "search first" not in result.responses[0].text      # Claude's thinking is not the answer
    assert [(s.origin, s.problem) for s in result.skipped] == [
        ("claude_conversations.json conversation 1 (Vitamin D in older adults) turn 3", "the assistant's message has no text")]


def test_an_export_with_a_broken_conversation_keeps_the_others(tmp_path: Path) -> None:
    conversations = json.loads((FIXTURES / "exports" / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    conversations.insert(1, "not a conversation")
    conversations.insert(2, {"title": "Empty", "mapping": {}})
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations), encoding="utf-8")
    result = load_path(path)
    assert len(result.responses) == 3
    assert ("conversations.json conversation 2", "a conversation is a str, expected an object") in \
        [(s.origin, s.problem) for s in result.skipped]
    assert ("conversations.json conversation 3 (Empty)", "'mapping' holds no messages") in \
        [(s.origin, s.problem) for s in result.skipped]


# --------------------------------------------------------------------------- documents


def test_a_word_answer_keeps_hyperlinks_fields_footnotes_and_endnotes(tmp_path: Path) -> None:
    path = build_docx("af_answer", tmp_path / "af answer.docx")
    result = load_path(path)
    (answer,) = result.responses
    assert_same_answer(answer, markdown_answer(FIXTURES / "documents" / "af_answer.md"))
    assert answer.extra["document_title"] == "Anticoagulation in atrial fibrillation"
    assert result.notes == ["af answer.docx: read as a Word document: 4 citation(s)"]


def test_a_pdf_answer_cites_its_link_annotations_where_their_words_stand(tmp_path: Path) -> None:
    path = build_pdf(BP_PDF_LINES, tmp_path / "bp.pdf", title="Blood pressure answer")
    (answer,) = load_path(path).responses
    assert_same_answer(answer, markdown_answer(FIXTURES / "documents" / "bp_answer.md"))
    assert answer.extra["document_title"] == "Blood pressure answer"


@pytest.mark.parametrize("name", ["broken.docx", "broken.pdf"])
def test_a_damaged_document_is_a_skipped_record_not_a_crash(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04 this is not really a document")
    result = load_path(path)
    assert result.responses == []
    (skipped,) = result.skipped
    assert skipped.origin == name and skipped.problem.startswith("not a readable ")


# --------------------------------------------------------------------------- end to end in the CLI


def _site_inputs(tmp_path: Path, site: str) -> dict[str, Path]:
    """Each new input type, its sources moved to the fixture site's pages."""
    moved = {
        "https://www.thelancet.com/journals/lancet/article/PIIS0140-6736(22)01545-8/fulltext?utm_source=chatgpt.com":
            f"{site}/article/hypertension",
        "https://www.nhs.uk/conditions/statins/side-effects/": f"{site}/article/metformin-lactic-acidosis",
        "https://www.fda.gov/drugs/drug-safety-and-availability/fda-drug-safety-communication-fda-revises-warnings-"
        "regarding-use-diabetes-medicine-metformin-certain?utm_source=chatgpt.com": f"{site}/article/metformin-lactic-acidosis",
        "https://www.nhs.uk/conditions/vitamins-and-minerals/vitamin-d/": f"{site}/article/hypertension",
        "https://www.nice.org.uk/guidance/ng196": f"{site}/article/hypertension",
    }

    def moved_text(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        for old, new in moved.items():
            text = text.replace(old, new).replace(json.dumps(old)[1:-1], new)
        return text

    out = {}
    for name, source in (("page.html", FIXTURES / "pages" / "chatgpt_saved_page.html"),
                         ("chatgpt.json", FIXTURES / "exports" / "chatgpt_conversations.json"),
                         ("claude.json", FIXTURES / "exports" / "claude_conversations.json")):
        out[name] = tmp_path / name
        out[name].write_text(moved_text(source), encoding="utf-8")
    out["answer.docx"] = build_docx("af_answer", tmp_path / "answer.docx", replace=moved)
    out["answer.pdf"] = build_pdf([[("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher ", None),
                                    ("(ACC/AHA)", f"{site}/article/hypertension"), (".", None)]], tmp_path / "answer.pdf")
    return out


@pytest.mark.parametrize("kind", ["page.html", "chatgpt.json", "claude.json", "answer.docx", "answer.pdf"])
def test_each_new_input_type_audits_end_to_end_in_the_cli(tmp_path: Path, site: str, kind: str) -> None:
    path = _site_inputs(tmp_path, site)[kind]
    out = tmp_path / "report.json"
    env = {**os.environ, "SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(path), "--judge", "keyword:0",
                        "--db", str(tmp_path / "a.db"), "--allow-host", "127.0.0.1", "--browser", "never",
                        "--report", str(out)], cwd=ROOT, env=env, text=True, capture_output=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert f"{path.name}: read as " in p.stderr        # the import says what it found
    report = json.loads(out.read_text())
    assert report["responses"] and all(r["statements"] for r in report["responses"])
    fetched = {s["url"]: s["status"] for r in report["responses"] for s in r["sources"]}
    assert fetched.get(f"{site}/article/hypertension", fetched.get(f"{site}/article/metformin-lactic-acidosis")) == "ok"
    verdicts = [v for r in report["responses"] for st in r["statements"] for v in st["verdicts"]]
    assert verdicts, "some statement was judged against a fetched source"


def test_a_citation_pill_that_counts_more_sources_than_it_links_says_so() -> None:
    # ChatGPT's "NHS +1" pill links one page; the other source is only in the app, not on the clipboard
    page = read_pasted_html((FIXTURES / "paste" / "chatgpt.html").read_text(encoding="utf-8"))
    assert page.behind_pills == 1
    assert page.summary.endswith("; 1 more source(s) behind citation pills were not copied")
    assert any("1 more source(s) stand behind citation pills" in note for note in page.result.notes)


@pytest.mark.parametrize("conversation", [
    {"title": "odd content", "current_node": "a", "mapping": {"a": {"id": "a", "parent": None, "children": [],
        "message": {"author": {"role": "assistant"}, "content": ["not", "an", "object"], "metadata": []}}}},
    {"title": "odd metadata", "current_node": "a", "mapping": {"a": {"id": "a", "parent": None, "children": [],
        "message": {"author": {"role": "assistant"}, "content": {"parts": ["Metformin is first-line."]},
                    "metadata": {"content_references": 7, "citations": "x", "model_slug": ["gpt"]},
                    "create_time": 1e300}}}},
    {"title": "a cycle", "current_node": "a", "mapping": {"a": {"parent": "b", "message": None},
                                                          "b": {"parent": "a", "message": None}}},
])
def test_an_export_conversation_of_an_odd_shape_is_read_or_skipped_never_a_crash(tmp_path: Path, conversation) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    result = load_path(path)
    assert len(result.responses) + len(result.skipped) >= 1
    for r in result.responses:
        assert r.text == "Metformin is first-line." and r.model is None
