"""Units and numbers: text normalisation, the unit table, figures in digits and words, and the
conversions between kinds of quantity (weeks ~ months, every 12 hours ~ twice a day, IU ~ mass)."""
from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import cast

from .model import Quantity

# ---------------------------------------------------------------------------------------
# Text normalisation (same length, so spans found in it are spans of the sentence)
# ---------------------------------------------------------------------------------------

_SAME_LENGTH = str.maketrans({
    "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2007": " ", "\u2002": " ", "\u2003": " ",
    "\u00b5": "u", "\u03bc": "u", "\u00b2": "2", "\u2019": "'", "\u00b7": ".", "\u2264": "\u2264",
})


def _normalise(sentence: str) -> str:
    t = sentence.translate(_SAME_LENGTH)
    low = t.lower()
    if len(low) != len(t):  # a character whose lower case is longer ("\u0130")
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in t)
    return low


# ---------------------------------------------------------------------------------------
# Units: alias -> (canonical unit, canonical units per alias, shown unit)
# ---------------------------------------------------------------------------------------

_UNITS: dict[str, tuple[str, float, str]] = {}


def _units(aliases: str, unit: str, factor: float, shown: str) -> None:
    for alias in aliases.split("|"):
        _UNITS[alias] = (unit, factor, shown)


_units("kg/m2|kg/m 2", "kg/m2", 1, "kg/m2")
_units("mmol/mol", "mmol/mol", 1, "mmol/mol")
_units("mmol/l|mmol per litre|mmol per liter|mmol/litre|mmol/liter", "mmol/l", 1, "mmol/L")
_units("umol/l|micromol/l|micromoles per litre", "mmol/l", 1e-3, "umol/L")
_units("nmol/l", "mmol/l", 1e-6, "nmol/L")
_units("mg/dl", "mg/l", 10, "mg/dL")
_units("g/dl", "mg/l", 1e4, "g/dL")
_units("g/l", "mg/l", 1e3, "g/L")
_units("mg/l", "mg/l", 1, "mg/L")
_units("ug/l|mcg/l|ng/ml", "mg/l", 1e-3, "ug/L")
_units("ng/l|pg/ml", "mg/l", 1e-6, "ng/L")
_units("ug/ml|mcg/ml", "mg/l", 1, "mcg/mL")
_units("meq/l", "meq/l", 1, "mEq/L")
_units("iu/l|u/l", "iu/l", 1, "IU/L")
_units("mm hg|mmhg|mm of mercury|millimetres of mercury|millimeters of mercury", "mmhg", 1, "mm Hg")
_units("kg|kgs|kilogram|kilograms|kilogramme|kilogrammes|kilo|kilos", "mg", 1e6, "kg")
_units("g|gm|gms|gram|grams|gramme|grammes", "mg", 1e3, "g")
_units("mg|mgs|milligram|milligrams|milligramme|milligrammes", "mg", 1, "mg")
_units("mcg|ug|microgram|micrograms|microgramme|microgrammes", "mg", 1e-3, "mcg")
_units("ng|nanogram|nanograms", "mg", 1e-6, "ng")
_units("l|litre|litres|liter|liters", "ml", 1e3, "L")
_units("dl|decilitre|decilitres|deciliter|deciliters", "ml", 100, "dL")
_units("ml|mls|millilitre|millilitres|milliliter|milliliters|cc", "ml", 1, "ml")
_units("teaspoon|teaspoons|tsp", "ml", 5, "ml")
_units("iu|i.u.|international unit|international units|unit|units", "iu", 1, "IU")
_units("s|sec|secs|second|seconds", "min", 1 / 60, "s")
_units("min|mins|minute|minutes", "min", 1, "min")
_units("h|hr|hrs|hour|hours", "min", 60, "h")
_units("d|day|days", "min", 1440, "days")
_units("wk|wks|week|weeks", "min", 10080, "weeks")
_units("fortnight|fortnights", "min", 20160, "weeks")
_units("mo|mos|month|months", "month", 1, "months")
_units("y|yr|yrs|year|years", "month", 12, "years")
_units("%|percent|per cent|pct", "%", 1, "%")
_units("percentage point|percentage points", "pp", 1, "percentage points")
_units("fold|x", "x", 1, "x")
_units("tablet|tablets|tab|tabs|capsule|capsules|caps|pill|pills|caplet|caplets", "tablet", 1,
       "tablets")
_units("puff|puffs|inhalation|inhalations", "puff", 1, "puffs")
_units("drop|drops", "drop", 1, "drops")
_units("dose|doses", "dose", 1, "doses")
_units("spray|sprays", "spray", 1, "sprays")
_units("sachet|sachets", "sachet", 1, "sachets")
_units("patch|patches", "patch", 1, "patches")
_units("bpm|beats per minute|beats a minute", "bpm", 1, "bpm")
_units("kcal|calories", "kcal", 1, "kcal")
_units("cm|centimetre|centimetres|centimeter|centimeters", "mm", 10, "cm")
_units("mm|millimetre|millimetres|millimeter|millimeters", "mm", 1, "mm")

# single letters only count as units glued to the number ("3x", "5s"), never after a space
_GLUED_ONLY = {"x", "s"}
_UNIT_ALT = "|".join(re.escape(a).replace(r"\ ", r"\s?") for a in sorted(_UNITS, key=len, reverse=True))
_UNIT_AT = re.compile(r"(\s?-?\s?)(" + _UNIT_ALT + r")(?![a-z0-9])")

_DOSE_UNITS = frozenset({"mg", "ml", "iu", "tablet", "puff", "drop", "dose", "spray", "sachet",
                         "patch", "kcal", "count", "mmol"})
# canonical units whose figures are statistics: "28%" is a fair rounding of "28.4%"
_ROUNDABLE = frozenset({"%", "pp", "x", "rate", "count", "mmol/l", "mg/l", "kg/m2", "mmol/mol",
                        "meq/l", "iu/l", "bpm"})

# ---------------------------------------------------------------------------------------
# Numbers written in digits or words
# ---------------------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUE: dict[str, float] = {w: i for i, w in enumerate(_ONES)}
_WORD_VALUE.update({w: 20 + 10 * i for i, w in enumerate(_TENS)})
_WORD_VALUE.update({"once": 1, "twice": 2, "thrice": 3, "a dozen": 12, "dozen": 12, "half": 0.5})
_FREQ_WORDS = frozenset({"once", "twice", "thrice"})

_DIGITS = (r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)"         # 2,400 / 12,500.5
           r"|\d{1,3}(?:\.\d{3}){2,}(?![\d.])"             # 2.400.000 (only unambiguous dots)
           r"|\d{1,3}(?: \d{3})+(?![\d.,])"                # 10 000 (thin or plain space)
           r"|\d+\.\d+|\d+")
_WORDS = (r"(?:(?:a|one|two|three|four|five|six|seven|eight|nine)\s+hundred"
          r"|(?:" + "|".join(_TENS) + r")(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
          r"|" + "|".join(sorted(_ONES, key=len, reverse=True)) +
          r"|a dozen|once|twice|thrice)")
_TOKEN = re.compile(r"(?<![\w/])(?<!\d[.,])(?P<d>" + _DIGITS + r")|\b(?P<w>" + _WORDS + r")(?:\b|(?=fold\b))")
_NUM_AT = re.compile(r"(?P<d>" + _DIGITS + r")(?![\w])|(?P<w>" + _WORDS + r")\b")


_MULTIPLES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
# "per million person-years": the denominator in words
_PER_MULTIPLE = re.compile(r"(?:a\s+|one\s+)?(?P<d>thousand|million|billion)\b")


def _value(m: re.Match) -> tuple[float, int]:
    """(value, decimals as written) of a token match."""
    if m.group("d") in _MULTIPLES:
        return _MULTIPLES[m.group("d")], 0
    if m.group("d") is not None:
        raw = m.group("d")
        if raw.count(".") >= 2:
            raw = raw.replace(".", "")
        raw = raw.replace(",", "").replace(" ", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        return float(raw), decimals
    word = m.group("w")
    if "hundred" in word:
        head = word.split()[0]
        return (1 if head == "a" else _WORD_VALUE[head]) * 100.0, 0
    parts = re.split(r"[- ]", word, maxsplit=1)
    if len(parts) == 2 and parts[0] in _TENS:
        return float(_WORD_VALUE[parts[0]] + _WORD_VALUE[parts[1]]), 0
    return float(_WORD_VALUE[word]), 0


# ---------------------------------------------------------------------------------------
# Conversions and equality
# ---------------------------------------------------------------------------------------

_MONTH_MIN = 30.4375 * 1440
_CALENDAR = -2  # decimals of a figure converted between weeks and months: "3 months" ~ "12 weeks"


def _kind(q: Quantity) -> tuple:
    return (q.unit, q.per, q.noun, q.is_pair)


def _convert(s: Quantity, claim: Quantity, iu_per_mg: float | None) -> Quantity | None:
    """`s` expressed as the same kind of quantity as `claim`, or None when it is not one."""
    if _kind(s) == _kind(claim):
        return s
    # once a week ~ a seventh of once a day, so "once a week" and "once daily" differ
    per_day = {"day": 1.0, "week": 1 / 7, "hour": 24.0}
    if claim.unit == "times" == s.unit and claim.per in per_day and s.per in per_day:
        f = per_day[s.per] / per_day[claim.per]
        return replace(s, low=s.low * f, high=s.high * f, per=claim.per, decimals=-1)
    # three doses a day ~ three times a day: a dose is what is taken each time
    if {claim.unit, s.unit} == {"dose", "times"} and claim.per in per_day and s.per in per_day:
        f = per_day[s.per] / per_day[claim.per]
        return replace(s, low=s.low * f, high=s.high * f, unit=claim.unit, per=claim.per, per_label=claim.per_label,
                       shown_unit=claim.shown_unit, scale=claim.scale, decimals=s.decimals if f == 1 else -1)
    # every 12 hours ~ twice a day (a schedule fixes the count; a minimum gap only bounds it: derived)
    if claim.unit == "times" and claim.per == "day" and s.unit == "min" and s.per == "interval":
        flip = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}
        return replace(s, low=1440 / s.high, high=1440 / s.low, unit="times", per="day",
                       bound=flip.get(s.bound, s.bound), decimals=-1, per_label="day",
                       shown_unit="times", scale=1.0, derived=s.bound in flip)
    # 4 times a day is not "6 hours apart": doses spread over the waking day (derived)
    if claim.unit == "min" and claim.per == "interval" and s.unit == "times" and s.per == "day":
        flip = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}
        return replace(s, low=1440 / s.high, high=1440 / s.low, unit="min", per="interval",
                       bound=flip.get(s.bound, s.bound), decimals=-1, shown_unit="h", scale=60, derived=True)
    # monitoring intervals: "every month" ~ "every 4 weeks", not "every week" (durations in
    # weeks and in months are not compared: "4 weeks" is not quite "a month")
    if {claim.unit, s.unit} == {"min", "month"} and claim.per == s.per == "interval":
        f = 1 / _MONTH_MIN if claim.unit == "month" else _MONTH_MIN
        return replace(s, low=s.low * f, high=s.high * f, unit=claim.unit, decimals=_CALENDAR,
                       shown_unit=claim.shown_unit, scale=claim.scale)
    # one component of a blood-pressure pair
    if claim.unit == "mmhg" and not claim.is_pair and s.unit == "mmhg" and s.is_pair:
        if "diastolic" in claim.qualifiers:
            # a pair (low2 set) has both its second bounds
            return replace(s, low=cast(float, s.low2), high=cast(float, s.high2), low2=None, high2=None,
                           qualifiers=s.qualifiers | {"diastolic"})
        if "systolic" in claim.qualifiers:
            return replace(s, low2=None, high2=None, qualifiers=s.qualifiers | {"systolic"})
        return None
    # IU <-> mass only where the evidence itself gives both ("10 micrograms (400 IU)")
    if iu_per_mg and claim.per == s.per and not s.is_pair:
        if claim.unit == "iu" and s.unit == "mg":
            return replace(s, low=s.low * iu_per_mg, high=s.high * iu_per_mg, unit="iu",
                           shown_unit="IU", scale=1, decimals=-1)
        if claim.unit == "mg" and s.unit == "iu":
            return replace(s, low=s.low / iu_per_mg, high=s.high / iu_per_mg, unit="mg",
                           shown_unit="mcg", scale=1e-3, decimals=-1)
    return None


def _equal(a: float, b: float, claim: Quantity, source: Quantity) -> bool:
    if math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12):
        return True
    if "approx" in (claim.bound, source.bound):
        # "about 90%" allows 88%; "about 93%" does not allow 97%
        rounded = any(v and abs(v / q.scale) >= 10 and round(v / q.scale) % 10 == 0
                      for v, q in ((a, claim), (b, source)))
        return math.isclose(a, b, rel_tol=0.1 if rounded else 0.02)
    if _CALENDAR in (claim.decimals, source.decimals):
        return math.isclose(a, b, rel_tol=0.1)
    if claim.decimals < 0 or source.decimals < 0:
        return math.isclose(a, b, rel_tol=0.01)
    if claim.unit in _ROUNDABLE:
        # "28%" is a fair rounding of "28.4%" (not of "29.4%")
        return abs(a / claim.scale - b / claim.scale) <= 0.5 * 10 ** -claim.decimals + 1e-9
    return False
