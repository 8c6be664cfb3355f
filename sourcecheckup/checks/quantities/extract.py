"""Reading the quantities of one sentence: values, units, denominators, bounds, ages and the
qualifiers and subject each is attached to (`extract_quantities`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .model import Quantity
from .patterns import (
    _A_DURATION,
    _AGE_AFTER,
    _AGE_BEFORE,
    _AND_A_HALF,
    _BETWEEN_BEFORE,
    _BOUND_AFTER,
    _BOUND_BEFORE,
    _BP_PAIR_WORDS,
    _BP_TAIL,
    _EVERY_BEFORE,
    _EVERY_ONE,
    _EVERY_OTHER,
    _FIRST_SPAN,
    _FREQ_PER,
    _GAP,
    _INTERVAL_AFTER,
    _NAME_BEFORE,
    _OPENING_PERIOD,
    _OR_MORE_THAN,
    _PER_ADVERB,
    _PER_AFTER,
    _PER_BEFORE,
    _PER_NOUN,
    _PRESSURE_CONTEXT,
    _PROPORTION,
    _QUARTER_HOUR,
    _RANGE_SEP,
    _RATE,
    _RATE_NOUN,
    _SEGMENT,
    _SEPARATOR,
    _SHARE,
    _SHARE_VALUE,
    _TIMES,
    _VERB_GAP,
)
from .qualifiers import _NOT_SUBJECT, _QUALIFIER_GROUPS, _family, _qualifiers, _stem, _stems
from .units import (
    _CALENDAR,
    _DOSE_UNITS,
    _FREQ_WORDS,
    _GLUED_ONLY,
    _MONTH_MIN,
    _NUM_AT,
    _ONES,
    _PER_MULTIPLE,
    _TENS,
    _TOKEN,
    _UNIT_AT,
    _UNITS,
    _WORD_VALUE,
    _normalise,
    _value,
)

# ---------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------

@dataclass
class _Raw:
    start: int
    end: int
    low: float
    high: float
    unit: str
    per: str = ""
    bound: str = "eq"
    low2: float | None = None
    high2: float | None = None
    shown: str = ""
    scale: float = 1.0
    decimals: int = 0
    per_label: str = ""
    noun: str = ""
    read_start: int = 0       # the denominator it read, when apart from its text
    read: int = 0
    strength: bool = False    # what one tablet holds ("200mg tablets"), not how much is taken


def _unit_at(t: str, pos: int, glued_ok: bool = True) -> re.Match | None:
    m = _UNIT_AT.match(t, pos)
    if not m:
        return None
    alias = re.sub(r"\s+", " ", m.group(2))
    if alias not in _UNITS and alias.replace(" ", "") in _UNITS:
        alias = alias.replace(" ", "")
    if alias not in _UNITS:
        return None
    if alias in _GLUED_ONLY and (m.group(1) or not glued_ok):
        return None
    return m


def _unit_of(m: re.Match) -> tuple[str, float, str]:
    alias = re.sub(r"\s+", " ", m.group(2))
    return _UNITS.get(alias) or _UNITS[alias.replace(" ", "")]


def _bound_before(t: str, start: int) -> str:
    window = t[max(0, start - 60):start]
    if _OR_MORE_THAN.search(t[max(0, start - 120):start]):
        return "le"  # "do not take more than 1,250 mg on the first day or more than 1,000 mg"
    for bound, rx in _BOUND_BEFORE:
        if rx.search(window):
            return bound
    return ""


def _per_after(t: str, pos: int) -> tuple[str, str, int, int, int]:
    """(canonical per, per as written, end of the text, start and end of the denominator read)
    of the denominators right after an amount ("2,400mg of ibuprofen in 24 hours")."""
    per_parts: list[str] = []
    labels: list[str] = []
    end = pos
    gapped = False
    per_start = pos
    for _ in range(2):
        m = _PER_AFTER.match(t, end)
        if not m:
            for gap_rx in (_GAP, _VERB_GAP):
                gap = gap_rx.match(t, end)
                if gap and gap.end() > end:
                    m = _PER_AFTER.match(t, gap.end())
                    gapped = bool(m)
                    per_start = gap.end()
                    if m:
                        break
        if not m:
            break
        if m.group("freq") is not None:
            f = m.group("freq").strip()
            once = f in ("once", "one time", "1 times", "1x") or re.fullmatch(r"1\s?times", f)
            unit = m.group("fu")
            base = "week" if unit.startswith("week") else "day"
            if once:
                per_parts.append(base)
                labels.append(base)
            else:
                per_parts.append("dose")
                labels.append("dose")
            # a frequency is a quantity of its own: only peek at it
            break
        if m.group("d24") is not None:
            d24 = m.group("d24")
            per_parts.append("day")
            labels.append("day" if "day" in d24 else "24 h")
        elif m.group("course") is not None:
            per_parts.append("course")
            labels.append("course")
        elif m.group("tod") is not None or m.group("oneday") is not None:
            per_parts.append("day")
            labels.append("day")
        elif m.group("adv") is not None:
            p = _PER_ADVERB[m.group("adv")]
            per_parts.append(p)
            labels.append(p)
        else:
            word = (m.group("slash") or m.group("word") or "").replace(" ", "").replace("-", "")
            if word.startswith("24"):
                per_parts.append("day")
                labels.append("24 h")
            else:
                p = _PER_NOUN.get(word, word)
                per_parts.append(p)
                labels.append(p)
        end = m.end()
    # "/kg/day": the body weight first; "a day per kg" is read the same way
    if "kg" in per_parts and per_parts[0] != "kg":
        per_parts.remove("kg")
        per_parts.insert(0, "kg")
        labels = ["kg"] + [x for x in labels if x != "kg"]
    return "/".join(per_parts), "/".join(labels), pos if gapped else end, per_start, end


def _count_noun(t: str, pos: int) -> str:
    m = re.compile(r"\s+(?:of\s+)?([a-z][a-z-]+)").match(t, pos)
    if not m:
        return ""
    word = m.group(1)
    if word in _NOT_SUBJECT and word not in ("people", "patients", "persons", "person", "adults",
                                             "children", "women", "men", "tablets"):
        return ""
    return _stem(word)


_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_MONTH_BEFORE = re.compile(r"\b" + _MONTHS + r"\.?\s+(?:\d{1,2}\s*[-\u2013]\s*)?$")
_MONTH_AFTER = re.compile(r"(?:\s*[-\u2013]\s*\d{1,2})?(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTHS + r"\b")


def _parse_at(t: str, m: re.Match, pressure: bool) -> _Raw | None:
    s = m.start()
    is_word = m.group("d") is None
    value, decimals = _value(m)
    end = m.end()
    before = t[max(0, s - 40):s]
    word = m.group("w") or ""

    if not is_word:
        if s > 0 and (t[s - 1].isalpha() or _NAME_BEFORE.search(before)):
            return None
        ordinal = re.match(r"(?:st|nd|rd|th)\s+(?P<u>week|day|month|year|birthday)\b", t[end:])
        if ordinal:  # "until the 12th week of pregnancy": a point in time, compared as such
            u = ordinal.group("u")
            return _Raw(s, end + ordinal.end(), value, value, "ordinal " + u, shown=u + " number",
                        bound=_bound_before(t, s) or "eq")
        nxt = t[end:end + 1]
        if nxt.isalpha() and not _unit_at(t, end) and not t.startswith("s", end) \
                and not _TIMES.match(t, end):
            return None  # "282y", "1st", "3rd"
        if re.match(r"(?:st|nd|rd|th)\b", t[end:end + 2]):
            return None
        if s > 0 and t[s - 1] in "$\u00a3\u20ac":
            return None  # a price
        if _MONTH_BEFORE.search(before) or _MONTH_AFTER.match(t, end):
            return None  # a date: "May 3", "April 19-28", "3 May 2020"
        if re.fullmatch(r"1[89]\d\d|20\d\d", m.group("d")) and not _unit_at(t, end) \
                and not t.startswith("%", end):
            return None  # a year used as a date

    # blood pressure "130/80 (mm Hg)"
    if not is_word:
        bp = _BP_TAIL.match(t, end)
        if bp:
            dia = float(bp.group(1))
            unit_m = _unit_at(t, bp.end())
            mmhg = bool(unit_m and _unit_of(unit_m)[0] == "mmhg")
            if (mmhg or pressure) and 50 <= value <= 260 and 30 <= dia <= 160 and value > dia:
                e = unit_m.end() if mmhg and unit_m else bp.end()   # mmhg: unit_m was found
                return _Raw(s, e, value, value, "mmhg", bound=_bound_before(t, s) or "eq",
                            low2=dia, high2=dia, shown="mm Hg")
            return None  # a fraction or a date ("1/2", "12/05"): not a checked quantity

    # the first unit, then a second number of a range
    unit_m = _unit_at(t, end, glued_ok=not is_word)
    high, high_dec = value, decimals
    if word in _FREQ_WORDS:
        unit_m = None
    after = unit_m.end() if unit_m else end
    ranged = False
    sep = _RANGE_SEP.match(t, after)
    if sep and word not in _FREQ_WORDS:
        joiner = sep.group(0).strip()
        m2 = _NUM_AT.match(t, sep.end())
        if m2 and (joiner != "and" or _BETWEEN_BEFORE.search(before)) and \
                not (joiner == "-" and is_word):
            v2, d2 = _value(m2)
            unit2 = _unit_at(t, m2.end(), glued_ok=m2.group("d") is not None)
            same_dim = not (unit_m and unit2) or _unit_of(unit_m)[0] == _unit_of(unit2)[0]
            if same_dim and not _BP_TAIL.match(t, m2.end()):
                if unit_m and unit2 and _unit_of(unit_m)[1] != _unit_of(unit2)[1]:
                    value = value * _unit_of(unit_m)[1] / _unit_of(unit2)[1]  # "500 mg to 1 g"
                if v2 > value:
                    high, high_dec = v2, d2
                    ranged = True
                    end = m2.end()
                    unit_m = unit2 or unit_m
                    after = unit2.end() if unit2 else end
                else:
                    value = _value(m)[0]
    if not ranged:
        after = unit_m.end() if unit_m else end
    dec = max(decimals, high_dec)

    bound = "range" if ranged else (_bound_before(t, s) or "eq")

    # frequencies: "three times a day", "once daily", "1 a day", "every 12 hours"
    if not unit_m or (t[end:after].strip() in ("x",)):
        times = _TIMES.match(t, end)
        fp = _FREQ_PER.match(t, times.end() if times else end)
        if fp and (times or word in _FREQ_WORDS or not is_word):
            per = _PER_NOUN.get(fp.group("u") or "", "") or _PER_ADVERB.get(fp.group("adv") or "", "") \
                or "day"
            return _Raw(s, fp.end(), value, high, "times", per=per, bound=bound, shown="times",
                        decimals=dec, per_label=per)
        if times or word == "twice":
            e = times.end() if times else end
            return _Raw(s, e, value, high, "x", bound=bound, shown="x", decimals=dec)
        if word in _FREQ_WORDS:
            return None

    # proportions and rates: "1 in 10,000", "3 to 10 per 100,000 person-years"
    if not unit_m:
        prop = _PROPORTION.match(t, end)
        if prop:
            d = _NUM_AT.match(t, prop.end())
            if d and d.group("d") is not None:
                den = _value(d)[0]
                sep2 = _RANGE_SEP.match(t, d.end())
                den_to = _NUM_AT.match(t, sep2.end()) if sep2 and sep2.group(0).strip() in ("-", "to") else None
                if den > high > 0 and den_to and den_to.group("d") is not None and _value(den_to)[0] > den \
                        and value == high:
                    # "1 in 3,000 to 4,000": a range of rates
                    return _Raw(s, den_to.end(), 100 * value / _value(den_to)[0], 100 * value / den, "%",
                                bound="range", shown="in", scale=100 / den, decimals=-1)
                if den > high > 0:
                    return _Raw(s, d.end(), 100 * value / den, 100 * high / den, "%", bound=bound,
                                shown="in", scale=100 / den, decimals=-1)
        rate = _RATE.match(t, end)
        if rate:
            d = _NUM_AT.match(t, rate.end()) or _PER_MULTIPLE.match(t, rate.end())
            if d and d.group("d") is not None and _value(d)[0] >= 10:
                den = _value(d)[0]
                noun = _RATE_NOUN.match(t, d.end())
                per = "person"
                e = d.end()
                if noun:
                    n = noun.group(1)
                    per = ("person-year" if "year" in n else
                           "birth" if "birth" in n or "deliver" in n else
                           "admission" if "admission" in n else
                           "procedure" if "procedure" in n else "person")
                    e = noun.end()
                return _Raw(s, e, value / den, high / den, "rate", per=per, bound=bound,
                            shown="per", scale=1 / den, decimals=dec)

    if is_word and not unit_m:
        return None  # "one of the", "two studies": words count only with a unit

    # intervals: "every 4 to 6 hours", "at least 4 hours between doses"
    if unit_m and _unit_of(unit_m)[0] == "min":
        canon, factor, shown = _unit_of(unit_m)
        every = _EVERY_BEFORE.search(before)
        apart = _INTERVAL_AFTER.match(t, after)
        if every or apart:
            e = apart.end() if apart else after
            return _Raw(s, e, value * factor, high * factor, "min", per="interval",
                        bound="range" if ranged else (bound if not every or bound == "ge" else "eq"),
                        shown=shown, scale=factor, decimals=dec)

    # ages: "aged 65", "65 years and over", "children under 12", "over-65s"
    age_after = _AGE_AFTER.match(t, end)
    age_before = _AGE_BEFORE.search(before)
    years = unit_m is not None and _unit_of(unit_m)[0] == "month"
    if (age_after and (not unit_m or years)) or (age_before and (not unit_m or years)):
        e = age_after.end() if age_after else end
        if age_after and re.search(r"(?:and|or)\s+(?:over|older|above)", age_after.group(0)):
            bound = "ge"
        elif age_after and re.search(r"(?:and|or)\s+(?:under|younger)", age_after.group(0)):
            bound = "le"
        if age_after or bound != "eq" or age_before:
            return _Raw(s, e, value, high, "age", bound=bound, shown="years", decimals=dec)

    if unit_m:
        canon, factor, shown = _unit_of(unit_m)
        low_v, high_v = value * factor, high * factor
        raw = _Raw(s, after, low_v, high_v, canon, bound=bound, shown=shown, scale=factor,
                   decimals=dec)
    else:
        raw = _Raw(s, end, value, high, "count", bound=bound, shown="", decimals=dec,
                   noun=_count_noun(t, end))

    if raw.unit == "mg" and (_STRENGTH_AFTER.match(t, raw.end) or _STRENGTH_BEFORE.search(t[max(0, s - 30):s])):
        raw.strength = True   # its denominator, if any, is the tablets' ("8 tablets of 500mg in 24 hours")
    elif raw.unit in _DOSE_UNITS or raw.unit == "mg/l":
        per, label, e, read_start, read = _per_after(t, raw.end)
        if per:
            raw.per, raw.per_label = per, label
            raw.end, raw.read_start, raw.read = e, read_start, read
        else:
            pb = _PER_BEFORE.search(t[max(0, s - 100):s])
            if pb:
                p = pb.group("p")
                raw.per = "week" if p == "weekly" else "day"
                raw.per_label = raw.per
    if ranged and re.match(r"\s+(?:at most|maximum|max)\b", t[raw.end:]):
        raw.bound = "le"
    if bound == "eq" and not ranged:
        for b, rx in _BOUND_AFTER:
            bm = rx.match(t, raw.end)
            if bm:
                raw.bound = b
                break
    return raw


def _word_durations(t: str, taken: list[tuple[int, int]]) -> list[_Raw]:
    out = []
    for m in _A_DURATION.finditer(t):
        s = m.start("half") if m.group("half") else m.start("a")
        if any(a <= s < b for a, b in taken):
            continue
        if m.group("half"):
            unit = m.group("hu") or "hour"
            minutes = 30.0 if unit == "hour" else 720.0
            raw = _Raw(s, m.end(), minutes, minutes, "min", shown="min", decimals=-1)
        else:
            unit = m.group("u")
            canon, factor, shown = _UNITS[unit]
            value = 1.5 if m.group("andhalf") else 1.0
            raw = _Raw(s, m.end(), value * factor, value * factor, canon, shown=shown,
                       scale=factor, decimals=-1)
        bound = _bound_before(t, m.start()) if not m.group("half") else _bound_before(t, s)
        if m.group("pre") in ("least",):
            bound = "ge"
        elif m.group("pre") in ("most",):
            bound = "le"
        elif m.group("pre") in ("within", "under"):
            bound = bound or "le"
        raw.bound = bound or "eq"
        out.append(raw)
    for m in _EVERY_OTHER.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        canon, factor, shown = _UNITS[m.group("u") or m.group("ua")]
        if canon == "min":
            out.append(_Raw(m.start(), m.end(), 2 * factor, 2 * factor, "min", per="interval",
                            shown=shown, scale=factor, decimals=-1))
    for m in _EVERY_ONE.finditer(t):
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        adv = m.group("adv") or m.group("adv2")
        if not adv and not _REPEATED.search(t[max(0, m.start() - 30):m.start()]):
            continue  # "10 mg every day", "activity every week": a denominator, not an interval
        canon, factor, shown = _UNITS[{"weekly": "week", "fortnightly": "fortnight", "monthly": "month"}.get(
            adv or "", m.group("u") or "")]
        minutes = factor if canon == "min" else factor * _MONTH_MIN
        out.append(_Raw(m.start(), m.end(), minutes, minutes, "min", per="interval",
                        shown=shown, scale=minutes, decimals=-1 if canon == "min" else _CALENDAR))
    for m in _FIRST_SPAN.finditer(t):
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        canon, factor, shown = _UNITS[m.group("u")]
        out.append(_Raw(m.start("u") - 6, m.end(), factor, factor, canon, shown=shown, scale=factor,
                        decimals=-1, bound="eq"))
    for m in _AND_A_HALF.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        n = m.group("n")
        value = (float(n) if n.isdigit() else float(_WORD_VALUE[n])) + 0.5
        canon, factor, shown = _UNITS[m.group("u")]
        out.append(_Raw(m.start(), m.end(), value * factor, value * factor, canon, shown=shown,
                        scale=factor, decimals=1, bound=_bound_before(t, m.start()) or "eq"))
    for m in _QUARTER_HOUR.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        v = 45.0 if m.group("q") == "three" else 15.0
        out.append(_Raw(m.start(), m.end(), v, v, "min", shown="min", decimals=-1,
                        bound=_bound_before(t, m.start()) or "eq"))
    for m in _SHARE.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        v = _SHARE_VALUE[m.group("s")]
        out.append(_Raw(m.start(), m.end() - 3, v, v, "%", shown="%", decimals=-1,
                        bound=_bound_before(t, m.start()) or "approx"))
    return out


_REPEATED = re.compile(r"\b(?:checked|tested|measured|monitored|repeated|done|reviewed|changed|"
                       r"replaced|seen|examined|screened)\s+(?:[a-z]+\s+)?$")


# effect sizes in words: "roughly double the risk", "twice as likely", "triples", "halves the risk"
_FOLD_WORDS = re.compile(r"\b(?:(?P<dbl>doubl(?:e|es|ed|ing))|(?P<tri>tripl(?:e|es|ed|ing))|"
                         r"(?P<half>halv(?:e|es|ed|ing))|(?P<tw>twice|three times|four times) as (?:likely|high|"
                         r"common|many|much|great|large))\b")


def _fold_words(t: str, taken: list[tuple[int, int]]) -> list[_Raw]:
    out = []
    for m in _FOLD_WORDS.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        if m.group("tw"):
            value = {"twice": 2.0, "three times": 3.0, "four times": 4.0}[m.group("tw")]
        else:
            value = 2.0 if m.group("dbl") else 3.0 if m.group("tri") else 0.5
        bound = _bound_before(t, m.start()) or "eq"
        out.append(_Raw(m.start(), m.end(), value, value, "x", bound=bound, shown="x", decimals=-1))
    return out


def _pair_words(t: str) -> list[_Raw]:
    out = []
    for m in _BP_PAIR_WORDS.finditer(t):
        sys_v, dia_v = float(m.group("s")), float(m.group("d"))
        bound = {"below": "lt", "under": "lt", "less than": "lt", "<": "lt", "above": "gt",
                 "over": "gt", ">": "gt"}.get((m.group("b1") or "").strip(), "")
        bound = bound or _bound_before(t, m.start()) or "eq"
        out.append(_Raw(m.start(), m.end(), sys_v, sys_v, "mmhg", bound=bound, low2=dia_v,
                        high2=dia_v, shown="mm Hg"))
    return out


# a tablet's strength: "200mg tablets", "500mg paracetamol tablets", "tablets of 500mg"
_TABLET = r"(?:tablets?|capsules?|caplets?|pills?)\b"
_STRENGTH_AFTER = re.compile(r"\s+(?:[a-z][a-z-]+\s+)?" + _TABLET)
_STRENGTH_BEFORE = re.compile(_TABLET + r"\s+(?:of|contain(?:s|ing)?)\s+$")
_AMOUNT = r"\d[\d,.]*\s?(?:mg|g|mcg|micrograms?|milligrams?)"
_COUNT = r"\d+|" + "|".join(_ONES[1:13])
# how many tablets, where words stand between the count and the tablets: "one or two 500mg tablets",
# "8 paracetamol tablets of 500mg"
_TABLET_COUNT = re.compile(r"\b(?P<a>" + _COUNT + r")(?:\s*(?:or|to|-)\s*(?P<b>" + _COUNT + r"))?"
                           r"(?:\s+(?:" + _AMOUNT + r"|(?!(?:or|and|to|of|a|an|the|in|every|times)\b)[a-z][a-z-]+)){1,2}?"
                           r"\s+" + _TABLET + r"(?:\s+(?:of|containing)\s+" + _AMOUNT + r")?")


def _tablet_counts(t: str) -> list[_Raw]:
    out = []
    for m in _TABLET_COUNT.finditer(t):
        if t[max(0, m.start() - 1):m.start()] in (".", ",") or re.match(r"\d", m.group("a")) and \
                re.match(r"\s?(?:mg|g|mcg|ml|%)", t[m.end("a"):]):
            continue
        low = float(m.group("a")) if m.group("a").isdigit() else float(_WORD_VALUE[m.group("a")])
        b = m.group("b")
        high = (float(b) if b.isdigit() else float(_WORD_VALUE[b])) if b else low
        if high < low:
            continue
        per, label, _, read_start, read = _per_after(t, m.end())
        out.append(_Raw(m.start(), m.end("b") if b else m.end("a"), low, high, "tablet", per=per,
                        bound="range" if b else (_bound_before(t, m.start()) or "eq"), shown="tablets",
                        per_label=label, read_start=read_start, read=read if per else 0))
    return out


def _segments(t: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SEGMENT.finditer(t):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(t)))
    return spans


# a sentence without digits holds a quantity only in words: a cheap test first
_MAY_HOLD_WORDS = re.compile(
    r"(?i)\b(?:once|twice|thrice|half|doubl\w*|tripl\w*|halv\w*|third|quarters?|alternate|an?\s+(?:hour|day|week|month|year|fortnight|minute)|every|weekly|fortnightly|monthly|first\s+(?:year|month|week)|"
    + "|".join(_ONES[1:] + _TENS) + r")(?:\b|(?=fold))")


def extract_quantities(sentence: str) -> list[Quantity]:
    """Every checkable quantity of one sentence, in order, with what it is attached to."""
    return list(_extract(sentence))


@lru_cache(maxsize=8192)  # the judge meets the same source sentences for every statement
def _extract(sentence: str) -> tuple[Quantity, ...]:
    if not sentence or not any(c.isdigit() for c in sentence) and not _MAY_HOLD_WORDS.search(
            sentence):
        return ()
    t = _normalise(sentence)
    pressure = bool(_PRESSURE_CONTEXT.search(t))
    raws: list[_Raw] = _pair_words(t) + _tablet_counts(t)
    taken = [(r.start, r.end) for r in raws] + [(r.read_start, r.read) for r in raws if r.read > r.end]
    for m in _TOKEN.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        raw = _parse_at(t, m, pressure)
        if raw is None:
            continue
        raws.append(raw)
        taken.append((raw.start, raw.end))
        if raw.read > raw.end:
            taken.append((raw.read_start, raw.read))
    raws.extend(_word_durations(t, taken))
    raws.extend(_fold_words(t, [(r.start, r.end) for r in raws]))
    raws.sort(key=lambda r: r.start)
    # a quantity in brackets restates the one before it: "8 tablets (4g) in 24 hours"
    for prev, cur in zip(raws, raws[1:]):
        if re.fullmatch(r"\s*\(\s*", t[prev.end:cur.start]):
            if cur.bound == "eq":
                cur.bound = prev.bound
            if not cur.per and prev.per and cur.unit in _DOSE_UNITS:
                cur.per, cur.per_label = prev.per, prev.per_label
    # a list names its unit once: "stage 3a is 45 to 59 ml/min, stage 3b is 30 to 44, ... stage 5 is below 15"
    for prev, cur in zip(raws, raws[1:]):
        if cur.unit == "count" and not (cur.noun or cur.shown) and prev.unit not in ("count", "age") and prev.shown \
                and _LIST_GAP.fullmatch(t[prev.end:cur.start]) and _LIST_END.match(t, cur.end):
            cur.unit, cur.per, cur.per_label = prev.unit, prev.per, prev.per_label
            cur.shown, cur.scale, cur.decimals = prev.shown, prev.scale, max(cur.decimals, 0)
    return tuple(_attach(sentence, t, raws))


# between two items of such a list: the rest of the first's unit, a comma, a few words ("stage 3b is")
_LIST_GAP = re.compile(r"(?:/[^\s,;]*(?:\s+m\S*)?)?\s*[,;]\s*(?:and\s+)?(?:[a-z0-9()]+\s+){0,6}?")
# after a bare number that ends such an item: the next item, or the sentence's end
_LIST_END = re.compile(r"\s*(?:[,;.)]|and\b|or\b|$)")


def _attach(sentence: str, t: str, raws: list[_Raw]) -> list[Quantity]:
    """Qualifiers from each quantity's own part of its clause, plus the clause's opening."""
    out: list[Quantity] = []
    for seg_start, seg_end in _segments(t):
        group = [r for r in raws if seg_start <= r.start < seg_end]
        if not group:
            continue
        subject = _stems(t[seg_start:seg_end])
        # split the clause at separators that stand between two quantities
        bounds = []
        for i, r in enumerate(group):
            lo: int | None = seg_start
            if i > 0:
                gap = t[group[i - 1].end:r.start]
                seps = list(_SEPARATOR.finditer(gap))
                lo = group[i - 1].end + seps[0].start() if seps else None
            bounds.append(lo)
        # chained quantities (no separator) share a region
        regions: list[tuple[int, int]] = []
        for i in range(len(group)):
            lo = bounds[i]
            j = i
            while lo is None:
                j -= 1
                lo = bounds[j]
            k = i + 1
            while k < len(group) and bounds[k] is None:
                k += 1
            hi = bounds[k] if k < len(group) else seg_end
            assert hi is not None   # the loop above stopped at a bound, or at the end
            regions.append((lo, hi))
        first_lo = regions[0][0]
        opening = t[seg_start:group[0].start] if first_lo == seg_start else t[seg_start:first_lo]
        # "during the first 18 weeks, ...": a period the clause opens with bounds what follows
        head = _OPENING_PERIOD.match(t, seg_start, group[0].end) if group[0].start - seg_start < 30 else None
        shared = _qualifiers(opening)
        if head:
            shared.add("starting")
        for r, (lo, hi) in zip(group, regions):
            own = _qualifiers(t[lo:hi])
            quals = set(own)
            if r.low2 is not None:  # a pair holds both pressures
                quals -= {"systolic", "diastolic"}
            for q in shared:
                grps = [g for g in _QUALIFIER_GROUPS if q in g]
                fam = _family(q)
                if fam:
                    if not any(_family(o) == fam for o in own):
                        quals.add(q)
                elif not any(own & g for g in grps):
                    quals.add(q)
            # the age group a figure is given for: "children aged 6 to 11 ... up to 12 mg"
            if r.unit != "age":
                ages = [a for a in group if a.unit == "age" and a.start < r.start]
                if ages:
                    a = ages[-1]
                    quals.add(f"age:{a.low:g}-{a.high:g}{a.bound}")
            if r.strength:
                quals.add("strength")
            out.append(Quantity(
                text=sentence[r.start:r.end].strip(), start=r.start, end=r.end, low=r.low,
                high=r.high, unit=r.unit, per=r.per, bound=r.bound,
                qualifiers=frozenset(quals), subject=subject, low2=r.low2, high2=r.high2,
                shown_unit=r.shown, scale=r.scale, decimals=r.decimals,
                per_label=r.per_label, noun=r.noun, local=_stems(t[lo:hi])))
    return out
