"""Wording that changes how an instruction reads, kept as data for `polarity.read_instruction`.

Softened instructions ("it is best to", "ideally", "you may want to") say what the plain form says:
each row rewrites the softener to the plain form's words ("" for "do", "do not" for "do not").
Limits ("do not take more than 1,200mg", "the maximum is 8 tablets") bound an amount; they do not
forbid the action, so they are compared only with another limit (how much is the quantity check's).
Each row carries the example its test reads (tests/checks/test_polarity.py).
"""
from __future__ import annotations

import re
from typing import Callable

# (softener as written, the plain form's words, an example sentence)
SOFTENED: tuple[tuple[str, str, str], ...] = (
    (r"\bit(?:'s|\s+is)\s+(?:usually\s+|generally\s+|often\s+)?(?:best|better|wiser|safest|a\s+good\s+idea)\s+not\s+to\b",
     "do not", "It is best not to drink alcohol while taking metronidazole."),
    (r"\bit(?:'s|\s+is)\s+(?:usually\s+|generally\s+|often\s+)?(?:best|better|wiser|safest|a\s+good\s+idea|"
     r"sensible|advisable|helpful|wise)\s+to\b", "", "It is best to take ibuprofen with food."),
    (r"\byou\s+(?:may|might)\s+(?:also\s+)?want\s+to\s+avoid\b", "avoid",
     "You may want to avoid grapefruit juice."),
    (r"\byou\s+(?:may|might)\s+(?:also\s+)?want\s+to\b", "", "You may want to take it at bedtime."),
    (r"\b(?:you(?:'d|\s+would)\s+)?(?:be\s+)?better\s+(?:off\s+)?not\s+to\b|\byou(?:'d|\s+had)\s+better\s+not\b",
     "do not", "You'd better not drive after taking it."),
    (r"\btry\s+not\s+to\b", "do not", "Try not to take it on an empty stomach."),
    (r"\btry\s+to\b", "", "Try to take it at the same time each day."),
    (r"\bideally,?\s+(?=[a-z])", "", "Ideally, take it 30 minutes before breakfast."),
    (r"\bpreferably,?\s+(?=[a-z])", "", "Preferably, take it with a glass of water."),
)
_SOFTENED = [(re.compile(p, re.I), plain) for p, plain, _ in SOFTENED]
_SOFT_TRIGGERS = ("best", "better", "wiser", "safest", "good idea", "sensible", "advisable", "helpful",
                  "wise", "want to", "try", "ideally", "preferably")


def _as_written(words: str) -> Callable[[re.Match[str]], str]:
    """re.sub's replacement that puts ``words`` in as written (a string would be read as a template)."""
    return lambda _match: words


def plain_form(text: str) -> str:
    """The sentence with each softener replaced by the plain form's words."""
    low = text.lower()
    if not any(t in low for t in _SOFT_TRIGGERS):
        return text
    for pattern, plain in _SOFTENED:
        text = pattern.sub(_as_written(plain if plain else ""), text)
    return " ".join(text.split())


# a figure, as a limit names it: digits or a number word
_FIGURE = r"(?:\d|one\b|two\b|three\b|four\b|five\b|six\b|seven\b|eight\b|nine\b|ten\b|twelve\b)"
# (pattern, kind, where, example). "ceiling" bounds from above whatever the cue says ("you can take up
# to 8"); "excess" takes its direction from the cue ("do not take more than 4g" / "you can take more
# than 4g"). "after cue": within four words from the cue ("take more than", "can take ibuprofen up to"),
# so that "adults over 65 should not ..." or "if you have more than 2 ..." are not limits
LIMITS: tuple[tuple[str, str, str, str], ...] = (
    (r"(?:no|not)\s+more\s+than|up\s+to|at\s+most|not\s+(?:to\s+)?exceed|no\s+(?:higher|greater)\s+than",
     "ceiling", "after cue", "Adults can take ibuprofen up to 3 times a day."),
    (r"maximum|max", "ceiling", "anywhere", "The maximum amount an adult can take is 8 tablets (4g) in 24 hours."),
    (r"more\s+than|exceed(?:s|ing)?|in\s+excess\s+of|higher\s+than", "excess", "after cue",
     "Do not take more than 1,200mg in 24 hours."),
)
_LIMITS = [(re.compile((r"\A\s*(?:[\w'-]+\s+){0,4}?" if where == "after cue" else r"\b") + r"(?:" + p + r")\b"
                       r"(?:\s+[\w(),'-]+){0,6}?\s*\(?" + _FIGURE, re.I), kind, where == "after cue")
           for p, kind, where, _ in LIMITS]


def limit_kind(clause: str, cue_start: int) -> str:
    """ "ceiling", "excess" or "" for a clause whose cue starts at ``cue_start`` (conditions blanked)."""
    for pattern, kind, after_cue in _LIMITS:
        if pattern.search(clause[cue_start:] if after_cue else clause):
            return kind
    return ""
