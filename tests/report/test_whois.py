"""Whois country lookups: referral followed, time and byte caps hold, junk gives None, the report uses it
only when asked. Every server here is a fake on 127.0.0.1."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Callable

import pytest

from sourcecheckup.cli import main
from sourcecheckup.report import build_report, report_html
from sourcecheckup.report.whois import parse_country, parse_referral, registrable_domain, whois_countries
from sourcecheckup.store import Store
from tests.support.synth_run import synthesize_run

Reply = Callable[[str], "bytes | None"]   # None: accept, read the question, never answer


class FakeWhois:
    """An RFC 3912 server on 127.0.0.1 (asyncio, port 0, own thread) that records every question asked."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.questions: list[str] = []
        self.connections = 0
        self._handlers: set[asyncio.Task] = set()
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(5), "fake whois server did not start"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await self._stop.wait()
            await asyncio.wait_for(asyncio.gather(*self._handlers, return_exceptions=True), 5)

        self._loop.run_until_complete(serve())
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._handlers.add(asyncio.current_task())
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            question = line.decode().strip()
            self.questions.append(question)
            answer = self.reply(question)
            if answer is None:  # silent, but bounded: a client without a time cap sees a close after 8 s
                await asyncio.wait_for(self._stop.wait(), 8)
            else:
                writer.write(answer)
                await writer.drain()
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)


@pytest.fixture
def servers():
    made: list[FakeWhois] = []

    def make(reply: Reply) -> FakeWhois:
        made.append(FakeWhois(reply))
        return made[-1]

    yield make
    for s in made:
        s.close()


def registry_and_root(servers, country: str = "DE") -> tuple[FakeWhois, FakeWhois]:
    """An IANA-like root that refers every question to a registry that names the registrant's country."""
    registry = servers(lambda q: (f"Domain Name: {q.upper()}\r\nRegistrar: Example Registrar\r\n"
                                  f"Registrant Organization: Example GmbH\r\nRegistrant Country: {country}\r\n"
                                  f"Admin Country: US\r\n").encode())
    root = servers(lambda q: (f"% IANA WHOIS server\n\nrefer:        {registry.address}\n\n"
                              f"domain:       {q.rsplit('.', 1)[-1].upper()}\norganisation: Registry\n").encode())
    return root, registry


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


# ----------------------------------------------------------------------------- parsing

def test_registrant_country_wins_over_other_country_lines():
    reply = "country: FR\nRegistrant Country: de\nTech Country: US\n"
    assert parse_country(reply) == "DE"
    assert parse_country("inetnum: x\ncountry:        NL\n") == "NL"


def test_redacted_and_unknown_countries_are_not_countries():
    assert parse_country("Registrant Country: REDACTED FOR PRIVACY\n") is None
    assert parse_country("country: ZZ\n") is None
    assert parse_country("Registrant Country: Germany\n") is None


def test_referral_is_read_from_iana_and_arin_forms():
    assert parse_referral("refer:        whois.denic.de\n") == "whois.denic.de"
    assert parse_referral("ReferralServer:  whois://whois.ripe.net\n") == "whois.ripe.net"
    assert parse_referral("ReferralServer: rwhois://rwhois.example.net:4321\n") is None


def test_registrable_domain_drops_subdomains_and_skips_ip_addresses():
    assert registrable_domain("www.nejm.org") == "nejm.org"
    assert registrable_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registrable_domain("127.0.0.1") is None
    assert registrable_domain("localhost") is None


# ----------------------------------------------------------------------------- lookups

def test_referral_is_followed_to_the_registry_country(servers):
    root, registry = registry_and_root(servers)
    answers = whois_countries(["www.example.de", "example.de"], server=root.address)
    assert {h: a.country for h, a in answers.items()} == {"www.example.de": "DE", "example.de": "DE"}
    assert answers["example.de"].server == registry.address
    # one lookup per registrable domain, asked of the root, then of the registry it named
    assert root.questions == ["example.de"] and registry.questions == ["example.de"]


def test_silent_server_is_cut_at_the_time_cap_and_not_asked_again(servers):
    silent = servers(lambda q: None)
    answers = whois_countries(["a.com", "b.com", "c.com"], server=silent.address, timeout_s=1.0, concurrency=1)
    assert all(a.country is None for a in answers.values())
    assert "no answer" in answers["a.com"].problem
    assert silent.connections == 1   # cut once, then not asked again for the other two


def test_garbled_reply_gives_no_country(servers):
    junk = servers(lambda q: bytes(range(256)) * 4)
    words = servers(lambda q: b"<html><body>Registrant: somebody somewhere</body></html>")
    assert whois_countries(["x.org"], server=junk.address)["x.org"].country is None
    answer = whois_countries(["x.org"], server=words.address)["x.org"]
    assert answer.country is None and "no registrant country" in answer.problem


def test_reply_over_the_byte_cap_is_dropped(servers):
    flood = servers(lambda q: b"Registrant Country: DE\n" + b"x" * 100_000)
    answer = whois_countries(["x.org"], server=flood.address)["x.org"]
    assert answer.country is None and "65536 bytes" in answer.problem


def test_lookups_stop_at_the_per_report_limit(servers):
    root, registry = registry_and_root(servers)
    answers = whois_countries([f"site{i}.de" for i in range(5)], server=root.address, max_lookups=2)
    assert sum(1 for a in answers.values() if a.country == "DE") == 2
    assert sum(1 for a in answers.values() if "limit" in a.problem) == 3
    assert len(registry.questions) == 2


def test_refused_connection_never_raises():
    answer = whois_countries(["x.org"], server=closed_port())["x.org"]
    assert answer.country is None and answer.problem


# ----------------------------------------------------------------------------- the report

@pytest.fixture
def run(tmp_path):
    store = Store(tmp_path / "audit.db")
    run_id = synthesize_run(store, responses=4, statements=2, sources=2, base_url="https://www.example.org/page")
    yield store, run_id
    store.close()


def test_report_with_whois_counts_the_registrant_country(servers, run):
    store, run_id = run
    root, registry = registry_and_root(servers, "DE")
    report = build_report(store, run_id, whois=True, whois_server=root.address)
    an = report["analytics"]
    assert [(c["country"], c["count"]) for c in an["countries"]] == [("Germany", 8)]
    assert an["country_by_domain"] == [{"domain": "example.org", "country": "Germany", "rule": "whois",
                                        "code": "DE", "whois_server": registry.address}]
    assert an["country_rule"] == "whois_then_tld"
    assert "by whois" in an["country_note"] and "else by top-level domain" in an["country_note"]
    assert "else by top-level domain" in report_html(report)


def test_report_without_whois_makes_no_connection(servers, run):
    store, run_id = run
    root, registry = registry_and_root(servers)
    report = build_report(store, run_id, whois_server=root.address)
    an = report["analytics"]
    assert root.connections == 0 and registry.connections == 0
    assert [c["country"] for c in an["countries"]] == ["United States"]
    assert an["country_by_domain"] == [{"domain": "example.org", "country": "United States", "rule": "tld"}]
    assert an["country_rule"] == "tld"


def test_report_falls_back_to_the_top_level_domain_when_whois_fails(run):
    store, run_id = run
    report = build_report(store, run_id, whois=True, whois_server=closed_port())
    (row,) = report["analytics"]["country_by_domain"]
    assert (row["country"], row["rule"]) == ("United States", "tld") and row["whois_problem"]
    assert "0 of 1 domains" in report["analytics"]["country_note"]


def test_cli_report_whois_option(servers, run, tmp_path, capsys):
    store, run_id = run
    root, _ = registry_and_root(servers, "CH")
    out = tmp_path / "r.json"
    assert main(["report", run_id, "--db", str(store.path), "-o", str(out), "--whois",
                 "--whois-server", root.address]) == 0
    assert [c["country"] for c in json.loads(out.read_text())["analytics"]["countries"]] == ["Switzerland"]
    assert main(["report", run_id, "--db", str(store.path), "-o", str(out), "--whois-server", root.address]) == 2
    assert main(["report", run_id, "--db", str(store.path), "-o", str(out), "--whois",
                 "--whois-server", "127.0.0.1:notaport"]) == 2
    assert root.connections == 1
