// One attention head as a heatmap that fills its box's width: the view of lmscope-report's
// Attention section (lib/report/report_template.html) and of lmscope.attention_view in a
// notebook (python/lmscope/attention_view.py). One file for both: CMake compiles it into the
// library (lib/report/report_html.h, attention_view_script()), the page and the notebook's
// cell output inline it. No network, no library: it draws with a <canvas> into an <svg>.
//
// lmscopeAttentionView(box, v) draws into the element `box`; v holds
//   id        prefix of the ids of what it draws ("attn": attn-svg, attn-scale, attn-hover, ...)
//   rows      T labels of the query tokens, cols: S labels of the key tokens
//   past      the column of query 0 (a decode step's query T-1 is column S-1)
//   prob(q,k) the probability query q puts on key k (0 where q may not see k)
//   state     {q: [first, last], k: [first, last], scale: "linear"|"log"|"rank"} or {} (the default:
//             every token when cells of kMinCell px fit the width, else the first tokens that do)
//   onhover(q, k)   a cell was hovered (the report prints its value)
//   onstate(state)  the reader changed the window or the scale (the report writes it into the URL)
// and returns {hover(q): highlights query q's row as hovering it does}. Dragging over the cells
// crops the window to the dragged rectangle.
var lmscopeAttentionView = (function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var kMinCell = 3, kMaxCell = 24;   // CSS px of one cell: readable on a projector .. a short prompt's
  var kScreenCell = 8;               // cells are kept smaller than this only to fit the width
  var kTopKeys = 5;                  // keys listed for the hovered query
  var CSS =
    ".lav-controls { margin: 4px 0; font: 13px \"DejaVu Sans\", Arial, sans-serif; }\n" +
    ".lav-controls label { margin-right: 10px; }\n" +
    ".lav-controls input[type=number] { width: 4.5em; }\n" +
    ".lav-note { color: #555; font: 12px \"DejaVu Sans\", Arial, sans-serif; margin: 2px 0; }\n" +
    ".lav-hover { font-family: \"DejaVu Sans Mono\", monospace; font-size: 12px; background: #f2f2f2; padding: 2px 6px; height: 2.7em; overflow: hidden; white-space: pre-wrap; }\n" +   // fixed: the heatmap below must not move on hover
    ".lav-svg { display: block; user-select: none; }\n";

  function el(tag, attrs, parent, text) {
    var svg = tag === "svg" || (parent && parent.namespaceURI === SVGNS);
    var e = svg ? document.createElementNS(SVGNS, tag) : document.createElement(tag);
    for (var a in (attrs || {})) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function addStyle() {
    if (document.getElementById("lmscope-attention-view-style")) return;
    el("style", { id: "lmscope-attention-view-style" }, document.head, CSS);
  }
  function short(t, n) { return t.length > n ? t.slice(0, n - 1) + "\u2026" : t; }
  function quote(t) { return "\u201c" + t + "\u201d"; }
  // t in 0..1 -> white .. dark blue (the report's probability colour).
  function blue(t) {
    t = Math.max(0, Math.min(1, t));
    return "rgb(" + Math.round(255 - t * 247) + "," + Math.round(255 - t * 207) + "," + Math.round(255 - t * 148) + ")";
  }
  // The colour scales: where a probability sits between white (0) and dark blue (1).
  // linear: p itself. log: log10 p from 1e-4 (white) to 1; a diffuse head, all of whose
  // probabilities are small, is then not white. rank: the key's rank within its query's row
  // (the top key dark, the last one seen white), whatever the numbers.
  var kLogFloor = 4;
  var SCALES = {
    linear: { label: "linear", stops: [[0, "0"], [0.5, "0.5"], [1, "1"]] },
    log: { label: "log", stops: [[0, "\u2264 0.0001"], [0.25, "0.001"], [0.5, "0.01"], [0.75, "0.1"], [1, "1"]] },
    rank: { label: "rank in its row", stops: [[0, "last seen"], [1, "top key"]] }
  };
  function logT(p) { return p <= 0 ? 0 : Math.max(0, 1 + Math.log10(p) / kLogFloor); }

  // The default window: every token when kMinCell px cells fit `avail`, else the first n keys
  // and the queries among them (the first key, the attention sink, stays in view).
  function defaultWindow(v, avail) {
    var T = v.rows.length, S = v.cols.length, n = Math.max(1, Math.floor(avail / kMinCell));
    if (S <= n) return { q: [0, T - 1], k: [0, S - 1] };
    var lastQ = Math.min(T - 1, Math.max(0, n - 1 - v.past));
    return { q: [0, lastQ], k: [0, n - 1] };
  }
  function clampRange(r, n) {
    var a = Math.max(0, Math.min(n - 1, Math.floor(+r[0]))), b = Math.max(0, Math.min(n - 1, Math.floor(+r[1])));
    if (!(a <= b)) return [0, n - 1];
    return [a, b];
  }

  function view(box, v) {
    addStyle();
    box.textContent = "";
    var T = v.rows.length, S = v.cols.length, id = v.id || "lav";
    var state = { scale: SCALES[(v.state || {}).scale] ? v.state.scale : "linear" };
    var ctl = el("div", { "class": "lav-controls" }, box);
    var scaleLabel = el("label", {}, ctl, "colour ");
    var scaleSel = el("select", { id: id + "-scale" }, scaleLabel);
    Object.keys(SCALES).forEach(function (s) {
      var o = el("option", { value: s }, scaleSel, SCALES[s].label);
      if (s === state.scale) o.setAttribute("selected", "selected");   // an attribute: a saved page keeps it
    });
    function range(label, name, n) {
      var l = el("label", {}, ctl, label + " ");
      var a = el("input", { type: "number", id: id + "-" + name + "0", min: 0, max: n - 1 }, l);
      l.appendChild(document.createTextNode(" \u2013 "));
      var b = el("input", { type: "number", id: id + "-" + name + "1", min: 0, max: n - 1 }, l);
      return [a, b];
    }
    // The window in columns (what the labels' numbers say): queries past .. past+T-1, keys 0 .. S-1.
    var qIn = range("query columns", "q", v.past + T), kIn = range("key columns", "k", S);
    var fitBtn = el("button", { type: "button", id: id + "-fit" }, ctl, "fit the width");
    var allBtn = el("button", { type: "button", id: id + "-all" }, ctl, "every token");
    var note = el("p", { "class": "lav-note", id: id + "-window-note" }, box);
    // Above the heatmap: a 400-token heatmap is taller than a screen, the hovered row's keys stay in view.
    var hoverBox = el("div", { "class": "lav-hover", id: id + "-hover" }, box, "hover a query token (a row or its label) for its top keys");
    var pic = el("div", {}, box);
    var avail = Math.max(200, (box.clientWidth || 900));
    var left = 16;
    v.rows.forEach(function (r) { left = Math.max(left, Math.min(12, r.length) * 6.7); });
    left = Math.ceil(left + 44);   // labels, the axis title and the row's column number
    var gridAvail = avail - left - 60;   // 60: the last column labels lean right (-60 degrees)
    var w0 = v.state && v.state.q && v.state.k ? { q: clampRange(v.state.q, T), k: clampRange(v.state.k, S) } : defaultWindow(v, gridAvail);
    state.q = w0.q; state.k = w0.k;

    var cur = null;   // what is drawn: window, cell size, the row mark
    function draw() {
      pic.textContent = "";
      var q0 = state.q[0], q1 = state.q[1], k0 = state.k[0], k1 = state.k[1];
      var nq = q1 - q0 + 1, nk = k1 - k0 + 1;
      // As wide as the box allows, and no taller than the screen (a 40-token heatmap at 24 px
      // would be 960 px tall: more than a projector's 720), but not below kScreenCell for that
      // (a long window grows to the width and is scrolled instead).
      var tall = Math.max(kScreenCell, Math.floor(((window.innerHeight || 800) - 160) / nq));
      var cell = Math.max(1, Math.min(kMaxCell, tall, Math.floor(gridAvail / nk)));
      qIn[0].value = v.past + q0; qIn[1].value = v.past + q1; kIn[0].value = k0; kIn[1].value = k1;
      note.textContent = (nq === T && nk === S ? "every token: " : "window: ") + "query columns " + (v.past + q0) + "\u2013" + (v.past + q1) +
        " of " + (v.past) + "\u2013" + (v.past + T - 1) + ", key columns " + k0 + "\u2013" + k1 + " of 0\u2013" + (S - 1) +
        "; cells " + cell + " px" + (nk < S || nq < T ? " (change the window above, or \u201cevery token\u201d)" : "") + ".";
      var font = Math.max(9, Math.min(12, cell));
      // Column labels rotated -60 degrees, every n-th so that neighbours do not touch.
      var colEvery = Math.max(1, Math.ceil(font * 1.25 / (0.866 * cell))), rowEvery = Math.max(1, Math.ceil(font * 1.2 / cell));
      var colChars = 10, top = Math.ceil(24 + (colChars + 5) * font * 0.6 * 0.866 + font);   // the label, " 123" and a gap
      var gw = nk * cell, gh = nq * cell, W = left + gw + 60, H = top + gh + 60;
      var svg = el("svg", { id: id + "-svg", "class": "lav-svg", width: W, height: H, viewBox: "0 0 " + W + " " + H,
        "font-family": "DejaVu Sans Mono, monospace", "data-cells": nq + "x" + nk, "data-cell-px": cell }, pic);
      el("text", { x: left + gw / 2, y: 12, "text-anchor": "middle", "font-size": 12, "font-family": "DejaVu Sans, sans-serif" }, svg, "key token (column it reads)");
      el("text", { x: 10, y: top + gh / 2, transform: "rotate(-90 10 " + (top + gh / 2) + ")", "text-anchor": "middle", "font-size": 12,
        "font-family": "DejaVu Sans, sans-serif" }, svg, "query token");
      for (var c = 0; c < nk; c += colEvery) {
        var x = left + c * cell + cell / 2 + font * 0.3, y = top - 4;
        el("text", { x: x, y: y, transform: "rotate(-60 " + x + " " + y + ")", "font-size": font }, svg, short(v.cols[k0 + c], colChars) + " " + (k0 + c));
      }
      var rowLabels = {};
      for (var r = 0; r < nq; r += rowEvery)
        rowLabels[r] = el("text", { x: left - 4, y: top + r * cell + Math.max(cell, font) * 0.75, "text-anchor": "end", "font-size": font }, svg,
          short(v.rows[q0 + r], 12) + " " + (v.past + q0 + r));
      // The cells: one bitmap (a 400-token prompt has 80,000 seen cells), one canvas pixel block per cell.
      var cv = document.createElement("canvas"), gap = cell >= 5 ? 1 : 0;
      cv.width = gw; cv.height = gh;
      var ctx = cv.getContext("2d");
      for (r = 0; r < nq; r++) {
        var q = q0 + r, ps = [];
        for (c = 0; c < nk; c++) ps.push(v.prob(q, k0 + c));
        var ts = colours(ps, q);
        for (c = 0; c < nk; c++) { ctx.fillStyle = blue(ts[c]); ctx.fillRect(c * cell, r * cell, cell - gap, cell - gap); }
      }
      var img = el("image", { x: left, y: top, width: gw, height: gh, href: cv.toDataURL(), preserveAspectRatio: "none" }, svg);
      var mark = el("rect", { id: id + "-rowmark", x: left - 2, y: top, width: gw + 4, height: cell, fill: "none", stroke: "#e07000",
        "stroke-width": 2, visibility: "hidden", "pointer-events": "none" }, svg);
      legend(svg, left, top + gh + 14);
      // A hover anywhere on a row (its label or its cells) shows the row.
      var hot = el("rect", { x: 0, y: top, width: left + gw, height: gh, fill: "transparent" }, svg);
      // The cell under the pointer: [query, key] (key -1 over the labels).
      function at(ev) {
        var b = hot.getBoundingClientRect(), sx = b.width / (left + gw);
        var rr = Math.min(nq - 1, Math.max(0, Math.floor((ev.clientY - b.top) / (b.height / nq))));
        var px = (ev.clientX - b.left) / sx - left;
        return [q0 + rr, px >= 0 ? k0 + Math.min(nk - 1, Math.floor(px / cell)) : -1];
      }
      // Dragging over the cells draws a frame; letting go crops the window to it (as the inputs do).
      var drag = null, frame = el("rect", { id: id + "-drag", fill: "none", stroke: "#e07000", "stroke-dasharray": "4,3",
        visibility: "hidden", "pointer-events": "none" }, svg);
      function framed(a, b) {
        return { q: [Math.min(a[0], b[0]), Math.max(a[0], b[0])], k: [Math.min(a[1], b[1]), Math.max(a[1], b[1])] };
      }
      hot.addEventListener("mousedown", function (ev) { var p = at(ev); if (p[1] >= 0) { drag = p; ev.preventDefault(); } });
      hot.addEventListener("mousemove", function (ev) {
        var p = at(ev);
        hover(p[0], p[1]);
        if (!drag || p[1] < 0) return;
        var w = framed(drag, p);
        frame.setAttribute("x", left + (w.k[0] - k0) * cell); frame.setAttribute("y", top + (w.q[0] - q0) * cell);
        frame.setAttribute("width", (w.k[1] - w.k[0] + 1) * cell); frame.setAttribute("height", (w.q[1] - w.q[0] + 1) * cell);
        frame.setAttribute("visibility", "visible");
      });
      hot.addEventListener("mouseup", function (ev) {
        var p = at(ev), from = drag;
        drag = null;
        if (!from || p[1] < 0 || (p[0] === from[0] && p[1] === from[1])) { frame.setAttribute("visibility", "hidden"); return; }
        var w = framed(from, p);
        state.q = w.q; state.k = w.k;
        changed();
      });
      cur = { q0: q0, nq: nq, top: top, cell: cell, mark: mark, rowLabels: rowLabels, img: img };
    }
    // The colour of each cell of a row (0..1), by the chosen scale; keys a query may not see stay white.
    function colours(ps, q) {
      if (state.scale === "linear") return ps;
      if (state.scale === "log") return ps.map(logT);
      var seen = Math.min(S, v.past + q + 1);   // keys 0 .. past + q (a causal row)
      var order = ps.map(function (p, i) { return i; }).filter(function (i) { return state.k[0] + i < seen; });
      order.sort(function (a, b) { return ps[b] - ps[a]; });
      var t = ps.map(function () { return 0; }), n = Math.max(1, order.length - 1);
      order.forEach(function (i, rank) { t[i] = order.length === 1 ? 1 : 1 - rank / n; });
      return t;
    }
    function legend(svg, x, y) {
      var lw = 260, sc = SCALES[state.scale];
      el("text", { x: x, y: y, "font-size": 11, "font-family": "DejaVu Sans, sans-serif" }, svg, "colour: " + sc.label + (state.scale === "linear" ? " probability" : state.scale === "log" ? " probability" : ""));
      for (var i = 0; i < 20; i++) el("rect", { x: x + i * lw / 20, y: y + 5, width: lw / 20 + 1, height: 12, fill: blue(i / 19) }, svg);
      sc.stops.forEach(function (s) {
        el("text", { x: x + s[0] * lw, y: y + 30, "font-size": 10, "text-anchor": s[0] <= 0 ? "start" : s[0] >= 1 ? "end" : "middle",
          "font-family": "DejaVu Sans, sans-serif" }, svg, s[1]);
      });
    }
    // Query q hovered (k: the key under the pointer, -1 over the labels): its row framed, its label
    // bold, its top keys listed (over every key it sees, not only the window's).
    function hover(q, k) {
      if (!cur) return;
      var r = q - cur.q0;
      if (r < 0 || r >= cur.nq) { cur.mark.setAttribute("visibility", "hidden"); return; }
      cur.mark.setAttribute("y", cur.top + r * cur.cell - 1);
      cur.mark.setAttribute("height", cur.cell + 2);
      cur.mark.setAttribute("visibility", "visible");
      Object.keys(cur.rowLabels).forEach(function (i) { cur.rowLabels[i].setAttribute("font-weight", +i === r ? "bold" : "normal"); });
      var keys = [];
      for (var kk = 0; kk < S; kk++) keys.push([kk, v.prob(q, kk)]);
      keys.sort(function (a, b) { return b[1] - a[1]; });
      hoverBox.setAttribute("data-query", String(q));
      hoverBox.setAttribute("data-top-key", String(keys[0][0]));
      hoverBox.textContent = "query " + quote(v.rows[q]) + " (column " + (v.past + q) + ") attends most to: " +
        keys.slice(0, kTopKeys).map(function (x) { return quote(short(v.cols[x[0]], 12)) + "@" + x[0] + " " + x[1].toFixed(3); }).join(", ");
      if (k >= 0 && v.onhover) v.onhover(q, k);
    }
    function changed() {
      draw();
      if (v.onstate) v.onstate({ q: state.q.slice(), k: state.k.slice(), scale: state.scale });
    }
    scaleSel.addEventListener("change", function () { state.scale = scaleSel.value; changed(); });
    function fromInputs() {
      state.q = clampRange([+qIn[0].value - v.past, +qIn[1].value - v.past], T);
      state.k = clampRange([kIn[0].value, kIn[1].value], S);
      changed();
    }
    qIn.concat(kIn).forEach(function (i) { i.addEventListener("change", fromInputs); });
    fitBtn.addEventListener("click", function () { var w = defaultWindow(v, gridAvail); state.q = w.q; state.k = w.k; changed(); });
    allBtn.addEventListener("click", function () { state.q = [0, T - 1]; state.k = [0, S - 1]; changed(); });
    draw();
    return { hover: function (q) { hover(q, -1); }, state: function () { return { q: state.q.slice(), k: state.k.slice(), scale: state.scale }; } };
  }
  return view;
})();
