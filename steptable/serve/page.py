"""textual-serve's page as steptable serves it: no link to another host, and two scripts of its own put in (no fork
of textual-serve): its closed dialog says why the session ended, and a file the app delivers is asked for with the
token. Pure (text in, text out).
"""

from __future__ import annotations

import json
import re

#: put into textual-serve's page: its closed dialog says the reason the server closed the websocket with (the app's
#: exit status or signal and last line of stderr; the session cap) where its script says only "Session ended." (it
#: reads no reason)
CLOSED_REASON_JS = """(() => {
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("close", (event) => {
        const message = document.querySelector(".closed-dialog .message");
        if (message && event.reason) {  // (1013: no session started, the reason says why)
          message.textContent = (event.code === 1013 ? "" : "Session ended: ") + event.reason;
        }
      });
    }
  };
})();"""
#: put into textual-serve's page: the tab its script opens for a file the app delivers (the command palette's
#: screenshot) asks for it with the token (KEY: the page's own); its script names ``/download/KEY`` alone
DOWNLOAD_TOKEN_JS = """(() => {
  const open = window.open.bind(window);
  window.open = (url, ...rest) => {
    const target = new URL(url, window.location.href);
    if (target.origin === window.location.origin && target.pathname.startsWith("/download/")) {
      target.searchParams.set("token", KEY);
    }
    return open(target.href, ...rest);
  };
})();"""

#: a ``<link>`` of textual-serve's page and its URL
_LINK = re.compile(r'<link\b[^>]*?\bhref="([^"]*)"[^>]*>\s*')


def finish(page: str, base: str, token: str) -> str:
    """textual-serve's rendered ``page`` for ``base`` (``http://HOST``, the page's own) and ``token``: its links to
    another host left out (its web font's stylesheet on fonts.googleapis.com: the policy blocks it, an error in the
    console on each load), CLOSED_REASON_JS and DOWNLOAD_TOKEN_JS put in its head."""
    page = _LINK.sub(lambda m: m[0] if m[1].startswith(f"{base}/") else "", page)
    scripts = CLOSED_REASON_JS + "\n" + DOWNLOAD_TOKEN_JS.replace("KEY", json.dumps(token))
    return page.replace("</head>", f"<script>{scripts}</script></head>", 1)
