"""The web view's script: live parts, logs that follow, live ages, a picture to pan and zoom.

Hand-written, no build step, no library. It follows a page's server-sent events and puts
each changed part's HTML (rendered and escaped by the server) in place. The machine's
picture opens centred on the job's current state and, when an update redraws it, keeps
the point the user looks at. The logs are merged: a box's new lines are appended, it
keeps its scroll position (and sticks to the bottom when it was there), its search and
the attempt chosen; an earlier pod's lines stay selectable after the pod was made again.
Served as a file of its own so that the pages' Content-Security-Policy allows no inline
script.
"""

from __future__ import annotations

SCRIPT = r"""
"use strict";
(() => {
  const KEPT_LINES = 5000;
  const MIN_TEXT_PX = 11;

  // --- ages that count on between updates (kubectl's words, as the server writes them)
  const age = (seconds) => {
    const s = Math.max(0, Math.floor(seconds)), m = Math.floor(s / 60);
    const h = Math.floor(s / 3600), d = Math.floor(s / 86400);
    if (s < 120) return `${s}s`;
    if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
    if (h < 3) return `${m}m`;
    if (h < 8) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
    if (h < 48) return `${h}h`;
    if (h < 192) return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
    return `${d}d`;
  };
  const tickAges = () => {
    for (const time of document.querySelectorAll("time.age[datetime]")) {
      const since = Date.parse(time.getAttribute("datetime"));
      if (!Number.isNaN(since)) time.textContent = age((Date.now() - since) / 1000);
    }
  };

  // --- tables that scroll inside their box: shade the side where there is more
  const markScrolls = () => {
    for (const box of document.querySelectorAll(".scroll")) {
      const more = box.scrollWidth - box.clientWidth - box.scrollLeft > 2;
      box.classList.toggle("more-right", more);
      box.classList.toggle("more-left", box.scrollLeft > 2);
    }
  };
  document.addEventListener("scroll", (e) => {
    if (e.target.classList && e.target.classList.contains("scroll")) markScrolls();
  }, true);
  window.addEventListener("resize", markScrolls);

  // --- the machine's picture: fitted to the page's width, never smaller than readable
  const view = { scale: null };
  const pictureParts = () => {
    const box = document.querySelector("#machine .picture");
    const svg = box && box.querySelector("svg");
    if (!svg || !svg.viewBox.baseVal) return null;
    const sizes = [...svg.querySelectorAll("text")]
      .map((t) => parseFloat(t.getAttribute("font-size"))).filter((v) => v > 0);
    return { box, svg, width: svg.viewBox.baseVal.width * 4 / 3,
             height: svg.viewBox.baseVal.height * 4 / 3,
             smallest: (sizes.length ? Math.min(...sizes) : 10) * 4 / 3 };
  };
  const readable = (p) => MIN_TEXT_PX / p.smallest;
  const fitted = (p) => Math.min(1, Math.max(readable(p), (p.box.clientWidth - 2) / p.width));
  const zoom = (scale, at) => {
    const p = pictureParts();
    if (!p) return;
    const before = view.scale || scale;
    view.scale = Math.min(4, Math.max(0.1, scale));
    const x = at ? at.x : p.box.clientWidth / 2, y = at ? at.y : p.box.clientHeight / 2;
    const left = (p.box.scrollLeft + x) * view.scale / before - x;
    const top = (p.box.scrollTop + y) * view.scale / before - y;
    p.svg.style.width = `${Math.ceil(p.width * view.scale)}px`;
    p.svg.style.height = `${Math.ceil(p.height * view.scale)}px`;
    p.box.scrollLeft = left;
    p.box.scrollTop = top;
  };
  // A picture wider or taller than its box (a phone) opens centred on the job's state.
  const showCurrent = (p) => {
    const current = p.svg.querySelector('g.current[data-current="job"]') ||
      p.svg.querySelector("g.current");
    if (!current) return;
    const at = current.getBoundingClientRect(), box = p.box.getBoundingClientRect();
    p.box.scrollLeft += at.left + at.width / 2 - box.left - box.width / 2;
    p.box.scrollTop += at.top + at.height / 2 - box.top - box.height / 2;
  };
  // The point of the picture at the box's centre, in the picture's own units: an update
  // that redraws the picture (a new path, the stream's first message) keeps it there.
  const viewCentre = (p) => ({ x: (p.box.scrollLeft + p.box.clientWidth / 2) / view.scale,
                               y: (p.box.scrollTop + p.box.clientHeight / 2) / view.scale });
  const setUpPicture = (centre) => {
    const p = pictureParts();
    if (!p) return;
    p.svg.removeAttribute("width");
    p.svg.removeAttribute("height");
    const scale = view.scale === null ? fitted(p) : view.scale;
    view.scale = scale;
    p.svg.style.width = `${Math.ceil(p.width * scale)}px`;
    p.svg.style.height = `${Math.ceil(p.height * scale)}px`;
    if (!centre) {
      showCurrent(p);
      return;
    }
    p.box.scrollLeft = centre.x * scale - p.box.clientWidth / 2;
    p.box.scrollTop = centre.y * scale - p.box.clientHeight / 2;
  };
  const startPicture = () => {
    const tools = document.querySelector(".machine .tools");
    if (!tools) return;
    tools.addEventListener("click", (e) => {
      const p = pictureParts(), button = e.target.closest("button[data-zoom]");
      if (!p || !button) return;
      const how = button.dataset.zoom;
      if (how === "in") zoom(view.scale * 1.25);
      else if (how === "out") zoom(view.scale / 1.25);
      else if (how === "fit") zoom(Math.min(1, (p.box.clientWidth - 2) / p.width,
                                            (p.box.clientHeight - 2) / p.height));
      else zoom(Math.max(1, readable(p)));
    });
    const machine = document.getElementById("machine");
    machine.addEventListener("wheel", (e) => {
      const p = pictureParts();
      if (!p || !(e.ctrlKey || e.metaKey)) return;
      e.preventDefault();
      const box = p.box.getBoundingClientRect();
      zoom(view.scale * (e.deltaY < 0 ? 1.15 : 1 / 1.15),
           { x: e.clientX - box.left, y: e.clientY - box.top });
    }, { passive: false });
    let drag = null;
    machine.addEventListener("pointerdown", (e) => {
      const p = pictureParts();
      if (!p || e.button !== 0 || !p.box.contains(e.target)) return;
      drag = { x: e.clientX, y: e.clientY, left: p.box.scrollLeft, top: p.box.scrollTop };
      p.box.classList.add("dragging");
    });
    window.addEventListener("pointermove", (e) => {
      const p = drag && pictureParts();
      if (!p) return;
      p.box.scrollLeft = drag.left - (e.clientX - drag.x);
      p.box.scrollTop = drag.top - (e.clientY - drag.y);
    });
    window.addEventListener("pointerup", () => {
      drag = null;
      const p = pictureParts();
      if (p) p.box.classList.remove("dragging");
    });
    setUpPicture(null);
  };

  // --- logs that follow
  const boxes = new Map();  // pod name -> what its box shows and keeps
  const linesOf = (text) => {
    const lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    return lines;
  };
  // The new tail overlaps the end of what is shown: append only what follows the overlap.
  const merged = (kept, tail) => {
    for (let k = Math.min(kept.length, tail.length); k > 0; k--) {
      let same = true;
      for (let i = 0; i < k && same; i++) same = kept[kept.length - k + i] === tail[i];
      if (same) return kept.concat(tail.slice(k));
    }
    const gap = "\u2026 (lines missed between two reads) \u2026";
    return kept.length ? kept.concat([gap], tail) : tail;
  };
  const atBottom = (pre) => pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  const render = (box) => {
    const pre = box.element.querySelector("pre.lines");
    if (!pre) return;
    const lines = box.choice === "current" ? box.lines
      : box.choice === "previous" ? box.previous || ["(reading...)"]
        : box.earlier[Number(box.choice)].lines;
    const query = box.find.value.trim().toLowerCase();
    const shown = query ? lines.filter((line) => line.toLowerCase().includes(query)) : lines;
    const stick = box.stick;
    pre.textContent = shown.join("\n") + (shown.length ? "\n" : "");
    box.count.textContent = query ? `${shown.length} of ${lines.length} lines` : "";
    if (stick) pre.scrollTop = pre.scrollHeight;
  };
  const ensurePre = (element) => {
    let pre = element.querySelector("pre.lines");
    if (!pre) {
      pre = document.createElement("pre");
      pre.className = "lines";
      pre.tabIndex = 0;
      const note = element.querySelector("p.note");
      if (note) note.replaceWith(pre); else element.append(pre);
    }
    return pre;
  };
  const adopt = (element) => {
    const pre = element.querySelector("pre.lines");
    const count = document.createElement("span");
    count.className = "found";
    element.querySelector(".log-tools").prepend(count);
    const box = { element, lines: pre ? linesOf(pre.textContent) : [], earlier: [],
                  choice: "current", previous: null, stick: true, uid: element.dataset.uid,
                  find: element.querySelector("input.find"),
                  attempt: element.querySelector("select.attempt"), count };
    box.find.addEventListener("input", () => { box.stick = true; render(box); });
    box.attempt.addEventListener("change", async () => {
      box.choice = box.attempt.value;
      box.stick = true;
      if (box.choice === "previous" && box.previous === null) {
        ensurePre(element);
        render(box);
        const answer = await fetch(`${element.dataset.src}?previous=1`,
                                   { credentials: "same-origin" });
        box.previous = linesOf(await answer.text());
      }
      ensurePre(element);
      render(box);
    });
    element.addEventListener("scroll", (e) => {
      if (e.target.matches && e.target.matches("pre.lines")) box.stick = atBottom(e.target);
    }, true);
    boxes.set(element.dataset.pod, box);
    render(box);
    return box;
  };
  const refreshOptions = (box, incoming) => {
    const wanted = [...incoming.querySelectorAll("select.attempt option")]
      .map((o) => [o.value, o.textContent]);
    box.earlier.forEach((one, i) => wanted.push([String(i), one.label]));
    box.attempt.replaceChildren(...wanted.map(([value, text]) => {
      const option = document.createElement("option");
      option.value = value;
      option.textContent = text;
      option.selected = value === box.choice;
      return option;
    }));
    if (!wanted.some(([value]) => value === box.choice)) box.choice = "current";
  };
  const mergeLogs = (markup) => {
    const part = document.getElementById("logs");
    const template = document.createElement("template");
    template.innerHTML = markup;
    const incoming = [...template.content.querySelectorAll(".log[data-pod]")];
    if (!incoming.length) {  // a note instead of boxes: boxes already shown stay
      if (!boxes.size) part.innerHTML = markup;
      return;
    }
    part.querySelectorAll(":scope > :not(.log)").forEach((other) => other.remove());
    for (const fresh of incoming) {
      let box = boxes.get(fresh.dataset.pod);
      if (!box) {
        part.append(fresh);
        adopt(fresh);
        continue;
      }
      box.element.classList.remove("gone");
      const pre = fresh.querySelector("pre.lines");
      if (fresh.dataset.uid !== box.uid) {  // the pod was made again: another attempt
        if (box.lines.length) {
          box.earlier.push({ label: `earlier pod (uid ${box.uid.slice(0, 8)})`, lines: box.lines });
        }
        box.uid = fresh.dataset.uid;
        box.lines = [];
        box.previous = null;
      }
      if (pre) {
        ensurePre(box.element);
        box.lines = merged(box.lines, linesOf(pre.textContent)).slice(-KEPT_LINES);
      }
      box.element.querySelector("h3").replaceWith(fresh.querySelector("h3"));
      refreshOptions(box, fresh);
      render(box);
    }
    const present = new Set(incoming.map((fresh) => fresh.dataset.pod));
    for (const [pod, box] of boxes) {
      if (!present.has(pod)) box.element.classList.add("gone");
    }
  };

  // --- live updates
  const apply = (id, markup) => {
    if (id === "logs") return mergeLogs(markup);
    const part = document.getElementById(id);
    if (!part) return;
    const shown = id === "machine" && view.scale !== null && pictureParts();
    const centre = shown ? viewCentre(shown) : null;
    part.innerHTML = markup;
    if (id === "machine") setUpPicture(centre);  // the first picture: centred on the state
  };
  const follow = () => {
    const url = document.body.dataset.stream;
    const live = document.getElementById("live");
    if (!url || !window.EventSource) return;
    const say = (text, state) => { live.textContent = text; live.dataset.state = state; };
    const source = new EventSource(url);
    source.addEventListener("open", () => say("live", "on"));
    source.addEventListener("error", () => say("reconnecting...", "off"));
    source.addEventListener("parts", (message) => {
      for (const [id, markup] of Object.entries(JSON.parse(message.data))) apply(id, markup);
      tickAges();
      markScrolls();
    });
    source.addEventListener("gone", (message) => {
      source.close();
      say(JSON.parse(message.data), "off");
    });
    // Logged out or no longer allowed: the page itself says so.
    source.addEventListener("denied", () => { source.close(); location.reload(); });
  };

  const start = () => {
    const filters = document.querySelector("form.filters");
    if (filters) {
      filters.addEventListener("change", () => {  // the address says only what was chosen
        const chosen = new URLSearchParams();
        for (const [name, value] of new FormData(filters)) {
          if (value && !(name === "sort" && value === "newest")) chosen.set(name, value);
        }
        location.assign(chosen.size ? `/?${chosen}` : "/");
      });
    }
    for (const element of document.querySelectorAll("#logs .log[data-pod]")) adopt(element);
    startPicture();
    tickAges();
    markScrolls();
    setInterval(tickAges, 1000);
    follow();
  };
  start();
})();
"""
