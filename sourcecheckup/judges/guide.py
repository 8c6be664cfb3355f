"""The three ways to a strong judge, as the app and the CLI explain them where the choice is made.

Each path says what it costs, what it needs and how accurate its authors found it, with the
source of that figure written out (the figures are the authors' own, on their own test sets,
not measurements of this program; ``judges compare`` measures them on your own reviews). The built-in
judge's note gives its figures as measured here, from ``BUILTIN_FIGURES``, the one place code holds them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgePath:
    """One way to a judge: an API model, a server on this computer, or a downloaded checker."""

    title: str
    example: str       # a spec to start from
    costs: str
    needs: str
    accuracy: str
    source: str        # where the accuracy figure comes from, as a citation in words
    summary: str       # the path in one line, for a crowded screen


# bench/local_judge.py, MiniCheck-sized models on 2 threads, 5 statements a 7.5 KB page, a quiet machine (CPU time
# over the threads; docs/scaling.md)
LAPTOP_MINUTES = ("10 minutes with MiniCheck-RoBERTa-large (about 4.5 with local:NAME#quantize=int8), about 21 with "
                  "MiniCheck-DeBERTa-v3-large (about 8 with #quantize=int8), 20 to 23 with "
                  "MiniCheck-Flan-T5-large (about 9.5 with #quantize=int8)")

JUDGE_PATHS: tuple[JudgePath, ...] = (
    JudgePath(
        title="An API model (OpenAI, Anthropic)",
        example="openai:gpt-4o",
        costs="paid per call by the provider; statements and source passages are sent to the provider",
        needs="an internet connection and an API key (kept in the operating system's keyring)",
        accuracy="GPT-4o agreed with the consensus of three physicians on 88.7% of the statement–source "
                 "pairs they labelled",
        source="the SourceCheckup study: Wu et al., \"An automated framework for assessing how well LLMs "
               "cite relevant medical references\", Nature Communications 2025",
        summary="API model: paid per call, needs a key; GPT-4o agreed with physicians on 88.7% of pairs"),
    JudgePath(
        title="A model server on this computer (Ollama, LM Studio, llama.cpp, vLLM)",
        example="openai-compatible:http://127.0.0.1:11434/v1#llama3.1",
        costs="free; nothing leaves this computer",
        needs="the server running with a model pulled (e.g. `ollama pull bespoke-minicheck`, about 5 GB); "
              "a GPU or Apple silicon makes it fast; `sourcecheckup judges detect` (in the app: Find local "
              "servers) lists what is running; llama.cpp's llama-server shares its context (`-c`; by default the "
              "model's own, often 4,096 tokens) among its slots (`-np`; 4 when left to choose): when calls fail "
              "with \"context exceeded\", start it with a larger `-c` or `-np 1`, or lower `--concurrency`",
        accuracy="depends on the model; Bespoke-MiniCheck-7B, a checker made for this task (Ollama: "
                 "bespoke-minicheck), reached 77.4% balanced accuracy on LLM-AggreFact",
        source="the Bespoke-MiniCheck-7B model card by Bespoke Labs and the LLM-AggreFact leaderboard of "
               "Tang, Laban and Durrett, \"MiniCheck: Efficient Fact-Checking of LLMs on Grounding "
               "Documents\", EMNLP 2024",
        summary="Server on this computer (Ollama…): free, private; Bespoke-MiniCheck-7B 77.4% balanced acc."),
    JudgePath(
        title="A downloaded checker (local:)",
        example="local:minicheck-roberta-large, after `sourcecheckup models pull minicheck-roberta-large` "
                "(`sourcecheckup models list` names the others; a model folder: local:/path/to/folder)",
        costs="free; a one-time download (0.4–3 GB), then it works offline; slow on a laptop's CPU: a "
              "10-answer audit (about 100 statement–source pairs, 5 statements a 7.5 KB page) takes about "
              f"{LAPTOP_MINUTES} on 2 free cores (bench/local_judge.py); a GPU is much faster",
        needs="`sourcecheckup models pull NAME` once (or `models import DIR --name NAME` from a copy, offline), "
              "disk space and a few GB of memory; runs on the CPU, much faster with a GPU",
        accuracy="the MiniCheck authors report MiniCheck-Flan-T5-Large on par with GPT-4 on LLM-AggreFact "
                 "at a small fraction of the cost",
        source="Tang, Laban and Durrett, \"MiniCheck: Efficient Fact-Checking of LLMs on Grounding "
               "Documents\", EMNLP 2024",
        summary="Downloaded checker (local:): free, offline; MiniCheck on par with GPT-4, its authors report"),
)



@dataclass(frozen=True)
class ScreenFigures:
    """The built-in judge's accuracy as measured here (bench/judge_accuracy.py; README, Judges), written once."""

    wice: float                  # balanced accuracy on WiCE dev: real Wikipedia sentences and the pages they cite
    wice_cross_validated: float  # the same, 5-fold cross-validated by page (the reader's page gate was trained on it)
    passed_unreviewed: float     # of WiCE's not fully supported sentences: called supported without "review first",
    #                              out of fold
    clinical_heldout: float      # balanced accuracy on clinical pairs written apart and never tuned on


BUILTIN_FIGURES = ScreenFigures(wice=0.782, wice_cross_validated=0.783, passed_unreviewed=0.131,
                                clinical_heldout=0.810)


def builtin_note(f: ScreenFigures = BUILTIN_FIGURES) -> str:
    """What the built-in judge is, in its measured figures, and what to choose instead."""
    return ("The built-in judge is a screening judge (a small learned reader decides on whole pages): it works "
            "offline at once, but it errs both ways: it can call a "
            "wrong statement supported, and it can miss paraphrased support. Measured here (bench/judge_accuracy.py): "
            f"balanced accuracy {f.wice:.3f} on WiCE's real Wikipedia citations ({f.wice_cross_validated:.3f} "
            f"cross-validated by page), where {f.passed_unreviewed:.1%} of the statements a page does not fully "
            "support were called supported without a \"review first\" mark (out of fold); "
            f"{f.clinical_heldout:.3f} on clinical pairs it was never tuned on. For final figures choose one of these.")


BUILTIN_NOTE = builtin_note()


def guide_text() -> str:
    """The three paths as plain text (the CLI prints it; the app shows the same fields)."""
    lines = [BUILTIN_NOTE, ""]
    for i, path in enumerate(JUDGE_PATHS, start=1):
        lines += [f"{i}. {path.title} — e.g. {path.example}",
                  f"   Costs: {path.costs}.",
                  f"   Needs: {path.needs}.",
                  f"   Accuracy: {path.accuracy} ({path.source}).", ""]
    return "\n".join(lines).rstrip()


__all__ = ["BUILTIN_FIGURES", "BUILTIN_NOTE", "JUDGE_PATHS", "JudgePath", "ScreenFigures", "builtin_note", "guide_text"]
