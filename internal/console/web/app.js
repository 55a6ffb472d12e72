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
  function timeEl(iso, rel) {
    if (!iso || !fmtTime(iso)) return h("span", { class: "muted" }, "—");
    return h("time", { datetime: iso, title: fmtTime(iso) }, rel ? fmtAgo(iso) : fmtTime(iso));
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
  function between(a, b) {
    if (!a) return null;
    const t0 = new Date(a).getTime(), t1 = b ? new Date(b).getTime() : Date.now();
    if (isNaN(t0) || isNaN(t1) || new Date(a).getFullYear() < 1971) return null;
    return Math.max(0, t1 - t0);
  }
  function pretty(v) {
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }
  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1048576).toFixed(1)} MiB`;
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
  const TRIGGERS = ["manual", "boot", "schedule", "seq_call"];
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
  const ACTIONS = "#cancel-run, #rerun-run, #retry-run, #confirm-cancel, #open-run-form, #start-run, #call-tool";
  let natsDown = "";
  let liveText = "connecting…";
  function showNats(n) {
    natsDown = n && !n.connected ? `reconnecting to NATS (since ${fmtTime(n.since).slice(11) || "now"} ${fmtZone()})` : "";
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
        b.disabled = false;
        delete b.dataset.natsOff;
        b.removeAttribute("title");
      }
    }
  }
  new MutationObserver(() => { if (natsDown) applyNats(); }).observe(document.getElementById("main"), { childList: true, subtree: true });

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

  async function pageRuns(root, params, live) {
    const f = {
      status: params.get("status") || "", sequence: params.get("sequence") || "",
      trigger: params.get("trigger") || "", since: params.get("since") || "", until: params.get("until") || "",
    };
    const countsBox = h("ul", { class: "counts", "aria-label": "Runs by status" });
    const tableBox = h("div", {});
    const note = h("div", { "aria-live": "polite" });
    const pager = h("div", { class: "pager" });
    const seqOptions = h("datalist", { id: "seq-names" });

    const statusSel = h("select", { id: "f-status", name: "status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
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
      h("div", { class: "field" }, h("label", { for: "f-status" }, "Status"), statusSel),
      h("div", { class: "field" }, h("label", { for: "f-sequence" }, "Sequence"), seqIn),
      h("div", { class: "field" }, h("label", { for: "f-trigger" }, "Trigger"), trigSel),
      h("div", { class: "field" }, h("label", { for: "f-since" }, "Created"), sinceSel),
      h("button", { type: "submit" }, "Filter"),
      h("button", { type: "button", class: "link", onclick: () => { statusSel.value = trigSel.value = sinceSel.value = seqIn.value = ""; custom.hidden = true; apply(); } }, "Clear filters"));
    for (const el of [statusSel, trigSel]) el.addEventListener("change", apply);
    sinceSel.addEventListener("change", () => {
      custom.hidden = sinceSel.value !== "custom";
      if (sinceSel.value !== "custom") apply();
    });
    for (const el of [fromIn, toIn]) el.addEventListener("change", apply);
    seqIn.addEventListener("change", apply);

    append(root, [
      h("div", { class: "title-row" }, h("h1", {}, "Runs"), h("a", { class: "button", href: "#/seqs" }, "Start a run…")),
      h("p", { class: "muted" }, "Newest first; updated live. Each run is one execution of a sequence (", h("code", {}, "skillbus runs"), ")."),
      countsBox, form, custom, note, tableBox, pager, seqOptions,
    ]);
    focusTitle();
    api("/api/seqs").then((r) => { if (live()) replace(seqOptions, r.sequences.map((s) => h("option", { value: s.name }))); }).catch(() => {});

    let before = "";
    function current() {
      const q = new URLSearchParams();
      if (statusSel.value) q.set("status", statusSel.value);
      if (seqIn.value.trim()) q.set("sequence", seqIn.value.trim());
      if (trigSel.value) q.set("trigger", trigSel.value);
      if (sinceSel.value === "custom") {
        if (fromIn.value) q.set("since", new Date(fromIn.value).toISOString());
        if (toIn.value) q.set("until", new Date(toIn.value).toISOString());
      } else if (sinceSel.value) q.set("since", sinceSel.value);
      return q;
    }
    function apply() {
      before = "";
      const q = current();
      history.replaceState(null, "", "#/runs" + (q.toString() ? "?" + q : ""));
      load();
    }
    let shown = new Map();
    async function load() {
      const q = current();
      if (before) q.set("before", before);
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
      renderCounts(pg);
      const rows = pg.runs.map((r) => {
        const prev = shown.get(r.run_id);
        const fresh = prev !== undefined && (prev.status !== r.status || prev.finished_groups !== r.finished_groups) || (shown.size > 0 && prev === undefined);
        return runRow(r, fresh);
      });
      shown = new Map(pg.runs.map((r) => [r.run_id, r]));
      if (!pg.runs.length) {
        replace(tableBox, h("p", { class: "muted" }, pg.total === 0 && !q.toString() ? "No runs yet. Start one from a sequence's page, or with skillbus run." : "No runs match these filters."));
      } else {
        replace(tableBox, h("table", { class: "tbl cards", "aria-label": "Runs" },
          h("thead", {}, h("tr", {}, ["Run", "Sequence", "Status", "Trigger", "Groups", "Created", "Took", "Error"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, rows)));
      }
      replace(pager,
        h("span", { class: "muted", "aria-live": "polite" }, `${pg.runs.length} of ${pg.total} run${pg.total === 1 ? "" : "s"}`),
        before ? h("button", { type: "button", onclick: () => { before = ""; load(); } }, "Newest") : null,
        pg.next ? h("button", { type: "button", onclick: () => { before = pg.next; load(); } }, "Older runs") : null);
    }
    function renderCounts(pg) {
      if (!pg.counts) { clear(countsBox); return; }
      const total = Object.values(pg.counts).reduce((a, b) => a + b, 0);
      const btn = (status, label, n) => h("li", {}, h("button", {
        type: "button", "aria-pressed": statusSel.value === status ? "true" : "false",
        onclick: () => { statusSel.value = status; apply(); },
      }, status ? badge(status) : label, h("span", { class: "n" }, String(n)), h("span", { class: "sr-only" }, " runs")));
      replace(countsBox, btn("", "all", total), STATUSES.map((s) => btn(s, s, pg.counts[s] || 0)));
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

  function runRow(r, fresh) {
    const took = finished(r.status) ? between(r.created_at, r.finished_at) : between(r.created_at);
    return h("tr", { class: fresh ? "fresh" : null, "data-run": r.run_id },
      h("td", { "data-label": "Run" }, h("a", { class: "mono wrap", href: "#/runs/" + encodeURIComponent(r.run_id) }, r.run_id)),
      h("td", { "data-label": "Sequence" }, seqLink(r.sequence)),
      h("td", { "data-label": "Status" }, badge(r.status)),
      h("td", { "data-label": "Trigger" }, (r.trigger || "manual").replace("_", " ")),
      h("td", { "data-label": "Groups", class: "num" }, r.groups ? `${r.finished_groups}/${r.groups}` : String(r.finished_groups || 0)),
      h("td", { "data-label": "Created", class: "num" }, timeEl(r.created_at, true)),
      h("td", { "data-label": "Took", class: "num" }, took === null ? "" : (finished(r.status) ? "" : "for ") + fmtMs(took)),
      h("td", { "data-label": "Error", class: r.error ? null : "empty" }, r.error ? h("span", { class: "clip", title: r.error }, r.error) : ""));
  }

  // ================================================================= Run

  async function pageRun(root, id, params, live) {
    const head = h("div", {});
    const actions = h("div", { class: "actions" });
    const actionMsg = h("div", { "aria-live": "polite" });
    const graphBox = h("div", {});
    const detail = h("section", { class: "panel detail", "aria-labelledby": "detail-title", hidden: true });
    const groupsBox = h("div", {});
    const timelineBox = h("div", {});
    const outputsBox = h("div", {});
    append(root, [
      h("div", { class: "title-row" }, h("h1", {}, "Run ", h("span", { class: "mono" }, id)), h("span", { id: "run-status" })),
      head, actions, actionMsg,
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
        h("dt", {}, "Trigger"), h("dd", {}, (st.trigger || "manual").replace("_", " ") + (st.agent ? ` (agent ${st.agent}, boot ${st.boot_id || ""})` : "") + (st.scheduled_at ? ` (tick ${fmtTime(st.scheduled_at)})` : "")),
        h("dt", {}, "Worker"), h("dd", {}, st.worker || "—", st.heartbeat && st.status === "running" ? h("span", { class: "muted" }, " · heartbeat ", timeEl(st.heartbeat, true)) : null, st.attempt > 1 ? ` · attempt ${st.attempt}` : ""),
        h("dt", {}, "Created"), h("dd", {}, timeEl(st.created_at)),
        st.started_at ? [h("dt", {}, "Started"), h("dd", {}, timeEl(st.started_at))] : null,
        st.finished_at ? [h("dt", {}, "Finished"), h("dd", {}, timeEl(st.finished_at))] : null,
        took !== null && st.started_at ? [h("dt", {}, finished(st.status) ? "Took" : "Running for"), h("dd", {}, fmtMs(took))] : null,
        st.cancel ? [h("dt", {}, "Cancel"), h("dd", {}, `asked by ${st.cancel.by || "someone"} at ${fmtTime(st.cancel.at)}` + (st.cancel.reason ? `: ${st.cancel.reason}` : ""))] : null,
      );
      replace(head, kv,
        // A user's own cancel is said by the Cancel line above, not as an error.
        st.error && !(st.status === "cancelled" && st.cancel) ? h("div", { class: "error", role: "alert" }, st.error) : null,
        st.args && Object.keys(st.args).length ? h("details", { open: true }, h("summary", {}, "Arguments"), h("pre", { class: "block" }, pretty(st.args))) : h("p", { class: "muted" }, "No run arguments."),
        v.sequence_note ? h("p", { class: "notice" }, v.sequence_note) : null);
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
      replace(actions, !finished(st.status) ? cancelBtn : null, retryBtn, rerunBtn,
        h("a", { class: "button", href: "#/runs?sequence=" + encodeURIComponent(st.sequence || "") }, "Runs of this sequence"));
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
          calls: g.tools.map((c) => ({ tool: c.tool, as: c.as || "", args: c.args || {}, fallback: c.fallback || "", for_each: c.for_each || "", max_parallel: c.max_parallel || 0 })),
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
        } else if (st.status === "queued" || st.status === "interrupted" || running) {
          g.status = st.status === "interrupted" && i === st.finished_groups ? "interrupted" : "pending";
        } else if (st.status === "cancelled" || st.status === "failed") {
          g.status = i < st.finished_groups ? "succeeded" : "not_run";
        } else {
          g.status = "pending";
        }
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
      replace(groupsBox, h("details", { open: window.innerWidth < 720 }, h("summary", {}, "Groups and calls as a list"),
        h("ol", { class: "groups" }, m.groups.map((g, gi) => h("li", {},
          h("button", { type: "button", class: "link", onclick: () => select("group", gi) }, g.name), " ", badge(g.status),
          g.detail ? h("span", { class: "muted small" }, " " + g.detail) : null,
          g.when ? h("span", { class: "muted small" }, ` when ${g.when}` + (g.whenNote ? ` → ${g.whenNote}` : "")) : null,
          h("ul", {}, g.calls.map((c, ci) => h("li", {},
            h("button", { type: "button", class: "link mono", onclick: () => select("call", gi, ci) }, c.tool),
            c.as ? h("span", { class: "muted small" }, "→ " + c.as) : null, badge(c.status),
            c.detail ? h("span", { class: "muted small" }, c.detail) : null))))))));
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
        d.length ? h("table", { class: "small" },
          h("thead", {}, h("tr", {}, h("th", {}, "Item"), h("th", {}, "Status"), h("th", {}, "Attempts"), h("th", {}, "Time"), h("th", {}, "Error"))),
          h("tbody", {}, d.map((it) => h("tr", {},
            h("td", { class: "mono" }, String(it.index)), h("td", {}, badge(it.status)), h("td", {}, String(it.attempts)),
            h("td", {}, it.duration ? fmtMs(goDur(it.duration)) : "—"), h("td", {}, it.error || ""))))) : h("p", { class: "muted small" }, "Every item succeeded at its first attempt."),
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
          h("pre", { class: "block" }, s.truncated ? s.preview + "\n… (cut: the whole value is " + bytes(s.size) + ")" : pretty(s.value)));
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
          c.args !== undefined ? [h("h4", {}, "Arguments (as written in the sequence)"), h("pre", { class: "block" }, pretty(c.args))] : h("p", { class: "muted" }, "The sequence's definition is not available, so the arguments are unknown."),
          reads.length ? [h("h4", {}, "Values it reads ($args)"), h("pre", { class: "block" }, pretty(values))] : null,
          c.as ? [h("h4", {}, "Output"), slotBlock(c.as)] : null);
      } else {
        const r = g.result || {};
        replace(detail,
          h("h3", { id: "detail-title", tabindex: "-1" }, `Group ${sel.group + 1}: ${g.name}`),
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
      replace(timelineBox,
        model.view.timeline_note ? h("p", { class: "notice" }, model.view.timeline_note) : null,
        h("ol", { class: "timeline", "aria-label": "Events of the run" }, items.map((it) => h("li", {},
          h("time", { datetime: it.at }, fmtTime(it.at)), it.text, it.status ? [" ", badge(it.status)] : null))));
    }

    function renderOutputs() {
      const v = model.view;
      const names = Object.keys(v.slots || {}).sort();
      replace(outputsBox,
        v.slots_error ? h("div", { class: "error" }, v.slots_error) : null,
        !names.length ? h("p", { class: "muted" }, "No slots written yet.") :
          names.map((k) => {
            const s = v.slots[k];
            return h("details", {}, h("summary", {}, h("span", { class: "mono" }, k), h("span", { class: "muted small" }, ` ${bytes(s.size)}`)),
              h("pre", { class: "block" }, s.truncated ? s.preview + "\n… (cut: the whole value is " + bytes(s.size) + ")" : pretty(s.value)));
          }));
    }

    const refresh = debounce(() => load("state"), 150);
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

  // eventText is a timeline entry; runError, the run's error shown above
  // the page, is not said again by its finished event.
  function eventText(ev, runError) {
    switch (ev.kind) {
      case "started": return `started on worker ${ev.worker || "?"}` + (ev.attempt > 1 ? ` (attempt ${ev.attempt})` : "");
      case "group": return `group ${ev.group} of ${ev.groups || "?"} "${ev.group_name || ""}" finished` + (!ev.error ? "" : runError && runError.includes(ev.error) ? " (the run's error, above)" : `: ${ev.error}`);
      case "interrupted": return `interrupted on worker ${ev.worker || "?"} after group ${ev.group || 0}` + (ev.error ? ` (${ev.error})` : "") + "; waiting for a worker to resume it";
      case "resumed": return `resumed by worker ${ev.worker || "?"} after group ${ev.group || 0} (attempt ${ev.attempt || "?"})`;
      case "cancelling": return `cancel asked` + (ev.by ? ` by ${ev.by}` : "") + (ev.reason ? `: ${ev.reason}` : "");
      case "finished": return `finished: ${ev.status || "?"}` + (ev.error && ev.error !== runError ? ` (${ev.error})` : "");
      default: return ev.kind;
    }
  }

  // =========================================================== Sequences

  function nextText(s) {
    if (s.next_tick) return h("span", {}, "next ", timeEl(s.next_tick), h("span", { class: "muted" }, ` (${fmtAgo(s.next_tick)})`));
    return h("span", { class: "muted" }, s.schedule_note || "");
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
            s.schedule ? h("div", {}, h("span", { class: "mono" }, s.schedule), s.timezone ? ` (${s.timezone})` : "", h("br"), nextText(s)) : null),
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
  function fieldFor(key, type) {
    const id = "arg-" + key;
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
        h("dt", {}, "Schedule"), h("dd", {}, d.schedule ? h("span", {}, h("span", { class: "mono" }, d.schedule), d.timezone ? ` in ${d.timezone}` : " (UTC)", " · ", nextText(d)) : "none (runs on demand)"),
        d.schedule_state ? [h("dt", {}, "Schedule state"), h("dd", {}, badge(d.schedule_state.status === "set" ? "succeeded" : "failed", false, d.schedule_state.status), " ", d.schedule_state.error || `set ${fmtAgo(d.schedule_state.at)}`)] : null,
        h("dt", {}, "Source"), h("dd", { class: "wrap" }, d.source || "created over NATS (seq.create)")),
      h("div", { class: "actions" }, runBtn, h("a", { class: "button", href: "#/runs?sequence=" + encodeURIComponent(name) }, "Its runs")),
      formBox,
      h("h2", { id: "shape-title" }, "Shape"),
      h("div", { class: "graph-wrap", id: "seq-graph", tabindex: "0", role: "region", "aria-labelledby": "shape-title" },
        G.draw({ plain: true, args: sigKeys.map((k) => ({ key: k, type: d.signature[k] })), groups: sq.groups.map((g) => ({
          name: g.name, in: g.in || {}, out: g.out || {}, when: g.when || "",
          detail: `${g.parallel ? "parallel" : "in order"} · ${g.timeout} timeout`,
          calls: g.tools.map((c) => ({ tool: c.tool, as: c.as || "", for_each: c.for_each || "" })),
        })) }, { label: "The shape of " + name })),
      h("h2", {}, "Source"),
      h("p", { class: "muted small" }, "The stored form (canonical JSON, as ", h("code", {}, `skillbus seqs show ${name} --json`), " prints it)."),
      h("pre", { class: "block" }, pretty(sq)));
    fitGraph(document.getElementById("seq-graph"));
    openStream("", { registry: (ev) => { if (ev.kind === "sequence" && ev.name === name) toast(`The sequence ${name} was ${ev.op === "put" ? "changed" : ev.op}; reload the page to see it.`); } });
    focusTitle();

    function showForm() {
      runBtn.setAttribute("aria-expanded", "true");
      const fields = sigKeys.map((k) => fieldFor(k, d.signature[k]));
      const general = h("div", { "aria-live": "assertive" });
      const submit = h("button", { type: "submit", class: "primary", id: "start-run" }, "Start the run");
      const form = h("form", { id: "run-form", class: "panel", novalidate: true, onsubmit: async (ev) => {
        ev.preventDefault();
        const args = {};
        for (const [i, k] of sigKeys.entries()) {
          const f = fields[i];
          f.err.textContent = ""; f.input.removeAttribute("aria-invalid");
          if (d.signature[k] === "bool" && f.input.value === "") continue; // reported as missing
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
          for (const [i, k] of sigKeys.entries()) {
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
      h("h2", {}, "Run " + name),
      sigKeys.length ? h("p", { class: "muted small" }, "Each value is read by its declared type, as ", h("code", {}, "skillbus run --arg KEY=VALUE"), " reads it.") : h("p", {}, "This sequence takes no arguments."),
      fields.map((f) => f.field), general,
      h("div", { class: "actions" }, submit, h("button", { type: "button", onclick: () => { clear(formBox); runBtn.setAttribute("aria-expanded", "false"); runBtn.focus(); } }, "Close")));
      replace(formBox, form);
      (fields[0] ? fields[0].input : submit).focus();
    }
    if (params.get("run") === "1") showForm();
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
    const brand = document.querySelector(".brand");
    brand.setAttribute("title", `skillbus ${info.version}` + (info.nats_url ? ` on ${info.nats_url}` : ""));
  }).catch(() => {});
  route();
})();
