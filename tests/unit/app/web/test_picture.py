"""The machine picture on a page: the current states marked, nothing but drawing kept."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from engine.app.web.picture import SVG_NS, current_states, drawn_picture, marked_svg
from engine.app.web.state import LiveJobs
from tests.unit.app.web.support import PYTORCHJOBS, deliver, job

SVG = f"""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"
 "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="{SVG_NS}" xmlns:xlink="http://www.w3.org/1999/xlink" width="100pt" height="50pt"
     onload="alert(1)">
<script>alert(2)</script>
<g id="graph0" class="graph">
<g id="node1" class="node"><title>job/s/Running</title><path d="M0,0"/></g>
<g id="node2" class="node success"><title>job/s/Succeeded</title><path d="M0,0"/></g>
<g id="node3" class="node"><title>replica/s/Running</title><path d="M0,0"/></g>
<g id="edge1" class="edge"><title>job/s/Running&#45;&gt;job/s/Succeeded</title>
<a xlink:href="https://evil.example/" xlink:title="&lt;done&gt;"><path d="M0,0"/></a></g>
<foreignObject><div>html</div></foreignObject>
</g></svg>
""".encode()


def _current(markup: str) -> dict[str, str]:
    root = ET.fromstring(markup)
    return {
        group.findtext(f"{{{SVG_NS}}}title") or "": group.get("data-current") or ""
        for group in root.iter(f"{{{SVG_NS}}}g")
        if "current" in (group.get("class") or "").split()
    }


def test_the_state_of_the_job_and_of_each_replica_is_marked() -> None:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job("one", state="Running", replicas={
        "Worker": {"Running": "0,2", "Succeeded": "1"}}))
    (one,) = model.jobs()

    current = current_states(one)

    assert current == {"job/s/Running": "job", "replica/s/Running": "Worker-0, Worker-2",
                       "replica/s/Succeeded": "Worker-1"}
    assert _current(marked_svg(SVG, current)) == {
        "job/s/Running": "job", "replica/s/Running": "Worker-0, Worker-2"}


def test_only_drawing_is_kept_no_script_handlers_or_outside_links() -> None:
    markup = marked_svg(SVG, {})

    assert "script" not in markup
    assert "onload" not in markup
    assert "foreignObject" not in markup
    assert "evil.example" not in markup
    assert "&lt;done&gt;" in markup  # a tooltip stays, escaped
    assert markup.startswith(f'<svg xmlns="{SVG_NS}"')
    assert "class=\"node current\"" not in markup


def test_an_arrows_whole_transitions_are_the_title_a_browser_shows_on_hover() -> None:
    root = ET.fromstring(marked_svg(SVG, {}))
    (link,) = root.iter(f"{{{SVG_NS}}}a")
    assert link[0].tag == f"{{{SVG_NS}}}title" and link[0].text == "<done>"


def test_the_end_states_are_read_from_the_nodes_classes() -> None:
    assert drawn_picture(SVG).ends == frozenset({"job/s/Succeeded"})
