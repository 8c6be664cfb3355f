"""The address rule that keeps cited URLs away from the user's own network."""
from __future__ import annotations

import pytest

from sourcecheckup.fetching.safety import HostNotFoundError, UnsafeUrlError, check_url


@pytest.mark.parametrize("url,expected", [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://10.1.2.3/x", "10.1.2.3 is a private network address"),
    ("http://192.168.0.1/", "192.168.0.1 is a private network address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://0.0.0.0:8080/", "0.0.0.0 is an unspecified address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is a loopback address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://localhost:8000/", "localhost resolves to 127.0.0.1, a loopback address"),
    ("http://admin.localhost/", "admin.localhost resolves to 127.0.0.1, a loopback address"),
])
async def test_non_public_addresses_are_refused_with_the_reason(url, expected):
    with pytest.raises(UnsafeUrlError) as err:
        await check_url(url)
    assert str(err.value).startswith(expected)
    assert "--allow-host" in str(err.value)


@pytest.mark.parametrize("url,expected", [
    ("file:///etc/passwd", "scheme 'file' is not allowed"),
    ("ftp://example.org/a.pdf", "scheme 'ftp' is not allowed"),
    ("javascript:alert(1)", "scheme 'javascript' is not allowed"),
    ("www.example.org/page", "scheme 'no scheme' is not allowed"),
    ("http:///path-only", "the URL has no host name"),
    ("http://example.org:99999/", "not a valid URL"),
])
async def test_only_http_and_https_urls_with_a_host_pass(url, expected):
    with pytest.raises(UnsafeUrlError) as err:
        await check_url(url)
    assert str(err.value).startswith(expected)


async def test_allow_hosts_lets_a_named_host_or_address_through():
    assert (await check_url("http://127.0.0.1:8000/", ("127.0.0.1",))).host == "127.0.0.1"
    assert (await check_url("http://LOCALHOST/", ("localhost",))).host == "localhost"
    # allowing 127.0.0.1 does not allow the other loopback address localhost may resolve to
    with pytest.raises(UnsafeUrlError):
        await check_url("http://localhost/", ("127.0.0.1",))


async def test_public_address_literal_passes_without_lookup():
    checked = await check_url("https://93.184.215.14/page")
    assert checked.addresses == ("93.184.215.14",)


async def test_special_use_names_do_not_resolve_and_ask_no_resolver():
    with pytest.raises(HostNotFoundError, match="could not resolve host journal.invalid"):
        await check_url("https://journal.invalid/x")
