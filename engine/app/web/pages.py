"""The web view's pages that only say something: the login form and messages (403, 404,
503). The job list and a job's page have modules of their own (`list_page`, `job_page`).
"""

from __future__ import annotations

from engine.app.web.markup import escape, layout


def login_page(*, next_path: str, message: str = "") -> str:
    """The form that asks for a bearer token; `message` says why it is shown."""
    note = f'<p class="note">{escape(message)}</p>' if message else ""
    body = (
        "<h1>Log in</h1>"
        "<p>The web view shows what the API server shows you: log in with a bearer token it "
        "accepts (the token in the kubeconfig <code>jobmachine up</code> writes, or a user's "
        "from <code>--token-auth-file</code>).</p>"
        f"{note}"
        '<form method="post" action="/login" class="login">'
        f'<input type="hidden" name="next" value="{escape(next_path)}">'
        '<label>Token <input type="password" name="token" autocomplete="off" autofocus '
        "required></label> <button>Log in</button></form>"
    )
    return layout("Log in", body)


def message_page(title: str, text: str, *, user: str | None = None) -> str:
    """A page that only says something (403, 404, 503)."""
    return layout(title, f'<h1>{escape(title)}</h1><p class="note">{escape(text)}</p>'
                         '<p><a href="/">All jobs</a></p>', user=user)
