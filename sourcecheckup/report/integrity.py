"""A report's integrity section: the SHA-256 of the evidence its figures rest on, of itself, and a signature.

- **Evidence digest.** Each evidence table of the run (:data:`~sourcecheckup.store.evidence.EVIDENCE_TABLES`:
  the run row, responses, statements, sources with their raw-bytes hash and extracted text, verdicts, reviews,
  suggestions, reference checks, skipped records) is read in a canonical order; each row's digest is the
  SHA-256 of its canonical JSON; a table's digest is the SHA-256 of its rows' digests in order; the overall
  digest is the SHA-256 of the canonical JSON of ``{table: digest}``. The report keeps each row's digest
  shortened to 16 hex digits, concatenated in row order (``row_digests``, one string), so
  ``verify-report`` can name the first row that differs.
- **Report digest.** ``sections`` holds the SHA-256 of each top-level section's canonical JSON;
  ``report_sha256`` is the SHA-256 of the canonical JSON of ``sections``; ``content_sha256`` is the same
  without the fields that name when, where and by which software it was written (:data:`VOLATILE_FIELDS`):
  two reports of one database state with the same options share it, so an
  HTML, PDF or XLSX report (which carries it) can be matched to a verified JSON report.
- **Signature.** Ed25519 over the ASCII ``report_sha256`` (the ``cryptography`` package), with the public
  key's fingerprint (SHA-256 of its raw 32 bytes).

Canonical JSON: keys sorted, no spaces, UTF-8 as written (``json.dumps(..., sort_keys=True,
separators=(",", ":"), ensure_ascii=False)``). A section's own digest fields (:data:`SELF_FIELDS`) are left
out of the ``integrity`` section's digest.
"""
from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..store import Store
from ..store.evidence import EVIDENCE_TABLES

ROW_DIGEST_CHARS = 16
SELF_FIELDS = ("report_sha256", "content_sha256", "sections", "signature")
# fields that differ between two builds of one database state with the same options (left out of
# content_sha256 and of verify-report's comparison), with the reason
VOLATILE_FIELDS: dict[str, str] = {
    "generated_at": "when the report was written",
    "run.database": "where the database file was when the report was written",
    "audit_trail.database": "where the database file was when the report was written",
    "audit_trail.verify_command": "names the database path the report was written from",
    "run.report_version": "the version of the software that wrote the report (shown, not compared)",
    "audit_trail.report_version": "the version of the software that wrote the report (shown, not compared)",
    "audit_trail.report_written_with": "the software that wrote the report (the run's own is audit_trail.provenance)",
}
EVIDENCE_METHOD = ("row = SHA-256(canonical JSON of the row); table = SHA-256(row digests in order); "
                   "evidence = SHA-256(canonical JSON of {table: table digest}); row_digests = each row's first 16 hex "
                   "digits, concatenated in order")
REPORT_METHOD = ("sections = {section: SHA-256(canonical JSON)}, the integrity section without its own digests; "
                 "report_sha256 = SHA-256(canonical JSON of sections); content_sha256 = the same without "
                 "the volatile fields (generated_at, the database path, the writing software); "
                 "canonical JSON = keys sorted, separators ',' ':', UTF-8")


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------- evidence

def _row_for_digest(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def evidence_digest(store: Store, run_id: str) -> dict[str, Any]:
    """The run's evidence digests: overall, per table (rows, SHA-256) and each row's shortened digest."""
    tables: dict[str, Any] = {}
    for table in EVIDENCE_TABLES:
        h = hashlib.sha256()
        rows: list[str] = []
        for row in store.iter_evidence(run_id, table):
            d = hashlib.sha256(canonical(_row_for_digest(row))).digest()
            h.update(d)
            rows.append(d.hex()[:ROW_DIGEST_CHARS])
        tables[table] = {"rows": len(rows), "sha256": h.hexdigest(), "row_digests": "".join(rows)}
    overall = sha256_hex(canonical({t: v["sha256"] for t, v in tables.items()}))
    return {"sha256": overall, "method": EVIDENCE_METHOD, "tables": tables}


def _source_place(citations: str | None, url: str) -> str:
    try:
        cited = json.loads(citations or "[]")
    except ValueError:
        cited = []
    return f"source {cited.index(url) + 1} {url}" if url in cited else f"source {url}"


def row_label(table: str, index: int, row: Mapping[str, Any]) -> str:
    """How a person names an evidence row: "verdict 17 (statement r1/s3 x source 2 ..., judge builtin)"."""
    n = index + 1
    if table == "run":
        return f"the run row ({row.get('id')})"
    if table == "responses":
        return f"response {n} ({row.get('_rid')})"
    if table == "statements":
        return f"statement {n} ({row.get('_rid')}/s{(row.get('_ord') or 0) + 1})"
    if table == "sources":
        return f"source {n} ({row.get('url')})"
    if table == "reference_checks":
        return f"reference check {n} ({row.get('url')})"
    if table == "skipped":
        return f"skipped record {n} ({row.get('origin')})"
    statement = f"statement {row.get('_rid')}/s{(row.get('_ord') or 0) + 1}"
    place = _source_place(row.get("_citations"), str(row.get("url")))
    who = {"verdicts": f", judge {row.get('judge_id')}", "reviews": f", reviewer {row.get('reviewer')}"}.get(table, "")
    return f"{table[:-1]} {n} ({statement} x {place}{who})"


def explain_evidence(store: Store, run_id: str, saved: Mapping[str, Any]) -> list[str]:
    """Where the stored evidence no longer matches the report's digests: per table, the first row that differs,
    named, and which of its fields differ when the report shows that row (else the row count)."""
    out: list[str] = []
    saved_tables = saved.get("tables") or {}
    for table in EVIDENCE_TABLES:
        want = saved_tables.get(table)
        if not isinstance(want, Mapping):
            out.append(f"integrity.evidence.tables.{table}: missing from the report")
            continue
        joined = str(want.get("row_digests") or "")
        digests = [joined[i:i + ROW_DIGEST_CHARS] for i in range(0, len(joined), ROW_DIGEST_CHARS)]
        n = 0
        first: str | None = None
        for i, row in enumerate(store.iter_evidence(run_id, table)):
            n += 1
            if first is not None:
                continue
            d = sha256_hex(canonical(_row_for_digest(row)))[:ROW_DIGEST_CHARS]
            if i >= len(digests):
                first = f"{row_label(table, i, row)} is in the database but not in the report's evidence"
            elif d != digests[i]:
                first = f"{row_label(table, i, row)} differs from when the report was written"
        if first is None and n < len(digests):
            first = f"{table} row {n + 1} of the report's evidence is no longer in the database"
        if first is not None:
            out.append(f"evidence {table} ({n} rows now, {len(digests)} when the report was written): {first}")
    return out


# ---------------------------------------------------------------------------- the report's own digests

class _CanonicalHasher:
    """SHA-256 of the canonical JSON of a value, with lists at given paths streamed from an iterable."""

    def __init__(self, streams: "Streams | None" = None) -> None:
        self.h = hashlib.sha256()
        self.streams = streams or {}

    def feed(self, value: Any, path: tuple[str, ...] = ()) -> "_CanonicalHasher":
        if path in self.streams:
            self.h.update(b"[")
            for i, item in enumerate(self.streams[path]()):
                if i:
                    self.h.update(b",")
                self.h.update(canonical(item))
            self.h.update(b"]")
        elif isinstance(value, Mapping) and any(p[:len(path)] == path and len(p) > len(path) for p in self.streams):
            self.h.update(b"{")
            for i, key in enumerate(sorted(value)):
                if i:
                    self.h.update(b",")
                self.h.update(canonical(key) + b":")
                self.feed(value[key], (*path, key))
            self.h.update(b"}")
        else:
            self.h.update(canonical(value))
        return self

    def hexdigest(self) -> str:
        return self.h.hexdigest()


class ListHasher:
    """SHA-256 of the canonical JSON of a list given an item at a time (a streamed report's responses)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256(b"[")
        self.n = 0

    def add(self, item: Any) -> None:
        self.h.update((b"," if self.n else b"") + canonical(item))
        self.n += 1

    def hexdigest(self) -> str:
        h = self.h.copy()
        h.update(b"]")
        return h.hexdigest()


Streams = Mapping[tuple[str, ...], Callable[[], Iterable[Any]]]


def section_digests(report: Mapping[str, Any], streams: Streams | None = None,
                    precomputed: Mapping[str, str] | None = None) -> dict[str, str]:
    """{section: SHA-256 of its canonical JSON}; ``streams`` gives the items of a list held outside the dict
    by path, ``precomputed`` a section's digest made as it was streamed (a streamed report's responses);
    the integrity section is taken without :data:`SELF_FIELDS`."""
    out = {}
    for key, value in report.items():
        if precomputed and key in precomputed:
            out[key] = precomputed[key]
            continue
        if key == "integrity" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in SELF_FIELDS}
        sub = {p[1:]: f for p, f in (streams or {}).items() if p[0] == key}
        out[key] = _CanonicalHasher(sub).feed(value).hexdigest()
    return out


def seal(report: dict[str, Any], streams: Streams | None = None,
         precomputed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Set the report's own digests (``integrity.sections``, ``report_sha256``, ``content_sha256``)."""
    integrity = report.setdefault("integrity", {})
    for key in SELF_FIELDS:
        integrity.pop(key, None)
    sections = section_digests(report, streams, precomputed)
    integrity["report_method"] = REPORT_METHOD
    sections["integrity"] = section_digests({"integrity": integrity})["integrity"]
    integrity["sections"] = sections
    integrity["report_sha256"] = sha256_hex(canonical(sections))
    integrity["content_sha256"] = content_digest(report, sections, streams)
    return report


def content_digest(report: Mapping[str, Any], sections: Mapping[str, str], streams: Streams | None = None) -> str:
    """SHA-256 over the section digests with :data:`VOLATILE_FIELDS` left out: the same for every build of one
    database state with the same options, wherever and whenever it is written."""
    out = dict(sections)
    partial: dict[str, list[str]] = {}
    for path in VOLATILE_FIELDS:
        top, _, rest = path.partition(".")
        if not rest:
            out.pop(top, None)
        else:
            partial.setdefault(top, []).append(rest)
    for top, fields in partial.items():
        value = report.get(top)
        if isinstance(value, Mapping):
            stripped = {k: v for k, v in value.items() if k not in fields}
            out[top] = section_digests({top: stripped}, streams)[top]
    return sha256_hex(canonical(out))


def check_self_digest(report: Mapping[str, Any]) -> list[str]:
    """The report's own digests recomputed from its content: each edited section is named."""
    integrity = report.get("integrity")
    if not isinstance(integrity, Mapping) or "report_sha256" not in integrity:
        return ["integrity: the report carries no digest of itself (written before reports were sealed?)"]
    saved = integrity.get("sections") or {}
    now = section_digests(report)
    out = [f"{key}: this section was edited after the report was written (its digest differs)"
           for key in sorted(set(now) | set(saved)) if now.get(key) != saved.get(key)]
    if sha256_hex(canonical(saved)) != integrity.get("report_sha256"):
        out.append("integrity.report_sha256: does not match the section digests")
    if not out and content_digest(report, saved) != integrity.get("content_sha256"):
        out.append("integrity.content_sha256: does not match the section digests")
    return out


# ---------------------------------------------------------------------------- signing (Ed25519)

def _load_private(path: str | Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    data = Path(path).read_bytes()
    try:
        key = (serialization.load_ssh_private_key(data, password=None) if b"OPENSSH" in data
               else serialization.load_pem_private_key(data, password=None))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not an unencrypted Ed25519 private key (PEM or OpenSSH): {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: the key is not Ed25519 (make one with `sourcecheckup keygen KEYFILE`)")
    return key


def load_public_key(path: str | Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = Path(path).read_bytes()
    try:
        key = (serialization.load_ssh_public_key(data) if data.startswith(b"ssh-")
               else serialization.load_pem_public_key(data))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not an Ed25519 public key (PEM or OpenSSH): {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path}: the key is not Ed25519")
    return key


def fingerprint(public_key: Any) -> str:
    """``SHA256:`` and the hex SHA-256 of the key's raw 32 bytes."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "SHA256:" + sha256_hex(raw)


def sign(report: dict[str, Any], key_path: str | Path) -> dict[str, Any]:
    """Sign a sealed report's ``report_sha256`` with the Ed25519 private key in ``key_path``."""
    key = _load_private(key_path)
    digest = report["integrity"]["report_sha256"]
    report["integrity"]["signature"] = {
        "algorithm": "Ed25519", "signed": "integrity.report_sha256 (ASCII)",
        "public_key_fingerprint": fingerprint(key.public_key()),
        "value": base64.b64encode(key.sign(digest.encode("ascii"))).decode("ascii")}
    return report


def check_signature(report: Mapping[str, Any], public_key_path: str | Path) -> list[str]:
    """[] when the report's signature verifies with the public key; else what is wrong."""
    from cryptography.exceptions import InvalidSignature

    key = load_public_key(public_key_path)
    sig = (report.get("integrity") or {}).get("signature")
    if not isinstance(sig, Mapping):
        return ["integrity.signature: the report is not signed"]
    out = []
    if sig.get("public_key_fingerprint") != fingerprint(key):
        out.append(f"integrity.signature.public_key_fingerprint: the report was signed with "
                   f"{sig.get('public_key_fingerprint')}, the key given is {fingerprint(key)}")
    try:
        digest = sha256_hex(canonical(section_digests(report)))
        key.verify(base64.b64decode(str(sig.get("value", ""))), digest.encode("ascii"))
    except (InvalidSignature, ValueError):
        out.append("integrity.signature: does not verify with the key given over the report as it is now")
    return out


def generate_key_pair(private_path: str | Path) -> tuple[Path, Path, str]:
    """Write a new Ed25519 key pair: the private key (PEM, PKCS#8, mode 0600) and ``<name>.pub`` (PEM)."""
    import os

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_path = Path(private_path)
    public_path = private_path.with_name(private_path.name + ".pub")
    for p in (private_path, public_path):
        if p.exists():
            raise FileExistsError(f"{p} exists: choose another name (a key is never overwritten)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    public_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    return private_path, public_path, fingerprint(key.public_key())


