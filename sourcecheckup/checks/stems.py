"""Words and stems for the exact checks of instructions and absolute claims: a crude stemmer good enough
to match a leaflet's words ("stopping" ~ "stopped" ~ "stop"), the content-word stems of a text and the
stems that name a subject (``polarity`` and ``overclaims`` compare what two sentences are about with them).
Stdlib only.
"""
from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP = frozenset("""
a an and are as at be by for from has have had in is it its of on or that the this to was were
with which who whom whose will would can could may might must shall should than then there these
those their they them been being also into such other some any more most over under between about
after before during while when where what how do does did done so if our we i you your yours he she
his her him me my us not no nor never none without within only just still even very too much many
both each either neither own same per via up down out off again further once here why all few
let lets please always usually generally often sometimes well ever already yet however although
though because since unless until whether while whilst s t don't doesn't didn't isn't aren't can't
cannot won't shouldn't mustn't wasn't weren't it's you're they're there's that's let's need needs
needed necessary ok okay fine safe safely unsafe freely able like want wants sure really quite
""".split())
# verbs and nouns that carry no subject: "take potassium" and "avoid potassium" are about the same thing
_IRREGULAR = {
    "taken": "take", "took": "take", "taking": "take", "given": "give", "gave": "give", "giving": "give",
    "eaten": "eat", "ate": "eat", "drunk": "drink", "drank": "drink", "had": "have", "having": "have",
    "got": "get", "gotten": "get", "fed": "feed", "stopped": "stop", "stopping": "stop", "using": "use",
    "discontinue": "stop", "discontinued": "stop", "discontinuing": "stop", "discontinuation": "stop",
    "cease": "stop", "ceased": "stop", "ceasing": "stop", "halt": "stop", "halted": "stop",
    "withhold": "stop", "withheld": "stop", "withholding": "stop", "withdraw": "stop",
    "withdrawn": "stop", "withdrawal": "stop", "quit": "stop", "quitting": "stop",
    "used": "use", "uses": "use", "gp": "doctor", "physician": "doctor", "jab": "vaccine", "vaccination": "vaccine",
    "vaccinated": "vaccine", "immunisation": "vaccine", "immunization": "vaccine", "children": "child",
    "pregnancy": "pregnant", "pregnancies": "pregnant", "women": "woman", "men": "man", "feet": "foot",
    "teeth": "tooth",
}
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fourteen": "14",
    "fifteen": "15", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60",
    "hundred": "100",
}
_SUFFIXES = ("ations", "ation", "ating", "ated", "ingly", "edly", "ions", "ion", "ing", "ies", "ied", "ly", "ed",
             "es", "s")


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A crude stem good enough to match a leaflet's words: "stopping" ~ "stopped" ~ "stop"."""
    w = _IRREGULAR.get(word, word)
    if w in _NUMBER_WORDS:
        return _NUMBER_WORDS[w]
    if w[0].isdigit():
        return w
    if len(w) > 4:
        for suffix in _SUFFIXES:
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                if (suffix == "s" and w[-2] in "su") or (suffix in ("ly", "ion", "ions") and len(w) < 7):
                    break
                w = w[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
                break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w[:10]                                # 10, not 5: "moisturiser" is not "moisture"


_LIGHT = frozenset(stem(w) for w in (
    "take use have get give receive tablet pill capsule medicine medication drug dose people patient "
    "person anyone everyone continue keep someone thing way time day amount product treatment").split())


def stems_of(text: str) -> frozenset[str]:
    """Content-word stems of a text (stop words and single letters left out)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP or (len(w) < 2 and not w.isdigit()):
            continue
        out.add(stem(w))
    return frozenset(out)


def core(stems: frozenset[str]) -> frozenset[str]:
    """Stems that name a subject: the light verbs and nouns ("take", "tablets", "people") left out."""
    return frozenset(s for s in stems if s not in _LIGHT)
