// skillbus console: the page. Plain JavaScript, no build step, no library.
// Every action goes through the console's API (/api/...), which calls the
// endpoints the skillbus command line uses and answers with the same
// errors; live updates come from /api/stream (server-sent events).
// Text from the bus is always set with textContent, never parsed as HTML.
"use strict";

(function () {
  const main = document.getElementById("main");
  const toastBox = document.getElementById("toast");
  const G = window.SBGraph;

  // ---------------------------------------------------------------- DOM

  // h builds an element: attrs sets attributes (on* → listeners, booleans
  // as presence); children are nodes or strings.
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
      else if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k === "style" && typeof v === "object") Object.assign(e.style, v); // CSSOM: allowed by the CSP, a style attribute is not
      else if (v === true) e.setAttribute(k, "");
      else e.setAttribute(k, String(v));
    }
    append(e, kids);
    return e;
  }
  function append(e, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.appendChild(typeof k === "string" || typeof k === "number" ? document.createTextNode(String(k)) : k);
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function replace(e, ...kids) { return append(clear(e), kids); }

  let uid = 0;
  const nextId = (p) => `${p}-${++uid}`;

  function toast(text) {
    toastBox.textContent = text;
    clearTimeout(toast.t);
    toast.t = setTimeout(() => { toastBox.textContent = ""; }, 5000);
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || `HTTP ${status}`);
      this.status = status;
      this.code = body && body.code;
      this.fields = (body && body.fields) || {};
    }
  }

  async function api(path, opts) {
    let res;
    try {
      res = await fetch(path, Object.assign({ headers: { Accept: "application/json" }, credentials: "same-origin" }, opts || {}));
    } catch (e) {
      throw new ApiError(0, { error: "the console cannot be reached (" + e.message + "); is skillbus still running?" });
    }
    let body = null;
    const text = await res.text();
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  // post sends an action: JSON body and the console's CSRF header.
  function post(path, body) {
    return api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Skillbus-Console": "1", Accept: "application/json" },
      body: JSON.stringify(body || {}),
    });
  }

  // errorBox shows an API error as the CLI would print it, with its code.
  function errorBox(err, prefix) {
    const code = err.code ? ` (code ${err.code})` : "";
    return h("div", { class: "error", role: "alert" }, (prefix ? prefix + ": " : "") + err.message + code);
  }

  // ---------------------------------------------------------------- text

  const pad = (n) => String(n).padStart(2, "0");
  function fmtTime(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d) || d.getFullYear() < 1971) return "";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  // fmtZone names the browser's time zone, which fmtTime writes in.
  function fmtZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time"; } catch { return "local time"; }
  }
  function fmtAgo(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d) || d.getFullYear() < 1971) return "";
    const s = (Date.now() - d.getTime()) / 1000;
    const a = Math.abs(s);
    const t = a < 60 ? `${Math.round(a)} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
    return s >= 0 ? `${t} ago` : `in ${t}`;
  }
  // fmtWhen writes a time as the time display asks (docs/console.md,
  // "Times"): mode "utc" (2026-12-01 21:34:05 UTC), "local" (the browser's
  // zone, or zone, an IANA name, when given: 2026-12-01 22:34:05 CET) or
  // "relative" (5 min ago); "" for no time.
  function fmtWhen(iso, mode, zone) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d) || d.getFullYear() < 1971) return "";
    if (mode === "relative") return fmtAgo(iso);
    const p = {};
    try {
      const f = new Intl.DateTimeFormat("en-GB", { timeZone: mode === "utc" ? "UTC" : zone || undefined, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short" });
      for (const x of f.formatToParts(d)) p[x.type] = x.value;
    } catch (e) {
      return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
    }
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${mode === "utc" ? "UTC" : p.timeZoneName || zone || fmtZone()}`;
  }

  // The time display (the header's Times switch), kept in localStorage
  // across pages and visits: "local" (the default), "utc" or "relative".
  const TIME_MODES = ["local", "utc", "relative"];
  const TIME_KEY = "skillbus.times";
  function timeMode() {
    let m = "";
    try { m = localStorage.getItem(TIME_KEY) || ""; } catch (e) { /* storage off */ }
    return TIME_MODES.includes(m) ? m : "local";
  }
  const when = (iso, zone) => fmtWhen(iso, timeMode(), zone);

  // timeEl is a time in the time display's form; its title holds the
  // others (UTC, local, relative).
  function timeEl(iso) {
    if (!iso || !fmtTime(iso)) return h("span", { class: "muted" }, "—");
    const mode = timeMode();
    const others = TIME_MODES.filter((m) => m !== mode).map((m) => fmtWhen(iso, m));
    return h("time", { datetime: iso, title: others.join(" · ") }, fmtWhen(iso, mode));
  }
  // goDur turns a Go duration string ("1.5s", "340.2ms", "1m2s") into ms.
  function goDur(s) {
    if (!s || typeof s !== "string") return null;
    const units = { h: 3600000, m: 60000, s: 1000, ms: 1, "µs": 0.001, "us": 0.001, ns: 0.000001 };
    let total = 0, ok = false;
    const re = /([0-9.]+)(h|ms|m|s|µs|us|ns)/g;
    let m;
    while ((m = re.exec(s))) { total += parseFloat(m[1]) * units[m[2]]; ok = true; }
    return ok ? total : null;
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined || isNaN(ms)) return "";
    if (ms < 1) return "<1 ms";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    const m = Math.floor(ms / 60000), s = Math.round((ms % 60000) / 1000);
    return `${m} min ${s} s`;
  }
  // fmtSpan writes a wait's length in the units a person sets it in:
  // "1 h", "1 h 30 min", "5 min", "8 s".
  function fmtSpan(ms) {
    if (ms === null || ms === undefined || isNaN(ms)) return "";
    if (ms < 60000) return fmtMs(ms);
    const s = Math.round(ms / 1000), hr = Math.floor(s / 3600), min = Math.floor((s % 3600) / 60), sec = s % 60;
    return [hr ? `${hr} h` : "", min ? `${min} min` : "", sec ? `${sec} s` : ""].filter(Boolean).join(" ");
  }
  function between(a, b) {
    if (!a) return null;
    const t0 = new Date(a).getTime(), t1 = b ? new Date(b).getTime() : Date.now();
    if (isNaN(t0) || isNaN(t1) || new Date(a).getFullYear() < 1971) return null;
    return Math.max(0, t1 - t0);
  }
  function pretty(v) {
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }
  // clipText cuts s to n characters with an ellipsis.
  function clipText(s, n) { return s.length <= n ? s : s.slice(0, n - 1) + "…"; }
  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1048576).toFixed(1)} MiB`;
  }

  // copyText puts text on the clipboard: the Clipboard API where the
  // page may use it (https or localhost), else a hidden text area and the
  // copy command. It resolves to true when the text was copied.
  async function copyText(text) {
    try {
      if (navigator.clipboard && navigator.clipboard.writeText) { await navigator.clipboard.writeText(text); return true; }
    } catch (e) { /* refused: try the old way */ }
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.className = "sr-only";
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    return ok;
  }

  // copyButton is a small button that copies text() and says so: what
  // names it for screen readers ("run id", "the arguments").
  function copyButton(what, text) {
    const b = h("button", { type: "button", class: "copy", title: "Copy " + what, "aria-label": "Copy " + what, onclick: async () => {
      const ok = await copyText(typeof text === "function" ? text() : text);
      b.classList.toggle("copied", ok);
      b.lastChild.textContent = ok ? "copied" : "not copied";
      toast(ok ? `Copied ${what}.` : `The browser did not let the page copy ${what}; select it and copy by hand.`);
      clearTimeout(b.t);
      b.t = setTimeout(() => { b.classList.remove("copied"); b.lastChild.textContent = "copy"; }, 1500);
    } }, copyIcon(), h("span", { class: "copy-word" }, "copy"));
    return b;
  }

  // copyIcon is the copy buttons' picture: two sheets (an SVG, so that it
  // needs no font to have the sign).
  function copyIcon() {
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("class", "copy-icon");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    for (const [x, y] of [[5, 1], [1, 5]]) {
      const r = document.createElementNS(NS, "rect");
      for (const [k, v] of Object.entries({ x, y, width: 10, height: 10, rx: 2 })) r.setAttribute(k, String(v));
      svg.appendChild(r);
    }
    return svg;
  }

  // jsonBlock is a JSON value in a block with a copy button.
  function jsonBlock(what, value, text) {
    const t = text !== undefined ? text : pretty(value);
    return h("div", { class: "copy-wrap" }, copyButton(what, t), h("pre", { class: "block" }, t));
  }

  // jsonView shows a JSON value as a tree (docs/console.md, "JSON
  // values"): objects and arrays fold (a folded one says how many keys or
  // items it holds), a string of several lines is shown as its text,
  // wrapped, not as an escaped JSON string, and the "raw" button switches
  // to the JSON text — what the copy button copies — and back. Objects and
  // arrays are open down to depth open (default 2) when they hold at most
  // 50 entries; a folded one builds its entries when first opened.
  function jsonView(what, value, open) {
    const text = pretty(value);
    const tree = h("div", { class: "json-tree" }, jsonNode(null, value, 0, open === undefined ? 2 : open));
    const raw = h("pre", { class: "block json-raw", hidden: true }, text);
    const toggle = h("button", { type: "button", class: "json-raw-toggle", "aria-pressed": "false", title: "Show the JSON text of " + what, onclick: () => {
      const on = raw.hidden;
      raw.hidden = !on;
      tree.hidden = on;
      toggle.setAttribute("aria-pressed", String(on));
    } }, "raw");
    return h("div", { class: "copy-wrap json-view" }, h("div", { class: "json-tools" }, toggle, copyButton(what, text)), tree, raw);
  }

  // jsonNode is one entry of a jsonView tree: key (a name, an index, or
  // null at the top) and its value.
  function jsonNode(key, v, depth, open) {
    const label = key === null ? null : h("span", { class: "json-key" }, typeof key === "number" ? `${key}:` : `${JSON.stringify(key)}:`);
    if (v !== null && typeof v === "object") {
      const isArr = Array.isArray(v);
      const keys = isArr ? null : Object.keys(v);
      const n = isArr ? v.length : keys.length;
      const [o, c] = isArr ? ["[", "]"] : ["{", "}"];
      if (n === 0) return h("div", { class: "json-row" }, label, " ", h("span", { class: "json-punct" }, o + c));
      const count = isArr ? (n === 1 ? "1 item" : `${n} items`) : (n === 1 ? "1 key" : `${n} keys`);
      const body = h("div", { class: "json-children" });
      const node = h("details", { class: "json-node", open: depth < open && n <= 50 },
        h("summary", {}, label, label ? " " : null, h("span", { class: "json-punct" }, o), h("span", { class: "json-fold" }, ` … ${c} `, h("span", { class: "json-count" }, count))),
        body, h("div", { class: "json-punct json-close" }, c));
      let built = false;
      const build = () => {
        if (built) return;
        built = true;
        const max = 500;
        const kids = [];
        for (let i = 0; i < Math.min(n, max); i++) kids.push(isArr ? jsonNode(i, v[i], depth + 1, open) : jsonNode(keys[i], v[keys[i]], depth + 1, open));
        if (n > max) kids.push(h("div", { class: "muted small" }, `… ${n - max} more (raw shows them all)`));
        append(body, kids);
      };
      if (node.open) build();
      node.addEventListener("toggle", () => { if (node.open) build(); });
      return node;
    }
    if (typeof v === "string" && v.includes("\n")) {
      const lines = v.split("\n").length - (v.endsWith("\n") ? 1 : 0);
      return h("div", { class: "json-row json-textrow" }, label, label ? " " : null,
        h("span", { class: "muted small" }, `text, ${lines} lines`), h("pre", { class: "json-text" }, v));
    }
    const kind = v === null ? "null" : typeof v === "string" ? "str" : typeof v === "number" ? "num" : "bool";
    return h("div", { class: "json-row" }, label, label ? " " : null, h("span", { class: "json-" + kind }, JSON.stringify(v)));
  }

  // sentArgs shows the arguments a call or a for_each item was sent, after
  // substitution (seq.SentArgs: args, or args_clipped with the size and the
  // start kept); null when it was not sent, or the run's state was written
  // by a release that did not record them.
  function sentArgs(what, r) {
    if (!r) return null;
    if (r.args !== undefined) return jsonView(what, r.args);
    const c = r.args_clipped;
    if (!c) return null;
    return h("div", { class: "clipped-args" },
      h("p", { class: "small muted" }, c.head
        ? `${bytes(c.size)} of arguments were sent; the run's state keeps their first ${bytes(c.head.length)} (docs/runs.md, "What a run state holds"):`
        : `${bytes(c.size)} of arguments were sent; the run's state kept none of them (it keeps at most 32 KiB of arguments a run).`),
      c.head ? h("pre", { class: "block" }, c.head + "…") : null);
  }

  // badge is a status: its icon and its word, coloured.
  function badge(status, big, text) {
    const s = String(status || "unknown");
    return h("span", { class: `st st-${s.replace(/ /g, "-")}${big ? " st-big" : ""}` },
      h("span", { "aria-hidden": "true" }, G.ICONS[s] || (s === "activated" ? "✓" : s === "dropped" ? "◑" : "•")),
      text || s.replace("_", " "));
  }

  // word is a group's or call's status in the console's one vocabulary
  // (docs/console.md, Pages): a call the result calls "canceled", and a
  // group of a cancelled run that the result calls "interrupted", say
  // "cancelled", as the run does.
  function word(status, runStatus) {
    if (status === "canceled") return "cancelled";
    if (status === "interrupted" && runStatus === "cancelled") return "cancelled";
    return status;
  }

  // warnBadge is a warning: its sign and its words.
  function warnBadge(text) {
    return h("span", { class: "st st-dropped" }, h("span", { "aria-hidden": "true" }, "⚠"), text);
  }

  const STATUSES = ["queued", "running", "interrupted", "succeeded", "failed", "cancelled"];
  const TRIGGERS = ["manual", "boot", "schedule", "manual-tick", "backfill", "seq_call"];
  const finished = (s) => s === "succeeded" || s === "failed" || s === "cancelled";

  // ------------------------------------------------------------- stream

  const conn = document.getElementById("conn");
  const connText = document.getElementById("conn-text");
  function setConn(kind, text) {
    conn.className = "conn " + kind;
    connText.textContent = text;
  }

  // The console's own NATS connection (the stream's hello and nats
  // events, docs/console.md "Live updates"): while it is down the header
  // says since when and the actions are disabled with that reason; the
  // server answers them 503 at once anyway.
  const ACTIONS = "#cancel-run, #rerun-run, #retry-run, .retry-from, #edit-rerun, #confirm-cancel, #open-run-form, #start-run, #call-tool";
  let natsDown = "";
  let liveText = "connecting…";
  function showNats(n) {
    natsDown = n && !n.connected ? `reconnecting to NATS (since ${fmtWhen(n.since, timeMode() === "utc" ? "utc" : "local").slice(11) || "now"})` : "";
    if (natsDown) setConn("down", natsDown);
    else setConn(liveText.startsWith("live") ? "live" : "down", liveText);
    applyNats();
  }
  function applyNats() {
    for (const b of document.querySelectorAll(ACTIONS)) {
      if (natsDown && !b.disabled) {
        b.disabled = true;
        b.dataset.natsOff = "1";
        b.title = "The console's connection to the NATS server is down; it is " + natsDown + ".";
      } else if (!natsDown && b.dataset.natsOff) {
        b.disabled = !!b.dataset.limitOff; // still not allowed with these credentials
        delete b.dataset.natsOff;
        b.removeAttribute("title");
      }
    }
  }
  new MutationObserver(() => { if (natsDown) applyNats(); if (limits.size) applyLimits(); }).observe(document.getElementById("main"), { childList: true, subtree: true });

  // What the console's credentials are known not to allow (/api/info's
  // limits: their permissions read from the creds file; docs/console.md,
  // "What the credentials do not allow"): said above every page, the
  // pages that cannot be read marked in the navigation and said on the
  // page, and the actions' buttons disabled with the reason — before
  // anything is tried.
  const limits = new Map();
  const LIMITED = { "#open-run-form": "start", "#start-run": "start", "#edit-rerun": "start", "#cancel-run": "cancel", "#confirm-cancel": "cancel", "#rerun-run": "rerun", "#retry-run": "retry", ".retry-from": "retry", "#signal-approve": "signal", "#signal-reject": "signal", "#pause-entry": "pause", "#unpause-entry": "pause", "#trigger-entry": "trigger", "#backfill-entry": "backfill", "#pause-note": "pause", "#backfill-from": "backfill", "#backfill-to": "backfill" };
  function applyLimits() {
    for (const [sel, what] of Object.entries(LIMITED)) {
      const l = limits.get(what);
      if (!l) continue;
      for (const b of document.querySelectorAll(sel)) {
        if (b.dataset.limitOff) continue;
        b.disabled = true;
        b.dataset.limitOff = "1";
        b.title = "Not allowed with these credentials: " + l.reason + ".";
      }
    }
  }
  // pageLimit is the limit of the page at path ("" for none).
  function pageLimit(path) {
    const key = /^\/runs\/[^/]+$/.test(path) ? "run" : (path.match(/^\/([a-z]+)/) || [])[1];
    return limits.get(key) || null;
  }
  function showLimits(info) {
    limits.clear();
    for (const l of info.limits || []) limits.set(l.what, l);
    const box = document.getElementById("limits");
    if (!limits.size) { box.hidden = true; clear(box); return; }
    const ACTS = ["start", "cancel", "rerun", "retry", "signal", "pause", "trigger", "backfill"];
    const pages = [...limits.values()].filter((l) => !ACTS.includes(l.what));
    const acts = [...limits.values()].filter((l) => ACTS.includes(l.what));
    const item = (l) => h("li", {}, l.label, ": needs to publish to ", h("code", {}, l.subject));
    replace(box, h("div", { class: "notice", role: "status" },
      h("strong", {}, "What these credentials do not allow:"),
      pages.length ? [h("p", {}, "Unavailable pages:"), h("ul", {}, pages.map(item))] : null,
      acts.length ? [h("p", {}, "Disabled actions:"), h("ul", {}, acts.map(item))] : null,
      h("p", { class: "small" }, "The console's NATS credentials" + (info.credentials ? ` (${info.credentials})` : "") + " may not publish to these subjects. docs/security.md lists what each role may do; the console role's creds (skillbus auth writes creds/console.creds) allow all of this.")));
    box.hidden = false;
    for (const a of document.querySelectorAll("[data-nav]")) {
      const l = limits.get(a.dataset.nav);
      if (l && !a.querySelector(".unavail")) { a.appendChild(h("span", { class: "unavail" }, " (unavailable)")); a.title = l.reason; }
    }
    showPageLimit();
    applyLimits();
  }
  // showPageLimit says at the top of the page when the credentials do not
  // allow reading it.
  function showPageLimit() {
    const l = pageLimit(parseHash().path);
    if (!l || document.getElementById("page-limit")) return;
    main.insertBefore(h("p", { class: "notice", id: "page-limit" }, "This page is unavailable with these credentials: " + l.reason + "."), main.firstChild);
  }

  // ----------------------------------------------------------- refusals

  // The NATS server's refusals that no request asked for (the RUNS watch,
  // the events subscription), each with its subject, the credentials'
  // role and what the pages lose: shown above every page, at once (the
  // stream's hello and refused events). A request the server refuses
  // answers 403 with the same words, shown where it was made.
  const refusalBox = document.getElementById("refusals");
  const refusals = new Map();
  function showRefusals(list, all) {
    if (all) refusals.clear();
    for (const r of list || []) refusals.set(`${r.op} ${r.subject} ${r.queue || ""}`, r);
    if (!refusals.size) { refusalBox.hidden = true; clear(refusalBox); return; }
    const role = [...refusals.values()].map((r) => r.role).find((x) => x) || "";
    replace(refusalBox, h("div", { class: "error", role: "alert" },
      h("strong", {}, "The NATS server refuses the console" + (role ? ` (role ${role})` : "") + ":"),
      h("ul", {}, [...refusals.values()].map((r) => h("li", {},
        h("span", {}, `${r.op} to `), h("code", {}, r.subject), r.queue ? ` (queue ${r.queue})` : "",
        r.effect ? ` — ${r.effect}.` : ".",
        r.credentials ? h("div", { class: "muted small mono wrap" }, "credentials: " + r.credentials) : null))),
      h("p", {}, role === "console" ? "The console role allows this; regenerate its credentials with the skillbus auth of this version (docs/security.md)."
        : "Give the console the credentials of the console role (skillbus auth writes creds/console.creds; docs/security.md lists what it may do).")));
    refusalBox.hidden = false;
  }

  // openStream opens /api/stream[?query] with handlers by event name; it
  // is closed when the page changes.
  function openStream(query, handlers) {
    const es = new EventSource("/api/stream" + (query ? "?" + query : ""));
    es.addEventListener("hello", (ev) => {
      const hello = JSON.parse(ev.data);
      liveText = hello.live ? (hello.runs_live === false ? "live (runs list not live)" : "live") : "not live: reload to update";
      showNats(hello.nats);
      showRefusals(hello.refused, true);
      if (handlers.hello) handlers.hello(hello);
    });
    es.addEventListener("refused", (ev) => {
      showRefusals([JSON.parse(ev.data)]);
      if (handlers.refused) handlers.refused();
    });
    // NATS back: the page reads again what it shows, as on a reconnect
    // of its stream (events of the outage are not on the stream).
    es.addEventListener("nats", (ev) => {
      const n = JSON.parse(ev.data), wasDown = !!natsDown;
      showNats(n);
      if (wasDown && n.connected && handlers.hello) handlers.hello({});
    });
    es.addEventListener("refusals", (ev) => showRefusals(JSON.parse(ev.data), true));
    for (const name of ["summaries", "run", "registry", "schedule", "ready"]) {
      if (handlers[name]) es.addEventListener(name, (ev) => handlers[name](JSON.parse(ev.data)));
    }
    es.onerror = () => setConn("down", "reconnecting…");
    page.cleanup.push(() => es.close());
    return es;
  }

  // firstLoad opens a page's stream (open(loaded)) and waits for its first
  // load, which the stream's hello starts; without a hello in 3 s (no
  // stream) it loads anyway.
  function firstLoad(open, load) {
    let loaded;
    const done = new Promise((r) => { loaded = r; });
    open(loaded);
    const t = setTimeout(() => load().then(loaded), 3000);
    page.cleanup.push(() => clearTimeout(t));
    return done.then(() => clearTimeout(t));
  }

  function debounce(fn, ms) {
    let t = null;
    const f = () => { clearTimeout(t); t = setTimeout(fn, ms); };
    page.cleanup.push(() => clearTimeout(t));
    return f;
  }

  // throttle calls fn at most once per ms, and while calls keep coming at
  // least once per ms: the first call after a quiet spell runs at once, a
  // call within ms of the last run waits for the rest of ms (a debounce
  // would wait for the calls to stop, which a burst of runs never does).
  function throttle(fn, ms) {
    let t = null, last = -Infinity;
    const run = () => { t = null; last = Date.now(); fn(); };
    const f = () => { if (t === null) t = setTimeout(run, Math.max(0, last + ms - Date.now())); };
    page.cleanup.push(() => { clearTimeout(t); t = null; });
    return f;
  }

  // fitGraph fits a drawing to its box now and when the window is resized.
  function fitGraph(wrap) {
    if (!wrap) return;
    G.fit(wrap);
    if (!page.resize) {
      page.resize = debounce(() => document.querySelectorAll(".graph-wrap").forEach((w) => G.fit(w)), 150);
      window.addEventListener("resize", page.resize);
      page.cleanup.push(() => { window.removeEventListener("resize", page.resize); page.resize = null; });
    }
  }

  // --------------------------------------------------------------- router

  const page = { token: 0, cleanup: [] };
  const routes = [
    [/^\/runs\/([^/]+)$/, pageRun, "runs"],
    [/^\/runs$/, pageRuns, "runs"],
    [/^\/seqs\/([^/]+)$/, pageSeq, "seqs"],
    [/^\/seqs$/, pageSeqs, "seqs"],
    [/^\/skills\/([^/]+)$/, pageSkill, "skills"],
    [/^\/skills$/, pageSkills, "skills"],
    [/^\/preview$/, pagePreview, "preview"],
    [/^\/tools\/([^/]+)$/, pageTool, "tools"],
    [/^\/tools$/, pageTools, "tools"],
    [/^\/schedules\/([^/]+)\/([^/]+)$/, pageSchedule, "schedules"],
    [/^\/schedules$/, pageSchedules, "schedules"],
  ];

  function parseHash() {
    const raw = location.hash.replace(/^#/, "") || "/runs";
    const [path, query] = raw.split("?");
    return { path, params: new URLSearchParams(query || "") };
  }

  function route() {
    if (!location.hash.startsWith("#/")) {
      if (location.hash === "" || location.hash === "#") { location.replace("#/runs"); }
      return;
    }
    for (const f of page.cleanup.splice(0)) { try { f(); } catch (e) { /* closing */ } }
    const token = ++page.token;
    const { path, params } = parseHash();
    let found = null;
    for (const [re, fn, nav] of routes) {
      const m = path.match(re);
      if (m) { found = { fn, nav, args: m.slice(1).map(decodeURIComponent) }; break; }
    }
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (found && a.dataset.nav === found.nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    clear(main);
    showPageLimit();
    if (!found) {
      append(main, [h("h1", { tabindex: "-1" }, "Not found"), h("p", {}, "There is no such page. ", h("a", { href: "#/runs" }, "Go to the runs."))]);
      focusTitle();
      return;
    }
    const live = () => token === page.token;
    main.setAttribute("aria-busy", "true");
    Promise.resolve(found.fn(main, ...found.args, params, live)).catch((err) => {
      if (!live()) return;
      append(main, [errorBox(err)]);
    }).finally(() => {
      if (live()) main.setAttribute("aria-busy", "false");
    });
  }

  // focusTitle moves the focus to the page's heading after a navigation,
  // so keyboard and screen reader users start at the new content.
  function focusTitle() {
    const t = main.querySelector("h1");
    if (t) { t.setAttribute("tabindex", "-1"); t.focus({ preventScroll: true }); }
  }

  function go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  const seqLink = (name) => name ? h("a", { href: "#/seqs/" + encodeURIComponent(name) }, name) : h("span", { class: "muted" }, "—");

  // ================================================================ Runs

  // runsHash is the runs page's address for a filter f ({status,
  // sequence, trigger, since, until, q, before}: empty ones left out, in
  // this order), so Back, Forward and a pasted link land on the same
  // filter and page (docs/console.md, Runs).
  function runsHash(f) {
    const q = new URLSearchParams();
    for (const k of ["q", "status", "sequence", "trigger", "since", "until", "before"]) {
      const v = (f[k] || "").trim();
      if (v) q.set(k, v);
    }
    const t = q.toString();
    return "#/runs" + (t ? "?" + t : "");
  }

  // runsPager says where a page of the runs list is and where its buttons
  // go: {text, buttons: [{id, label, before}]}. The live list knows the
  // page's position (first, has_prev, prev); seq.list's does not, and
  // offers the newest page (Back goes to the one before).
  function runsPager(pg, before) {
    const n = pg.runs.length, first = pg.first || 0;
    const text = !n ? `0 of ${pg.total} runs` : pg.live || !before
      ? `${first + 1}–${first + n} of ${pg.total} run${pg.total === 1 ? "" : "s"}`
      : `${n} run${n === 1 ? "" : "s"} (an older page)`;
    const buttons = [];
    if (before) buttons.push({ id: "page-newest", label: "Newest", before: "" });
    if (pg.has_prev && pg.prev) buttons.push({ id: "page-newer", label: "Newer runs", before: pg.prev });
    if (pg.next) buttons.push({ id: "page-older", label: "Older runs", before: pg.next });
    return { text, buttons };
  }

  async function pageRuns(root, params, live) {
    const f = {
      status: params.get("status") || "", sequence: params.get("sequence") || "",
      trigger: params.get("trigger") || "", since: params.get("since") || "", until: params.get("until") || "",
      q: params.get("q") || "",
    };
    let statuses = STATUSES;
    const countsBox = h("ul", { class: "counts", "aria-label": "Runs by status" });
    const tableBox = h("div", {});
    const note = h("div", { "aria-live": "polite" });
    const pager = h("div", { class: "pager" });
    const seqOptions = h("datalist", { id: "seq-names" });

    const statusSel = h("select", { id: "f-status", name: "status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
    if (f.status && !STATUSES.includes(f.status)) statusSel.appendChild(h("option", { value: f.status }, f.status));
    const searchIn = h("input", { id: "f-q", name: "q", type: "search", placeholder: "run id, sequence, status, trigger, worker, error", autocomplete: "off", spellcheck: "false", "aria-describedby": "f-q-hint" });
    searchIn.value = f.q;
    const trigSel = h("select", { id: "f-trigger", name: "trigger" }, h("option", { value: "" }, "any"), TRIGGERS.map((s) => h("option", { value: s }, s.replace("_", " "))));
    const seqIn = h("input", { id: "f-sequence", name: "sequence", type: "search", list: "seq-names", placeholder: "any sequence", autocomplete: "off" });
    const sinceSel = h("select", { id: "f-since", name: "since" },
      [["", "any time"], ["15m", "last 15 minutes"], ["1h", "last hour"], ["24h", "last 24 hours"], ["168h", "last 7 days"], ["custom", "between…"]]
        .map(([v, t]) => h("option", { value: v }, t)));
    const fromIn = h("input", { id: "f-from", type: "datetime-local", step: "1" });
    const toIn = h("input", { id: "f-to", type: "datetime-local", step: "1" });
    const custom = h("div", { class: "filters", hidden: true },
      h("div", { class: "field" }, h("label", { for: "f-from" }, "Created from"), fromIn),
      h("div", { class: "field" }, h("label", { for: "f-to" }, "Created until"), toIn));
    statusSel.value = f.status; trigSel.value = f.trigger; seqIn.value = f.sequence;
    if (f.since && !["15m", "1h", "24h", "168h"].includes(f.since)) {
      sinceSel.value = "custom"; custom.hidden = false;
      fromIn.value = toLocalInput(f.since); toIn.value = toLocalInput(f.until);
    } else {
      sinceSel.value = f.since;
      if (f.until) { sinceSel.value = "custom"; custom.hidden = false; toIn.value = toLocalInput(f.until); }
    }

    const form = h("form", { class: "filters", role: "search", "aria-label": "Filter runs", onsubmit: (ev) => { ev.preventDefault(); apply(); } },
      h("div", { class: "field search" }, h("label", { for: "f-q" }, "Search"), searchIn,
        h("p", { class: "hint sr-only", id: "f-q-hint" }, "Every word must match the run's id, sequence, status, trigger, worker or error.")),
      h("div", { class: "field" }, h("label", { for: "f-status" }, "Status"), statusSel),
      h("div", { class: "field" }, h("label", { for: "f-sequence" }, "Sequence"), seqIn),
      h("div", { class: "field" }, h("label", { for: "f-trigger" }, "Trigger"), trigSel),
      h("div", { class: "field" }, h("label", { for: "f-since" }, "Created"), sinceSel),
      h("button", { type: "submit" }, "Filter"),
      h("button", { type: "button", class: "link", onclick: () => { statusSel.value = trigSel.value = sinceSel.value = seqIn.value = searchIn.value = ""; custom.hidden = true; apply(); } }, "Clear filters"));
    for (const el of [statusSel, trigSel]) el.addEventListener("change", apply);
    sinceSel.addEventListener("change", () => {
      custom.hidden = sinceSel.value !== "custom";
      if (sinceSel.value !== "custom") apply();
    });
    for (const el of [fromIn, toIn]) el.addEventListener("change", apply);
    seqIn.addEventListener("change", apply);
    // Typing searches as it goes (the address follows without a history
    // entry per key); Enter or leaving the field makes one.
    const typed = debounce(() => apply(true), 300);
    searchIn.addEventListener("input", typed);

    append(root, [
      h("div", { class: "title-row" }, h("h1", {}, "Runs"), h("a", { class: "button", href: "#/seqs" }, "Start a run…")),
      h("p", { class: "muted" }, "Newest first; updated live. Each run is one execution of a sequence (", h("code", {}, "skillbus runs"), ")."),
      countsBox, form, custom, note, tableBox, pager, seqOptions,
    ]);
    focusTitle();
    api("/api/seqs").then((r) => { if (live()) replace(seqOptions, r.sequences.map((s) => h("option", { value: s.name }))); }).catch(() => {});

    let before = params.get("before") || "";
    function current() {
      const c = { status: statusSel.value, sequence: seqIn.value, trigger: trigSel.value, q: searchIn.value, since: "", until: "" };
      if (sinceSel.value === "custom") {
        if (fromIn.value) c.since = new Date(fromIn.value).toISOString();
        if (toIn.value) c.until = new Date(toIn.value).toISOString();
      } else c.since = sinceSel.value;
      return c;
    }
    // show puts the filter and page in the address: a history entry of its
    // own (Back returns to the one before), or in place while typing.
    function show(inPlace) {
      const hash = runsHash(Object.assign(current(), { before }));
      if (location.hash === hash) return;
      if (inPlace) history.replaceState(null, "", hash);
      else history.pushState(null, "", hash);
    }
    function apply(inPlace) {
      before = "";
      show(inPlace === true);
      load();
    }
    function goPage(cursor) {
      before = cursor;
      show(false);
      load().then(() => { const t = document.querySelector("main h1"); if (t) t.scrollIntoView({ block: "nearest" }); });
    }
    let shown = new Map();
    async function load() {
      const q = new URLSearchParams(runsHash(Object.assign(current(), { before })).split("?")[1] || "");
      let pg;
      try {
        pg = await api("/api/runs?" + q);
      } catch (err) {
        if (live()) replace(note, errorBox(err));
        return;
      }
      if (!live()) return;
      replace(note, pg.note ? h("p", { class: "notice" }, pg.note) : null,
        !pg.live ? h("p", { class: "notice" }, "The console does not watch the RUNS bucket" + (pg.not_live ? ` (${pg.not_live})` : "") + ", so this list is read through seq.list and read again when a run starts, moves or ends; a queued run shows once it starts. ",
          h("button", { type: "button", class: "link", onclick: load }, "Refresh")) : null);
      if (pg.statuses && pg.statuses.join() !== statuses.join()) {
        statuses = pg.statuses;
        const v = statusSel.value;
        replace(statusSel, h("option", { value: "" }, "any"), statuses.map((s) => h("option", { value: s }, s)));
        if (v && !statuses.includes(v)) statusSel.appendChild(h("option", { value: v }, v));
        statusSel.value = v;
      }
      renderCounts(pg);
      const rows = pg.runs.map((r) => {
        const prev = shown.get(r.run_id);
        const fresh = prev !== undefined && (prev.status !== r.status || prev.finished_groups !== r.finished_groups) || (shown.size > 0 && prev === undefined);
        return runRow(r, fresh);
      });
      shown = new Map(pg.runs.map((r) => [r.run_id, r]));
      if (!pg.runs.length) {
        replace(tableBox, h("p", { class: "muted" }, pg.total === 0 && !q.toString() ? "No runs yet. Start one from a sequence's page, or with skillbus run." : before && pg.total > 0 ? "No runs on this page any more. " : "No runs match these filters.",
          before && pg.total > 0 ? h("button", { type: "button", class: "link", onclick: () => goPage("") }, "The newest runs") : null));
      } else {
        replace(tableBox, h("table", { class: "tbl cards", "aria-label": "Runs" },
          h("thead", {}, h("tr", {}, ["Run", "Sequence", "Status", "Trigger", "Groups", "Created", "Took", "Error"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, rows)));
      }
      const pr = runsPager(pg, before);
      replace(pager,
        h("span", { class: "muted", id: "page-text", "aria-live": "polite" }, pr.text),
        pr.buttons.map((bt) => h("button", { type: "button", id: bt.id, onclick: () => goPage(bt.before) }, bt.label)));
    }
    function renderCounts(pg) {
      if (!pg.counts) { clear(countsBox); return; }
      const total = Object.values(pg.counts).reduce((a, b) => a + b, 0);
      const btn = (status, label, n) => h("li", {}, h("button", {
        type: "button", "aria-pressed": statusSel.value === status ? "true" : "false",
        onclick: () => { statusSel.value = status; apply(); },
      }, status ? badge(status) : label, h("span", { class: "n" }, String(n)), h("span", { class: "sr-only" }, " runs")));
      replace(countsBox, btn("", "all", total), statuses.map((s) => btn(s, s, pg.counts[s] || 0)));
    }
    // The stream first, then the list: what changes after the stream is
    // open reaches the page, and every (re)connect reloads.
    const reload = throttle(load, 1000);
    await firstLoad((loaded) => openStream("", { hello: () => load().then(loaded), ready: load, summaries: reload }), load);
  }

  function toLocalInput(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return "";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  // shortId cuts a long run id in the middle (run-s1iL…uVjA): ids made
  // close together share their start, so the end is kept too.
  function shortId(id) {
    return id.length > 16 ? id.slice(0, 8) + "…" + id.slice(-5) : id;
  }

  // runRow is a run's line of the runs table; a waiting run says under
  // its status what it waits for and since (or until) when.
  function runRow(r, fresh) {
    const wait = r.status === "waiting" ? waitSummary(r.waiting) : null;
    const took = finished(r.status) ? between(r.created_at, r.finished_at) : between(r.created_at);
    return h("tr", { class: fresh ? "fresh" : null, "data-run": r.run_id },
      h("td", { "data-label": "Run", class: "run-id" }, h("span", { class: "id-line" }, h("a", { class: "mono id", href: "#/runs/" + encodeURIComponent(r.run_id), title: r.run_id, "aria-label": "run " + r.run_id }, shortId(r.run_id)), copyButton("run id " + r.run_id, r.run_id))),
      h("td", { "data-label": "Sequence" }, seqLink(r.sequence)),
      h("td", { "data-label": "Status" }, badge(r.status), wait ? h("div", { class: "muted wait-line" }, "for " + wait.what, wait.at ? [" · " + wait.rel + " ", timeEl(wait.at)] : null) : null),
      h("td", { "data-label": "Trigger" }, (r.trigger || "manual").replace("_", " ")),
      h("td", { "data-label": "Groups", class: "num" }, r.groups ? `${r.finished_groups}/${r.groups}` : String(r.finished_groups || 0)),
      h("td", { "data-label": "Created", class: "num" }, timeEl(r.created_at)),
      h("td", { "data-label": "Took", class: "num" }, took === null ? "" : (finished(r.status) ? "" : "for ") + fmtMs(took)),
      h("td", { "data-label": "Error", class: r.error ? "err" : "empty" }, r.error ? h("span", { class: "clip", title: r.error }, r.error) : ""));
  }

  // waitText says what a wait (RunState.wait) waits for, in words: the
  // signal "approve", or a timer and when it fires (docs/runs.md,
  // "Waiting runs").
  function waitText(w) {
    if (!w) return "";
    if (w.kind === "signal") return `signal "${w.signal || "?"}"`;
    const until = fmtTime(w.deadline);
    return (w.kind === "until" ? "a time" : "a timer") + (until ? " until " + until : "");
  }

  // waitSummary reads a run summary's waiting (`signal "approve" since
  // 2026-12-01T09:00:00Z`, `duration until …`, `until …`: pkg/events
  // TimerText; an older seqworker's `until until …` too) as {what, rel,
  // at}; what is the whole text when it reads otherwise.
  function waitSummary(text) {
    if (!text) return { what: "a signal or a time", rel: "", at: "" };
    const m = /^(?:(signal ".*"|duration|until) )?(since|until) (\S+)$/.exec(text);
    if (!m || (!m[1] && m[2] === "since")) return { what: text, rel: "", at: "" };
    return { what: m[1] === "duration" ? "a timer" : !m[1] || m[1] === "until" ? "a time" : m[1], rel: m[2], at: m[3] };
  }

  // waitForText says, short enough for a group of the drawing, what a
  // wait_for group of a sequence waits for (docs/sequences.md, wait_for):
  // `signal "approve", ≤ 24h0m0s`, `timer 5m0s`, `until $args.at`.
  function waitForText(wf) {
    if (wf.signal) return `signal "${wf.signal}"` + (wf.timeout ? `, ≤ ${wf.timeout}` : "");
    if (wf.until) return "until " + wf.until;
    return "timer " + (wf.duration || "");
  }

  // ================================================================= Run

  async function pageRun(root, id, params, live) {
    const head = h("div", {});
    const actions = h("div", { class: "actions" });
    const actionMsg = h("div", { "aria-live": "polite" });
    const graphBox = h("div", {});
    const waitBox = h("section", { class: "panel wait-panel", id: "wait", "aria-labelledby": "wait-title", hidden: true });
    const detail = h("section", { class: "panel detail", "aria-labelledby": "detail-title", hidden: true });
    const groupsBox = h("div", {});
    const timelineBox = h("div", {});
    const outputsBox = h("div", {});
    append(root, [
      h("div", { class: "title-row" }, h("h1", {}, "Run ", h("span", { class: "mono" }, id)), copyButton("run id " + id, id), h("span", { id: "run-status" })),
      head, waitBox, actions, actionMsg,
      h("h2", { id: "shape-title" }, "Groups and calls"),
      h("p", { class: "muted small" }, "Groups run left to right; the calls of a group run together. An arrow is a slot, from the call that writes it to each group that reads it. Select a call or a group for its details."),
      graphBox, detail, groupsBox,
      h("h2", {}, "Timeline"), timelineBox,
      h("h2", {}, "Outputs"), outputsBox,
    ]);
    focusTitle();

    const model = { view: null, liveGroups: {}, events: [], selected: null };
    let lastKey = "", missed = false;
    // The run events that arrive while a full load is in flight: its
    // timeline was read from EVENTS before some of them, and they are
    // added to it (renderTimeline drops the ones it holds twice).
    const inflight = new Set();

    async function load(part) {
      let v;
      const during = [];
      if (!part) inflight.add(during);
      try {
        v = await api("/api/runs/" + encodeURIComponent(id) + (part ? "?part=" + part : ""));
      } catch (err) {
        inflight.delete(during);
        if (!live()) return;
        if (!model.view) replace(head, errorBox(err));
        else replace(actionMsg, errorBox(err, "Refreshing the run"));
        return;
      }
      inflight.delete(during);
      if (!live()) return;
      if (part && model.view) {
        v.sequence = model.view.sequence; v.sequence_note = model.view.sequence_note;
        v.timeline = model.view.timeline; v.timeline_note = model.view.timeline_note;
      } else {
        model.events = (v.timeline || []).concat(during);
      }
      model.view = v;
      model.liveGroups = {};
      lastKey = v.state.status + "/" + v.state.finished_groups;
      render();
      if (missed) { missed = false; refresh(); }
    }

    function render() {
      const v = model.view, st = v.state;
      replace(document.getElementById("run-status"), badge(st.status, true));
      const took = finished(st.status) ? between(st.started_at || st.created_at, st.finished_at) : between(st.started_at || st.created_at);
      const kv = h("dl", { class: "kv" },
        h("dt", {}, "Sequence"), h("dd", {}, st.inline ? h("span", {}, st.sequence || "", h("span", { class: "muted" }, " (a file run: its own definition)")) : seqLink(st.sequence)),
        h("dt", {}, "Status"), h("dd", {}, `${st.status}` + (st.groups ? `, ${st.finished_groups} of ${st.groups} groups finished` : "")),
        h("dt", {}, "Trigger"), h("dd", {}, (st.trigger || "manual").replace("_", " ") + (st.agent ? ` (agent ${st.agent}, boot ${st.boot_id || ""})` : "") + (st.scheduled_at ? ` (tick ${when(st.scheduled_at)})` : "")),
        h("dt", {}, "Worker"), h("dd", {}, st.status === "waiting" ? "none holds it while it waits" + (st.worker ? ` (last ${st.worker})` : "") : st.worker || "—", st.heartbeat && st.status === "running" ? h("span", { class: "muted" }, " · heartbeat ", timeEl(st.heartbeat)) : null, st.attempt > 1 ? ` · attempt ${st.attempt}` : ""),
        h("dt", {}, "Created"), h("dd", {}, timeEl(st.created_at)),
        st.started_at ? [h("dt", {}, "Started"), h("dd", {}, timeEl(st.started_at))] : null,
        st.finished_at ? [h("dt", {}, "Finished"), h("dd", {}, timeEl(st.finished_at))] : null,
        took !== null && st.started_at ? [h("dt", {}, finished(st.status) ? "Took" : "Running for"), h("dd", {}, fmtMs(took))] : null,
        st.cancel ? [h("dt", {}, "Cancel"), h("dd", {}, `asked by ${st.cancel.by || "someone"} at ${when(st.cancel.at)}` + (st.cancel.reason ? `: ${st.cancel.reason}` : ""))] : null,
      );
      replace(head, kv,
        // A user's own cancel is said by the Cancel line above, not as an error.
        st.error && !(st.status === "cancelled" && st.cancel) ? h("div", { class: "error", role: "alert" }, st.error) : null,
        st.args && Object.keys(st.args).length ? h("details", { open: true }, h("summary", {}, "Arguments"), jsonView("the arguments", st.args)) : h("p", { class: "muted" }, "No run arguments."),
        v.sequence_note ? h("p", { class: "notice" }, v.sequence_note) : null);
      renderWait(st);
      renderActions(st);
      renderGraph();
      renderTimeline();
      renderOutputs();
      if (model.selected) renderDetail();
    }

    function renderActions(st) {
      const cancelBtn = h("button", { type: "button", class: "danger", id: "cancel-run", onclick: () => askCancel() }, "Cancel run…");
      const rerunBtn = h("button", { type: "button", id: "rerun-run", onclick: rerun }, "Rerun");
      // A failed or cancelled run continues from its first unfinished group.
      const retryBtn = st.status === "failed" || st.status === "cancelled"
        ? h("button", { type: "button", id: "retry-run", onclick: retry }, `Retry from group ${(st.finished_groups || 0) + 1}`) : null;
      // Edit and rerun: the run form of the stored sequence, filled with
      // this run's arguments (a file run has no stored sequence to run).
      const editBtn = h("button", { type: "button", id: "edit-rerun", "aria-expanded": "false", "aria-controls": "run-form",
        disabled: st.inline || !st.sequence ? true : null, onclick: () => editRerun(editBtn),
        title: st.inline ? "A run of a file has no stored sequence to run again with other arguments: run the file with skillbus run FILE --arg …" : null }, "Edit and rerun…");
      replace(actions, !finished(st.status) ? cancelBtn : null, retryBtn, rerunBtn, editBtn,
        h("a", { class: "button", href: "#/runs?sequence=" + encodeURIComponent(st.sequence || "") }, "Runs of this sequence"),
        retryFromLast(st, st.groups) > 0 ? h("p", { class: "muted small", id: "retry-from-hint" }, "To run it again from an earlier group, reusing the groups before it: select the group, or open the list of groups, and use Retry from here.") : null);
    }

    // renderWait shows what a waiting run waits for and, for a signal,
    // the form of its values (one field per `out` type, read as `runs
    // signal --arg` reads them) with Approve and Reject (seq.signal, through
    // POST /api/runs/ID/signal). The form is kept while the same wait is
    // shown, so a reload does not drop what is typed.
    function renderWait(st) {
      const w = st.status === "waiting" ? st.wait : null;
      if (!w) { waitBox.hidden = true; clear(waitBox); delete waitBox.dataset.key; return; }
      const key = w.token + "/" + (w.signalled ? "signalled" : "open");
      if (waitBox.dataset.key === key) return;
      waitBox.dataset.key = key;
      waitBox.hidden = false;
      const sg = w.signalled;
      const kv = h("dl", { class: "kv" },
        h("dt", {}, "Group"), h("dd", {}, `${w.group}. ${w.group_name || ""}`),
        h("dt", {}, "Waits for"), h("dd", { id: "wait-for" }, w.kind === "signal" ? waitText(w) : w.kind === "until" ? "a time from the run's arguments (until)" : "a timer of " + fmtSpan(between(w.since, w.deadline))),
        h("dt", {}, "Since"), h("dd", {}, timeEl(w.since), h("span", { class: "muted" }, " (" + fmtAgo(w.since) + ")")),
        h("dt", {}, w.kind === "signal" ? "Deadline" : "Resumes at"), h("dd", {}, timeEl(w.deadline),
          h("span", { class: "muted" }, w.kind === "signal" ? " — no signal by then fails the group under its on_error" : " — then the run goes on at its next group")),
        sg ? [h("dt", {}, "Signal"), h("dd", { id: "wait-signalled" }, (sg.reject ? "rejected" : "approved") + (sg.by ? " by " + sg.by : "") + " at ", timeEl(sg.at),
          sg.reject && sg.reason ? ": " + sg.reason : "", " — the run resumes on a worker")] : null);
      // The times as the Times switch asks (waitText writes local times).
      const what = w.kind === "signal" ? [waitText(w)] : [w.kind === "until" ? "a time" : "a timer", " until ", timeEl(w.deadline)];
      const title = h("h2", { id: "wait-title" }, "Waiting for ", ...what);
      if (w.kind !== "signal" || sg) {
        replace(waitBox, title, kv, w.kind !== "signal" ? h("p", { class: "muted small" }, "A timer on the NATS server resumes the run; no worker holds it meanwhile. Cancel ends it at once.") : null);
        return;
      }
      const keys = Object.keys(w.out || {}).sort();
      const fields = keys.map((k) => fieldFor(k, w.out[k], "sig-"));
      const general = h("div", { id: "signal-error", "aria-live": "assertive" });
      const approve = h("button", { type: "submit", class: "primary", id: "signal-approve" }, "Approve");
      const reason = h("input", { id: "reject-reason", type: "text", maxlength: "1024", placeholder: "why (recorded with the rejection)", "aria-describedby": "reject-hint" });
      const reject = h("button", { type: "button", class: "danger", id: "signal-reject", onclick: () => send(true) }, "Reject");
      async function send(isReject) {
        const body = { name: w.signal };
        for (const f of fields) { f.err.textContent = ""; f.input.removeAttribute("aria-invalid"); }
        if (isReject) { body.reject = true; body.reason = reason.value; } else {
          body.args = {};
          keys.forEach((k, i) => { if (!(w.out[k] === "bool" && fields[i].input.value === "")) body.args[k] = fields[i].input.value; });
        }
        clear(general);
        approve.disabled = reject.disabled = true;
        try {
          const after = await post("/api/runs/" + encodeURIComponent(id) + "/signal", body);
          if (!live()) return;
          replace(actionMsg, h("p", { class: "ok-box", role: "status" }, isReject ? "Rejected: the wait group fails with the reason, under its on_error." : "Approved: the run resumes with these values on a worker."));
          model.view.state = after;
          load("state");
        } catch (err) {
          if (!live()) return;
          approve.disabled = reject.disabled = false;
          applyLimits();
          let first = null;
          keys.forEach((k, i) => {
            const msg = err.fields[k];
            if (msg) { fields[i].err.textContent = msg; fields[i].input.setAttribute("aria-invalid", "true"); first = first || fields[i].input; }
          });
          replace(general, errorBox(err, err.status === 409 ? "The run takes no signal now" : isReject ? "Reject" : "Approve"));
          if (err.status === 409) load("state");
          if (first) first.focus();
        }
      }
      const form = h("form", { id: "signal-form", novalidate: true, "aria-label": "Answer the signal " + w.signal, onsubmit: (ev) => { ev.preventDefault(); send(false); } },
        keys.length ? h("p", { class: "muted small" }, "The values the signal brings, each read by its type as ", h("code", {}, "skillbus runs signal RUN " + w.signal + " --arg KEY=VALUE"), " reads it.") : h("p", { class: "muted small" }, "The signal brings no values."),
        fields.map((f) => f.field),
        h("div", { class: "actions" }, approve),
        h("div", { class: "reject-row" },
          h("div", { class: "field" }, h("label", { for: "reject-reason" }, "Reason"), h("p", { id: "reject-hint", class: "hint" }, "Reject fails the wait group with this reason, under its on_error"), reason),
          reject),
        general);
      replace(waitBox, title, kv, form);
      applyLimits();
    }

    function askCancel() {
      const reason = h("input", { id: "cancel-reason", type: "text", placeholder: "optional", maxlength: "1024" });
      const form = h("form", { class: "panel", "aria-label": "Cancel the run", onsubmit: async (ev) => {
        ev.preventDefault();
        confirmBtn.disabled = true;
        try {
          const st = await post("/api/runs/" + encodeURIComponent(id) + "/cancel", { reason: reason.value });
          if (!live()) return;
          replace(actionMsg, h("p", { class: "ok-box", role: "status" }, finished(st.status) ? `The run is ${st.status}.` : "Cancel requested: the worker holding the run stops it now."));
          load("state");
        } catch (err) {
          if (!live()) return;
          replace(actionMsg, errorBox(err, "Cancel"));
          confirmBtn.disabled = false;
        }
      } },
      h("div", { class: "field" }, h("label", { for: "cancel-reason" }, "Reason (recorded with the cancel)"), reason),
      h("div", { class: "actions" },
        h("button", { type: "submit", class: "danger", id: "confirm-cancel" }, "Cancel the run"),
        h("button", { type: "button", onclick: () => { clear(actionMsg); const b = document.getElementById("cancel-run"); if (b) b.focus(); } }, "Keep it running")));
      const confirmBtn = form.querySelector("#confirm-cancel");
      replace(actionMsg, form);
      reason.focus();
    }

    async function editRerun(btn) {
      const st = model.view.state;
      let d;
      try { d = await api("/api/seqs/" + encodeURIComponent(st.sequence)); } catch (err) {
        if (live()) replace(actionMsg, errorBox(err, "Edit and rerun"));
        return;
      }
      if (!live()) return;
      btn.setAttribute("aria-expanded", "true");
      const rf = runForm({ name: st.sequence, signature: d.signature, initial: st.args || {}, live,
        heading: "Edit and rerun " + st.sequence,
        intro: h("p", { class: "muted small" }, "A new run of the sequence as it is stored now, with these arguments: this run's, typed by the signature. Change what you need and start it."),
        onClose: () => { clear(actionMsg); const b = document.getElementById("edit-rerun"); if (b) { b.setAttribute("aria-expanded", "false"); b.focus(); } } });
      replace(actionMsg, rf.form);
      rf.focus();
    }

    async function rerun() {
      try {
        const r = await post("/api/runs/" + encodeURIComponent(id) + "/rerun", {});
        toast(`Started run ${r.run_id} with the same sequence and arguments.`);
        go("#/runs/" + encodeURIComponent(r.run_id));
      } catch (err) {
        if (live()) replace(actionMsg, errorBox(err, "Rerun"));
      }
    }

    async function retry() {
      try {
        const r = await post("/api/runs/" + encodeURIComponent(id) + "/retry", {});
        toast(`Started run ${r.run_id}: it continues this one from its first group that did not finish.`);
        go("#/runs/" + encodeURIComponent(r.run_id));
      } catch (err) {
        if (live()) replace(actionMsg, errorBox(err, "Retry"));
      }
    }

    // Retry from a group (docs/runs.md, "Retry from a group"): on a
    // finished run, each group up to its first that did not finish (every
    // group of a succeeded run) offers "Retry from here" — seq.retry with
    // from, a new run that reuses the groups before it and runs it and the
    // ones after again. A group a retry took over says which run ran it.
    // retryFromLast is the last 0-based group a retry may start at, or -1.
    function retryFromLast(st, n) {
      if (!["failed", "cancelled", "succeeded"].includes(st.status) || !n) return -1;
      return st.status === "succeeded" ? n - 1 : Math.min(st.finished_groups || 0, n - 1);
    }
    function groupRetry(gi, g) {
      const st = model.view.state, r = g.result || {};
      const reused = r.reused_from ? h("span", { class: "muted small reused" }, " reused from run ",
        h("a", { href: "#/runs/" + encodeURIComponent(r.reused_from) }, r.reused_from), " (its tools not called again)") : null;
      if (gi > retryFromLast(st, (model.shape || { groups: [] }).groups.length)) return reused;
      const label = `Retry from group ${gi + 1} (${g.name}): a new run that ` + (gi ? `reuses group${gi > 1 ? "s 1–" + gi : " 1"} of this run and ` : "") + "runs this group and every one after it again";
      return [reused, " ", h("button", { type: "button", class: "retry-from small", "data-group": String(gi + 1), title: label, "aria-label": label,
        onclick: (ev) => retryFrom(ev.currentTarget, gi, g.name) }, "Retry from here")];
    }
    async function retryFrom(btn, gi, name) {
      btn.disabled = true;
      try {
        const r = await post("/api/runs/" + encodeURIComponent(id) + "/retry", { from: String(gi + 1) });
        toast(`Started run ${r.run_id}: it runs this one again from group ${gi + 1} (${name})` + (gi ? `, reusing the groups before it.` : "."));
        go("#/runs/" + encodeURIComponent(r.run_id));
      } catch (err) {
        if (!live()) return;
        btn.disabled = false;
        applyLimits();
        replace(actionMsg, errorBox(err, `Retry from group ${gi + 1}`));
        actionMsg.scrollIntoView({ block: "nearest" });
      }
    }

    // shape merges the sequence (when known) with the run's result and
    // state into what the graph and the lists show.
    function shape() {
      const v = model.view, st = v.state;
      const res = st.result || {};
      const rg = (res.groups || []).slice();
      for (const [i, g] of Object.entries(model.liveGroups)) rg[+i] = g;
      let groups;
      if (v.sequence) {
        groups = v.sequence.groups.map((g) => ({
          name: g.name, in: g.in || {}, out: g.out || {}, when: g.when || "", parallel: g.parallel,
          missing: g.missing, on_error: g.on_error, retries: g.retries, timeout: g.timeout,
          wait_for: g.wait_for,
          calls: (g.tools || []).map((c) => ({ tool: c.tool, as: c.as || "", args: c.args || {}, fallback: c.fallback || "", for_each: c.for_each || "", max_parallel: c.max_parallel || 0 })),
        }));
      } else {
        groups = rg.map((g) => ({ name: g.name, calls: (g.calls || []).map((c) => ({ tool: c.tool, as: c.as || "" })) }));
      }
      const running = st.status === "running";
      groups.forEach((g, i) => {
        const r = rg[i];
        const done = r && r.status && r.status !== "pending" && r.status !== "running";
        if (done) {
          g.status = word(r.status, st.status); g.result = r;
          const ms = goDur(r.duration);
          g.detail = ms !== null && r.status !== "skipped" ? fmtMs(ms) : "";
        } else if (running && i === st.finished_groups) {
          g.status = "running"; g.result = r;
        } else if (st.status === "waiting" && i === st.finished_groups) {
          g.status = "waiting"; g.result = r;
        } else if (st.status === "queued" || st.status === "interrupted" || st.status === "waiting" || running) {
          g.status = st.status === "interrupted" && i === st.finished_groups ? "interrupted" : "pending";
        } else if (st.status === "cancelled" || st.status === "failed") {
          g.status = i < st.finished_groups ? "succeeded" : "not_run";
        } else {
          g.status = "pending";
        }
        if (g.status === "waiting") g.detail = st.wait && i === st.finished_groups ? "for " + (st.wait.kind === "signal" ? waitText(st.wait) : "its timer") : "";
        else if (g.wait_for && g.status === "pending") g.detail = waitForText(g.wait_for);
        if (g.when) {
          if (g.status === "skipped") g.whenNote = "false";
          else if (done) g.whenNote = "true";
        }
        g.calls.forEach((c, ci) => {
          const rc = r && r.calls && r.calls[ci];
          if (done && rc) {
            c.status = word(rc.status, st.status); c.result = rc;
            const bits = [];
            if (rc.for_each) bits.push(fanOutText(rc.for_each));
            else if (rc.attempts > 1) bits.push(`${rc.attempts} attempts`);
            const ms = goDur(rc.duration);
            if (ms !== null && rc.attempts > 0) bits.push(fmtMs(ms));
            c.detail = bits.join(" · ");
          } else if (g.status === "running") {
            c.status = "running";
            if (rc && rc.for_each) { c.result = rc; c.detail = fanOutText(rc.for_each); } // live: an items event
            else if (c.for_each) c.detail = "for each " + c.for_each.replace("$args.", "");
          } else {
            c.status = ["skipped", "interrupted", "cancelled", "not_run"].includes(g.status) ? g.status : "pending";
          }
        });
      });
      const sig = v.sequence && v.sequence.signature ? Object.keys(v.sequence.signature).sort().map((k) => ({ key: k, type: v.sequence.signature[k] })) : [];
      return { groups, args: sig, edges: v.sequence ? undefined : [] };
    }

    function select(kind, group, call) {
      model.selected = { kind, group, call };
      renderGraph();
      renderDetail();
      const t = document.getElementById("detail-title");
      if (t) t.focus();
    }

    function renderGraph() {
      const m = shape();
      model.shape = m;
      // A live update redraws the graph: the keyboard focus stays on the
      // same call, group or box.
      const fa = document.activeElement;
      let refocus = null;
      if (fa && graphBox.contains(fa)) {
        refocus = fa.matches("g.g-call") ? `g.g-call[data-group="${fa.dataset.group}"][data-call="${fa.dataset.call}"]`
          : fa.matches("g.g-group-hit") ? `g.g-group-hit[data-group="${fa.dataset.group}"]` : ".graph-wrap";
      }
      const wrap = h("div", { class: "graph-wrap", tabindex: "0", role: "region", "aria-labelledby": "shape-title" });
      wrap.appendChild(G.draw(m, { onSelect: select, selected: model.selected, label: "Run " + id + ": the sequence's groups and calls, with their status" }));
      replace(graphBox, wrap);
      fitGraph(wrap);
      if (refocus) {
        const n = graphBox.querySelector(refocus);
        if (n) n.focus({ preventScroll: true });
      }
      // The same as a list: for narrow windows and screen readers.
      const notKept = (model.view.state.result || {}).args_not_kept;
      replace(groupsBox, h("details", { open: window.innerWidth < 720 }, h("summary", {}, "Groups and calls as a list"),
        notKept ? h("p", { class: "muted small" }, `The arguments of ${notKept} more calls or items were sent but are not kept: a run's state keeps at most 32 KiB of arguments.`) : null,
        h("ol", { class: "groups" }, m.groups.map((g, gi) => h("li", {},
          h("button", { type: "button", class: "link", onclick: () => select("group", gi) }, g.name), " ", badge(g.status),
          g.detail ? h("span", { class: "muted small" }, " " + g.detail) : null,
          g.when ? h("span", { class: "muted small" }, ` when ${g.when}` + (g.whenNote ? ` → ${g.whenNote}` : "")) : null,
          groupRetry(gi, g),
          h("ul", {}, g.calls.map((c, ci) => {
            // The row expands to the arguments the call was sent.
            const args = sentArgs(`the arguments of call ${ci + 1} of group ${gi + 1}`, c.result);
            return h("li", { "data-group": gi, "data-call": ci },
              h("button", { type: "button", class: "link mono", onclick: () => select("call", gi, ci) }, c.tool),
              c.as ? h("span", { class: "muted small" }, "→ " + c.as) : null, badge(c.status),
              c.detail ? h("span", { class: "muted small" }, c.detail) : null,
              args ? h("details", { class: "call-args" }, h("summary", {}, c.result && c.result.for_each ? "arguments sent (its first item)" : "arguments sent"), args) : null);
          })))))));
    }

    // A for_each call's items (docs/sequences.md, "for_each"): the counts,
    // and the items that did not succeed at once, with their errors.
    function fanOutText(f) {
      const parts = [["succeeded", "ok"], ["failed", "failed"], ["running", "running"], ["degraded", "degraded"], ["skipped", "skipped"], ["canceled", "cancelled"], ["not_run", "not run"]]
        .filter(([k]) => f[k] > 0).map(([k, w]) => `${f[k]} ${w}`);
      const items = f.items === 1 ? "1 item" : `${f.items || 0} items`;
      return parts.length ? `${items}: ${parts.join(", ")}` : items;
    }
    function fanOutBlock(f) {
      const d = f.details || [];
      return h("details", { open: d.length > 0 && d.length <= 20 },
        h("summary", {}, "Items: " + fanOutText(f)),
        f.failed_items && f.failed_items.length ? h("p", { class: "small" }, "Failed items (0-based): ", h("span", { class: "mono" }, f.failed_items.join(", "))) : null,
        d.length ? h("div", { class: "items-wrap" }, h("table", { class: "small" },
          h("thead", {}, h("tr", {}, h("th", {}, "Item"), h("th", {}, "Status"), h("th", {}, "Attempts"), h("th", {}, "Time"), h("th", {}, "Error"))),
          h("tbody", {}, d.map((it) => {
            // Under each item, a row that expands to the arguments it was sent.
            const args = sentArgs(`the arguments of item ${it.index}`, it);
            return [h("tr", { "data-item": it.index },
              h("td", { class: "mono" }, String(it.index)), h("td", {}, badge(it.status)), h("td", {}, String(it.attempts)),
              h("td", {}, it.duration ? fmtMs(goDur(it.duration)) : "—"), h("td", {}, it.error || "")),
            args ? h("tr", { class: "item-args", "data-item-args": it.index }, h("td", { colspan: 5 },
              h("details", { class: "call-args" }, h("summary", {}, "arguments sent ", h("span", { class: "mono" }, it.args !== undefined ? clipText(JSON.stringify(it.args), 60) : "(clipped)")), args))) : null];
          })))) : h("p", { class: "muted small" }, "Every item succeeded at its first attempt."),
        f.omitted ? h("p", { class: "muted small" }, `${f.omitted} more items that did not succeed at once are not listed.`) : null);
    }

    function renderDetail() {
      // A live update redraws the details: a focus on their title stays.
      const fa = document.activeElement;
      if (fa && fa.id === "detail-title" && detail.contains(fa)) queueMicrotask(() => { const t = document.getElementById("detail-title"); if (t && t !== document.activeElement) t.focus({ preventScroll: true }); });
      const sel = model.selected, m = model.shape, v = model.view;
      detail.hidden = !sel || !m || !m.groups[sel.group];
      if (detail.hidden) { clear(detail); return; }
      const g = m.groups[sel.group];
      const slots = v.slots || {};
      const slotBlock = (name) => {
        const s = slots[name];
        if (!s) return h("p", { class: "muted" }, `slot ${name}: not written yet`);
        return h("div", {}, h("p", { class: "small muted" }, `slot ${name}, ${bytes(s.size)}` + (s.stored ? ` (kept in ${s.stored})` : "")),
          s.truncated ? h("pre", { class: "block" }, s.preview + "\n… (cut: the whole value is " + bytes(s.size) + ")") : jsonView("slot " + name, s.value));
      };
      if (sel.kind === "call") {
        const c = g.calls[sel.call];
        if (!c) { clear(detail); detail.hidden = true; return; }
        const r = c.result || {};
        const reads = [];
        const walk = (x) => {
          if (typeof x === "string") { for (const mm of x.matchAll(/\$args\.([A-Za-z_][A-Za-z0-9_]*)/g)) if (!reads.includes(mm[1])) reads.push(mm[1]); }
          else if (x && typeof x === "object") Object.values(x).forEach(walk);
        };
        walk(c.args);
        const values = {};
        for (const k of reads) {
          if (v.state.args && k in v.state.args) values[k] = v.state.args[k];
          else if (slots[k] && slots[k].value !== undefined) values[k] = slots[k].value;
        }
        const sent = sentArgs("the arguments sent", r);
        replace(detail,
          h("h3", { id: "detail-title", tabindex: "-1" }, `Call ${sel.call + 1} of group ${sel.group + 1}: `, h("span", { class: "mono" }, c.tool)),
          h("dl", { class: "kv" },
            h("dt", {}, "Status"), h("dd", {}, badge(c.status)),
            h("dt", {}, "Attempts"), h("dd", {}, String(r.attempts ?? "—")),
            h("dt", {}, "Time"), h("dd", {}, r.duration ? fmtMs(goDur(r.duration)) : "—"),
            h("dt", {}, "Writes"), h("dd", {}, c.as ? "slot " + c.as : "nothing (the result is not kept)"),
            c.fallback ? [h("dt", {}, "Fallback"), h("dd", { class: "mono" }, c.fallback)] : null),
          r.error ? h("div", { class: "error" }, r.error) : null,
          c.for_each ? h("p", {}, "Called once per item of ", h("code", {}, c.for_each), c.max_parallel ? `, at most ${c.max_parallel} at once` : ", every item at once unless the group runs its calls one after another", ".") : null,
          r.for_each ? fanOutBlock(r.for_each) : null,
          sent ? [h("h4", {}, r.for_each ? "Arguments sent to its first item ($index 0), after substitution" : "Arguments sent, after substitution"), sent] : null,
          c.args !== undefined ? [h("h4", {}, "Arguments (as written in the sequence)"), h("pre", { class: "block" }, pretty(c.args))] : h("p", { class: "muted" }, "The sequence's definition is not available, so the arguments are unknown."),
          reads.length ? [h("h4", {}, "Values it reads ($args)"), h("pre", { class: "block" }, pretty(values))] : null,
          c.as ? [h("h4", {}, "Output"), slotBlock(c.as)] : null);
      } else {
        const r = g.result || {};
        replace(detail,
          h("h3", { id: "detail-title", tabindex: "-1" }, `Group ${sel.group + 1}: ${g.name}`), groupRetry(sel.group, g),
          h("dl", { class: "kv" },
            h("dt", {}, "Status"), h("dd", {}, badge(g.status), g.status === "skipped" && g.when ? [" its ", h("code", {}, "when"), " was false: ", h("code", {}, g.when)] : r.reason ? " " + r.reason : ""),
            h("dt", {}, "When"), h("dd", {}, g.when ? h("span", {}, h("code", {}, g.when), g.whenNote ? " → " + g.whenNote : " (not evaluated yet)") : "always runs"),
            g.parallel !== undefined ? [h("dt", {}, "Calls run"), h("dd", {}, g.parallel ? "together (parallel)" : "one after another")] : null,
            g.on_error ? [h("dt", {}, "Policies"), h("dd", {}, `missing: ${g.missing}, on_error: ${g.on_error}${g.retries ? ", retries " + g.retries : ""}, timeout ${g.timeout}`)] : null,
            h("dt", {}, "Started"), h("dd", {}, timeEl(r.started)),
            h("dt", {}, "Time"), h("dd", {}, r.duration ? fmtMs(goDur(r.duration)) : "—"),
            g.in && Object.keys(g.in).length ? [h("dt", {}, "Reads"), h("dd", { class: "mono" }, Object.entries(g.in).map(([k, t]) => `${k}: ${t}`).join(", "))] : null,
            g.out && Object.keys(g.out).length ? [h("dt", {}, "Writes"), h("dd", { class: "mono" }, Object.entries(g.out).map(([k, t]) => `${k}: ${t}`).join(", "))] : null),
          r.error ? h("div", { class: "error" }, r.error) : null);
      }
    }

    function renderTimeline() {
      const st = model.view.state;
      const items = [];
      if (st.created_at) items.push({ at: st.created_at, text: "queued (" + (st.trigger || "manual").replace("_", " ") + ")" });
      const seen = new Set();
      for (const ev of model.events) {
        const key = ev.kind + "/" + ev.group + "/" + ev.attempt + "/" + ev.at;
        if (seen.has(key)) continue;
        seen.add(key);
        items.push({ at: ev.at, text: eventText(ev, st.error), status: ev.kind === "group" || ev.kind === "finished" ? word(ev.status, st.status) : null });
      }
      if (!model.events.some((e) => e.kind === "finished") && finished(st.status) && st.finished_at) {
        items.push({ at: st.finished_at, text: "finished: " + st.status, status: st.status });
      }
      items.sort((a, b) => new Date(a.at) - new Date(b.at));
      const m = timelineModel(st, model.events, (model.shape || shape()).groups, Date.now());
      replace(timelineBox,
        model.view.timeline_note ? h("p", { class: "notice" }, model.view.timeline_note) : null,
        h("div", { class: "tl-wrap" }, timelineChart(m)),
        h("p", { class: "muted small" }, "Bars are the run's waits (queued, waiting for a worker; blue stripes: at a wait_for group, for a signal or a time), its groups and their calls; a striped bar is a call retried (its tries and the waits between them). The events:"),
        h("ol", { class: "timeline", "aria-label": "Events of the run" }, items.map((it) => h("li", {},
          timeEl(it.at), it.text, it.status ? [" ", badge(it.status)] : null))));
    }

    function renderOutputs() {
      const v = model.view;
      const names = Object.keys(v.slots || {}).sort();
      replace(outputsBox,
        v.slots_error ? h("div", { class: "error" }, v.slots_error) : null,
        !names.length ? h("p", { class: "muted" }, "No slots written yet.") :
          names.map((k) => {
            const s = v.slots[k];
            return h("details", { "data-slot": k }, h("summary", {}, h("span", { class: "mono" }, k), h("span", { class: "muted small" }, ` ${bytes(s.size)}`)),
              s.truncated ? h("pre", { class: "block" }, s.preview + "\n… (cut: the whole value is " + bytes(s.size) + ")") : jsonView("slot " + k, s.value));
          }));
    }

    const refresh = debounce(() => load("state"), 150);
    // While the run is not finished its timeline grows with the clock.
    const growing = setInterval(() => { if (model.view && !finished(model.view.state.status)) renderTimeline(); }, 1000);
    page.cleanup.push(() => clearInterval(growing));
    await firstLoad((loaded) => openStream("run=" + encodeURIComponent(id), {
      // Every (re)connect reads everything again: nothing is missed.
      hello: () => load().then(loaded),
      run: (ev) => {
        for (const during of inflight) during.push(ev);
        if (!model.view) { missed = true; return; }
        if (ev.kind === "items") { // a for_each call's progress: redraw its counts, keep no list entry
          if (ev.result && ev.group > 0 && model.view.state.status === "running" && model.view.state.finished_groups === ev.group - 1) {
            model.liveGroups[ev.group - 1] = ev.result;
            render();
          }
          return;
        }
        model.events.push(ev);
        if (ev.kind === "group" && ev.result && ev.group > 0) {
          model.liveGroups[ev.group - 1] = ev.result;
          if (model.view.state.status === "running" && model.view.state.finished_groups < ev.group) {
            model.view.state.finished_groups = ev.group;
          }
        }
        render();
        if (ev.kind !== "group" || ev.group === ev.groups) refresh();
      },
      summaries: (list) => {
        for (const s of list) {
          if (s.run_id !== id) continue;
          const key = s.status + "/" + s.finished_groups;
          if (key !== lastKey) { lastKey = key; refresh(); }
        }
      },
    }), load);
  }

  // timelineModel lays a run out on a time axis (docs/console.md, "A
  // run"): st is the run's state, events its run events (EVENTS and live),
  // groups the groups as the page draws them (shape(): name, parallel,
  // calls with tool and for_each; result = the group's result so far) and
  // now the time in ms for what still runs. It returns {t0, t1, rows}: t0
  // and t1 bound the axis (ms); each row is {kind: run|group|call|item,
  // label, status, text, segs: [{from, to, kind, text}], marks: [{at,
  // text}]}. The run's row holds its waits: queued until a worker started
  // it, and each time it waited for a worker to resume it (interrupted
  // until resumed). A call has no start time of its own: in a parallel
  // group it starts with its group, else after the calls before it; a
  // retried call's bar holds its tries and the waits between them. A
  // for_each call's items that did not succeed at once get rows of their
  // own (at most 20), from the call's start.
  function timelineModel(st, events, groups, now) {
    const ms = (iso) => { if (!iso) return null; const d = new Date(iso); return isNaN(d) || d.getFullYear() < 1971 ? null : d.getTime(); };
    const dur = (s) => {
      if (!s || typeof s !== "string") return null;
      const units = { h: 3600000, m: 60000, s: 1000, ms: 1, "µs": 0.001, us: 0.001, ns: 0.000001 };
      let total = 0, ok = false, m;
      const re = /([0-9.]+)(h|ms|m|s|µs|us|ns)/g;
      while ((m = re.exec(s))) { total += parseFloat(m[1]) * units[m[2]]; ok = true; }
      return ok ? total : null;
    };
    const evs = events.slice().filter((e) => ms(e.at) !== null).sort((a, b) => ms(a.at) - ms(b.at));
    const created = ms(st.created_at);
    const firstStart = evs.find((e) => e.kind === "started");
    const started = ms(st.started_at) ?? (firstStart ? ms(firstStart.at) : null);
    const done = st.status === "succeeded" || st.status === "failed" || st.status === "cancelled";
    const endAt = done ? (ms(st.finished_at) ?? (evs.length ? ms(evs[evs.length - 1].at) : now)) : now;
    const t0 = created ?? started ?? endAt;
    const run = { kind: "run", label: "run", status: st.status, text: st.status, segs: [], marks: [] };
    if (started !== null && created !== null && started > created) run.segs.push({ from: created, to: started, kind: "queued", text: "queued: waiting for a worker to start it" });
    else if (started === null && created !== null) run.segs.push({ from: created, to: endAt, kind: "queued", text: done ? "queued: it never started" : "queued: waiting for a worker to start it" });
    if (started !== null) run.segs.push({ from: started, to: endAt, kind: st.status === "interrupted" || st.status === "waiting" ? "running" : st.status, text: st.status === "running" ? "running" : st.status });
    for (let i = 0; i < evs.length; i++) {
      const e = evs[i];
      if (e.kind === "interrupted") {
        const back = evs.slice(i + 1).find((x) => x.kind === "resumed" || x.kind === "started" || x.kind === "finished");
        run.segs.push({ from: ms(e.at), to: back ? ms(back.at) : endAt, kind: "wait", text: "interrupted: waiting for a worker to resume it" + (back ? "" : " (still waiting)") });
      } else if (e.kind === "waiting") {
        // Parked at a wait_for group, held by no worker, until a worker
        // takes its resume (or it ends: cancelled).
        const back = evs.slice(i + 1).find((x) => x.kind === "resumed" || x.kind === "started" || x.kind === "finished");
        const w = e.wait || {};
        const what = w.kind === "signal" ? `the signal "${w.signal || "?"}"` : "its timer";
        run.segs.push({ from: ms(e.at), to: back ? ms(back.at) : endAt, kind: "waiting", text: `waiting for ${what} at group ${e.group_name || e.group}` + (back ? "" : " (still waiting)") });
      } else if (e.kind === "signalled") {
        const sg = (e.wait && e.wait.signalled) || {};
        run.marks.push({ at: ms(e.at), text: (sg.reject ? "rejected" : "signalled") + (e.by ? " by " + e.by : "") + (e.reason ? ": " + e.reason : "") });
      } else if (e.kind === "cancelling") {
        run.marks.push({ at: ms(e.at), text: "cancel asked" + (e.by ? " by " + e.by : "") });
      } else if (e.kind === "resumed") {
        run.marks.push({ at: ms(e.at), text: "resumed by " + (e.worker || "a worker") });
      }
    }
    const rows = [run];
    let t1 = endAt;
    groups.forEach((g, gi) => {
      const r = g.result || {};
      if (r.reused_from) {
        // A retry's reused group ran in another run: its times are that
        // run's, so it gets a mark at this run's start, not a bar.
        const at = started ?? t0;
        rows.push({ kind: "group", label: `${gi + 1}. ${g.name}`, status: g.status, text: g.status + " · reused", segs: [],
          marks: [{ at, text: `reused from run ${r.reused_from}: its tools were not called again in this run` }] });
        (g.calls || []).forEach((c) => rows.push({ kind: "call", label: c.tool, status: c.status || "succeeded", text: (c.status || "succeeded") + " · reused", segs: [], marks: [] }));
        return;
      }
      let from = ms(r.started);
      if (from === null && g.status === "waiting") {
        const wev = evs.filter((e) => e.kind === "waiting" && e.group === gi + 1).pop();
        from = ms(st.wait && st.wait.since) ?? (wev ? ms(wev.at) : null);
      }
      if (from === null && g.status === "running") {
        const prev = evs.filter((e) => (e.kind === "group" && e.group === gi) || (e.kind === "started" || e.kind === "resumed")).pop();
        from = prev ? ms(prev.at) : started;
      }
      let d = dur(r.duration);
      const running = g.status === "running" || g.status === "waiting";
      // A wait group that resumed: its result starts at the resume, its
      // bar at the wait (the waiting event) — the time it waited.
      const wev = g.status !== "waiting" && evs.filter((e) => e.kind === "waiting" && e.group === gi + 1).pop();
      if (wev && from !== null) { d = from + (d || 0) - ms(wev.at); from = ms(wev.at); }
      const to = from === null ? null : running ? now : d !== null ? from + d : from;
      const row = { kind: "group", label: `${gi + 1}. ${g.name}`, status: g.status, text: g.status + (d !== null && !running && g.status !== "skipped" ? (wev ? " · waited " : " · ") + fmtMs(d) : ""), segs: [], marks: [] };
      if (from !== null) {
        if (g.status === "skipped") row.marks.push({ at: from, text: "skipped: its when was false" });
        else row.segs.push({ from, to, kind: g.status, text: `group ${g.name}: ${g.status}` });
        t1 = Math.max(t1, to);
      }
      rows.push(row);
      let at = from;
      (g.calls || []).forEach((c, ci) => {
        const rc = c.result || (r.calls && r.calls[ci]) || {};
        const cd = dur(rc.duration);
        const label = c.for_each ? `each ${String(c.for_each).replace("$args.", "")}: ${c.tool}` : c.tool;
        const cs = c.status || rc.status || "pending";
        const crow = { kind: "call", label, status: cs, text: cs, segs: [], marks: [] };
        const bits = [];
        if (rc.for_each) bits.push(`${rc.for_each.items} item${rc.for_each.items === 1 ? "" : "s"}`);
        if (rc.attempts > 1) bits.push(`${rc.attempts} attempts`);
        if (cd !== null && rc.attempts > 0) bits.push(fmtMs(cd));
        if (bits.length) crow.text += " · " + bits.join(" · ");
        const cfrom = at;
        if (cfrom !== null && cs !== "skipped" && cs !== "not_run" && cs !== "pending") {
          const cto = cs === "running" ? now : cd !== null ? cfrom + cd : cfrom;
          const retried = rc.attempts > 1 && !rc.for_each;
          crow.segs.push({ from: cfrom, to: cto, kind: retried ? cs + " retried" : cs,
            text: `${label}: ${cs}` + (retried ? `, ${rc.attempts} attempts (the tries and the waits between them)` : "") });
          t1 = Math.max(t1, cto);
          if (g.parallel === false && cd !== null) at = cfrom + cd;
        }
        rows.push(crow);
        const f = rc.for_each;
        if (f && f.details && f.details.length && cfrom !== null) {
          for (const it of f.details.slice(0, 20)) {
            const id = dur(it.duration);
            const irow = { kind: "item", label: `item ${it.index}`, status: it.status, text: it.status + (it.attempts > 1 ? ` · ${it.attempts} attempts` : "") + (id !== null ? " · " + fmtMs(id) : ""), segs: [], marks: [] };
            if (id !== null) irow.segs.push({ from: cfrom, to: cfrom + id, kind: it.attempts > 1 ? it.status + " retried" : it.status, text: `item ${it.index}: ${it.status}` + (it.attempts > 1 ? `, ${it.attempts} attempts` : "") + " (items have no start time of their own: drawn from the call's start)" });
            rows.push(irow);
          }
          if (f.details.length > 20) rows.push({ kind: "item", label: `${f.details.length - 20} more items`, status: "", text: "not drawn", segs: [], marks: [] });
        }
      });
    });
    return { t0, t1: Math.max(t1, t0 + 1), rows };
  }

  // timelineChart draws timelineModel's rows as bars on a time axis: one
  // row per line (its name, its status in words, its bar), the axis in
  // time since the run was created; every bar and mark says what it is in
  // its title and to screen readers.
  function timelineChart(m) {
    const span = m.t1 - m.t0;
    const pos = (t) => Math.min(100, Math.max(0, ((t - m.t0) / span) * 100));
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => h("span", { class: "tl-tick", style: { left: `${f * 100}%` } }, f === 0 ? "0" : "+" + fmtMs(f * span)));
    return h("div", { class: "tl", role: "list", "aria-label": "The run on a time axis (time since it was created)" },
      h("div", { class: "tl-row tl-axis", "aria-hidden": "true" }, h("div", { class: "tl-label muted small" }, "since created"), h("div", { class: "tl-track" }, ticks)),
      m.rows.map((r) => h("div", { class: `tl-row tl-${r.kind}`, role: "listitem", "data-kind": r.kind, "data-status": r.status || "" },
        h("div", { class: "tl-label" }, h("span", { class: r.kind === "call" || r.kind === "item" ? "mono tl-name" : "tl-name", title: r.label }, r.label), " ",
          r.status ? badge(r.status, false, r.text) : h("span", { class: "muted small" }, r.text)),
        h("div", { class: "tl-track" },
          r.segs.map((sg) => {
            const k = sg.kind.split(" ");
            const left = pos(sg.from), width = Math.max(0, pos(sg.to) - left);
            return h("span", { class: `tl-seg tl-s-${k[0]}${k.includes("retried") ? " tl-retried" : ""}`, style: { left: `${left}%`, width: `${width}%` }, title: `${sg.text}: ${fmtMs(sg.to - sg.from)}, from +${fmtMs(sg.from - m.t0)}`, "data-kind": sg.kind },
              h("span", { class: "sr-only" }, `${sg.text}, ${fmtMs(sg.to - sg.from)} from +${fmtMs(sg.from - m.t0)}`));
          }),
          r.marks.map((mk) => h("span", { class: "tl-mark", style: { left: `${pos(mk.at)}%` }, title: `${mk.text} at +${fmtMs(mk.at - m.t0)}` }, h("span", { class: "sr-only" }, `${mk.text} at +${fmtMs(mk.at - m.t0)}`)))))));
  }

  // eventText is a timeline entry; runError, the run's error shown above
  // the page, is not said again by its finished event.
  function eventText(ev, runError) {
    switch (ev.kind) {
      case "started": return `started on worker ${ev.worker || "?"}` + (ev.attempt > 1 ? ` (attempt ${ev.attempt})` : "");
      case "group": return `group ${ev.group} of ${ev.groups || "?"} "${ev.group_name || ""}" finished` + (!ev.error ? "" : runError && runError.includes(ev.error) ? " (the run's error, above)" : `: ${ev.error}`);
      case "interrupted": return `interrupted on worker ${ev.worker || "?"} after group ${ev.group || 0}` + (ev.error ? ` (${ev.error})` : "") + "; waiting for a worker to resume it";
      case "resumed": return `resumed by worker ${ev.worker || "?"} after group ${ev.group || 0} (attempt ${ev.attempt || "?"})`;
      case "waiting": return `waiting at group ${ev.group || "?"} "${ev.group_name || ""}" for ` + (ev.wait ? waitText(ev.wait) : "a signal or a time") + "; no worker holds it";
      case "signalled": { const sg = (ev.wait && ev.wait.signalled) || {}; return (sg.reject ? "rejected" : "signalled") + (ev.by ? ` by ${ev.by}` : "") + (ev.reason ? `: ${ev.reason}` : "") + "; the run resumes"; }
      case "cancelling": return `cancel asked` + (ev.by ? ` by ${ev.by}` : "") + (ev.reason ? `: ${ev.reason}` : "");
      case "finished": return `finished: ${ev.status || "?"}` + (ev.error && ev.error !== runError ? ` (${ev.error})` : "");
      default: return ev.kind;
    }
  }

  // =========================================================== Sequences

  function nextText(s) {
    // The next fire time as the time display asks, and in the schedule's
    // own zone (and relative) beside it.
    if (s.next_tick) return h("span", {}, "next ", timeEl(s.next_tick), h("span", { class: "muted" },
      " (" + [s.timezone ? fmtWhen(s.next_tick, "local", s.timezone) + " in " + s.timezone : "", timeMode() === "relative" ? "" : fmtAgo(s.next_tick)].filter(Boolean).join(", ") + ")"));
    return h("span", { class: "muted" }, s.schedule_note || "");
  }

  // entriesList is a sequence's schedule entries (the list form, or the
  // one entry "default" of a schedule string), each linking to its page
  // on the Schedules page: its pattern and zone, overlap, next fire time
  // and whether it is paused; note says why the next fire times are not
  // known (no seqworker answered). short leaves out the overlap.
  function entriesList(list, note, short) {
    return h("div", {},
      h("ul", { class: "entries" }, list.map((e) => h("li", { "data-entry": e.entry },
        h("a", { href: entryHash(e) }, e.entry), ": ", patternText(e), short ? "" : [" · overlap ", h("span", { class: "mono" }, e.overlap || "skip")],
        (e.next || []).length ? [" · next ", nextFire(e)] : null,
        e.state && e.state.paused ? [" · ", badge("dropped", false, "paused"), e.state.note ? " " + e.state.note : ""] : null))),
      note ? h("p", { class: "muted small" }, "Next fire times unknown: " + note) : null);
  }

  async function pageSeqs(root, params, live) {
    const box = h("div", {});
    append(root, [h("h1", {}, "Sequences"),
      h("p", { class: "muted" }, "The sequences the registry stores (", h("code", {}, "skillbus seqs"), "). Open one to see its shape and to run it."), box]);
    focusTitle();
    async function load() {
      let r;
      try { r = await api("/api/seqs"); } catch (err) { if (live()) replace(box, errorBox(err)); return; }
      if (!live()) return;
      if (!r.sequences.length) { replace(box, h("p", { class: "muted" }, "No sequences are stored. The registry loads *.seq.yaml and *.seq.json files from its directory.")); return; }
      replace(box, h("table", { class: "tbl cards", "aria-label": "Sequences" },
        h("thead", {}, h("tr", {}, ["Name", "Signature", "Groups", "Runs", "Source"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, r.sequences.map((s) => h("tr", {},
          h("td", { "data-label": "Name" }, h("a", { href: "#/seqs/" + encodeURIComponent(s.name) }, s.name), s.description ? h("div", { class: "muted small" }, s.description) : null),
          h("td", { "data-label": "Signature", class: "mono wrap" }, sigText(s.signature)),
          h("td", { "data-label": "Groups" }, (s.groups || []).join(" → ")),
          h("td", { "data-label": "Runs" }, h("div", {}, "on demand"), s.boot ? h("div", {}, "at every agent boot") : null,
            (s.entries || []).length ? entriesList(s.entries, "", true)
              : s.schedule ? h("div", {}, h("span", { class: "mono" }, s.schedule), s.timezone ? ` (${s.timezone})` : "", h("br"), s.next_tick || !s.schedule.includes(": ") ? nextText(s) : h("span", { class: "muted" }, s.entries_note || "")) : null),
          h("td", { "data-label": "Source", class: "wrap small" }, s.source || "seq.create"))))));
    }
    await load();
    openStream("", { registry: (ev) => { if (ev.kind === "sequence") load(); } });
  }

  function sigText(sig) {
    const keys = Object.keys(sig || {}).sort();
    return keys.length ? "(" + keys.map((k) => `${k}: ${sig[k]}`).join(", ") + ")" : "(no arguments)";
  }

  // fieldFor builds the input of one run argument by its declared type.
  // prefix starts the ids ("arg-" by default; "sig-" for a signal's values).
  function fieldFor(key, type, prefix) {
    const id = (prefix || "arg-") + key;
    const hintId = id + "-hint", errId = id + "-error";
    let input, hint;
    if (type === "bool") {
      input = h("select", { id, name: key }, h("option", { value: "" }, "choose…"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"), h("option", { value: "null" }, "null"));
      hint = "true or false (null for none)";
    } else if (type === "string") {
      input = h("input", { id, name: key, type: "text", autocomplete: "off", spellcheck: "false" });
      hint = "text, taken literally";
    } else if (type === "integer" || type === "number") {
      input = h("input", { id, name: key, type: "text", inputmode: type === "integer" ? "numeric" : "decimal", autocomplete: "off" });
      hint = type === "integer" ? "a whole number such as 10 (or null)" : "a number such as 2.5 (or null)";
    } else {
      input = h("textarea", { id, name: key, rows: "3", spellcheck: "false" });
      hint = type === "object" ? 'a JSON object such as {"k": 1} (or null)' : 'a JSON array such as ["a", "b"] (or null)';
    }
    input.setAttribute("aria-describedby", hintId + " " + errId);
    const err = h("p", { id: errId, class: "field-error", "aria-live": "polite" });
    const field = h("div", { class: "field", "data-field": key },
      h("label", { for: id }, key, h("span", { class: "type" }, type)),
      h("p", { id: hintId, class: "hint" }, hint), input, err);
    return { field, input, err };
  }

  // argText is a run argument's value as its field of type holds it (the
  // text --arg reads): a string as it is, a bool, number or null as JSON,
  // an object or array as indented JSON; "" for no value (undefined), and
  // for a null string, which no text gives back (the form says so).
  function argText(type, v) {
    if (v === undefined) return "";
    if (type === "string") return typeof v === "string" ? v : v === null ? "" : JSON.stringify(v);
    if (v !== null && typeof v === "object") return JSON.stringify(v, null, 2);
    return JSON.stringify(v);
  }

  // runForm is the form that starts a run of the stored sequence name
  // with a field per argument of signature (fieldFor), filled from
  // initial (a run's arguments, for edit and rerun) when given; the
  // values are checked on the server with --arg's code and each problem
  // shown under its field (docs/console.md, Sequences). It returns {form,
  // focus}; a run started opens its page.
  function runForm({ name, signature, initial, live, heading, intro, onClose }) {
    const keys = Object.keys(signature || {}).sort();
    const fields = keys.map((k) => fieldFor(k, signature[k]));
    if (initial) {
      keys.forEach((k, i) => {
        const f = fields[i];
        f.input.value = argText(signature[k], initial[k]);
        if (signature[k] === "string" && initial[k] === null) f.err.textContent = "it was null, which a text field cannot give: leave it empty for \"\"";
      });
    }
    const general = h("div", { "aria-live": "assertive" });
    const submit = h("button", { type: "submit", class: "primary", id: "start-run" }, initial ? "Start the new run" : "Start the run");
    const form = h("form", { id: "run-form", class: "panel", novalidate: true, onsubmit: async (ev) => {
      ev.preventDefault();
      const args = {};
      for (const [i, k] of keys.entries()) {
        const f = fields[i];
        f.err.textContent = ""; f.input.removeAttribute("aria-invalid");
        if (signature[k] === "bool" && f.input.value === "") continue; // reported as missing
        args[k] = f.input.value;
      }
      clear(general);
      submit.disabled = true;
      try {
        const r = await post("/api/seqs/" + encodeURIComponent(name) + "/run", { args });
        toast(`Run ${r.run_id} started.`);
        go("#/runs/" + encodeURIComponent(r.run_id));
      } catch (err) {
        if (!live()) return;
        submit.disabled = false;
        let first = null;
        for (const [i, k] of keys.entries()) {
          const msg = err.fields[k];
          if (msg) {
            fields[i].err.textContent = msg;
            fields[i].input.setAttribute("aria-invalid", "true");
            first = first || fields[i].input;
          }
        }
        replace(general, errorBox(err));
        if (first) first.focus();
      }
    } },
    h("h2", {}, heading),
    intro || null,
    keys.length ? h("p", { class: "muted small" }, "Each value is read by its declared type, as ", h("code", {}, "skillbus run --arg KEY=VALUE"), " reads it.") : h("p", {}, "This sequence takes no arguments."),
    fields.map((f) => f.field), general,
    h("div", { class: "actions" }, submit, h("button", { type: "button", onclick: onClose }, "Close")));
    return { form, focus: () => (fields[0] ? fields[0].input : submit).focus() };
  }

  async function pageSeq(root, name, params, live) {
    const body = h("div", {});
    append(root, [h("div", { class: "title-row" }, h("h1", {}, name)), body]);
    let d;
    try { d = await api("/api/seqs/" + encodeURIComponent(name)); } catch (err) { if (live()) { replace(body, errorBox(err)); focusTitle(); } return; }
    if (!live()) return;
    const sq = d.sequence;
    const formBox = h("section", { "aria-label": "Run " + name });
    const runBtn = h("button", { type: "button", class: "primary", id: "open-run-form", "aria-expanded": "false", "aria-controls": "run-form", onclick: () => showForm() }, "Run…");
    const sigKeys = Object.keys(d.signature || {}).sort();
    replace(body,
      d.description ? h("p", {}, d.description) : null,
      h("dl", { class: "kv" },
        h("dt", {}, "Signature"), h("dd", { class: "mono" }, sigText(d.signature)),
        h("dt", {}, "Groups"), h("dd", {}, (d.groups || []).join(" → ")),
        h("dt", {}, "Boot"), h("dd", {}, d.boot ? "yes: runs once at every agent boot" : "no"),
        h("dt", {}, "Schedule"), h("dd", {}, d.schedule ? h("span", {}, h("span", { class: "mono" }, d.schedule), d.timezone ? ` in ${d.timezone}` : " (UTC)", " · ", nextText(d)) : (d.entries || []).length ? `${d.entries.length} ${d.entries.length === 1 ? "entry" : "entries"}` : "none (runs on demand)"),
        (d.entries || []).length ? [h("dt", {}, "Schedule entries"), h("dd", {}, entriesList(d.entries, d.entries_note))] : null,
        d.schedule_state ? [h("dt", {}, "Schedule state"), h("dd", {}, badge(d.schedule_state.status === "set" ? "succeeded" : "failed", false, d.schedule_state.status), " ", d.schedule_state.error || ["set ", timeEl(d.schedule_state.at)])] : null,
        h("dt", {}, "Source"), h("dd", { class: "wrap" }, d.source || "created over NATS (seq.create)")),
      h("div", { class: "actions" }, runBtn, h("a", { class: "button", href: "#/runs?sequence=" + encodeURIComponent(name) }, "Its runs"),
        (d.entries || []).length ? h("a", { class: "button", href: "#/schedules?sequence=" + encodeURIComponent(name) }, "Its schedules") : null),
      formBox,
      h("h2", { id: "shape-title" }, "Shape"),
      h("div", { class: "graph-wrap", id: "seq-graph", tabindex: "0", role: "region", "aria-labelledby": "shape-title" },
        G.draw({ plain: true, args: sigKeys.map((k) => ({ key: k, type: d.signature[k] })), groups: sq.groups.map((g) => ({
          name: g.name, in: g.in || {}, out: g.out || {}, when: g.when || "",
          detail: g.wait_for ? waitForText(g.wait_for) : `${g.parallel ? "parallel" : "in order"} · ${g.timeout} timeout`,
          calls: (g.tools || []).map((c) => ({ tool: c.tool, as: c.as || "", for_each: c.for_each || "" })),
        })) }, { label: "The shape of " + name })),
      h("h2", {}, "Source"),
      h("p", { class: "muted small" }, "The stored form (canonical JSON, as ", h("code", {}, `skillbus seqs show ${name} --json`), " prints it)."),
      h("pre", { class: "block" }, pretty(sq)));
    fitGraph(document.getElementById("seq-graph"));
    openStream("", { registry: (ev) => { if (ev.kind === "sequence" && ev.name === name) toast(`The sequence ${name} was ${ev.op === "put" ? "changed" : ev.op}; reload the page to see it.`); } });
    focusTitle();

    function showForm() {
      runBtn.setAttribute("aria-expanded", "true");
      const rf = runForm({ name, signature: d.signature, live, heading: "Run " + name,
        onClose: () => { clear(formBox); runBtn.setAttribute("aria-expanded", "false"); runBtn.focus(); } });
      replace(formBox, rf.form);
      rf.focus();
    }
    if (params.get("run") === "1") showForm();
  }

  // =========================================================== Schedules

  // The Schedules pages (docs/console.md, "Schedules"): the table of
  // `skillbus schedules`, and one entry as `skillbus schedules show`
  // describes it, with pause (with a note), unpause, trigger and backfill
  // through the seqworker's skillbus.seq.schedules.* endpoints.
  const entryHash = (e) => "#/schedules/" + encodeURIComponent(e.sequence) + "/" + encodeURIComponent(e.entry);
  const runLink = (id) => id ? h("a", { class: "mono", href: "#/runs/" + encodeURIComponent(id) }, shortId(id)) : h("span", { class: "muted" }, "—");

  // patternText is an entry's schedule as written: "every 1h0m0s" for an
  // "@every" pattern, else the cron expression; and its zone.
  function patternText(e) {
    const every = /^@every (.+)$/.exec(e.pattern || "");
    return h("span", {}, h("span", { class: "mono" }, every ? "every " + every[1] : e.pattern || "—"), every ? "" : " in " + (e.timezone || "UTC"));
  }
  // zonedText is a time in the entry's own zone ("… in Europe/Berlin"),
  // beside the Times switch's form.
  function zonedText(iso, tz) {
    return h("span", { class: "muted small zoned" }, " (" + fmtWhen(iso, "local", tz || "UTC") + (tz ? " in " + tz : "") + ")");
  }
  // nextFire is an entry's next fire time: in the Times switch's form and
  // in its zone.
  function nextFire(e) {
    const n = (e.next || [])[0];
    if (!n) return h("span", { class: "muted" }, (e.pattern || "").startsWith("@every") ? "known after the first tick" : "—");
    return h("span", {}, timeEl(n), zonedText(n, e.timezone));
  }
  // pausedText is "no", or "paused" with the note and who paused it.
  function pausedText(st) {
    if (!st || !st.paused) return h("span", {}, "no");
    return h("span", { class: "paused" }, badge("dropped", false, "paused"), st.note ? h("div", { class: "small wrap" }, st.note) : null,
      st.paused_by ? h("div", { class: "muted small" }, "by " + st.paused_by + " ", timeEl(st.paused_at)) : null);
  }
  function lastRun(st, statusOf) {
    if (!st || !st.last_run) return h("span", { class: "muted" }, "—");
    const status = (statusOf && statusOf[st.last_run]) || st.last_status;
    return h("span", {}, runLink(st.last_run), " ", badge(status), " ", timeEl(st.last_at));
  }

  async function pageSchedules(root, params, live) {
    const box = h("div", {});
    const seqName = params.get("sequence") || "";
    append(root, [h("h1", {}, "Schedules"),
      h("p", { class: "muted" }, "Every entry of every scheduled sequence (", h("code", {}, "skillbus schedules"), "): when it fires next, its last run, its overlap policy and whether it is paused. Open one to see its next fire times and recent ticks, to pause, trigger or backfill it."),
      seqName ? h("p", {}, "Only the entries of ", seqLink(seqName), ". ", h("a", { href: "#/schedules" }, "Show every entry.")) : null, box]);
    focusTitle();
    async function load() {
      let r;
      try { r = await api("/api/schedules" + (seqName ? "?sequence=" + encodeURIComponent(seqName) : "")); } catch (err) { if (live()) replace(box, errorBox(err)); return; }
      if (!live()) return;
      if (!r.entries.length) { replace(box, h("p", { class: "muted", id: "no-schedules" }, "No scheduled sequences. A sequence runs on a schedule with schedule: (docs/sequences.md, Schedules).")); return; }
      replace(box, h("table", { class: "tbl cards", "aria-label": "Schedule entries" },
        h("thead", {}, h("tr", {}, ["Entry", "Schedule", "Next", "Last run", "Overlap", "Paused"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, r.entries.map((e) => h("tr", { "data-entry": e.sequence + "/" + e.entry },
          h("td", { "data-label": "Entry" }, h("a", { href: entryHash(e), class: "entry-link" }, e.sequence + "/" + e.entry)),
          h("td", { "data-label": "Schedule" }, patternText(e)),
          h("td", { "data-label": "Next" }, nextFire(e)),
          h("td", { "data-label": "Last run" }, lastRun(e.state)),
          h("td", { "data-label": "Overlap", class: "mono" }, e.overlap || "skip"),
          h("td", { "data-label": "Paused" }, pausedText(e.state)))))));
    }
    const again = throttle(() => load(), 1000);
    await firstLoad((loaded) => openStream("", { hello: () => load().then(loaded), schedule: again, summaries: again, registry: (ev) => { if (ev.kind === "sequence") again(); } }), load);
  }

  const OUTCOME_STATUS = { started: "succeeded", skipped: "dropped", buffered: "queued", paused: "dropped", dropped: "dropped", cancelled: "cancelled", missed: "failed" };
  function outcomeBadge(o) {
    return h("span", { class: "tick-outcome", "data-outcome": o || "" }, badge(OUTCOME_STATUS[o] || "unknown", false, o || "?"));
  }

  async function pageSchedule(root, seqName, entry, params, live) {
    const head = h("div", {});
    const body = h("div", {});
    append(root, [h("div", { class: "title-row" }, h("h1", {}, seqName + "/" + entry)), head, body]);
    const base = "/api/schedules/" + encodeURIComponent(seqName) + "/" + encodeURIComponent(entry);
    const actionMsg = h("div", { id: "schedule-msg", "aria-live": "polite" });
    // The forms are built once, so a reload keeps what is typed.
    const note = h("input", { id: "pause-note", type: "text", maxlength: "1024", placeholder: "why (shown with the entry)", "aria-describedby": "pause-note-hint pause-note-error" });
    const noteErr = h("p", { id: "pause-note-error", class: "field-error", "aria-live": "polite" });
    const pauseBtn = h("button", { type: "submit", id: "pause-entry" }, "Pause");
    const unpauseBtn = h("button", { type: "button", id: "unpause-entry", onclick: () => act("unpause", {}) }, "Unpause");
    const triggerBtn = h("button", { type: "button", class: "primary", id: "trigger-entry", onclick: () => act("trigger", {}) }, "Trigger now");
    const pauseForm = h("form", { id: "pause-form", class: "inline-form", novalidate: true, "aria-label": "Pause the entry", onsubmit: (ev) => { ev.preventDefault(); act("pause", { note: note.value }); } },
      h("div", { class: "field" }, h("label", { for: "pause-note" }, "Note"), h("p", { id: "pause-note-hint", class: "hint" }, "Why the entry is paused; its ticks are dropped and recorded until Unpause"), note, noteErr),
      h("div", { class: "actions" }, pauseBtn));
    const dayAgo = new Date(Date.now() - 86400000);
    dayAgo.setUTCMinutes(0, 0, 0);
    const from = h("input", { id: "backfill-from", type: "text", spellcheck: "false", autocomplete: "off", value: dayAgo.toISOString().replace(/\.\d+Z$/, "Z"), "aria-describedby": "backfill-from-hint backfill-from-error" });
    const to = h("input", { id: "backfill-to", type: "text", spellcheck: "false", autocomplete: "off", value: new Date(dayAgo.getTime() + 3600000).toISOString().replace(/\.\d+Z$/, "Z"), "aria-describedby": "backfill-to-hint backfill-to-error" });
    const fromErr = h("p", { id: "backfill-from-error", class: "field-error", "aria-live": "polite" });
    const toErr = h("p", { id: "backfill-to-error", class: "field-error", "aria-live": "polite" });
    const bound = h("span", { id: "backfill-bound" }, "");
    const backfillBtn = h("button", { type: "submit", id: "backfill-entry" }, "Backfill");
    const backfillMsg = h("div", { id: "backfill-msg", "aria-live": "polite" });
    const backfillForm = h("form", { id: "backfill-form", class: "panel", novalidate: true, "aria-label": "Backfill the entry", onsubmit: (ev) => { ev.preventDefault(); act("backfill", { from: from.value, to: to.value }); } },
      h("h2", {}, "Backfill"),
      h("p", { class: "muted small" }, "One run per fire time of the entry from the start to the end (both included), through its overlap policy, as ", h("code", {}, `skillbus schedules backfill ${seqName}/${entry} --from T --to T`), " runs them; ", bound, "."),
      h("div", { class: "field" }, h("label", { for: "backfill-from" }, "From"), h("p", { id: "backfill-from-hint", class: "hint" }, "the first tick time, RFC 3339 (2026-11-30T00:00:00Z, or with an offset)"), from, fromErr),
      h("div", { class: "field" }, h("label", { for: "backfill-to" }, "To"), h("p", { id: "backfill-to-hint", class: "hint" }, "the last tick time, RFC 3339"), to, toErr),
      h("div", { class: "actions" }, backfillBtn), backfillMsg);
    let d = null;

    async function act(op, bodyIn) {
      for (const [f, e] of [[note, noteErr], [from, fromErr], [to, toErr]]) { e.textContent = ""; f.removeAttribute("aria-invalid"); }
      // A backfill answers in its form, next to its fields; the others
      // under the actions.
      const msg = op === "backfill" ? backfillMsg : actionMsg;
      clear(actionMsg); clear(backfillMsg);
      const btns = [pauseBtn, unpauseBtn, triggerBtn, backfillBtn];
      for (const b of btns) b.disabled = true;
      try {
        const r = await post(base + "/" + op, bodyIn);
        if (!live()) return;
        if (op === "pause" || op === "unpause") {
          replace(actionMsg, h("p", { class: "ok-box", role: "status" }, op === "pause" ? "Paused: its ticks are dropped and recorded until Unpause, on every worker." : "Unpaused: its next tick runs."));
          note.value = "";
          d = r; render();
        } else {
          const ticks = r.ticks || [];
          replace(msg, h("div", { class: "ok-box", role: "status" },
            h("p", {}, op === "trigger" ? "Triggered (manual-tick):" : `Backfilled: ${ticks.length} ${ticks.length === 1 ? "tick" : "ticks"}.`),
            ticks.length ? h("ul", { class: "tick-results" }, ticks.map((t) => h("li", {}, timeEl(t.at), " ", outcomeBadge(t.outcome), " ", t.outcome === "started" ? runLink(t.run_id) : "", t.why ? h("span", { class: "muted" }, " " + t.why) : ""))) : h("p", {}, "No tick in the range.")));
          load();
        }
      } catch (err) {
        if (!live()) return;
        let first = null;
        for (const [k, f, e] of [["note", note, noteErr], ["from", from, fromErr], ["to", to, toErr]]) {
          if (err.fields[k]) { e.textContent = err.fields[k]; f.setAttribute("aria-invalid", "true"); first = first || f; }
        }
        replace(msg, errorBox(err, op === "backfill" ? "" : op[0].toUpperCase() + op.slice(1)));
        if (first) first.focus();
      } finally {
        if (live()) { for (const b of btns) b.disabled = false; for (const b of btns) delete b.dataset.limitOff; applyLimits(); }
      }
    }

    function render() {
      const st = d.state || {};
      bound.textContent = `at most ${d.max_backfill} ticks at once (the seqworker's bound; a larger range is refused)`;
      const zone = d.timezone || "UTC";
      replace(head,
        h("dl", { class: "kv" },
          h("dt", {}, "Sequence"), h("dd", {}, seqLink(d.sequence)),
          h("dt", {}, "Schedule"), h("dd", { id: "entry-pattern" }, patternText(d)),
          h("dt", {}, "Overlap"), h("dd", { class: "mono" }, d.overlap || "skip"),
          d.args ? [h("dt", {}, "Arguments"), h("dd", { class: "mono wrap" }, JSON.stringify(d.args))] : null,
          h("dt", {}, "Jitter"), h("dd", { id: "entry-jitter" }, d.jitter ? h("span", {}, "each tick's run starts after a random delay of up to ", h("span", { class: "mono" }, d.jitter)) : "none"),
          h("dt", {}, "Catch-up window"), h("dd", { id: "entry-catchup" }, d.catchup_window ? h("span", {}, "after a NATS server outage, the ticks it did not fire in the last ", h("span", { class: "mono" }, d.catchup_window), " run first; older ones are recorded as missed") : "none: after a NATS server outage one tick runs"),
          h("dt", {}, "Pause on failure"), h("dd", { id: "entry-pof" }, d.pause_on_failure ? `after ${d.pause_on_failure} failed runs in a row` : "never"),
          d.start_at || d.end_at ? [h("dt", {}, "Active"), h("dd", { id: "entry-window" }, d.start_at ? ["from ", timeEl(d.start_at)] : "", d.start_at && d.end_at ? " " : "", d.end_at ? ["until ", timeEl(d.end_at)] : "")] : null,
          h("dt", {}, "Paused"), h("dd", { id: "entry-paused" }, pausedText(st)),
          h("dt", {}, "Last run"), h("dd", { id: "entry-last" }, lastRun(st, d.run_status)),
          h("dt", {}, "Ticks"), h("dd", {}, `${st.started || 0} started, ${st.skipped || 0} skipped, ${st.buffered_total || 0} buffered, ${st.dropped || 0} dropped, ${st.missed || 0} missed; ${st.consecutive_failures || 0} consecutive failures`)),
        h("div", { class: "actions" }, triggerBtn, st.paused ? unpauseBtn : null,
          h("a", { class: "button", href: "#/runs?sequence=" + encodeURIComponent(d.sequence) + "&trigger=schedule" }, "Scheduled runs of " + d.sequence)),
        st.paused ? null : pauseForm,
        actionMsg);
      const statusOf = d.run_status || {};
      const recent = (st.recent || []).slice().reverse();
      replace(body,
        h("h2", {}, "Next fire times"),
        h("p", { class: "muted small" }, `As the NATS server fires them (daylight saving days included), in the Times switch's form and in ${zone}.`),
        (d.next || []).length ? h("ol", { id: "next-fires", class: "next-fires" }, d.next.map((t) => h("li", {}, timeEl(t), zonedText(t, d.timezone))))
          : h("p", { class: "muted", id: "next-fires" }, (d.pattern || "").startsWith("@every") ? "An every entry's ticks count from its last tick; they are known after the first." : "None: the entry fires no more (end_at)."),
        (st.current || []).length ? [h("h2", {}, "Current runs"), h("ul", {}, st.current.map((c) => h("li", {}, runLink(c.run_id), " ", badge(statusOf[c.run_id] || "running"), " tick ", timeEl(c.at), c.trigger ? " · " + c.trigger : "")))] : null,
        (st.buffered || []).length ? [h("h2", {}, "Buffered ticks"), h("ul", { id: "buffered" }, st.buffered.map((b) => h("li", {}, "tick ", timeEl(b.at), " — starts when the current run ends")))] : null,
        h("h2", {}, "Recent ticks and runs"),
        recent.length ? h("table", { class: "tbl cards", "aria-label": "Recent ticks" },
          h("thead", {}, h("tr", {}, ["Tick", "Outcome", "Run", "Why"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, recent.map((t) => h("tr", { "data-tick": t.outcome || "" },
            h("td", { "data-label": "Tick" }, timeEl(t.at), t.trigger ? h("div", { class: "muted small" }, t.trigger) : null),
            h("td", { "data-label": "Outcome" }, outcomeBadge(t.outcome)),
            h("td", { "data-label": "Run" }, t.outcome === "started" || statusOf[t.run_id] ? h("span", {}, runLink(t.run_id), statusOf[t.run_id] ? [" ", badge(statusOf[t.run_id])] : null) : h("span", { class: "muted mono small" }, shortId(t.run_id || ""))),
            h("td", { "data-label": "Why", class: t.why ? "wrap small" : "empty" }, t.why || "")))))
          : h("p", { class: "muted", id: "no-ticks" }, "No tick yet."),
        backfillForm);
      applyLimits();
    }

    async function load() {
      try { d = await api(base); } catch (err) { if (live()) { replace(head, errorBox(err)); clear(body); } return; }
      if (!live()) return;
      render();
    }
    const again = throttle(() => load(), 1000);
    await firstLoad((loaded) => openStream("", { hello: () => load().then(loaded), schedule: (ev) => { if (ev.sequence === seqName) again(); }, summaries: again }), load);
    focusTitle();
  }

  // ============================================================== Skills

  async function pageSkills(root, params, live) {
    const box = h("div", {});
    append(root, [
      h("div", { class: "title-row" }, h("h1", {}, "Skills"), h("a", { class: "button", href: "#/preview" }, "Assembly preview…")),
      h("p", { class: "muted" }, "The skills the registry stores (", h("code", {}, "skillbus skills"), "), with the warnings it found. The preview shows what skillface would list, activate and inject for a turn."),
      box]);
    focusTitle();
    async function load() {
      let r;
      try { r = await api("/api/skills"); } catch (err) { if (live()) replace(box, errorBox(err)); return; }
      if (!live()) return;
      if (!r.skills.length) { replace(box, h("p", { class: "muted" }, "No skills are stored. The registry loads SKILL.md and skill.yaml files from its directory.")); return; }
      const warned = r.skills.filter((s) => s.warnings && s.warnings.length);
      replace(box,
        h("table", { class: "tbl cards", "aria-label": "Skills" },
          h("thead", {}, h("tr", {}, ["Name", "Description", "Source", "Warnings"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, r.skills.map((s) => h("tr", {},
            h("td", { "data-label": "Name" }, h("a", { href: "#/skills/" + encodeURIComponent(s.name) }, s.name)),
            h("td", { "data-label": "Description", class: "wrap" }, s.description),
            h("td", { "data-label": "Source", class: "wrap small" }, s.source),
            h("td", { "data-label": "Warnings" }, s.warnings && s.warnings.length ? warnBadge(`${s.warnings.length} warning${s.warnings.length > 1 ? "s" : ""}`) : h("span", { class: "muted" }, "none")))))),
        warned.length ? [h("h2", {}, "Warnings"), h("p", { class: "muted small" }, "The skill is loaded, but may not do what its author meant."),
          h("ul", {}, warned.map((s) => s.warnings.map((w) => h("li", {}, h("a", { href: "#/skills/" + encodeURIComponent(s.name) }, s.name), ": ", w))))] : null);
    }
    await load();
    openStream("", { registry: (ev) => { if (ev.kind === "skill") load(); } });
  }

  async function pageSkill(root, name, params, live) {
    const section = params.get("section") || "";
    const body = h("div", {});
    append(root, [h("div", { class: "title-row" }, h("h1", {}, name)), body]);
    let d;
    try { d = await api("/api/skills/" + encodeURIComponent(name) + (section ? "?section=" + encodeURIComponent(section) : "")); }
    catch (err) { if (live()) { replace(body, errorBox(err)); focusTitle(); } return; }
    if (!live()) return;
    const rec = d.record || {};
    const list = (xs) => xs && xs.length ? h("ul", { class: "chips" }, xs.map((x) => h("li", { class: "chip" }, x))) : h("span", { class: "muted" }, "none");
    const secHref = (t) => "#/skills/" + encodeURIComponent(name) + "?section=" + encodeURIComponent(t);
    replace(body,
      rec.description ? h("p", {}, rec.description) : null,
      d.record_error ? h("p", { class: "notice" }, d.record_error) : null,
      rec.warnings && rec.warnings.length ? h("div", { class: "notice" }, h("strong", {}, `${rec.warnings.length} warning${rec.warnings.length > 1 ? "s" : ""}:`), h("ul", {}, rec.warnings.map((w) => h("li", {}, w)))) : null,
      h("div", { class: "cols two" },
        h("div", {},
          h("h2", {}, section ? `Section “${section}”` : "As skill_info gives it to a model"),
          h("p", { class: "muted small" }, section ? "The section and its subsections (" : "The whole skill when short, else its first lines and table of contents (",
            h("code", {}, `skillbus skills info ${name}${section ? ` "${section}"` : ""}`), ")."),
          section ? h("p", {}, h("a", { href: "#/skills/" + encodeURIComponent(name) }, "Back to the whole skill")) : null,
          h("pre", { class: "block", tabindex: "0", "aria-label": "Skill text" }, d.info.text)),
        h("div", {},
          h("h2", {}, "Contents"),
          rec.sections && rec.sections.length ? h("ul", { class: "toc" }, rec.sections.filter((s) => s.title).map((s) => h("li", { "data-level": s.level },
            h("span", { class: "muted small", "aria-hidden": "true" }, "#".repeat(s.level) + " "),
            h("a", { href: secHref(s.title), "aria-current": s.title === section ? "true" : null }, s.title),
            h("span", { class: "muted small" }, ` ${s.end - s.start} line${s.end - s.start === 1 ? "" : "s"}`)))) : h("p", { class: "muted" }, "No headings."),
          h("h2", {}, "Fields"),
          h("dl", { class: "kv" },
            h("dt", {}, "Invocation"), h("dd", {}, rec.invocation || "—"),
            h("dt", {}, "Triggers"), h("dd", {}, list(rec.triggers)),
            h("dt", {}, "Paths"), h("dd", {}, list(rec.paths)),
            h("dt", {}, "Allowed tools"), h("dd", {}, list(rec.allowed_tools)),
            h("dt", {}, "Disallowed tools"), h("dd", {}, list(rec.disallowed_tools)),
            rec.when_to_use ? [h("dt", {}, "When to use"), h("dd", {}, rec.when_to_use)] : null,
            h("dt", {}, "Context"), h("dd", {}, rec.context || "—"),
            h("dt", {}, "Format"), h("dd", {}, `${rec.format || "—"}, ${rec.lines || 0} lines, ${bytes(rec.body_bytes || 0)}`),
            h("dt", {}, "Source"), h("dd", { class: "wrap" }, rec.source || "—")),
          h("div", { class: "actions" }, h("a", { class: "button", href: "#/preview?mount=" + encodeURIComponent(name) }, "Preview with it mounted")))));
    openStream("", { registry: (ev) => { if (ev.kind === "skill" && ev.name === name && ev.op !== "warning") toast(`The skill ${name} was ${ev.op === "put" ? "changed" : ev.op}; reload the page to see it.`); } });
    focusTitle();
  }

  // ============================================================= Preview

  async function pagePreview(root, params, live) {
    const split = (s) => s.split(/[\n,]+/).map((x) => x.trim()).filter(Boolean);
    const sys = h("textarea", { id: "p-system", rows: "2", placeholder: "You are a coding agent." });
    const msg = h("textarea", { id: "p-message", rows: "3", placeholder: "Please commit the fix in docs/form.pdf" });
    const files = h("textarea", { id: "p-files", rows: "2", placeholder: "docs/form.pdf" });
    const tools = h("input", { id: "p-tools", type: "text", placeholder: "Read, Write, Bash, WebFetch", autocomplete: "off" });
    const mounts = h("input", { id: "p-mounts", type: "text", list: "skill-names", placeholder: "none", autocomplete: "off" });
    const names = h("datalist", { id: "skill-names" });
    const budgetIn = {};
    const budgetField = (key, label, def) => {
      const id = "p-b-" + key;
      budgetIn[key] = h("input", { id, type: "number", min: "1", placeholder: String(def), inputmode: "numeric" });
      return h("div", { class: "field" }, h("label", { for: id }, label), budgetIn[key]);
    };
    mounts.value = params.get("mount") || "";
    const out = h("div", { "aria-live": "polite" });
    const submit = h("button", { type: "submit", class: "primary", id: "run-preview" }, "Preview");
    const form = h("form", { class: "panel", "aria-label": "The turn to preview", onsubmit: async (ev) => {
      ev.preventDefault();
      submit.disabled = true;
      const budgets = {};
      for (const [k, el] of Object.entries(budgetIn)) if (el.value) budgets[k] = parseInt(el.value, 10) || 0;
      try {
        const r = await post("/api/preview", { system: sys.value, message: msg.value, work_files: split(files.value), tools: split(tools.value), mounts: split(mounts.value), budgets });
        if (live()) showPreview(out, r);
      } catch (err) {
        if (live()) replace(out, errorBox(err, "Preview"));
      } finally {
        submit.disabled = false;
      }
    } },
    h("div", { class: "field" }, h("label", { for: "p-system" }, "System message ", h("span", { class: "type" }, "optional")), sys),
    h("div", { class: "field" }, h("label", { for: "p-message" }, "User message (the turn)"), h("p", { class: "hint", id: "p-message-hint" }, "Triggers are looked for in this message."), msg),
    h("div", { class: "field" }, h("label", { for: "p-files" }, "Work files ", h("span", { class: "type" }, "one per line, relative to the workspace")), files),
    h("div", { class: "field" }, h("label", { for: "p-tools" }, "The caller's tools ", h("span", { class: "type" }, "comma-separated")), tools),
    h("div", { class: "field" }, h("label", { for: "p-mounts" }, "Mounted skills ", h("span", { class: "type" }, "comma-separated")), mounts, names),
    h("details", {}, h("summary", {}, "Budgets"),
      h("p", { class: "muted small" }, "Empty means skillface's default. Set them as your skillface runs, to see its truncation."),
      h("div", { class: "filters" },
        budgetField("entry_chars", "Listing entry (characters)", 1536),
        budgetField("listing_entries", "Listing entries", 64),
        budgetField("session_bodies", "Skill bodies per session", 4),
        budgetField("body_bytes", "Body (bytes)", 16384))),
    h("div", { class: "actions" }, submit));
    msg.setAttribute("aria-describedby", "p-message-hint");
    append(root, [
      h("h1", {}, "Assembly preview"),
      h("p", {}, "What skillface would answer to this turn as the first of a new session: the listing, the skills that activate and why (or why not), the bodies it injects and the tool surface. It runs skillface's own code on the stored skills, in this console; no session is stored anywhere."),
      form, out]);
    openStream("", {});
    focusTitle();
    api("/api/skills").then((r) => { if (live()) replace(names, r.skills.map((s) => h("option", { value: s.name }))); }).catch(() => {});
  }

  function showPreview(out, r) {
    const resp = r.response;
    const activated = r.skills.filter((s) => s.outcome === "activated");
    const counts = resp.counts || {};
    const b = r.budgets;
    replace(out,
      h("h2", { id: "preview-result", tabindex: "-1" }, "Result"),
      h("p", { role: "status" }, `${activated.length} of ${r.loaded} skill${r.loaded === 1 ? "" : "s"} activated` + (activated.length ? ": " + activated.map((s) => s.name).join(", ") : "") + "."),
      h("h3", {}, "Skills"),
      h("table", { class: "tbl cards", "aria-label": "What each skill did" },
        h("thead", {}, h("tr", {}, ["Skill", "Outcome", "Why"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, r.skills.map((s) => h("tr", { "data-skill": s.name },
          h("td", { "data-label": "Skill" }, h("a", { href: "#/skills/" + encodeURIComponent(s.name) }, s.name), h("div", { class: "muted small" }, s.invocation)),
          h("td", { "data-label": "Outcome" }, badge(s.outcome === "not activated" ? "not-activated" : s.outcome, false, s.outcome)),
          h("td", { "data-label": "Why" }, h("ul", { class: "reasons" }, s.reasons.map((x) => h("li", {}, x)))))))),
      h("h3", {}, "Tool surface"),
      resp.triggered && resp.triggered.length ? h("p", {}, "Narrowed by ", resp.triggered.join(", "), " (the skills that activated or triggered in this call).") : h("p", { class: "muted" }, "No skill triggered in this call, so the surface is the caller's tools unchanged."),
      h("dl", { class: "kv" },
        h("dt", {}, "Caller's tools"), h("dd", {}, r.request.tools && r.request.tools.length ? h("ul", { class: "chips" }, r.request.tools.map((t) => h("li", { class: "chip" + ((r.removed || []).includes(t) ? " removed" : "") }, h("span", { class: "name" }, t), (r.removed || []).includes(t) ? " (removed)" : ""))) : h("span", { class: "muted" }, "none given")),
        h("dt", {}, "Surface"), h("dd", {}, resp.tools.length ? h("ul", { class: "chips" }, resp.tools.map((t) => h("li", { class: "chip" }, t))) : h("span", { class: "muted" }, "empty")),
        resp.tool_limits ? [h("dt", {}, "Limits"), h("dd", {}, h("ul", {}, resp.tool_limits.map((l) => h("li", {}, h("span", { class: "mono" }, l.tool), l.allow ? " allow " + l.allow.join(", ") : "", l.deny ? " deny " + l.deny.join(", ") : ""))))] : null),
      h("h3", {}, "Budgets and what was cut"),
      h("table", { class: "tbl", "aria-label": "Budgets and truncation counts" },
        h("thead", {}, h("tr", {}, ["What", "Budget", "Cut or left out"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {},
          h("tr", {}, h("td", {}, "Listing entry"), h("td", { class: "num" }, `${b.entry_chars} characters`), h("td", { class: "num" }, `${counts.entries_truncated || 0} entries cut`)),
          h("tr", {}, h("td", {}, "Listing"), h("td", { class: "num" }, `${b.listing_entries} entries`), h("td", { class: "num" }, `${counts.entries_dropped || 0} skills left out`)),
          h("tr", {}, h("td", {}, "Bodies per session"), h("td", { class: "num" }, `${b.session_bodies}`), h("td", { class: "num" }, `${counts.bodies_dropped || 0} dropped`)),
          h("tr", {}, h("td", {}, "Body"), h("td", { class: "num" }, bytes(b.body_bytes)), h("td", { class: "num" }, `${counts.bodies_truncated || 0} bodies cut`)))),
      h("h3", {}, "Messages as the model sees them"),
      h("ol", {}, resp.messages.map((m) => {
        const isListing = r.listing && m.content === r.listing && m.role === "system";
        const inj = (r.injected || []).find((x) => x.text === m.content);
        return h("li", { class: "msg" + (isListing || inj ? " inserted" : "") },
          h("details", { open: m.role === "user" }, h("summary", {}, m.role, isListing ? h("span", { class: "tag" }, "listing (inserted)") : null, inj ? h("span", { class: "tag" }, `skill ${inj.skill} (inserted)`) : null,
            h("span", { class: "muted small" }, ` ${m.content.length} characters`)),
          h("pre", { class: "block" }, m.content)));
      })));
    document.getElementById("preview-result").focus();
  }

  // =============================================================== Tools

  async function pageTools(root, params, live) {
    const box = h("div", {});
    append(root, [h("h1", {}, "Tools"),
      h("p", { class: "muted" }, "The tools served on this NATS, found through NATS micro discovery (", h("code", {}, "skillbus tools"), ")."), box]);
    openStream("", {});
    focusTitle();
    let r;
    try { r = await api("/api/tools"); } catch (err) { if (live()) replace(box, errorBox(err)); return; }
    if (!live()) return;
    const providers = new Map();
    for (const t of r.tools) for (const p of t.providers) {
      const k = p.provider + "@" + p.version;
      const e = providers.get(k) || { provider: p.provider, version: p.version, instances: new Set(), tools: 0, config: p.config };
      p.instances.forEach((i) => e.instances.add(i));
      e.tools++;
      providers.set(k, e);
    }
    replace(box,
      (r.warnings || []).map((w) => h("p", { class: "notice" }, w)),
      r.call_note ? h("p", { class: "notice", id: "tools-call-note" }, r.call_note) : null,
      !r.tools.length ? h("p", { class: "muted" }, "No tools are served: start skillbus tools serve, skillbus mcp, or skillbus dev.") : [
        h("h2", {}, "Providers"),
        h("table", { class: "tbl cards", "aria-label": "Providers" },
          h("thead", {}, h("tr", {}, ["Provider", "Version", "Instances", "Tools", "Configuration"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, [...providers.values()].map((p) => h("tr", {},
            h("td", { "data-label": "Provider" }, p.provider), h("td", { "data-label": "Version", class: "mono" }, p.version),
            h("td", { "data-label": "Instances", class: "num" }, String(p.instances.size)), h("td", { "data-label": "Tools", class: "num" }, String(p.tools)),
            h("td", { "data-label": "Configuration", class: "wrap small mono" }, p.config || "—"))))),
        h("h2", {}, "Tools"),
        h("table", { class: "tbl cards", "aria-label": "Tools" },
          h("thead", {}, h("tr", {}, ["Tool", "Provider (instances)", "Description"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, r.tools.map((t) => h("tr", {},
            h("td", { "data-label": "Tool" }, h("a", { class: "mono", href: "#/tools/" + encodeURIComponent(t.tool) }, t.tool), t.disagree ? h("div", {}, warnBadge("instances disagree")) : null),
            h("td", { "data-label": "Provider" }, t.providers.map((p) => `${p.provider} (${p.instances.length})${p.site ? " at " + p.site : ""}`).join(", ")),
            h("td", { "data-label": "Description", class: "wrap" }, t.description || ""))))),
      ]);
  }

  // skeleton writes example arguments from a JSON schema's required
  // properties.
  function skeleton(schema) {
    const out = {};
    if (!schema || typeof schema !== "object" || !schema.properties) return out;
    for (const k of schema.required || []) {
      const p = schema.properties[k] || {};
      const t = Array.isArray(p.type) ? p.type[0] : p.type;
      out[k] = p.default !== undefined ? p.default : t === "integer" || t === "number" ? 0 : t === "boolean" ? false : t === "array" ? [] : t === "object" ? {} : "";
    }
    return out;
  }

  async function pageTool(root, name, params, live) {
    const body = h("div", {});
    append(root, [h("div", { class: "title-row" }, h("h1", { class: "mono" }, name)), body]);
    openStream("", {});
    let r;
    try { r = await api("/api/tools"); } catch (err) { if (live()) { replace(body, errorBox(err)); focusTitle(); } return; }
    if (!live()) return;
    const t = r.tools.find((x) => x.tool === name);
    if (!t) {
      replace(body, h("div", { class: "error", role: "alert" }, `no provider serves the tool ${name} now (list the tools with skillbus tools)`), h("p", {}, h("a", { href: "#/tools" }, "All tools")));
      focusTitle();
      return;
    }
    const args = h("textarea", { id: "t-args", rows: "6", spellcheck: "false", "aria-describedby": "t-args-hint t-args-error" });
    args.value = pretty(skeleton(t.schema));
    const timeout = h("input", { id: "t-timeout", type: "number", min: "1", max: "600", placeholder: "30", inputmode: "numeric" });
    const argErr = h("p", { id: "t-args-error", class: "field-error", "aria-live": "polite" });
    const out = h("div", { "aria-live": "polite" });
    const refused = t.call_refused ? h("p", { class: "notice", id: "t-call-refused" }, t.call_refused) : null;
    const submit = h("button", { type: "submit", class: "primary", id: "call-tool", disabled: !!refused, "aria-describedby": refused ? "t-call-refused" : null }, "Call " + name);
    const form = h("form", { class: "panel", "aria-label": "Call " + name, onsubmit: async (ev) => {
      ev.preventDefault();
      argErr.textContent = ""; args.removeAttribute("aria-invalid");
      let parsed;
      try { parsed = JSON.parse(args.value || "{}"); } catch (e) {
        argErr.textContent = "not JSON: " + e.message; args.setAttribute("aria-invalid", "true"); args.focus(); return;
      }
      submit.disabled = true;
      replace(out, h("p", { class: "muted" }, "Calling…"));
      try {
        const res = await post("/api/tools/" + encodeURIComponent(name) + "/call", { args: parsed, timeout_ms: timeout.value ? parseInt(timeout.value, 10) * 1000 : 0 });
        if (live()) replace(out, h("p", { class: "ok-box", role: "status" }, `Answered in ${fmtMs(res.ms)}.`), h("pre", { class: "block", tabindex: "0", "aria-label": "Result" }, pretty(res.result)));
      } catch (err) {
        if (live()) replace(out, errorBox(err, "The call failed"));
      } finally {
        submit.disabled = !!refused;
      }
    } },
    h("h2", {}, "Call it"),
    refused,
    h("div", { class: "field" }, h("label", { for: "t-args" }, "Arguments (a JSON object)"), h("p", { class: "hint", id: "t-args-hint" }, "Checked against the tool's schema by its provider; a call that does not fit is answered with code 400."), args, argErr),
    h("div", { class: "field" }, h("label", { for: "t-timeout" }, "Timeout (seconds)"), timeout),
    h("div", { class: "actions" }, submit));
    replace(body,
      t.description ? h("p", {}, t.description) : null,
      t.disagree ? h("p", { class: "notice" }, "Instances of this tool disagree (different configurations or schemas): calls go to either at random.") : null,
      h("dl", { class: "kv" },
        h("dt", {}, "Subject"), h("dd", { class: "mono" }, t.subject),
        h("dt", {}, "Providers"), h("dd", {}, h("ul", {}, t.providers.map((p) => h("li", {}, `${p.provider} ${p.version}: ${p.instances.length} instance${p.instances.length === 1 ? "" : "s"}${p.site ? " at " + p.site : ""}`, p.config ? h("div", { class: "muted small mono wrap" }, p.config) : null))))),
      h("div", { class: "cols two" },
        h("div", {}, form, out),
        h("div", {}, h("h2", {}, "Argument schema"), t.schema ? h("pre", { class: "block", tabindex: "0", "aria-label": "Argument schema" }, pretty(t.schema)) : h("p", { class: "muted" }, "The provider publishes no schema."))));
    focusTitle();
  }

  // ---------------------------------------------------------------- start

  // The Times switch: kept, and the page drawn again in the new form.
  const modeSel = document.getElementById("time-mode");
  const zoneOpt = modeSel.querySelector('option[value="local"]');
  zoneOpt.textContent = `local (${fmtZone()})`;
  modeSel.value = timeMode();
  modeSel.addEventListener("change", () => {
    try { localStorage.setItem(TIME_KEY, modeSel.value); } catch (e) { /* storage off: this page only */ }
    route();
  });
  window.addEventListener("storage", (ev) => { if (ev.key === TIME_KEY) { modeSel.value = timeMode(); route(); } });

  document.getElementById("skip").addEventListener("click", (ev) => { ev.preventDefault(); main.focus(); });
  window.addEventListener("hashchange", route);
  // A page kept in the back/forward cache must not keep its event stream
  // open (browsers allow a few connections per server): close it when the
  // page is hidden, and open the page again when it comes back.
  window.addEventListener("pagehide", () => {
    for (const f of page.cleanup.splice(0)) { try { f(); } catch (e) { /* closing */ } }
  });
  window.addEventListener("pageshow", (ev) => { if (ev.persisted) route(); });
  api("/api/info").then((info) => {
    showLimits(info);
    const brand = document.querySelector(".brand");
    brand.setAttribute("title", `skillbus ${info.version}` + (info.nats_url ? ` on ${info.nats_url}` : ""));
  }).catch(() => {});
  route();
})();
