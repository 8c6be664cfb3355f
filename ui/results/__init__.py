"""The Results page: a run's input, its runs list, metrics, responses and the detail tabs
(answer, sources, support matrix, suggestions), one module per panel."""
from .page import ResultsPage

__all__ = ["ResultsPage"]
