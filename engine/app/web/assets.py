"""The web view's style sheet and icon: small, hand-written, no framework, no build step.

One quiet style for every page: system fonts, one accent blue, states as badges whose
colours say what they mean (Failed and Running in strong colours with white text, both
above WCAG AA contrast), tables that scroll inside their box with a shaded edge while
there is more to see, and a layout from 390 px phones to wide screens in which the
page itself never scrolls sideways. The script is in `script.py`.
"""

from __future__ import annotations

ICON = """\
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">\
<rect width="32" height="32" rx="7" fill="#1d4ed8"/>\
<circle cx="10" cy="10" r="4" fill="#fff"/><circle cx="22" cy="22" r="4" fill="#fff"/>\
<path d="M13 13l6 6" stroke="#fff" stroke-width="2.5"/></svg>
"""

STYLE = """\
:root { color-scheme: light; --ink: #18181b; --muted: #52525b; --line: #e4e4e7;
  --panel: #f8f8fa; --accent: #1d4ed8; --failed: #b91c1c; --running: #1d4ed8;
  --succeeded-bg: #dcfce7; --succeeded: #14532d; --waiting-bg: #fef3c7; --waiting: #713f12; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { font: 15px/1.45 system-ui, "DejaVu Sans", Verdana, sans-serif; margin: 0;
  color: var(--ink); background: #fff; overflow-x: hidden; }
a { color: var(--accent); text-decoration: none; }
a:hover, a:focus-visible { text-decoration: underline; }
header { display: flex; flex-wrap: wrap; gap: .25em 1em; align-items: center;
  padding: .5em 1rem; background: var(--panel); border-bottom: 1px solid var(--line); }
header .home { font-weight: 600; color: var(--ink); margin-right: auto; }
header form { margin: 0; }
button, select, input { font: inherit; font-size: .9em; color: inherit; }
button { background: #fff; border: 1px solid #d4d4d8; border-radius: 6px; padding: .15em .6em;
  cursor: pointer; }
button:hover { background: var(--panel); }
select, input[type=search] { border: 1px solid #d4d4d8; border-radius: 6px; padding: .15em .4em;
  background: #fff; max-width: 100%; }
main { padding: 0 1rem 3em; max-width: 120em; margin: 0 auto; }
main > * { min-width: 0; }
h1 { font-size: 1.35em; margin: .8em 0 .5em; overflow-wrap: anywhere; }
h2 { font-size: 1.1em; margin: 1.5em 0 .4em; }
h3 { font-size: 1em; margin: 0; }
h3 small { color: var(--muted); font-weight: normal; overflow-wrap: anywhere; }
.note, .empty { color: var(--muted); }
.warning { color: var(--failed); }
.live { font-size: .9em; color: var(--muted); }
.live[data-state="on"]::before { content: "\\25cf  "; color: #15803d; }
.user { font-size: .9em; color: var(--muted); }

/* states: the tone says what a state means, the text says which it is */
.state { display: inline-block; padding: .05em .55em; border-radius: 999px; font-size: .9em;
  background: var(--line); color: var(--ink); white-space: nowrap; }
.state[data-tone="failed"] { background: var(--failed); color: #fff; }
.state[data-tone="running"] { background: var(--running); color: #fff; }
.state[data-tone="succeeded"] { background: var(--succeeded-bg); color: var(--succeeded); }
.state[data-tone="waiting"] { background: var(--waiting-bg); color: var(--waiting); }
td .state { white-space: normal; }

/* tables: inside a box that scrolls sideways, shaded on the side where there is more */
.scroll { overflow-x: auto; max-width: 100%; }
.scroll.more-right { box-shadow: inset -14px 0 10px -10px rgba(0, 0, 0, .25); }
.scroll.more-left { box-shadow: inset 14px 0 10px -10px rgba(0, 0, 0, .25); }
.scroll.more-left.more-right { box-shadow: inset -14px 0 10px -10px rgba(0, 0, 0, .25),
  inset 14px 0 10px -10px rgba(0, 0, 0, .25); }
table { border-collapse: collapse; margin: .25em 0; }
table.jobs { width: 100%; }
th, td { text-align: left; padding: .35em .75em .35em 0; border-bottom: 1px solid var(--line);
  vertical-align: top; white-space: nowrap; }
th { color: var(--muted); font-weight: 600; font-size: .85em; }
td.text { white-space: normal; min-width: 16em; overflow-wrap: anywhere; }
td.number { text-align: right; }
tr.warning td { color: var(--failed); }

/* the job list */
.counts { display: flex; flex-wrap: wrap; gap: .4em; margin: 0 0 .8em; }
.count { border: 1px solid var(--line); border-radius: 999px; padding: .15em .7em;
  color: var(--ink); background: #fff; }
.count b { margin-left: .2em; }
.count[data-tone="failed"] b { color: var(--failed); }
.count[data-tone="running"] b { color: var(--running); }
.count.chosen { border-color: var(--accent); box-shadow: 0 0 0 1px var(--accent); }
.filters { display: flex; flex-wrap: wrap; gap: .5em 1em; margin: 0 0 .5em; color: var(--muted);
  font-size: .9em; }
table.jobs td:first-child a { font-weight: 600; }
@media (max-width: 40em) {  /* a phone: each job on two lines, no sideways scroll */
  table.jobs thead { display: none; }
  table.jobs tr { display: grid; grid-template-columns: auto auto auto 1fr auto;
    gap: .15em .8em; align-items: baseline; padding: .5em 0;
    border-bottom: 1px solid var(--line); }
  table.jobs td { border: 0; padding: 0; white-space: normal; }
  table.jobs td:nth-child(1) { grid-area: 1 / 1 / 2 / 5; overflow-wrap: anywhere; }
  table.jobs td:nth-child(4) { grid-area: 1 / 5; }
  table.jobs td:nth-child(n+2):not(:nth-child(4)) { grid-row: 2; font-size: .85em;
    color: var(--muted); text-align: left; white-space: nowrap; }
  table.jobs td:nth-child(6) { grid-column: 4 / 6; }
  table.jobs td:nth-child(5)::before { content: "restarts "; }
  table.jobs td:nth-child(6)::before { content: "age "; }
  .picture { max-height: 62vh; }
}

/* a job's page: the summary, the machine across the width, then the facts */
.summary dl { display: flex; flex-wrap: wrap; gap: .4em 2em; margin: 0; }
.summary dl > div { min-width: 0; }
.summary dt { color: var(--muted); font-size: .8em; }
.summary dd { margin: 0; overflow-wrap: anywhere; }
.machine .tools { display: flex; flex-wrap: wrap; gap: .4em; align-items: center;
  margin: 0 0 .4em; }
.machine .hint { color: var(--muted); font-size: .85em; }
.where { list-style: none; padding: 0; margin: 0 0 .4em; display: flex; gap: .3em 1.5em;
  flex-wrap: wrap; font-size: .9em; }
.where li::before { content: ""; display: inline-block; width: .8em; height: .8em;
  margin-right: .4em; background: #bfdbfe; border: 2px solid #2563eb; vertical-align: -.1em; }
.picture { overflow: auto; max-height: 78vh; border: 1px solid var(--line); border-radius: 8px;
  background: #fff; cursor: grab; touch-action: pan-x pan-y; }
.picture.dragging { cursor: grabbing; user-select: none; }
.picture svg { display: block; margin: 0 auto; }
.picture g.current > polygon, .picture g.current > path, .picture g.current > ellipse {
  stroke: #2563eb; stroke-width: 4px; fill: #bfdbfe; }

/* logs */
.log { margin: .6em 0 1em; min-width: 0; }
.log.gone h3::after { content: " (pod deleted: its last lines read are kept here)";
  color: var(--muted); font-weight: normal; font-size: .85em; }
.log-head { display: flex; flex-wrap: wrap; gap: .3em 1em; align-items: baseline;
  justify-content: space-between; margin-bottom: .3em; }
.log-tools { display: flex; flex-wrap: wrap; gap: .4em; align-items: center; font-size: .9em; }
.log-tools .found { color: var(--muted); }
pre { background: #18181b; color: #f4f4f5; padding: .6em .75em; margin: 0; overflow: auto;
  max-height: 24em; white-space: pre-wrap; overflow-wrap: anywhere; border-radius: 6px;
  font-size: 13px; }
form.login input[type=password] { padding: .25em; width: 28em; max-width: 100%; }
"""
