"""SourceCheckup: audit the citations in answers written by large language models."""
__version__ = "0.1.0"
