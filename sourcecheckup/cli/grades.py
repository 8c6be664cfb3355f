"""Answer grades and the grader trained on them: ``grade``, ``grades``, ``grader train`` and ``grader score``.

    sourcecheckup grade RUN RESPONSE good|bad --reviewer NAME [--note TEXT]
    sourcecheckup grades [RUN ...] [--json]
    sourcecheckup grader train RUN [RUN ...] -o grader.json
    sourcecheckup grader score RUN -g grader.json [--json]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from .common import EXIT_OK, UsageError, open_store, pick_run, shown


def cmd_grade(args: argparse.Namespace) -> int:
    from ..review.answer_grades import GradeError, add_answer_grade

    store = open_store(args)
    run_id = pick_run(store, args.run)
    response: int | str = args.response
    if args.response.isdigit() and not store.responses_by_rid(run_id, args.response):
        response = int(args.response)          # an answer's stored key, as the app and `grades --json` show it
    try:
        add_answer_grade(store, run_id, response, args.reviewer, args.grade, args.note or "")
    except GradeError as exc:
        raise UsageError(str(exc)) from None
    print(f"graded answer {args.response} of run {run_id} {args.grade.strip().lower()} as {args.reviewer.strip()}")
    return EXIT_OK


def cmd_grades(args: argparse.Namespace) -> int:
    from ..review.answer_grades import answer_grades, format_comparison, grade_agreement

    store = open_store(args, reading=True)
    run_ids = [pick_run(store, r) for r in args.runs] or [pick_run(store, None)]
    report = grade_agreement(store, run_ids)
    if args.json:
        report["grades"] = [{"run_id": g.run_id, "response_pk": g.response_pk, "response_id": g.response_id,
                             "reviewer": g.reviewer, "grade": g.grade.value, "note": g.note, "sample": g.sample,
                             "created_at": g.created_at} for r in run_ids for g in answer_grades(store, r)]
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return EXIT_OK
    m = report["majority"]
    print(f"run{'s' if len(run_ids) > 1 else ''} {', '.join(run_ids)}: {report['answers_graded']} answer(s) graded by "
          f"{len(report['graders'])} grader(s) ({', '.join(report['graders']) or 'none'}); majority good "
          f"{m['good']}, bad {m['bad']}; {report['without_majority']} tied")
    if not report["comparisons"]:
        print("agreement between graders: needs two graders of the same answers")
    for c in report["comparisons"]:
        print("  " + format_comparison(c))
    return EXIT_OK


def _cv_lines(cv: dict[str, Any]) -> list[str]:
    from ..review.answer_grades import format_comparison

    line = format_comparison({"rater_a": "grader (cross-validated)", "rater_b": "graders' majority", "n": cv["n"],
                              "agreement": cv["accuracy"], "kappa": cv["kappa"]})
    base = cv.get("majority_baseline")
    out = [f"cross-validated over {cv['folds']} folds (answers to one question in one fold): " + line.split(": ", 1)[1]]
    if base is not None:
        out.append(f"  always the commoner grade would agree {100 * base:.1f}%")
    if cv.get("left_out"):
        out.append(f"  {cv['left_out']} answer(s) not scored: their fold's training part held one grade only")
    return out


def cmd_grader_train(args: argparse.Namespace) -> int:
    from ..review.grader import GraderError, train_grader

    store = open_store(args, reading=True)
    run_ids = [pick_run(store, r) for r in args.runs]
    try:
        grader = train_grader(store, run_ids, seed=args.seed)
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    path = grader.save(args.output)
    t = grader.trained
    print(f"grader {grader.id} trained on {t['answers']} graded answers ({t['good']} good, {t['bad']} bad) of run(s) "
          f"{', '.join(run_ids)}; written to {path}")
    for line in _cv_lines(grader.cross_validation):
        print(line)
    return EXIT_OK


def cmd_grader_score(args: argparse.Namespace) -> int:
    from ..review.answer_grades import format_comparison
    from ..review.grader import GraderError, agreement_with_graders, load_grader, score_run

    try:
        grader = load_grader(args.grader)
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    store = open_store(args, reading=True)
    run_id = pick_run(store, args.run)
    save = not store.read_only
    scored = score_run(store, run_id, grader, save=save)
    agreement = agreement_with_graders(scored, grader)
    in_sample = run_id in (grader.trained.get("runs") or []) and grader.trained.get("database") == str(store.path)
    if args.json:
        print(json.dumps({"run_id": run_id, "grader": grader.id, "stored": save, "trained_on_this_run": in_sample,
                          "answers": [{"response_pk": s.response_pk, "response_id": s.response_id, "model": s.model,
                                       "score": round(s.score, 6), "grade": s.grade.value if s.grade else None}
                                      for s in scored], "agreement": agreement}, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"{'response':<24} {'model':<28} {'P(good)':>8}  grade")
    for s in scored:
        grade = s.grade.value if s.grade else "-"
        print(f"{shown(s.response_id[:24]):<24} {shown(s.model[:28]):<28} {s.score:8.3f}  {grade}")
    where = f"stored in {store.path} as {grader.id}" if save else "not stored (the database is read-only)"
    print(f"{len(scored)} answer(s) scored by {grader.id}; {where}")
    if agreement["n"]:
        note = " (in-sample: the grader was trained on this run)" if in_sample else ""
        print("against the graders: " + format_comparison(agreement).split(": ", 1)[1] + note)
    return EXIT_OK


def add_commands(sub: Any, common: argparse.ArgumentParser) -> Any:
    """``grade``, ``grades`` and the ``grader`` group (train, score); returns the group's subparsers."""
    p = sub.add_parser("grade", parents=[common], help="grade a whole answer Good or Bad (kept apart from pair labels)")
    p.add_argument("run", metavar="RUN", help="run id")
    p.add_argument("response", metavar="RESPONSE", help="the answer's id (or its stored key)")
    p.add_argument("grade", metavar="GRADE", help="good or bad")
    p.add_argument("--reviewer", required=True, metavar="NAME", help="who grades")
    p.add_argument("--note", metavar="TEXT", help="why, in a sentence")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("grades", parents=[common],
                       help="answer grades of runs and the agreement between graders (percent, Cohen's kappa, n)")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids (default: the latest)")
    p.add_argument("--json", action="store_true", help="print every grade and the agreement as JSON")
    p.set_defaults(func=cmd_grades)

    p = sub.add_parser("grader", parents=[common], help="train a grader on graded answers, or score answers with one")
    gsub = p.add_subparsers(dest="grader_command", metavar="SUBCOMMAND",
                            help="train: a grader from graded answers; score: a run's answers with a grader")
    gsub.required = True
    t = gsub.add_parser("train", parents=[common], help="train a grader on the graded answers of runs")
    t.add_argument("runs", nargs="+", metavar="RUN", help="runs whose graded answers to learn from")
    t.add_argument("-o", "--output", required=True, metavar="FILE", help="the grader file to write (JSON)")
    t.add_argument("--seed", type=int, default=0, help="seed of the cross-validation folds (default 0)")
    t.set_defaults(func=cmd_grader_train)
    s = gsub.add_parser("score", parents=[common], help="score every answer of a run with a grader (P(good))")
    s.add_argument("run", nargs="?", metavar="RUN", help="run id (default: the latest)")
    s.add_argument("-g", "--grader", required=True, metavar="FILE", help="a grader file from `grader train`")
    s.add_argument("--json", action="store_true", help="print the scores as JSON")
    s.set_defaults(func=cmd_grader_score)
    return gsub


__all__ = ["add_commands"]
