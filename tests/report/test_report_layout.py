"""The PDF report as a regulator reads it: summary, metrics and method on page 1, no near-empty pages
forced by page breaks before short sections, identifiers never broken across lines."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory) -> Path:
    """The demo's database, its HTML report (demo.html) and its PDF report (demo.pdf)."""
    tmp = tmp_path_factory.mktemp("layout")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "sourcecheckup", "demo", "--db", str(tmp / "demo.db"), "-q",
                          "-o", str(tmp / "demo.html")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    pdf = tmp / "demo.pdf"
    out = subprocess.run([sys.executable, "-m", "sourcecheckup", "report", "--db", str(tmp / "demo.db"),
                          "-o", str(pdf)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return tmp


@pytest.fixture(scope="module")
def demo_pdf(demo_folder) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() for p in PdfReader(str(demo_folder / "demo.pdf")).pages]


@pytest.fixture(scope="module")
def demo_html(demo_folder) -> str:
    return (demo_folder / "demo.html").read_text(encoding="utf-8")


def test_page_one_holds_the_summary_the_metrics_and_the_method(demo_pdf) -> None:
    first = " ".join(demo_pdf[0].split())
    assert "1. Summary" in first and "Contents" not in first
    for metric in ("Source URL validity", "Statement-level support", "Response-level support", "Unused sources"):
        assert metric in first
    # a line may break "Korn-Graubard" at its hyphen
    assert "Method" in first and "Korn-Graubard" in first.replace("- ", "-") and "builtin" in first
    # the next section follows on page one or opens page two: never a near-empty page between them
    assert "2. By model" in first or " ".join(demo_pdf[1].split()).startswith("2. By model")


def test_short_sections_follow_on_and_the_demo_fits_in_few_pages(demo_pdf) -> None:
    # 15 pages when every section started a page and the contents had a page of their own; 12 before the
    # audit trail gained the run's provenance and digests and the summary its with-reviews columns (issue 25)
    assert len(demo_pdf) <= 14
    starts = {n: next(i for i, t in enumerate(demo_pdf) if n in t)
              for n in ("3. Sources", "4. Unsupported statements", "5. Review and validation",
                        "6. Method and audit trail")}
    assert starts["5. Review and validation"] == starts["6. Method and audit trail"]   # short: no page of its own
    for page in demo_pdf[:-1]:
        assert len(page.strip()) > 300                  # no near-empty page before the last


def test_model_names_are_not_broken_inside(demo_pdf) -> None:
    text = "\n".join(demo_pdf)
    assert text.count("llama-3.1-70b") >= 3
    broken = re.findall(r"llama-3\.1-?\s*\n\s*-?70b|llama\s*\n\s*-3\.1|claude-3\.5-\s*\n|claude-\s*\n", text)
    assert not broken


def test_a_summary_card_keeps_its_count_apart_from_what_it_leaves_out(demo_pdf, demo_html) -> None:
    """Issue 41 item 8: "29/33leaves out nothing" in the PDF and the HTML summary cards."""
    first = demo_pdf[0]
    assert "leaves out nothing" in first
    assert not re.search(r"\d/\d+leaves out", first), first
    from sourcecheckup.report.verify_pdf import _Visible

    start = demo_html.index('<div class="metrics">')
    cards = demo_html[start:demo_html.index("</div>\n</div>", start)]
    visible = _Visible()
    visible.feed(cards)
    text = " ".join("".join(visible.parts).split())
    assert re.search(r"\d+/\d+ · leaves out nothing", text) and not re.search(r"\d/\d+leaves", text), text


def test_the_contents_number_each_section_as_its_heading_does(demo_html) -> None:
    """Issue 41 item 9: the contents said 4 References, 5 Unsupported, 7 Method under headings 3a, 4, 6."""
    toc = demo_html[demo_html.index('<nav class="toc"'):demo_html.index("</nav>")]
    listed = {a: re.sub(r"<[^>]+>", "", t) for a, t in re.findall(r'<a href="#([\w-]+)">(.*?)</a>', toc)}
    headings = {a: re.sub(r"<[^>]+>", "", t).strip() for a, t in
                re.findall(r'<(?:h2 class="section"|section) id="([\w-]+)">(?:<h2>)?(.*?)</h2>', demo_html)}
    assert set(listed) <= set(headings) and listed
    for anchor, text in listed.items():
        assert headings[anchor].startswith(text.split(" (")[0]), (text, headings[anchor])
    assert 'class="numbered"' in toc      # the list's own numbers are not shown beside the headings' numbers
    assert "section 6 (Method and audit trail)" in demo_html and headings["method"].startswith("6. Method")
