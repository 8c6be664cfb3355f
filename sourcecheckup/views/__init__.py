"""Read-only views of stored runs shaped for the app's screens, one module per screen (no Qt).

results (the run view), runs (list, comparison), sources, matrix, review (pairs, samples,
agreement), benchmark, references (reference-check badges and evidence), and text (positions, diffs,
percentages). Suggestions live in sourcecheckup.cleanup.
"""
