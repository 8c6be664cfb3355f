"""Answers measured against what experts wrote: OLAPH's comprehensiveness and hallucination over the
must-have / nice-to-have statements (:mod:`.metrics`, judged by :mod:`.step`), and EVAL's similarity to the
reference answer (:mod:`sourcecheckup.expert.similarity`); the report section is :mod:`.section`."""
