"""A job's machine as inline SVG, with the states the job and its replicas are in marked.

`job_picture` draws the machine revision the job ran with and highlights the path it
took; that costs a compile and a Graphviz run, so each (job, path) is drawn once and kept,
off the page's way. Marking
the current states is cheap and done on every redraw: the state's node gets the class
`current` (the page's style outlines it). The SVG is parsed and only Graphviz's
drawing elements are kept, so nothing in a machine's text can become markup or script.
Each arrow's whole transitions (Graphviz's tooltip attribute) become a `<title>`, which
every browser shows on hover.
"""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from engine.app.job_graph import JobNotFoundError, job_picture
from engine.app.web.state import Job, JobKey
from engine.graph.images import svg_from_dot
from engine.graph.render import RenderError
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

_DRAWING = frozenset(f"{{{SVG_NS}}}{tag}" for tag in (
    "svg", "g", "title", "path", "polygon", "polyline", "ellipse", "text", "a"))
"""The elements Graphviz draws with; anything else is dropped."""
_LINKS = frozenset({"href", f"{{{XLINK_NS}}}href"})
_KEPT = 64


_ENDS = frozenset({"success", "failure"})


@dataclass(frozen=True)
class Picture:
    """The SVG of a job's machine, or why there is none."""

    svg: bytes | None
    reason: str = ""
    ends: frozenset[str] = frozenset()
    """Node titles of the machines' end states (`job/s/Succeeded`, `replica/s/Failed`)."""


def drawn_picture(svg: bytes) -> Picture:
    """A picture of `svg`, with its end states read from the nodes' classes."""
    ends = set()
    for group in ET.fromstring(svg).iter(f"{{{SVG_NS}}}g"):
        classes = set((group.get("class") or "").split())
        if "node" in classes and classes & _ENDS:
            ends.add(group.findtext(f"{{{SVG_NS}}}title") or "")
    return Picture(svg, ends=frozenset(ends))


def current_states(job: Job) -> dict[str, str]:
    """Node title (`job/s/Running`) -> who is in that state (`job`, `Worker-0, Worker-1`)."""
    current: dict[str, list[str]] = {}
    if job.state:
        current.setdefault(f"job/s/{job.state}", []).append("job")
    for replica in job.replicas:
        current.setdefault(f"replica/s/{replica.state}", []).append(replica.name)
    return {title: ", ".join(names) for title, names in current.items()}


def marked_svg(svg: bytes, current: Mapping[str, str]) -> str:
    """The SVG as markup for a page: drawing elements only, the nodes titled in `current`
    with the class `current` and who is there in `data-current`."""
    root = ET.fromstring(svg)
    _keep_drawing(root)
    _titled_links(root)
    for group in root.iter(f"{{{SVG_NS}}}g"):
        classes = (group.get("class") or "").split()
        if "node" not in classes:
            continue
        title = group.findtext(f"{{{SVG_NS}}}title") or ""
        if title in current:
            group.set("class", " ".join([*classes, "current"]))
            group.set("data-current", current[title])
    return ET.tostring(root, encoding="unicode")


def _titled_links(root: ET.Element) -> None:
    """Give each link Graphviz drew for a tooltip a `<title>` child with that text (the
    innermost title is the one a browser shows, not the edge's `a->b`)."""
    for link in root.iter(f"{{{SVG_NS}}}a"):
        text = link.get(f"{{{XLINK_NS}}}title")
        if text:
            title = ET.Element(f"{{{SVG_NS}}}title")
            title.text = text
            link.insert(0, title)


def _keep_drawing(element: ET.Element) -> None:
    for child in list(element):
        if child.tag not in _DRAWING:
            element.remove(child)
            continue
        _keep_drawing(child)
    for name in list(element.attrib):
        local = name.rpartition("}")[2]
        if local.lower().startswith("on") or (
                name in _LINKS and not element.attrib[name].startswith("#")):
            del element.attrib[name]


class Pictures:
    """Each job's picture, drawn once per path it has taken (the most recent few kept).

    A job's first picture is drawn when asked for; a new path is drawn on a thread of its
    own while pages go on showing the previous picture (a state that lasts less than a
    drawing still shows), and `drawn` is told of the job when it is ready.
    """

    def __init__(self, client: KubeClient, *, system_namespace: str,
                 drawn: Callable[[JobKey], None]) -> None:
        self._client = client
        self._system_namespace = system_namespace
        self._drawn = drawn
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[object, ...], Picture] = OrderedDict()
        self._latest: dict[str, tuple[object, ...]] = {}
        """Job uid -> the key of its most recent picture."""
        self._drawing: set[tuple[object, ...]] = set()
        self._painter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="web-pictures")
        # Graphviz's first drawing in a process loads its WebAssembly (about a second):
        # done now, so that a job's first page is not the one that waits for it.
        self._painter.submit(svg_from_dot, "digraph { warm }")

    def of(self, job: Job) -> Picture:
        """The picture of `job`'s machine with its path highlighted: drawn, kept, or (while
        its new path is being drawn) the previous one."""
        key = (job.uid, job.revision, job.counts)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
            previous = self._kept.get(self._latest.get(job.uid, ()))
            if previous is not None:
                if key not in self._drawing:
                    self._drawing.add(key)
                    self._painter.submit(self._draw_later, job, key)
                return previous
        return self._keep(job, key, self._draw(job))

    def close(self) -> None:
        """Stop drawing (a drawing under way is finished first)."""
        self._painter.shutdown(wait=True, cancel_futures=True)

    def _draw_later(self, job: Job, key: tuple[object, ...]) -> None:
        picture = self._keep(job, key, self._draw(job))
        with self._lock:
            self._drawing.discard(key)
        if picture.svg is not None:
            self._drawn(job.key)

    def _keep(self, job: Job, key: tuple[object, ...], picture: Picture) -> Picture:
        if picture.svg is None:
            return picture  # drawn again next time: the revision may yet be readable
        with self._lock:
            self._kept[key] = picture
            self._latest[job.uid] = key
            while len(self._kept) > _KEPT:
                gone, _ = self._kept.popitem(last=False)
                if self._latest.get(str(gone[0])) == gone:
                    del self._latest[str(gone[0])]
        return picture

    def _draw(self, job: Job) -> Picture:
        if not job.revision:
            return Picture(None, "the engine has not started this job yet: no machine to draw")
        try:
            return drawn_picture(job_picture(self._client, job.namespace, job.name,
                                             system_namespace=self._system_namespace,
                                             fmt="svg"))
        except (JobNotFoundError, RenderError, ApiError) as exc:
            return Picture(None, str(exc))
