"""Who says so: a statement that credits a named body or study needs a source that names it.

"NICE advises against vitamin D for COVID-19" is not supported by a news article that quotes a
trial's investigator and never mentions NICE, however close the wording. A screen can check this
exactly: the credited name (an acronym such as NICE, WHO, USPSTF, or a trial name such as ASPREE)
must occur in the source's text or title. Pure functions, standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# an acronym or trial name: two or more capitals, digits allowed after the first letter ("NG136" is
# a document number, not a body: it is only credited when it is followed by a crediting word)
_NAME = r"(?P<name>[A-Z][A-Z0-9&-]*[A-Z0-9](?:-[A-Z0-9]+)*)"
# what a body advises or a named study is; a quotation ("..., says a WHO official") is not advice
_CREDIT_AFTER = (r"(?:recommends?|recommended|advises?|advised|suggests?|suggested|warns?|warned|endorses?|"
                 r"endorsed|approved?|guidance|guidelines?|advice|trial|study|cohort|meta-analysis|review|"
                 r"labell?ing)")
_CREDITED = [
    re.compile(r"\b" + _NAME + r"(?:'s)?\s+(?:also\s+|now\s+|still\s+|currently\s+|strongly\s+)?"
               + _CREDIT_AFTER + r"\b"),
    re.compile(r"\b(?i:according to)(?: the)? " + _NAME + r"\b"),
    re.compile(r"\b(?:the|in) " + _NAME + r" (?:randomi[sz]ed |controlled |clinical |pivotal |landmark )*"
               r"(?:trial|study|cohort)\b"),
]
# capitals that are units, grades or everyday abbreviations, never a body that gives advice
_NOT_BODIES = frozenset(
    "IU HIV AIDS COVID COVID-19 SARS SARS-COV-2 UK US USA EU ACE ARB ARBS CCB NSAID NSAIDS BMI LDL HDL DNA RNA "
    "CT MRI ECG EEG PCR ICU ER IV II III IV GP A&E OK HPV RSV ADHD COPD IBS GERD GORD TB UTI".split())


@dataclass(frozen=True)
class AttributionFinding:
    status: str      # "agrees" (every credited name is in the source) | "unbacked"
    names: tuple[str, ...]
    message: str


def credited_names(statement: str) -> list[str]:
    """The bodies and studies a statement credits, as written ("NICE", "ASPREE")."""
    found: dict[str, None] = {}
    for rx in _CREDITED:
        for m in rx.finditer(statement or ""):
            name = m.group("name")
            if len(name) >= 2 and name.upper() not in _NOT_BODIES:
                found.setdefault(name, None)
    return list(found)


def compare_attribution(statement: str, source_text: str, source_title: str | None = None
                        ) -> AttributionFinding | None:
    """None when the statement credits no one; "unbacked" when a credited name is nowhere in the source."""
    names = credited_names(statement)
    if not names:
        return None
    haystack = f"{source_title or ''}\n{source_text or ''}"
    absent = [n for n in names if not re.search(r"(?<![A-Za-z0-9])" + re.escape(n) + r"(?![A-Za-z0-9])", haystack)]
    if absent:
        who = ", ".join(absent)
        return AttributionFinding("unbacked", tuple(absent),
                                  f"the statement credits {who}; the source does not mention {who}")
    return AttributionFinding("agrees", tuple(names), f"the source names {', '.join(names)}")
