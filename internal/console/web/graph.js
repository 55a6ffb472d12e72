// skillbus console: draws a sequence as its shape, in SVG, with our own
// layered layout (no graph library: the shape is already layered).
// Groups are columns left to right in run order, the calls of a group are
// stacked inside its column, and each slot is a labelled edge from the call
// that writes it (`as`) to every later group that reads it (`in`); run
// arguments come from a node on the left. Every call and group shows its
// status as text beside its colour, and is a focusable button when the
// drawing is interactive.
"use strict";

(function () {
  const NS = "http://www.w3.org/2000/svg";
  const PAD = 16, COLW = 236, GAP = 118, ARGW = 170, ARGROW = 22;
  const HEAD = 48, WHEN = 17, CALLGAP = 8, INNER = 10;

  // Status words and their icons: the icon is decoration, the word is
  // the label (status is never shown by colour alone).
  const ICONS = {
    succeeded: "✓", failed: "✗", running: "▶", pending: "…", queued: "○",
    skipped: "↷", canceled: "⊘", cancelled: "⊘", partial: "◐", degraded: "◑",
    not_run: "–", interrupted: "‖", waiting: "◔",
  };

  function el(tag, attrs, ...kids) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    }
    for (const k of kids) {
      if (k === null || k === undefined) continue;
      e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    }
    return e;
  }

  // fit cuts text to about width pixels (px per character).
  function fit(text, width, px) {
    const max = Math.max(3, Math.floor(width / px));
    text = String(text);
    return text.length <= max ? text : text.slice(0, max - 1) + "…";
  }

  function statusText(s) {
    if (!s) return "";
    return (ICONS[s] || "•") + " " + s.replace("_", " ");
  }

  // dataflow returns the slot edges of a sequence AST, as `skillbus seqs
  // graph` draws them: for each `in` key of each group, an edge from each
  // earlier call writing it, or from the run arguments when no earlier
  // group provides it.
  function dataflow(groups) {
    const edges = [];
    groups.forEach((g, j) => {
      for (const k of Object.keys(g.in || {}).sort()) {
        let found = false;
        for (let i = j - 1; i >= 0 && !found; i--) {
          if (!g.in || !groups[i].out || !(k in groups[i].out)) continue;
          found = true;
          groups[i].calls.forEach((c, ci) => {
            if (c.as === k) edges.push({ from: i, call: ci, to: j, slot: k });
          });
        }
        if (!found) edges.push({ from: -1, to: j, slot: k });
      }
    });
    return edges;
  }

  // draw returns an <svg> for model:
  //   {args: [{key, type}], groups: [{name, status, detail, when, whenNote,
  //    in, out, calls: [{tool, as, status, detail}]}], plain: bool}
  // opts: {onSelect(kind, group, call), selected: {kind, group, call},
  //        label: accessible name of the drawing}
  function draw(model, opts) {
    opts = opts || {};
    const plain = !!model.plain;
    const CALLH = plain ? 40 : 58;
    const groups = model.groups || [];
    const args = model.args || [];
    const edges = model.edges || dataflow(groups);
    const argW = args.length ? ARGW + 40 : 0;
    const x0 = PAD + argW;
    const colX = (i) => x0 + i * (COLW + GAP);
    const headH = (g) => HEAD + (g.when ? WHEN : 0);
    const groupH = (g) => headH(g) + INNER + g.calls.length * (CALLH + CALLGAP) - CALLGAP + INNER;
    const callY = (g, ci) => PAD + headH(g) + INNER + ci * (CALLH + CALLGAP);
    let bottom = PAD;
    groups.forEach((g) => { bottom = Math.max(bottom, PAD + groupH(g)); });
    if (args.length) bottom = Math.max(bottom, PAD + 28 + args.length * ARGROW + 8);

    // Long edges (skipping a column) run in lanes below the groups.
    let lanes = 0;
    for (const e of edges) {
      const adjacent = e.from === -1 ? e.to === 0 : e.to === e.from + 1;
      if (!adjacent) e.lane = lanes++;
    }
    const width = x0 + Math.max(1, groups.length) * (COLW + GAP) - GAP + PAD;
    const height = bottom + (lanes ? 18 + lanes * 16 : 0) + PAD;

    const svg = el("svg", {
      class: "graph", width, height, viewBox: `0 0 ${width} ${height}`,
      role: "group", "aria-label": opts.label || "the shape of the sequence",
    });
    svg.appendChild(el("defs", {},
      el("marker", { id: "sb-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        el("path", { d: "M0,0 L10,5 L0,10 z" }))));

    // Where each edge starts: the run arguments' row, or the slot label
    // (a "port") right of the call that writes the slot.
    const edgeLayer = el("g", { "aria-hidden": "true" });
    const labelLayer = el("g", { "aria-hidden": "true" });
    const portDone = {};
    for (const e of edges) {
      if (e.from === -1) {
        const row = args.findIndex((a) => a.key === e.slot);
        e.x1 = PAD + ARGW;
        e.y1 = PAD + 28 + Math.max(0, row) * ARGROW + ARGROW / 2;
        continue;
      }
      const g = groups[e.from];
      e.y1 = callY(g, e.call) + CALLH / 2;
      const x = colX(e.from) + COLW - 6;
      const label = fit(e.slot, GAP - 26, 7);
      const w = label.length * 7 + 10;
      const key = e.from + ":" + e.call;
      if (!portDone[key]) {
        portDone[key] = true;
        labelLayer.appendChild(el("rect", { class: "g-edge-label-bg", x: x + 10, y: e.y1 - 9, width: w, height: 18, rx: 4 }));
        labelLayer.appendChild(el("text", { class: "g-edge-label", x: x + 15, y: e.y1 + 4 }, label, el("title", {}, "slot " + e.slot)));
        edgeLayer.appendChild(el("path", { class: "g-edge", d: `M${x},${e.y1} H${x + 10}` }));
      }
      e.x1 = x + 10 + w;
    }
    // Where each edge ends: spread down the target group's left side, in
    // the order of their starts (fewer crossings); lane edges come last.
    const byTarget = {};
    for (const e of edges) (byTarget[e.to] = byTarget[e.to] || []).push(e);
    for (const [to, list] of Object.entries(byTarget)) {
      list.sort((a, b) => ((a.lane !== undefined) - (b.lane !== undefined)) || (a.y1 - b.y1));
      const g = groups[+to];
      const top = PAD + 24, bot = PAD + Math.max(groupH(g) - 12, 36);
      list.forEach((e, k) => { e.y2 = list.length === 1 ? top + 8 : top + (bot - top) * k / (list.length - 1); });
    }
    for (const e of edges) {
      const { x1, y1, y2 } = e;
      const x2 = colX(e.to) - 2;
      let d;
      if (e.lane === undefined) {
        const mx = (x1 + x2) / 2;
        d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
      } else {
        const ly = bottom + 18 + e.lane * 16;
        d = `M${x1},${y1} C${x1 + 16},${y1} ${x1 + 10},${ly} ${x1 + 26},${ly} H${x2 - 30} C${x2 - 14},${ly} ${x2 - 24},${y2} ${x2},${y2}`;
        if (e.from === -1) {
          const label = fit(e.slot, 120, 7);
          const lx = x2 - 40 - label.length * 7;
          labelLayer.appendChild(el("rect", { class: "g-edge-label-bg", x: lx - 5, y: ly - 9, width: label.length * 7 + 10, height: 18, rx: 4 }));
          labelLayer.appendChild(el("text", { class: "g-edge-label", x: lx, y: ly + 4 }, label));
        }
      }
      edgeLayer.appendChild(el("path", { class: "g-edge", d, "marker-end": "url(#sb-arrow)" }));
    }
    svg.appendChild(edgeLayer);

    // Run order: a dashed arrow along the top from each group to the next.
    for (let i = 0; i + 1 < groups.length; i++) {
      svg.appendChild(el("path", { class: "g-order", d: `M${colX(i) + COLW},${PAD + 12} H${colX(i + 1) - 3}`, "marker-end": "url(#sb-arrow)", "aria-hidden": "true" }));
    }

    if (args.length) {
      const h = 28 + args.length * ARGROW + 8;
      const node = el("g", { role: "img", "aria-label": "run arguments: " + args.map((a) => a.key + " " + a.type).join(", ") });
      node.appendChild(el("rect", { class: "g-args", x: PAD, y: PAD, width: ARGW, height: h, rx: 8 }));
      node.appendChild(el("text", { class: "g-head-num", x: PAD + 10, y: PAD + 19 }, "run arguments"));
      args.forEach((a, i) => {
        node.appendChild(el("text", { class: "g-sub", x: PAD + 10, y: PAD + 28 + i * ARGROW + 15 }, fit(a.key + ": " + a.type, ARGW - 16, 6.6)));
      });
      svg.appendChild(node);
    }

    const sel = opts.selected || {};
    const interactive = typeof opts.onSelect === "function";
    const activate = (node, fn) => {
      node.addEventListener("click", fn);
      node.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); fn(); }
      });
    };
    groups.forEach((g, gi) => {
      const x = colX(gi), y = PAD;
      const gs = g.status || "idle";
      const head = el("g", {
        class: "g-group-hit gs-" + gs + (sel.kind === "group" && sel.group === gi ? " selected" : ""),
        tabindex: interactive ? 0 : null, role: interactive ? "button" : "img",
        "aria-label": `group ${gi + 1} ${g.name}${g.status ? ": " + g.status.replace("_", " ") : ""}${g.when ? ", when " + g.when : ""}${g.whenNote ? " (" + g.whenNote + ")" : ""}`,
        "data-group": gi,
      });
      head.appendChild(el("rect", { class: "g-group", x, y, width: COLW, height: groupH(g), rx: 10 }));
      head.appendChild(el("text", { class: "g-head-num", x: x + 12, y: y + 20 }, fit(`${gi + 1}. ${g.name}`, COLW - 24, 7.6), el("title", {}, `${gi + 1}. ${g.name}`)));
      const sub = g.status ? statusText(g.status) + (g.detail ? " · " + g.detail : "") : (g.detail || "");
      head.appendChild(el("text", { class: "g-sub" + (g.status ? " g-status" : ""), x: x + 12, y: y + 38 }, fit(sub, COLW - 24, 6.6)));
      if (g.when) {
        const w = "when " + g.when + (g.whenNote ? " → " + g.whenNote : "");
        head.appendChild(el("text", { class: "g-sub", x: x + 12, y: y + 38 + WHEN }, fit(w, COLW - 24, 6.6), el("title", {}, w)));
      }
      if (interactive) activate(head, () => opts.onSelect("group", gi));
      svg.appendChild(head);

      g.calls.forEach((c, ci) => {
        const cy = callY(g, ci), cs = c.status || "idle";
        const label = `group ${gi + 1}, call ${ci + 1}: ${c.tool}${c.for_each ? ", once per item of " + c.for_each : ""}${c.as ? ", writes slot " + c.as : ""}${c.status ? ": " + c.status.replace("_", " ") : ""}${c.detail ? ", " + c.detail : ""}`;
        const node = el("g", {
          class: "g-call s-" + cs + (sel.kind === "call" && sel.group === gi && sel.call === ci ? " selected" : ""),
          tabindex: interactive ? 0 : null, role: interactive ? "button" : "img", "aria-label": label,
          "data-group": gi, "data-call": ci, "data-status": c.status || "",
        });
        if (c.for_each) { // a fan-out: a stack of boxes, one call per item
          node.appendChild(el("rect", { class: "g-box", x: x + 14, y: cy - 4, width: COLW - 22, height: CALLH, rx: 6 }));
        }
        node.appendChild(el("rect", { class: "g-box", x: x + 8, y: cy, width: COLW - 16, height: CALLH, rx: 6 }));
        const tool = c.for_each ? "each " + c.for_each.replace("$args.", "") + ": " + c.tool : c.tool;
        node.appendChild(el("text", { class: "g-tool", x: x + 18, y: cy + 17 }, fit(tool, COLW - 40, 7.8), el("title", {}, tool)));
        node.appendChild(el("text", { class: "g-sub", x: x + 18, y: cy + 33 }, c.as ? fit("→ " + c.as, COLW - 40, 6.6) : "(result not kept)"));
        if (!plain) {
          node.appendChild(el("text", { class: "g-status", x: x + 18, y: cy + 50 }, fit(statusText(cs) + (c.detail ? " · " + c.detail : ""), COLW - 40, 6.8)));
        }
        if (interactive) activate(node, () => opts.onSelect("call", gi, ci));
        svg.appendChild(node);
      });
    });
    svg.appendChild(labelLayer);
    return svg;
  }

  // fit scales a drawing down to its box when a little is missing (at most
  // to 70 %, so the text stays readable); a wider one scrolls in the box.
  function fitBox(wrap) {
    const svg = wrap.querySelector("svg.graph");
    if (!svg) return;
    const natural = +svg.getAttribute("width"), height = +svg.getAttribute("height");
    const avail = wrap.clientWidth - 12;
    if (natural > avail && natural * 0.7 <= avail) {
      svg.style.width = avail + "px";
      svg.style.height = Math.round(height * avail / natural) + "px";
    } else {
      svg.style.width = natural + "px";
      svg.style.height = height + "px";
    }
  }

  window.SBGraph = { draw, dataflow, statusText, ICONS, fit: fitBox };
})();
