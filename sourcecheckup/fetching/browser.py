"""A headless Chromium (through Playwright) for pages that need JavaScript to show their text.

One browser per run, launched on first use and reused; a bounded pool of pages; a hard time
cap per page; downloads off; images, media, fonts and stylesheets blocked; every request (each redirect hop
too, since we follow them ourselves) passes the same address rule as plain HTTP.
"""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models import FetchStatus, Source, utcnow
from .base import BodyTooLarge, FetchOptions, http_status_outcome, read_bounded, refused_url, status_phrase
from .http import HttpFetcher
from .safety import HostNotFoundError, UnsafeUrlError

# the headless shell first: the same engine without the desktop browser around it, it renders a
# page with about half the CPU (bench/fetch.py); the full browser works too
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium",
                       "chromium-headless-shell", "chromium", "chromium-browser", "google-chrome",
                       "google-chrome-stable")
CHROMIUM_ENV = "SOURCECHECKUP_CHROMIUM"
# where Chrome, Chromium and Edge install themselves on Windows (under each of these folders) and macOS
WINDOWS_BROWSERS = (("Google", "Chrome", "Application", "chrome.exe"), ("Chromium", "Application", "chrome.exe"),
                    ("Microsoft", "Edge", "Application", "msedge.exe"))
WINDOWS_ROOTS = ("PROGRAMFILES", "PROGRAMFILES(X86)", "LOCALAPPDATA")
MACOS_BROWSERS = ("Google Chrome.app/Contents/MacOS/Google Chrome", "Chromium.app/Contents/MacOS/Chromium",
                  "Microsoft Edge.app/Contents/MacOS/Microsoft Edge")
# the executables `playwright install chromium` puts in its own folder (headless shell first, as above)
PLAYWRIGHT_BUILDS = ("chromium_headless_shell-*", "chromium-*")
PLAYWRIGHT_EXECUTABLES = ("chrome-headless-shell", "headless_shell", "chrome", "Chromium", "Google Chrome for Testing")
INSTALL_PLAYWRIGHT_BROWSER = "python -m playwright install chromium"
BASE_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             # no process per site (a page's frames share its renderer) and no side services: rendering is
             # most of a run's CPU; each page still gets a renderer of its own (renderer_limit below)
             "--disable-features=site-per-process,Translate,OptimizationHints,MediaRouter,AudioServiceOutOfProcess",
             "--disable-site-isolation-trials", "--disable-extensions",
             "--mute-audio", "--disable-dev-shm-usage")
# what page.content() returns (the doctype and the document's markup) and the title, in one call
PAGE_HTML_AND_TITLE = """() => {
  const d = document.doctype;
  return [(d ? new XMLSerializer().serializeToString(d) : "") + document.documentElement.outerHTML,
          document.title];
}"""
# tests add this so Chromium itself never looks up outside hosts
TEST_RESOLVER_RULES = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
# never fetched for a page: the text is read from the DOM, which none of these change (a stylesheet
# only changes how it looks), and each would cost a request, a decode and a layout
BLOCKED_RESOURCES = ("image", "media", "font", "stylesheet", "texttrack", "manifest")
# request interception does not see WebSockets (nor WebRTC): the page loses them before its
# scripts run, and the browser's own network goes to a proxy that refuses every connection
# (see BrowserPool._refusing_proxy), so nothing we did not fetch ourselves can reach a host
NO_SOCKETS_SCRIPT = """(() => {
  const refuse = function () { throw new DOMException("network connections are disabled", "SecurityError"); };
  for (const name of ["WebSocket", "WebSocketStream", "RTCPeerConnection", "webkitRTCPeerConnection",
                      "EventSource", "WebTransport"]) {
    try { Object.defineProperty(window, name, {value: refuse, writable: false, configurable: false}); } catch (e) {}
  }
})();"""
REDIRECT_CODES = (301, 302, 303, 307, 308)
# set by our own client (encoding we can decode in bounded steps, length, connection handling)
DROP_REQUEST_HEADERS = ("host", "content-length", "accept-encoding", "connection", "keep-alive",
                        "transfer-encoding", "upgrade", "proxy-connection")
DROP_RESPONSE_HEADERS = ("content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive")
TEXT_READY_CHARS = 200
NOSCRIPT = re.compile(r"<noscript\b[^>]*>.*?</noscript\s*>", re.I | re.S)


# Chromium's network errors for an address nothing answers at (net/base/net_error_list.h)
_UNREACHABLE_ERRORS = ("ERR_CONNECTION_REFUSED", "ERR_ADDRESS_UNREACHABLE", "ERR_NETWORK_UNREACHABLE")


def _failure_status(exc: BaseException) -> FetchStatus:
    """The outcome of a page the browser could not load: unreachable when no server answered."""
    text = str(exc)
    return FetchStatus.UNREACHABLE if any(e in text for e in _UNREACHABLE_ERRORS) else FetchStatus.HTTP_ERROR


def _page_failure(exc: BaseException) -> str:
    first = (str(exc).splitlines() or [""])[0][:200]
    if "crash" in first.lower():
        return f"the page crashed the browser's renderer ({first})"
    return f"the browser could not load the page ({first})"


def renderer_limit(pages: int) -> str:
    """A renderer process for each open page (and one closing): pages sharing a renderer share its one
    main thread, so a page whose script never yields would stall the others' renders until its own
    deadline (2 renderers for 4 pages: a good page timed out in 2 of 3 runs beside a busy one)."""
    return f"--renderer-process-limit={pages + 2}"


class BrowserUnavailable(Exception):
    """No browser could be started; the message says why and how to install one."""


class RenderError(Exception):
    """The page could not be rendered; carries the outcome to record."""

    def __init__(self, status: FetchStatus, reason: str, final_url: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.final_url = status, reason, final_url


@dataclass(frozen=True)
class Rendered:
    url: str
    final_url: str
    http_status: int | None
    content_type: str | None
    html: str
    title: str | None


def _executable(candidate: str) -> str | None:
    path = candidate if os.path.isabs(candidate) else shutil.which(candidate)
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def chromium_candidates(platform: str | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """Where this system's Chrome, Chromium or Edge would be, most likely first."""
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    if platform.startswith("win"):
        roots = [env[k] for k in WINDOWS_ROOTS if env.get(k)]
        return [os.path.join(root, *parts) for parts in WINDOWS_BROWSERS for root in roots] + ["chrome.exe", "msedge.exe"]
    if platform == "darwin":
        apps = ["/Applications", os.path.join(env.get("HOME") or os.path.expanduser("~"), "Applications")]
        return [os.path.join(folder, app) for app in MACOS_BROWSERS for folder in apps]
    return [*CHROMIUM_CANDIDATES, "microsoft-edge", "microsoft-edge-stable"]


def playwright_browsers_dir(platform: str | None = None, environ: dict[str, str] | None = None) -> Path:
    """The folder `playwright install` downloads browsers to ($PLAYWRIGHT_BROWSERS_PATH, else the user cache)."""
    platform = platform or sys.platform
    env = os.environ if environ is None else environ
    if env.get("PLAYWRIGHT_BROWSERS_PATH") not in (None, "", "0"):
        return Path(env["PLAYWRIGHT_BROWSERS_PATH"])
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    if platform.startswith("win"):
        return Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local") / "ms-playwright"
    if platform == "darwin":
        return home / "Library" / "Caches" / "ms-playwright"
    return Path(env.get("XDG_CACHE_HOME") or home / ".cache") / "ms-playwright"


def _revision(folder: Path) -> int:
    tail = folder.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def playwright_chromium(root: Path | None = None) -> str | None:
    """The Chromium that `playwright install chromium` downloaded (the newest build), or None."""
    root = root or playwright_browsers_dir()
    if not root.is_dir():
        return None
    for pattern in PLAYWRIGHT_BUILDS:
        for build in sorted(root.glob(pattern), key=_revision, reverse=True):
            for path in sorted(build.rglob("*")):
                stem = path.name[:-4] if path.name.lower().endswith(".exe") else path.name
                if stem in PLAYWRIGHT_EXECUTABLES and len(path.relative_to(build).parts) <= 5:
                    found = _executable(str(path))
                    if found:
                        return found
    return None


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium executable to use: the one named (explicit, else $SOURCECHECKUP_CHROMIUM), or
    the first of the usual places for this system (Chrome, Chromium or Edge), or the Chromium that
    `playwright install chromium` downloaded. A named one that is missing is None, never silently another."""
    named = explicit or os.environ.get(CHROMIUM_ENV)
    if named:
        return _executable(named)
    for candidate in chromium_candidates():
        found = _executable(candidate)
        if found:
            return found
    return playwright_chromium()


FALLBACK_NOTE = "pages that need JavaScript will be read as plain HTML"


def browser_status(executable: str | None = None) -> tuple[bool, str]:
    """(available?, a plain sentence for the user) about the browser this machine would use.

    Checks the Playwright package and the Chromium executable without starting anything.
    """
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return False, ("the playwright Python package is not installed: install it with "
                       f"'pip install playwright'; {FALLBACK_NOTE}")
    exe = find_chromium(executable)
    if exe is None:
        named = executable or os.environ.get(CHROMIUM_ENV)
        if named or sys.platform.startswith("linux"):
            wanted = named or (CHROMIUM_CANDIDATES[0] if CHROMIUM_CANDIDATES else "the usual places")
            return False, (f"Chromium not found at {wanted}: install the 'chromium' package "
                           f"(Debian/Ubuntu: apt-get install chromium-headless-shell chromium), or Playwright's own "
                           f"({INSTALL_PLAYWRIGHT_BROWSER}), or set {CHROMIUM_ENV} to its path; {FALLBACK_NOTE}")
        return False, (f"no Chrome, Edge or Chromium found: install Google Chrome or Microsoft Edge, or "
                       f"Playwright's own Chromium ({INSTALL_PLAYWRIGHT_BROWSER}), or set {CHROMIUM_ENV} to a "
                       f"browser's path; {FALLBACK_NOTE}")
    return True, f"Chromium at {exe} renders pages that need JavaScript"


class BrowserPool:
    """One lazily launched Chromium with at most `pages` pages open at a time."""

    def __init__(self, options: FetchOptions, executable: str | None = None, extra_args: tuple[str, ...] = (),
                 pages: int = 4, page_timeout_s: float | None = None, http: HttpFetcher | None = None) -> None:
        self.options = options
        # every request of every page goes through this fetcher's client: checked, pinned, capped
        self._own_http = http is None
        self.http = http or HttpFetcher(options)
        self.executable = executable
        self.extra_args = tuple(extra_args)
        self.page_timeout_s = page_timeout_s or options.timeout_s
        self._slots = asyncio.Semaphore(max(1, pages))
        self._lock = asyncio.Lock()
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._failure: str | None = None
        self._proxy_socket: Any = None
        self._states: dict[Any, dict[str, Any]] = {}
        self._pages = max(1, pages)
        self._idle: list[Any] = []   # pages that rendered, kept for the next render
        self._waiting = 0            # renders waiting for a page slot
        self.pages_opened = 0
        self.launches = 0
        self.requests_seen = 0   # requests the pages made (each one checked and fetched by us)
        self.launch_s = 0.0   # how long the launch took (benchmarks subtract it from the ideal)
        self._driver: asyncio.Task[Any] | None = None   # the Playwright driver, started ahead (prestart)

    def prestart(self) -> None:
        """Start the Playwright driver now, in the background: it is most of a launch (about 0.3 s of
        a Node process starting; Chromium itself takes under 0.1 s), and a batch that meets a page
        needing JavaScript then waits only for Chromium. Chromium is still started only for such a page."""
        if self._driver is not None or self._pw is not None or self._failure:
            return
        if not browser_status(self.executable)[0] or find_chromium(self.executable) is None:
            return
        from playwright.async_api import async_playwright

        self._driver = asyncio.ensure_future(async_playwright().start())

    async def _ensure(self) -> Any:
        async with self._lock:
            if self._context is not None:
                return self._context
            if self._failure:
                raise BrowserUnavailable(self._failure)
            available, message = browser_status(self.executable)
            exe = find_chromium(self.executable)
            if not available or exe is None:
                self._failure = message
                raise BrowserUnavailable(self._failure)
            try:
                from playwright.async_api import async_playwright

                launch_started = time.monotonic()
                self._pw = await (self._driver if self._driver is not None else async_playwright().start())
                self._driver = None
                self._browser = await self._pw.chromium.launch(
                    executable_path=exe, headless=True,
                    args=[*BASE_ARGS, renderer_limit(self._pages), *self._refusing_proxy(), *self.extra_args],
                    timeout=30_000)
                self.launches += 1
                self._context = await self._browser.new_context(
                    user_agent=self.options.user_agent, accept_downloads=False, service_workers="block",
                    java_script_enabled=True, ignore_https_errors=False)
                await self._context.add_init_script(NO_SOCKETS_SCRIPT)
                await self._context.route("**/*", self._intercept)
                self.launch_s = time.monotonic() - launch_started
            except Exception as exc:
                self._failure = f"the browser could not be started ({type(exc).__name__}: {str(exc)[:200]})"
                await self._shutdown()
                raise BrowserUnavailable(self._failure) from None
            return self._context

    def _refusing_proxy(self) -> tuple[str, ...]:
        """Chromium flags that send all its own traffic, loopback included, to a port of ours that is
        bound but never listens: every connection the interception did not serve is refused there.
        Pages are fulfilled by _intercept and never use it; a WebSocket or a worker's request would."""
        import socket

        if self._proxy_socket is None:
            self._proxy_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._proxy_socket.bind(("127.0.0.1", 0))   # held, never listen()ed: connecting is refused
        port = self._proxy_socket.getsockname()[1]
        return (f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>",
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp")

    async def _intercept(self, route: Any) -> None:
        """Block what cannot change the text (BLOCKED_RESOURCES); fetch every other request ourselves,
        through the HTTP fetcher's client.

        So each hop passes the address rule, connects to the address that was checked (no DNS
        rebinding between check and connect), and bodies keep the same byte cap as plain HTTP.
        """
        request = route.request
        try:
            # a popup's first request has no frame yet ("Frame for this navigation request is not
            # available"): reading it is inside the boundary, and a page not rendering for us (a popup,
            # a page whose render ended) gets nothing
            frame = request.frame
            state = self._states.get(frame.page)
            main = request.is_navigation_request() and frame.parent_frame is None
        except Exception:
            state = None
        if state is None:
            await _abort(route, "blockedbyclient")
            return
        if request.resource_type in BLOCKED_RESOURCES:
            await route.abort("blockedbyclient")
            return
        url = request.url
        self.requests_seen += 1
        try:
            prefetched = state.pop("prefetched", None) if main else None
            if prefetched is not None and prefetched[0] == url:
                # the document plain HTTP just read: served again, not fetched a second time
                _, ctype, content = prefetched
                state.update(final_url=url, status=200, content_type=ctype)
                await route.fulfill(status=200, headers={"content-type": ctype}, body=content)
                return
            headers = {k: v for k, v in (await request.all_headers()).items()
                       if not k.startswith(":") and k.lower() not in DROP_REQUEST_HEADERS}
            method, body = request.method, request.post_data_buffer
            for _ in range(self.options.max_redirects + 1):
                try:
                    await self.http.check(url)
                except (UnsafeUrlError, HostNotFoundError) as exc:
                    if main:
                        via = f" (redirected from {request.url})" if url != request.url else ""
                        dead = isinstance(exc, HostNotFoundError)
                        state["refused"] = (FetchStatus.DEAD if dead else FetchStatus.UNSAFE_URL, f"{exc}{via}", url)
                    await route.abort("blockedbyclient")
                    return
                status, got_headers, content = await self._fetch_one(method, url, headers, body)
                location = got_headers.get("location")
                if status in REDIRECT_CODES and location:
                    from urllib.parse import urljoin

                    url = urljoin(url, location)
                    if status in (301, 302, 303) and method != "HEAD":
                        method, body = "GET", None
                    continue
                if main:
                    state["final_url"] = url
                    state["status"] = status
                    state["content_type"] = got_headers.get("content-type")
                await route.fulfill(status=status, headers=got_headers, body=content)
                return
            if main:
                state["refused"] = (FetchStatus.HTTP_ERROR, f"more than {self.options.max_redirects} redirects", url)
            await route.abort("failed")
        except BodyTooLarge:
            if main:
                state["refused"] = (FetchStatus.TOO_LARGE,
                                    f"the body is larger than the {self.options.max_bytes:,} byte limit", url)
            await _abort(route)
        except Exception:
            await _abort(route)

    async def _fetch_one(self, method: str, url: str, headers: dict[str, str],
                         body: bytes | None) -> tuple[int, dict[str, str], bytes]:
        """One request without following redirects: status, headers for the browser, decoded body."""
        client = self.http.client
        request = client.build_request(method, url, headers=headers, content=body)
        async with asyncio.timeout(self.page_timeout_s), self.http.host_slot(url):
            response = await client.send(request, stream=True)
            try:
                content = await read_bounded(response, self.options.max_bytes)
            finally:
                await response.aclose()
        # the body is decoded here, so the browser must not decode it again
        out = {k: v for k, v in response.headers.items() if k.lower() not in DROP_RESPONSE_HEADERS}
        return response.status_code, out, content

    async def render(self, url: str, prefetched: tuple[str, bytes] | None = None) -> Rendered:
        """Load a page, let its scripts run, return the DOM; RenderError or TimeoutError on failure.

        prefetched: (content type, body) of the page as plain HTTP read it with status 200, so the
        browser does not ask the site for it again; the page's own requests still go out.
        """
        refused = refused_url(url)
        if refused is not None:
            raise RenderError(refused.status, refused.reason, url)
        context = await self._ensure()
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            # a page that rendered is used again: opening one (and closing it) cost about 90 ms a render
            page = self._idle.pop() if self._idle else await self._new_page(context)
            state: dict[str, Any] = {}
            if prefetched is not None:
                state["prefetched"] = (url, *prefetched)
            self._states[page] = state
            rendered = False
            try:
                async with asyncio.timeout(self.page_timeout_s):
                    got = await self._load(page, url, state)
                rendered = True
                return got
            finally:
                self._states.pop(page, None)
                await self._put_back(page, reuse=rendered)
        finally:
            self._slots.release()

    async def _new_page(self, context: Any) -> Any:
        page = await context.new_page()
        page.on("popup", _close_popup)
        self.pages_opened += 1
        return page

    async def _put_back(self, page: Any, reuse: bool) -> None:
        """Keep a page that rendered for the next render: handed on as it is when a render is waiting
        (its next navigation ends this document), else left on about:blank, where its scripts and
        timers end. Close any other (one that failed or ran out of time may still be busy)."""
        if reuse and self._waiting and len(self._idle) < self._pages:
            self._idle.append(page)
            return
        if reuse and len(self._idle) < self._pages:
            try:
                await asyncio.wait_for(page.goto("about:blank"), timeout=2.0)
                self._idle.append(page)
                return
            except Exception:
                pass
        try:
            await asyncio.wait_for(page.close(), timeout=2.0)
        except Exception:
            pass

    async def _load(self, page: Any, url: str, state: dict[str, Any]) -> Rendered:
        started = time.monotonic()
        try:
            response = await page.goto(url, wait_until="domcontentloaded", timeout=self.page_timeout_s * 1000)
        except Exception as exc:
            if "refused" in state:
                status, reason, where = state["refused"]
                raise RenderError(status, reason, where) from None
            raise RenderError(_failure_status(exc), _page_failure(exc), url) from None
        left_ms = max(100, (self.page_timeout_s - (time.monotonic() - started)) * 1000 - 200)
        try:   # scripts that build the article: wait for text, but never past the cap
            await page.wait_for_function(
                f"document.body && document.body.innerText.length > {TEXT_READY_CHARS}",
                timeout=min(3000, left_ms), polling=25)
        except Exception:
            pass
        try:   # one round trip, not content() and title(); a page whose renderer crashed fails here
            html, title = await page.evaluate(PAGE_HTML_AND_TITLE)
        except Exception as exc:
            raise RenderError(_failure_status(exc), _page_failure(exc), url) from None
        return Rendered(url=url, final_url=state.get("final_url", page.url),
                        http_status=state.get("status", response.status if response else None),
                        content_type=state.get("content_type"), html=html, title=title or None)

    async def _shutdown(self) -> None:
        self._idle.clear()   # closed with their context
        if self._driver is not None:   # started ahead, never used: stopped like a used one
            driver, self._driver = self._driver, None
            try:
                self._pw = self._pw or await asyncio.wait_for(driver, timeout=10.0)
            except asyncio.CancelledError:
                driver.cancel()
                raise
            except Exception:
                pass   # it never started: nothing to stop
        for closer in (getattr(self._context, "close", None), getattr(self._browser, "close", None),
                       getattr(self._pw, "stop", None)):
            if closer is None:
                continue
            try:
                await asyncio.wait_for(closer(), timeout=5.0)
            except Exception:
                pass
        self._context = self._browser = self._pw = None
        if self._proxy_socket is not None:
            self._proxy_socket.close()
            self._proxy_socket = None

    async def aclose(self) -> None:
        async with self._lock:
            await self._shutdown()
        if self._own_http:
            await self.http.aclose()


async def _abort(route: Any, code: str = "failed") -> None:
    try:
        await route.abort(code)
    except Exception:
        pass


async def _close_quietly(page: Any) -> None:
    try:
        await asyncio.wait_for(page.close(), timeout=2.0)
    except Exception:
        pass   # already gone with its opener, or the browser is closing


def _close_popup(popup: Any) -> None:
    """A window the page opened (window.open, target=_blank) is closed at once: its requests are
    refused (it renders nothing for us) and it must not hold a page slot or the renderer."""
    asyncio.ensure_future(_close_quietly(popup))


# a run in "auto" mode that has started this many fetches starts the Playwright driver ahead (a
# single pasted answer with a few links does not)
PRESTART_AFTER = 8


class BrowserFetcher:
    """HTTP first; the browser when the page needs JavaScript ("auto") or for every page ("always")."""

    def __init__(self, http: HttpFetcher, options: FetchOptions, pool: BrowserPool | None = None) -> None:
        self.http = http
        self.options = options
        self.pool = pool or BrowserPool(options, executable=options.browser_executable, http=http,
                                        extra_args=options_browser_args(options), pages=options.browser_pages,
                                        page_timeout_s=options.browser_page_timeout_s)
        self._started = 0

    @property
    def launches(self) -> int:
        return self.pool.launches

    async def fetch(self, url: str) -> Source:
        refused = refused_url(url)   # in every mode: the browser would navigate to data: or about: itself
        if refused is not None:
            return refused
        mode = self.options.browser
        if mode == "always":
            return await self._render(url, None)
        self._started += 1
        if self._started == PRESTART_AFTER and mode == "auto":
            self.pool.prestart()
        first = await self.http.fetch(url)
        if mode != "auto" or "needs_js" not in first.flags:
            return first
        return await self._render(url, first)

    async def _fallback(self, url: str, first: Source | None, note: str, flag: str) -> Source:
        """The plain-HTTP result, saying why the browser's was not used."""
        from dataclasses import replace

        if first is None:
            first = await self.http.fetch(url)
            note += "; read over plain HTTP instead"
        return replace(first, reason=f"{first.reason}; {note}", flags=first.flags + (flag,))

    async def _render(self, url: str, first: Source | None) -> Source:
        """The rendered Source, or the HTTP result annotated with why the browser did not help."""
        started = time.monotonic()
        try:
            target, prefetched = url, None
            if first is not None and first.http_status == 200 and first.raw and first.final_url:
                target, prefetched = first.final_url, (first.content_type or "text/html", first.raw)
            got = await self.pool.render(target, prefetched)
        except BrowserUnavailable as exc:
            need = "the page needs JavaScript but " if first is not None else ""
            return await self._fallback(url, first, f"{need}no browser is available: {exc}", "browser_unavailable")
        except RenderError as exc:
            if exc.status in (FetchStatus.UNSAFE_URL, FetchStatus.DEAD):
                return Source(url=url, status=exc.status, reason=exc.reason, final_url=exc.final_url,
                              fetched_at=utcnow(), elapsed_s=round(time.monotonic() - started, 4), origin="browser")
            return await self._fallback(url, first, f"the browser failed: {exc.reason}", "browser_failed")
        except TimeoutError:
            if first is None:
                return Source(url=url, status=FetchStatus.TIMEOUT, origin="browser", fetched_at=utcnow(),
                              reason=f"the browser did not finish the page within {self.pool.page_timeout_s:g} s",
                              elapsed_s=round(time.monotonic() - started, 4))
            return await self._fallback(url, first, f"the browser did not finish within {self.pool.page_timeout_s:g} s",
                                        "browser_timeout")
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # anything else the browser raises is this source's outcome, never the run's
            return await self._fallback(url, first, f"the browser failed: {_page_failure(exc)}", "browser_failed")
        ctype = got.content_type or "text/html"
        if "html" not in ctype.lower():
            return first or await self.http.fetch(url)   # a PDF or file: plain HTTP reads it better
        code = got.http_status or 200
        if not 200 <= code < 300:
            status, reason = http_status_outcome(code)
            return Source(url=url, status=status, reason=f"{reason} (in the browser)", http_status=code,
                          final_url=got.final_url, content_type=ctype, fetched_at=utcnow(), origin="browser",
                          elapsed_s=round(time.monotonic() - started, 4))
        # the scripts ran, so a <noscript> fallback ("enable JavaScript") is not part of the page
        html = NOSCRIPT.sub("", got.html)
        source = await self.http.reader.read(
            url, html.encode("utf-8"), "text/html; charset=utf-8",
            final_url=got.final_url, http_status=code, origin="browser",
            reason_ok=f"HTTP {code} {status_phrase(code)}, rendered in the browser", started=started,
            meta={"sha256_of": "rendered page",
                  **({"redirects": first.meta["redirects"]} if first is not None and "redirects" in first.meta else {})},
            max_text_chars=self.options.max_text_chars, deadline=started + self.pool.page_timeout_s)
        if first is not None and not source.text.strip():
            return await self._fallback(url, first, "the browser found no main text either", "browser_no_text")
        return source

    async def aclose(self) -> None:
        try:
            await self.pool.aclose()
        finally:
            await self.http.aclose()


def options_browser_args(options: FetchOptions) -> tuple[str, ...]:
    return tuple(options.browser_args)
