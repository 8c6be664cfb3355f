"""Reference checking: does a cited paper exist, is it the one named, was it retracted.

``model`` holds the records; ``parse`` reads reference strings; ``lookup`` asks Crossref, PubMed and
OpenAlex; ``retractions`` reads the Retraction Watch data; ``resolve`` decides each outcome.
"""
from .model import (
    REFERENCE_KEY_PREFIX,
    FieldComparison,
    LookupSettings,
    Notice,
    NoticeKind,
    Record,
    Reference,
    ReferenceCheck,
    ReferenceStatus,
    is_reference_key,
    reference_key,
)

__all__ = ["REFERENCE_KEY_PREFIX", "is_reference_key", "reference_key", "FieldComparison", "LookupSettings", "Notice",
           "NoticeKind", "Record", "Reference", "ReferenceCheck", "ReferenceStatus"]
