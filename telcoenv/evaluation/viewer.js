"use strict";
// The telcoenv report viewer. It reads the page's JSON data, shows the report's tables and plots,
// and the episode table one page at a time; an episode's transcript is inflated and built only
// when its row is opened. Every text goes into the page as text (text nodes), never as HTML:
// agents write arbitrary text.
(function () {
  const DATA = JSON.parse(document.getElementById("telcoenv-data").textContent);
  const EPISODES = DATA.episodes;
  const METRICS = DATA.metrics;
  const FILTERS = [
    ["run", "run"], ["split", "split"], ["tier", "tier"], ["domain", "domain"],
    ["intent", "intent"], ["blueprint", "blueprint"], ["lang", "language"],
    ["list", "intent list"], ["status", "status"],
  ];
  const COLUMNS = [
    ["run", "run"], ["split", "split"], ["tier", "tier"], ["intent", "intent"],
    ["blueprint", "blueprint"], ["sample", "sample"], ["lang", "lang"], ["list", "list"],
    ["status", "status"], ["steps", "steps"],
  ];
  const NUMERIC = new Set(["sample", "steps", ...METRICS]);
  const OPERATORS = [">=", "<=", "<", ">", "="];
  const PAGE_SIZES = [50, 100, 250, 1000];
  const LONG_OUTPUT = 600; // characters: a longer tool output starts folded

  const state = {
    filters: {}, conditions: [], search: "", sortKey: null, desc: false,
    page: 0, pageSize: 100, open: new Set(),
  };
  let shown = []; // indexes into EPISODES that pass the filters, in display order

  // --- DOM helpers: every string child becomes a text node --------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (name === "class") node.className = value;
      else if (name === "on") {
        for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
      } else node.setAttribute(name, value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fmt(value) {
    return value === null || value === undefined ? "-" : String(value);
  }

  function jsonText(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function pretty(text) {
    // A tool output is JSON as the agent saw it; indented, it can be read.
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (error) {
      return text;
    }
  }

  function label(text) {
    return el("div", { class: "label" }, text);
  }

  // --- summary tables and plots -----------------------------------------------------------------

  function renderSummary() {
    document.getElementById("subtitle").textContent =
      `${EPISODES.length.toLocaleString("en")} episodes of ${DATA.runs.join(", ")}; ` +
      `BRS weights ${DATA.report.weights}; telcoenv ${DATA.version}`;
    const holder = document.getElementById("tables");
    for (const table of DATA.tables) {
      const details = el("details", { class: "table" }, el("summary", {}, table.title),
        el("table", { class: "small" },
          el("thead", {}, el("tr", {}, table.header.map((h) => el("th", {}, h)))),
          el("tbody", {}, table.rows.map((row) => el("tr", {}, row.map((cell) =>
            el("td", { class: /^-?[\d.]+$|^-$/.test(cell) ? "num" : "" }, cell)))))));
      details.open = !table.title.startsWith("Per "); // the long breakdowns start folded
      holder.append(details);
    }
    const plots = DATA.plots.map((plot) => el("figure", {},
      el("img", { src: plot.src, alt: plot.name }), el("figcaption", {}, plot.name)));
    document.getElementById("plot-list").append(
      plots.length ? el("div", { class: "figures" }, plots) : "no plots");
  }

  // --- filters ----------------------------------------------------------------------------------

  function filterSelect(key) {
    const counts = new Map();
    for (const ep of EPISODES) counts.set(ep[key], (counts.get(ep[key]) || 0) + 1);
    const values = [...counts.keys()].sort();
    const select = el("select", { "data-filter": key },
      el("option", { value: "" }, `all (${values.length})`),
      values.map((v) => el("option", { value: v }, `${v} (${counts.get(v)})`)));
    select.addEventListener("change", () => {
      state.filters[key] = select.value;
      update();
    });
    return select;
  }

  function renderFilters() {
    const holder = document.getElementById("filters");
    for (const [key, text] of FILTERS) holder.append(el("label", {}, text, filterSelect(key)));
    const search = el("input", { type: "search", id: "search", placeholder: "key, episode id" });
    search.addEventListener("input", () => {
      state.search = search.value.trim().toLowerCase();
      update();
    });
    holder.append(el("label", {}, "search", search));
    const add = el("button", { id: "add-condition", type: "button" }, "+ add");
    add.addEventListener("click", addCondition);
    holder.append(el("label", {}, "metric condition", add));
  }

  function addCondition() {
    // A new condition reads SAS >= 1; its controls change it in place.
    const condition = { metric: "sas", op: ">=", value: 1 };
    state.conditions.push(condition);
    const metric = el("select", { class: "metric" },
      METRICS.map((m) => el("option", { value: m }, m.toUpperCase())));
    const op = el("select", { class: "op" }, OPERATORS.map((o) => el("option", { value: o }, o)));
    const value = el("input", { class: "value", type: "number", step: "0.05", min: "0", max: "1" });
    metric.value = condition.metric;
    op.value = condition.op;
    value.value = String(condition.value);
    const read = () => {
      condition.metric = metric.value;
      condition.op = op.value;
      condition.value = value.value === "" ? NaN : Number(value.value);
      update();
    };
    for (const control of [metric, op, value]) control.addEventListener("input", read);
    const remove = el("button", { type: "button", title: "remove" }, "×");
    const row = el("span", { class: "condition" }, metric, op, value, remove);
    remove.addEventListener("click", () => {
      state.conditions.splice(state.conditions.indexOf(condition), 1);
      row.remove();
      update();
    });
    document.getElementById("conditions").append(row);
    update();
  }

  function passes(value, op, limit) {
    if (value === null || value === undefined || Number.isNaN(limit)) return false;
    switch (op) {
      case ">=": return value >= limit;
      case "<=": return value <= limit;
      case "<": return value < limit;
      case ">": return value > limit;
      default: return Math.abs(value - limit) < 1e-9;
    }
  }

  function matches(ep) {
    for (const [key, value] of Object.entries(state.filters)) {
      if (value !== "" && String(ep[key]) !== value) return false;
    }
    for (const c of state.conditions) if (!passes(ep.m[c.metric], c.op, c.value)) return false;
    return !state.search || ep.key.toLowerCase().includes(state.search) ||
      ep.episode.toLowerCase().includes(state.search);
  }

  function valueOf(ep, key) {
    return METRICS.includes(key) ? ep.m[key] : ep[key];
  }

  function compare(a, b) {
    const x = valueOf(EPISODES[a], state.sortKey), y = valueOf(EPISODES[b], state.sortKey);
    if (x === y) return a - b;
    if (x === null || x === undefined) return 1; // missing values last, either way
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * (state.desc ? -1 : 1);
  }

  function update() {
    shown = [];
    for (let i = 0; i < EPISODES.length; i++) if (matches(EPISODES[i])) shown.push(i);
    if (state.sortKey) shown.sort(compare);
    state.page = 0;
    renderRows();
  }

  // --- the episode table, one page at a time ----------------------------------------------------

  function renderHead() {
    const head = document.getElementById("episode-head");
    for (const [key, text] of [...COLUMNS, ...METRICS.map((m) => [m, m.toUpperCase()])]) {
      const th = el("th", { "data-key": key, class: NUMERIC.has(key) ? "num" : "" }, text);
      th.addEventListener("click", () => {
        state.desc = state.sortKey === key ? !state.desc : false;
        state.sortKey = key;
        for (const other of head.children) other.classList.remove("sorted", "desc");
        th.classList.add("sorted");
        th.classList.toggle("desc", state.desc);
        update();
      });
      head.append(th);
    }
  }

  function metricCell(value) {
    if (value === null || value === undefined) return el("td", { class: "num" }, "-");
    const tone = value >= 1 ? " full" : value <= 0 ? " zero" : "";
    return el("td", { class: `num${tone}` }, value.toFixed(3));
  }

  function episodeRow(index) {
    const ep = EPISODES[index];
    const cells = COLUMNS.map(([key]) => key === "status"
      ? el("td", {}, el("span", { class: `status ${ep.status}` }, ep.status))
      : el("td", { class: NUMERIC.has(key) ? "num" : "" }, fmt(ep[key])));
    const row = el("tr", { class: "episode", "data-index": index },
      cells, METRICS.map((m) => metricCell(ep.m[m])));
    row.addEventListener("click", () => toggle(index, row));
    return row;
  }

  function renderRows() {
    const pages = Math.max(1, Math.ceil(shown.length / state.pageSize));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * state.pageSize;
    const fragment = document.createDocumentFragment();
    for (const index of shown.slice(start, start + state.pageSize)) {
      const row = episodeRow(index);
      fragment.append(row);
      if (state.open.has(index)) {
        row.classList.add("open");
        fragment.append(transcriptRow(index));
      }
    }
    document.getElementById("episode-rows").replaceChildren(fragment);
    document.getElementById("count").textContent =
      `${shown.length.toLocaleString("en")} of ${EPISODES.length.toLocaleString("en")} episodes`;
    for (const id of ["pager-top", "pager-bottom"]) renderPager(document.getElementById(id), pages);
  }

  function renderPager(holder, pages) {
    const button = (cls, text, page) => {
      const b = el("button", { type: "button", class: cls }, text);
      b.addEventListener("click", () => {
        state.page = page;
        renderRows();
      });
      return b;
    };
    const size = el("select", { class: "page-size" },
      PAGE_SIZES.map((n) => el("option", { value: n }, `${n} per page`)));
    size.value = String(state.pageSize);
    size.addEventListener("change", () => {
      state.pageSize = Number(size.value);
      renderRows();
    });
    holder.replaceChildren(size,
      button("first", "«", 0),
      button("prev", "‹", Math.max(0, state.page - 1)),
      ` page ${state.page + 1} of ${pages} `,
      button("next", "›", Math.min(pages - 1, state.page + 1)),
      button("last", "»", pages - 1));
  }

  function toggle(index, row) {
    if (state.open.delete(index)) {
      row.classList.remove("open");
      row.nextElementSibling.remove();
    } else {
      state.open.add(index);
      row.classList.add("open");
      row.after(transcriptRow(index));
    }
  }

  // --- one episode's transcript (built on opening) ----------------------------------------------

  // The transcripts come in chunks of DATA.chunk episodes: zlib-compressed JSON lists in base64.
  // A chunk is inflated the first time one of its episodes is opened.
  const chunks = new Map(); // chunk index -> Promise of its transcripts

  async function inflate(base64) {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return JSON.parse(await new Response(stream).text());
  }

  function detailOf(index) {
    const chunk = Math.floor(index / DATA.chunk);
    if (!chunks.has(chunk)) chunks.set(chunk, inflate(DATA.details[chunk]));
    return chunks.get(chunk).then((details) => details[index % DATA.chunk]);
  }

  function transcriptRow(index) {
    const cell = el("td", { colspan: COLUMNS.length + METRICS.length }, "loading…");
    detailOf(index).then(
      (detail) => cell.replaceChildren(transcript(EPISODES[index], detail)),
      (error) => cell.replaceChildren(
        el("pre", { class: "error" }, `cannot read the transcript: ${error}`)));
    return el("tr", { class: "transcript" }, cell);
  }

  function transcript(ep, d) {
    const meta = [ep.key, ep.episode, d.ended ? `ended: ${d.ended}` : null,
      typeof d.duration_s === "number" ? `${d.duration_s.toFixed(2)} s` : null,
      `embedder: ${d.embedder || "none"}`];
    return el("div", { class: "episode-detail" },
      el("div", { class: "meta" }, meta.filter(Boolean).join(" · ")),
      d.error ? el("pre", { class: "error" }, d.error) : null,
      el("div", { class: "columns" },
        el("div", {}, el("h4", {}, "Why it lost"), whyList(d.why)),
        el("div", {}, el("h4", {}, "Metrics (as the report counts them)"), metricsTable(d))),
      d.events ? [el("h4", {}, "Transcript"), conversation(d), submissionBlock(d)] : null,
      d.changes ? changesBlock(d.changes) : null,
      d.verification ? verificationBlock(d.verification) : null,
      d.outcome ? outcomeBlock(d.outcome) : null,
      d.usage ? [el("h4", {}, "Agent usage"), el("pre", {}, jsonText(d.usage))] : null);
  }

  function whyList(reasons) {
    if (!reasons.length) {
      return el("p", { class: "pass" }, "Nothing lost: every metric at its best.");
    }
    return el("ul", { class: "why" }, reasons.map((r) =>
      el("li", {}, el("span", { class: "tag" }, r.metric.toUpperCase()), r.text)));
  }

  function metricsTable(d) {
    const rows = METRICS.map((m) => el("tr", {}, el("th", {}, m.toUpperCase()),
      metricCell(d.metrics[m])));
    if (d.predicted_chain) {
      const chain = (tools) => tools.join(" › ") || "(no call)";
      rows.push(el("tr", {}, el("th", {}, "chain"), el("td", {}, chain(d.predicted_chain))));
      rows.push(el("tr", {}, el("th", {}, "gold chain"),
        el("td", {}, chain(d.gold.chain.map((c) => c.tool)))));
    }
    return el("table", { class: "small metrics" }, el("tbody", {}, rows));
  }

  function turn(who, cls, text) {
    // The text's own direction (Arabic reads right to left), not that of the speaker's name.
    return el("div", { class: `turn ${cls}` },
      el("span", { class: "who" }, who), el("div", { dir: "auto" }, text));
  }

  function outputBlock(text) {
    const shownText = pretty(text);
    if (shownText.length <= LONG_OUTPUT) {
      return el("div", {}, label("output"), el("pre", { class: "output" }, shownText));
    }
    const block = el("details", { class: "output" },
      el("summary", {}, `output (${text.length.toLocaleString("en")} characters)`));
    block.addEventListener("toggle", () => { // laid out only when unfolded
      if (block.open && block.children.length === 1) block.append(el("pre", {}, shownText));
    });
    return block;
  }

  function badges(e) {
    return [
      e.gold_step ? el("span", { class: "badge gold" }, `gold step ${e.gold_step}`) : null,
      e.gold_step === null ? el("span", { class: "badge off" }, "off the gold chain") : null,
      e.write ? el("span", { class: "badge write" }, "changes the database") : null,
      e.remeasure ? el("span", { class: "badge" }, "re-measure") : null,
      e.valid ? null : el("span", { class: "badge bad" }, e.error_kind || "refused"),
    ];
  }

  function callBlock(e) {
    const title = e.kind === "tool_call" || e.kind === "submit" ? e.tool : e.kind.replace("_", " ");
    return el("div", { class: `call${e.valid ? "" : " refused"}` },
      el("div", { class: "head" }, `step ${e.step} · ${title}`, badges(e)),
      e.arguments ? [label("arguments"), el("pre", { class: "arguments" }, jsonText(e.arguments))]
        : null,
      e.text !== undefined ? [label("what the agent sent"), el("pre", { class: "raw" }, e.text)]
        : null,
      e.error ? el("div", { class: "error" }, e.error) : null,
      outputBlock(e.output));
  }

  function conversation(d) {
    const items = [turn(d.counterpart, "counterpart", d.statement)];
    for (const e of d.events) {
      if (e.kind === "message") {
        items.push(turn(`agent (step ${e.step})`, "agent", e.text));
        items.push(turn(d.counterpart, "counterpart", e.output));
      } else {
        items.push(callBlock(e));
      }
    }
    return el("div", { class: "conversation" }, items);
  }

  function submissionBlock(d) {
    const s = d.submission || {};
    const row = (name, given, gold) => el("tr", {}, el("th", {}, name),
      el("td", { dir: "auto" }, fmt(given)), el("td", { dir: "auto" }, fmt(gold)));
    return [el("h4", {}, "Submission against gold"),
      el("table", { class: "small submission" },
        el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, "submitted"),
          el("th", {}, "gold"))),
        el("tbody", {},
          row("intent", s.intent, d.gold.label),
          row("summary", s.summary, d.gold.summary),
          d.gold.answer !== null || s.answer ? row("answer", s.answer, d.gold.answer) : null))];
  }

  function changesBlock(changes) {
    if (!changes.length) {
      return [el("h4", {}, "Database changes"), el("p", { class: "meta" }, "no change recorded")];
    }
    const value = (v) => el("td", {}, v === null || v === undefined ? "-"
      : el("code", {}, jsonText(v)));
    const header = ["source", "object", "field", "before", "after", "note"];
    return [el("h4", {}, "Database changes"),
      el("table", { class: "small changes" },
        el("thead", {}, el("tr", {}, header.map((h) => el("th", {}, h)))),
        el("tbody", {}, changes.map((c) => el("tr", {},
          el("td", {}, c.source), el("td", {}, c.where || "-"), el("td", {}, c.field || "-"),
          value(c.before), value(c.after),
          el("td", { class: c.note === "collateral" || c.note === "not made" ? "fail" : "" },
            c.note)))))];
  }

  function verificationBlock(v) {
    return [el("h4", {}, "Verified final state"),
      el("p", { class: v.resolved ? "pass" : "fail" }, v.resolved ? "resolved" : "not resolved"),
      el("ul", { class: "checks" }, v.checks.map((c) =>
        el("li", { class: c.passed ? "pass" : "fail" },
          `${c.passed ? "✓" : "✗"} ${c.name}`, c.detail ? ` (${c.detail})` : "")))];
  }

  function outcomeBlock(o) {
    const mark = (ok) => (ok ? "✓" : "✗");
    return [el("h4", {}, "Outcome"),
      el("ul", { class: "checks outcome" }, o.parts.map((p) =>
        el("li", { class: p.passed ? "pass" : "fail" }, `${mark(p.passed)} ${p.name}`))),
      o.milestones.length ? [el("h4", {}, "Milestones"),
        el("ul", { class: "checks milestones" }, o.milestones.map((m) =>
          el("li", { class: m.passed ? "pass" : "fail" },
            `${mark(m.passed)} ${m.name}${m.required ? "" : " (optional)"}`)))] : null,
      o.minefields.length ? [el("h4", {}, "Minefields"),
        el("ul", { class: "checks minefields" }, o.minefields.map((m) =>
          el("li", { class: m.triggered ? "fail" : "pass" },
            `${m.triggered ? "✗ stepped on" : "✓ avoided"}: ${m.name}`)))] : null];
  }

  // --- start ------------------------------------------------------------------------------------

  renderHead();
  renderFilters();
  update();
  // Tests and scripts wait for this: the first rows are on screen.
  window.telcoenvViewer = {
    ready: true, firstRowsMs: performance.now(), episodes: EPISODES.length,
  };
  document.documentElement.setAttribute("data-ready", "true");
  renderSummary();
})();
