"""The web view's style sheet and script: small, hand-written, no build step.

The script follows a page's live updates (server-sent events) and puts each changed
part's HTML, rendered and escaped by the server, in place. Served as files of their
own so that the pages' Content-Security-Policy allows no inline script.
"""

from __future__ import annotations

SCRIPT = """\
"use strict";
(() => {
  const url = document.body.dataset.stream;
  const live = document.getElementById("live");
  if (!url || !window.EventSource) return;
  const say = (text, state) => { live.textContent = text; live.dataset.state = state; };
  const source = new EventSource(url);
  source.addEventListener("open", () => say("live", "on"));
  source.addEventListener("error", () => say("reconnecting...", "off"));
  source.addEventListener("parts", (message) => {
    for (const [id, markup] of Object.entries(JSON.parse(message.data))) {
      const part = document.getElementById(id);
      if (part) part.innerHTML = markup;
    }
  });
  source.addEventListener("gone", (message) => {
    source.close();
    say(JSON.parse(message.data), "off");
  });
  // Logged out or no longer allowed: the page itself says so.
  source.addEventListener("denied", () => { source.close(); location.reload(); });
})();
"""

STYLE = """\
:root { color-scheme: light; --line: #d4d4d8; --muted: #52525b; }
body { font: 14px/1.45 "DejaVu Sans", Verdana, sans-serif; margin: 0; color: #18181b; }
header { display: flex; gap: 1em; align-items: center; padding: .5em 1em;
         background: #f4f4f5; border-bottom: 1px solid var(--line); }
header .home { font-weight: bold; color: inherit; text-decoration: none; margin-right: auto; }
header form { margin: 0; }
main { padding: 0 1em 2em; }
.job { display: grid; gap: 0 2em; grid-template-columns: minmax(0, 1fr); }
@media (min-width: 70em) {
  .job { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
  .job .machine { grid-column: 2; grid-row: 1; position: sticky; top: 0; align-self: start; }
}
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: .25em .75em; border-bottom: 1px solid var(--line);
         vertical-align: top; }
td { overflow-wrap: break-word; }
td.number { text-align: right; }
.facts { min-width: 0; overflow-x: auto; }
table.summary th { color: var(--muted); font-weight: normal; }
.state { padding: .05em .5em; border-radius: .75em; background: #e4e4e7; white-space: nowrap; }
.state[data-state="Succeeded"] { background: #dcfce7; }
.state[data-state="Failed"] { background: #fee2e2; }
.state[data-state="Running"] { background: #dbeafe; }
tr.warning td { color: #b91c1c; }
.live { font-size: .9em; color: var(--muted); }
.live[data-state="on"]::before { content: "\\25cf  "; color: #16a34a; }
.note, .empty { color: var(--muted); }
.warning { color: #b91c1c; }
pre { background: #18181b; color: #f4f4f5; padding: .75em; overflow-x: auto;
      max-height: 24em; white-space: pre-wrap; }
.picture svg { max-width: 100%; max-height: 85vh; width: auto; height: auto; }
.picture g.current > polygon, .picture g.current > path, .picture g.current > ellipse {
  stroke: #2563eb; stroke-width: 4px; fill: #bfdbfe; }
.legend { list-style: none; padding: 0; display: flex; gap: 1.5em; flex-wrap: wrap; }
.legend li::before { content: ""; display: inline-block; width: .8em; height: .8em;
  margin-right: .4em; background: #bfdbfe; border: 2px solid #2563eb; }
form.login input { font: inherit; padding: .25em; width: 28em; max-width: 100%; }
"""
