"""The study's model-benchmark workflow: reference documents -> questions -> answers from
several models -> one audit run, with accuracy and best-of-K. See :mod:`.runner`."""
from .documents import BenchInput, DocumentsError, read_bench_input, read_local_document
from .records import (
    AccuracyGrade,
    AccuracyLabel,
    Answer,
    AnswerStatus,
    Document,
    Question,
    QuestionFileError,
    QuestionSource,
    read_questions,
    write_answers,
    write_questions,
)
from .results import BenchResults, BestOfK, ModelResult, WithWithout, benchmark_results, format_results
from .runner import BenchEvent, Benchmark, BenchSettings, BenchStage, answer_all, answer_support
from .steps import VARIANTS, Prompts, answer_question, generate_questions, grade_accuracy, make_variant, parse_answer
from .storage import BenchRow, BenchStore

__all__ = [
    "AccuracyGrade", "AccuracyLabel", "Answer", "AnswerStatus", "BenchEvent", "BenchInput", "BenchResults",
    "BenchRow", "BenchSettings", "BenchStage", "BenchStore", "Benchmark", "BestOfK",
    "Document", "DocumentsError", "ModelResult", "Prompts", "Question",
    "QuestionFileError", "QuestionSource", "VARIANTS", "WithWithout", "answer_all", "answer_question", "answer_support",
    "benchmark_results", "format_results", "generate_questions", "grade_accuracy",
    "make_variant", "parse_answer", "read_bench_input", "read_local_document", "read_questions",
    "write_answers", "write_questions",
]
