"""Runs for report tests: one audited through the real pipeline (local site, keyword judge)."""
from __future__ import annotations

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.models import Response
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
UNSUPPORTED = "Metformin cures hypertension within a week."
HFE = "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes."


def site_responses(site: str) -> list[Response]:
    hyp, met, hfe = (f"{site}/article/hypertension", f"{site}/article/metformin-lactic-acidosis",
                     f"{site}/article/hfe-hemochromatosis")
    return [
        Response(id="r1", text=f"{SUPPORTED} [1] {UNSUPPORTED} [2] Please consult your doctor.",
                 citations=(hyp, met), markers={"1": 0, "2": 1}, model="model-a", question="What is hypertension?",
                 extra={"source": "guidelines"}),
        Response(id="r2", text=f"{HFE} [1] This was shown long ago. [2]",
                 citations=(f"{site}/status/404", hfe), markers={"1": 1, "2": 0}, model="model-b",
                 extra={"source": "pubmed"}),
        Response(id="r3", text=f"{SUPPORTED}", citations=(f"{site}/status/410", f"{site}/pages/paywall-teaser.html"),
                 model="model-b", extra={"source": "pubmed"}),
        Response(id="r4", text=f"{SUPPORTED} {UNSUPPORTED}", citations=(hyp,), model="model-a",
                 extra={"source": "guidelines"}),
    ]


async def audit_site(store: Store, site: str, responses: list[Response] | None = None,
                     judges: list[KeywordJudge] | None = None) -> str:
    judges = judges or [KeywordJudge()]
    config = RunConfig(judges=[j.id for j in judges],
                       fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5, browser="never"))
    audit = Audit(store, config, judges=judges)
    return await audit.start(responses or site_responses(site), input_label="report test")
