// Draws the report's timeline and plots from the inline data (report-data). Shapes are merged
// into one SVG path per lane, kind and shade, so the number of nodes stays small for any run.
// When done, the page's <html> gets data-rendered="lanes=N faults=F foreign=X shapes=S".
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var LEFT = 96, RIGHT = 16;
  var OUT = { ok: "#2b8a3e", fail: "#4c6ef5", info: "#e8590c" };
  var KIND_COLOR = { acquire: "#1864ab", release: "#c2255c", renew: "#5f3dc4", effect: "#087f5b" };
  var shapes = 0;

  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    shapes++;
    return e;
  }
  // Distinct lane colours without reds or oranges (those mark trouble); past 12 lanes, darker again.
  var PALETTE = ["#1f77b4", "#2ca02c", "#9467bd", "#bcbd22", "#17becf", "#8c564b", "#e377c2", "#393b79",
                 "#637939", "#7f7f7f", "#5ab4ac", "#b294c7"];
  function laneColor(i) {
    var c = PALETTE[i % PALETTE.length];
    return i < PALETTE.length ? c : "color-mix(in srgb, " + c + " 70%, black)";
  }
  var end = Math.max(D.end_s, 0.001);
  var width = Math.max(900, (document.getElementById("timeline").clientWidth || 1200) - 4);
  var plotW = width - LEFT - RIGHT;
  function x(t) { return LEFT + (t / end) * plotW; }
  function xb(i, bucket) { return x(i * bucket); }

  function niceStep(span, n) {
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
  }
  function timeAxis(svg, y0, y1) {
    var step = niceStep(end, 12);
    for (var t = 0; t <= end + 1e-9; t += step) {
      el("line", { x1: x(t), x2: x(t), y1: y0, y2: y1, stroke: "#e9ecef" }, svg);
      el("text", { x: x(t), y: y1 + 13, "text-anchor": "middle" }, svg,
        (step < 1 ? t.toFixed(1) : t.toFixed(0)) + " s");
    }
  }
  function faultBands(svg, y0, y1, labels) {
    var free = 0;   // a label is drawn only where it does not run into the previous one
    D.faults.forEach(function (f) {
      var r = el("rect", { x: x(f.t0), y: y0, width: Math.max(1, x(f.t1) - x(f.t0)), height: y1 - y0,
        fill: f.healed ? "rgba(250,82,82,0.16)" : "rgba(250,82,82,0.30)", "class": "fault-band" }, svg);
      el("title", {}, r, "fault " + f.n + ": " + f.fault + ":" + f.target + " " + f.t0.toFixed(3) + "–" +
        f.t1.toFixed(3) + " s" + (f.processes.length ? " (" + f.processes.join(", ") + ")" : "") +
        (f.healed ? "" : " — no fault_end in the history"));
      var text = f.fault + (f.processes.length ? " " + f.processes.join(",") : "");
      if (labels && x(f.t0) >= free) {
        el("text", { x: x(f.t0) + 2, y: y0 + 10, fill: "#c92a2a", "font-size": 10 }, svg, text);
        free = x(f.t0) + 6 * text.length + 8;
      }
    });
  }
  // One path of rectangles [i0, i1) for each value of `runs` accepted by `pick`.
  function runsPath(runs, bucket, y, h, pick) {
    var d = "";
    runs.forEach(function (r) {
      if (!pick(r[2])) return;
      var x0 = xb(r[0], bucket), x1 = Math.max(xb(r[1], bucket), x0 + 0.6);
      d += "M" + x0.toFixed(1) + " " + y + "h" + (x1 - x0).toFixed(1) + "v" + h + "h" + (x0 - x1).toFixed(1) + "z";
    });
    return d;
  }
  function fill(svg, d, color, opacity, cls) {
    if (d) el("path", { d: d, fill: color, "fill-opacity": opacity, "class": cls || "" }, svg);
  }
  var SHADE = { 1: 0.3, 2: 0.6, 3: 1 };

  function timeline() {
    var host = document.getElementById("timeline");
    var LH = 18, KH = 12, top = 18;
    var keysH = D.keys.length * (KH * 2 + 6);
    var height = top + keysH + D.lanes.length * LH + 24;
    var svg = el("svg", { width: width, height: height, "class": "timeline" }, host);
    var y0 = top, lanesTop = top + keysH;
    timeAxis(svg, y0 - 4, height - 22);
    faultBands(svg, 0, height - 22, true);
    var b = D.lane_s;
    D.keys.forEach(function (k, i) {
      var y = top + i * (KH * 2 + 6);
      var name = (k.short.length > 7 ? "…" + k.short.slice(-6) : k.short) + " holder";
      el("text", { x: 4, y: y + 10, "font-weight": "bold" }, svg, name).appendChild(document.createElementNS(NS, "title")).textContent = k.key;
      var colors = {};
      k.holder.forEach(function (r) { colors[r[2]] = true; });
      Object.keys(colors).forEach(function (lane) {
        fill(svg, runsPath(k.holder, b, y, KH, function (v) { return v == lane; }), laneColor(+lane), 1, "key-holder");
      });
      el("text", { x: 4, y: y + KH + 10 }, svg, "jobs at once");
      fill(svg, runsPath(k.jobs, b, y + KH + 1, KH - 2, function (v) { return v === 1; }), "#ced4da", 1);
      fill(svg, runsPath(k.jobs, b, y + KH + 1, KH - 2, function (v) { return v === 2; }), "#ff922b", 1, "overlap");
      fill(svg, runsPath(k.jobs, b, y + KH + 1, KH - 2, function (v) { return v >= 3; }), "#e03131", 1, "overlap");
    });
    var paused = {};
    D.faults.forEach(function (f) { f.processes.forEach(function (p) { (paused[p] = paused[p] || []).push(f); }); });
    D.lanes.forEach(function (lane, i) {
      var y = lanesTop + i * LH;
      if (i % 2) el("rect", { x: LEFT, y: y, width: plotW, height: LH, fill: "#f8f9fa" }, svg);
      el("text", { x: 4, y: y + 13 }, svg, lane.name + (lane.open ? " …" : ""));
      el("rect", { x: LEFT - 14, y: y + 5, width: 9, height: LH - 10, fill: laneColor(i) }, svg);
      [1, 2, 3].forEach(function (s) {
        fill(svg, runsPath(lane.held, b, y + 3, LH - 6, function (v) { return v === s; }), laneColor(i), SHADE[s], "lane-held");
        fill(svg, runsPath(lane.overdue, b, y + 3, LH - 6, function (v) { return v === s; }), "#ff922b", SHADE[s], "lane-overdue");
      });
      fill(svg, runsPath(lane.job, b, y + 7, 4, function (v) { return v >= 2; }), "#212529", 1, "lane-job");
      fill(svg, runsPath(lane.job, b, y + 7, 4, function (v) { return v === 1; }), "#212529", 0.4, "lane-job");
      var ticks = "";
      // a tick in nearly every bucket says nothing (an hour-long run): then the held spans' ends show the releases
      if (lane.rel.length <= plotW / 6) lane.rel.forEach(function (r) { ticks += "M" + xb(r[0] + 0.5, b).toFixed(1) + " " + (y + 2) + "v" + (LH - 4); });
      if (ticks) el("path", { d: ticks, stroke: "#868e96", "stroke-width": 1, "class": "lane-release" }, svg);
      [["nothing", "#f59f00"], ["unknown", "#9c36b5"]].forEach(function (kc) {
        var dots = "";   // every such release, at its bucket (the first ones also as marks, below)
        lane[kc[0]].forEach(function (r) { dots += "M" + xb(r[0] + 0.5, b).toFixed(1) + " " + (y + LH / 2) + "h0"; });
        if (dots) el("path", { d: dots, stroke: kc[1], "stroke-width": 8, "stroke-linecap": "round",
          "class": "lane-" + kc[0] }, svg);
      });
      var worker = lane.name.split(".")[0];
      (paused[worker] || []).forEach(function (f) {
        el("rect", { x: x(f.t0), y: y + 1, width: Math.max(1, x(f.t1) - x(f.t0)), height: LH - 2,
          fill: "url(#hatch)", "class": "lane-paused" }, svg);
      });
    });
    var defs = el("defs", {}, svg);
    var pat = el("pattern", { id: "hatch", width: 5, height: 5, patternUnits: "userSpaceOnUse",
      patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 2, height: 5, fill: "#495057", "fill-opacity": 0.55 }, pat);
    var foreign = 0;
    D.marks.forEach(function (m) {
      var cx = x(m.t), cy = lanesTop + m.lane * LH + LH / 2, g = svg, node;
      if (m.href) g = el("a", { href: m.href }, svg);
      if (m.kind === "foreign") {
        foreign++;
        node = el("path", { d: "M" + cx + " " + (cy - 8) + "l7 8l-7 8l-7 -8z", fill: "#e03131", stroke: "#fff",
          "stroke-width": 1, "class": "mark-foreign" }, g);
      } else {
        node = el("circle", { cx: cx, cy: cy, r: 4.5, fill: m.kind === "nothing" ? "#f59f00" : "#9c36b5",
          stroke: "#fff", "class": "mark-" + m.kind }, g);
      }
      el("title", {}, node, m.t.toFixed(3) + " s: " + m.text + (m.href ? " (click: witness timeline)" : ""));
    });
    if (D.run_end) el("line", { x1: x(D.run_end.t), x2: x(D.run_end.t), y1: 0, y2: height - 22, stroke: "#495057",
      "stroke-dasharray": "3 3" }, svg);
    document.getElementById("lane-bucket").textContent = (b * 1000).toFixed(b < 0.1 ? 1 : 0) + " ms";
    return foreign;
  }

  function latency() {
    var host = document.getElementById("latency");
    var kinds = ["acquire", "release", "renew", "effect"].filter(function (k) {
      return ["ok", "fail", "info"].some(function (o) { return (D.latency[k + ":" + o] || []).length; });
    });
    var PH = 150, GAP = 26;
    var svg = el("svg", { width: width, height: Math.max(30, kinds.length * (PH + GAP) + 10) }, host);
    if (!kinds.length) el("text", { x: LEFT, y: 20 }, svg, "no completed lease calls in the history");
    kinds.forEach(function (k, i) {
      var y0 = 8 + i * (PH + GAP), y1 = y0 + PH, lo = Infinity, hi = 0;
      ["ok", "fail", "info"].forEach(function (o) {
        (D.latency[k + ":" + o] || []).forEach(function (p) { lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); });
      });
      lo = Math.pow(10, Math.floor(Math.log10(Math.max(lo, 0.01))));
      hi = Math.pow(10, Math.ceil(Math.log10(Math.max(hi, lo * 10))));
      function y(ms) { return y1 - (Math.log10(Math.max(ms, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) * PH; }
      faultBands(svg, y0, y1, false);
      el("rect", { x: LEFT, y: y0, width: plotW, height: PH, fill: "none", stroke: "#ced4da" }, svg);
      for (var v = lo; v <= hi * 1.0001; v *= 10) {
        el("line", { x1: LEFT, x2: LEFT + plotW, y1: y(v), y2: y(v), stroke: "#e9ecef" }, svg);
        el("text", { x: LEFT - 4, y: y(v) + 4, "text-anchor": "end" }, svg, v >= 1000 ? (v / 1000) + " s" : v + " ms");
      }
      el("text", { x: 4, y: y0 + 14, "font-weight": "bold" }, svg, k);
      ["fail", "ok", "info"].forEach(function (o) {
        var d = "";
        (D.latency[k + ":" + o] || []).forEach(function (p) { d += "M" + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1) + "h0"; });
        if (d) el("path", { d: d, stroke: OUT[o], "stroke-width": o === "fail" ? 3.2 : 4.5, "stroke-linecap": "round",
          "stroke-opacity": o === "fail" ? 0.6 : 0.9,
          "class": "latency-" + o }, svg);
      });
      var step = niceStep(end, 12);
      for (var t = 0; t <= end + 1e-9; t += step) el("text", { x: x(t), y: y1 + 12, "text-anchor": "middle" }, svg,
        (step < 1 ? t.toFixed(1) : t.toFixed(0)) + " s");
    });
  }

  function rate() {
    var host = document.getElementById("rate");
    var names = Object.keys(D.rate), PH = 200, y0 = 8, y1 = y0 + PH, hi = 1;
    names.forEach(function (n) { D.rate[n].forEach(function (v) { hi = Math.max(hi, v); }); });
    var step = niceStep(hi, 5);
    hi = Math.ceil(hi / step) * step;
    var svg = el("svg", { width: width, height: PH + 40 + 16 * Math.ceil(names.length / 4) }, host);
    function y(v) { return y1 - v / hi * PH; }
    faultBands(svg, y0, y1, false);
    el("rect", { x: LEFT, y: y0, width: plotW, height: PH, fill: "none", stroke: "#ced4da" }, svg);
    for (var v = 0; v <= hi + 1e-9; v += step) {
      el("line", { x1: LEFT, x2: LEFT + plotW, y1: y(v), y2: y(v), stroke: "#e9ecef" }, svg);
      el("text", { x: LEFT - 4, y: y(v) + 4, "text-anchor": "end" }, svg, v + "/s");
    }
    timeAxis(svg, y1, y1);
    var DASH = { ok: "", fail: "5 3", info: "1 3" };
    names.forEach(function (n, j) {
      var kind = n.split(":")[0], o = n.split(":")[1], d = "";
      D.rate[n].forEach(function (v, i) { d += (i ? "L" : "M") + x((i + 0.5) * D.plot_s).toFixed(1) + " " + y(v).toFixed(1); });
      el("path", { d: d, fill: "none", stroke: KIND_COLOR[kind] || "#333", "stroke-width": o === "ok" ? 1.8 : 1.3,
        "stroke-dasharray": DASH[o] || "", "class": "rate-line" }, svg);
      var lx = LEFT + (j % 4) * 220, ly = y1 + 32 + 16 * Math.floor(j / 4);
      el("line", { x1: lx, x2: lx + 28, y1: ly - 4, y2: ly - 4, stroke: KIND_COLOR[kind] || "#333", "stroke-width": 2,
        "stroke-dasharray": DASH[o] || "" }, svg);
      el("text", { x: lx + 34, y: ly }, svg, kind + " " + o);
    });
  }

  // A vertical line and the time under the pointer, on every plot.
  function crosshair(svg) {
    var h = +svg.getAttribute("height");
    var line = el("line", { y1: 0, y2: h, stroke: "#343a40", "stroke-width": 0.7, visibility: "hidden" }, svg);
    var label = el("text", { y: 10, visibility: "hidden", "font-weight": "bold" }, svg);
    svg.addEventListener("mousemove", function (ev) {
      var px = ev.clientX - svg.getBoundingClientRect().left;
      var vis = px >= LEFT && px <= LEFT + plotW ? "visible" : "hidden";
      line.setAttribute("visibility", vis); label.setAttribute("visibility", vis);
      line.setAttribute("x1", px); line.setAttribute("x2", px);
      label.setAttribute("x", px + 4);
      label.textContent = ((px - LEFT) / plotW * end).toFixed(3) + " s";
    });
    svg.addEventListener("mouseleave", function () { line.setAttribute("visibility", "hidden"); label.setAttribute("visibility", "hidden"); });
  }

  var foreign = timeline();
  latency();
  rate();
  Array.prototype.forEach.call(document.querySelectorAll(".plot svg"), crosshair);
  document.documentElement.setAttribute("data-rendered", "lanes=" + D.lanes.length + " faults=" + D.faults.length +
    " foreign=" + foreign + " shapes=" + shapes);
})();
