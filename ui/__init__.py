"""The SourceCheckup desktop app (PySide6): a view over the engine and its SQLite store."""
