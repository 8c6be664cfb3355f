"""Cited URLs, DOIs and PMIDs are brought to the one form a fetcher reads."""
from __future__ import annotations

import pytest

from sourcecheckup.urls import dedupe, find_urls, normalise_url


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("doi:10.1056/NEJMoa073286", "https://doi.org/10.1056/NEJMoa073286"),
        ("DOI: 10.1056/NEJMoa073286.", "https://doi.org/10.1056/NEJMoa073286"),
        ("10.1016/S0140-6736(20)30183-5", "https://doi.org/10.1016/S0140-6736(20)30183-5"),
        ("https://dx.doi.org/10.2337/dc11-1734", "https://doi.org/10.2337/dc11-1734"),
        ("http://doi.org/10.2337/dc11-1734", "https://doi.org/10.2337/dc11-1734"),
        ("PMID: 31335359", "https://pubmed.ncbi.nlm.nih.gov/31335359/"),
        ("PMID31335359", "https://pubmed.ncbi.nlm.nih.gov/31335359/"),
        ("www.cdc.gov/measles/index.html", "https://www.cdc.gov/measles/index.html"),
        ("cdc.gov/flu", "https://cdc.gov/flu"),
        ("HTTPS://WWW.NHS.UK/conditions/Statins/", "https://www.nhs.uk/conditions/Statins/"),
    ],
)
def test_dois_pmids_and_scheme_less_hosts_become_https_urls(written: str, expected: str) -> None:
    assert normalise_url(written) == expected


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("<https://www.nhs.uk/conditions/statins/>", "https://www.nhs.uk/conditions/statins/"),
        ("(https://www.nhs.uk/conditions/statins/).", "https://www.nhs.uk/conditions/statins/"),
        ("[https://www.nhs.uk/conditions/statins/]", "https://www.nhs.uk/conditions/statins/"),
        ("https://www.nhs.uk/conditions/statins/,", "https://www.nhs.uk/conditions/statins/"),
        ("**https://www.nhs.uk/conditions/statins/**", "https://www.nhs.uk/conditions/statins/"),
        # brackets that belong to the URL survive
        ("https://en.wikipedia.org/wiki/Haemochromatosis_(disorder)",
         "https://en.wikipedia.org/wiki/Haemochromatosis_(disorder)"),
        ("(https://en.wikipedia.org/wiki/Haemochromatosis_(disorder))",
         "https://en.wikipedia.org/wiki/Haemochromatosis_(disorder)"),
    ],
)
def test_trailing_punctuation_and_markup_around_a_url_are_removed(written: str, expected: str) -> None:
    assert normalise_url(written) == expected


@pytest.mark.parametrize("written", ["javascript:alert(document.cookie)", "file:///etc/passwd", "ftp://ftp.ncbi.nlm.nih.gov/pub/x.pdf"])
def test_non_web_schemes_are_kept_as_written_so_the_fetcher_refuses_them_visibly(written: str) -> None:
    assert normalise_url(written) == written


@pytest.mark.parametrize("written", ["", "   ", "see above", "Harrison's Principles of Internal Medicine", "Smith:2020",
                                     "guideline.pdf", "#section-2"])
def test_scheme_less_garbage_is_not_a_url(written: str) -> None:
    assert normalise_url(written) is None


def test_a_loopback_name_with_a_port_is_a_citation_the_fetcher_refuses() -> None:
    # issue 30: "localhost:8000/x" in a citation list vanished; it is kept, and refused when fetched
    assert normalise_url("localhost:8000/x") == "https://localhost:8000/x"


def test_find_urls_reports_each_citation_with_the_span_to_cut_out() -> None:
    text = ("Aspirin is not advised for children (https://www.nhs.uk/conditions/reyes-syndrome/). "
            "See doi:10.1056/NEJMoa073286, PMID: 31335359 and www.cdc.gov/flu. "
            "Trial: 10.1001/jama.2020.1585; script javascript:alert(1)")
    found = find_urls(text)
    assert [u for u, _, _ in found] == [
        "https://www.nhs.uk/conditions/reyes-syndrome/",
        "https://doi.org/10.1056/NEJMoa073286",
        "https://pubmed.ncbi.nlm.nih.gov/31335359/",
        "https://www.cdc.gov/flu",
        "https://doi.org/10.1001/jama.2020.1585",
        "javascript:alert(1)",
    ]
    assert [text[s:e] for _, s, e in found] == [
        "https://www.nhs.uk/conditions/reyes-syndrome/",
        "doi:10.1056/NEJMoa073286",
        "PMID: 31335359",
        "www.cdc.gov/flu",
        "10.1001/jama.2020.1585",
        "javascript:alert(1)",
    ]


def test_a_doi_inside_a_doi_org_link_is_found_once() -> None:
    text = "See https://doi.org/10.1161/CIR.0000000000001193 for details."
    assert find_urls(text) == [("https://doi.org/10.1161/CIR.0000000000001193", 4, 48)]


def test_numbers_and_ratios_are_not_mistaken_for_dois() -> None:
    assert find_urls("Ferritin fell from 1000 to 10.5 ug/L over 10.3/4 weeks; ratio 10.12/3.") == []


def test_dedupe_keeps_the_first_occurrence_order() -> None:
    urls = ["https://b.org", "https://a.org", "https://b.org", "https://c.org", "https://a.org"]
    assert dedupe(urls) == ["https://b.org", "https://a.org", "https://c.org"]


@pytest.mark.parametrize("host", ["doi.org", "dx.doi.org", "www.doi.org", "DX.DOI.ORG"])
def test_every_doi_host_is_one_doi_to_the_reader_and_the_fetcher(host):
    from sourcecheckup.fetching.http import doi_of

    written = f"http://{host}/10.2337/dc11-1734"
    assert normalise_url(written) == "https://doi.org/10.2337/dc11-1734"
    assert doi_of(written) == "10.2337/dc11-1734"
