// The pages are complete without this script; it keeps them live. Each page names
// its stream in a data-live attribute: server-sent events carry the server-rendered
// HTML of the page's live part ("html") and the numbers of its charts.
(function () {
  "use strict";
  var status = document.getElementById("status");
  function say(s) { if (status) status.textContent = s; }

  function listen(url, handlers) {
    var es = new EventSource(url);
    es.onopen = function () { say("live"); };
    es.onerror = function () { say("reconnecting …"); };
    Object.keys(handlers).forEach(function (name) {
      es.addEventListener(name, function (e) { handlers[name](e.data); });
    });
    es.addEventListener("gone", function (e) { say(e.data); es.close(); });
    // A browser allows six connections to one host over HTTP/1.1: a page left for
    // another (or kept in the back-forward cache) must give its stream back, or the
    // seventh page waits.
    window.addEventListener("pagehide", function () { es.close(); });
    window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });
    return es;
  }

  function replaceLive(html) {
    var live = document.getElementById("live");
    if (live) live.innerHTML = html;
  }

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  var palette = ["#2f6fdf", "#e0662e", "#2a9d5c", "#a23bbf", "#c9a100", "#d6336c", "#1b998b", "#6c757d"];
  function width(el) { return Math.max(300, el.clientWidth || 800); }

  // Traffic: one stepped line per Revision, the share of the Service's traffic.
  function trafficChart(el) {
    var plot = null;
    function draw(c) {
      if (!c.revisions || c.revisions.length === 0) {
        el.textContent = "No traffic recorded yet.";
        return;
      }
      var series = [{}];
      c.revisions.forEach(function (r, i) {
        series.push({ label: r, stroke: palette[i % palette.length], width: 2,
          paths: uPlot.paths.stepped({ align: 1 }), value: function (u, v) { return v == null ? "" : v + "%"; } });
      });
      // What the chart shows now, in the DOM: the share of each Revision at the
      // last point, and how many points (the browser tests read them).
      var latest = {};
      c.revisions.forEach(function (r, i) { latest[r] = c.columns[i + 1][c.columns[i + 1].length - 1]; });
      el.setAttribute("data-latest", JSON.stringify(latest));
      el.setAttribute("data-points", String(c.columns[0].length));
      if (plot && plot.series.length === series.length) { plot.setData(c.columns); return; }
      if (plot) plot.destroy();
      el.textContent = "";
      plot = new uPlot({ width: width(el), height: 220, series: series,
        scales: { y: { range: [0, 100] } },
        axes: [{}, { label: "% of traffic", values: function (u, vs) { return vs.map(function (v) { return v + "%"; }); } }] },
        c.columns, el);
    }
    draw(readJSON("traffic-data") || {});
    return draw;
  }

  // A Revision's autoscaler: load on one chart, pods on the other.
  function revisionCharts(loadEl, podsEl) {
    var samples = readJSON("samples-data") || [];
    function t(s) { return Date.parse(s.at) / 1000; }
    function col(f) { return samples.map(function (s) { return s.error ? null : f(s); }); }
    function loadData() {
      return [samples.map(t), col(function (s) { return s.requestsPerSecond; }), col(function (s) { return s.concurrency; }),
        col(function (s) { return s.target; })];
    }
    function podsData() {
      return [samples.map(t), col(function (s) { return s.desiredPods < 0 ? null : s.desiredPods; }),
        col(function (s) { return s.readyPods; }), col(function (s) { return s.panicking ? 1 : 0; }),
        col(function (s) { return s.activations; })];
    }
    var load = new uPlot({ width: width(loadEl), height: 200, title: "Load",
      series: [{}, { label: "requests/s", stroke: palette[0], width: 2 }, { label: "concurrency", stroke: palette[1], width: 2 },
        { label: "target per pod", stroke: "#999", dash: [6, 4] }] }, loadData(), loadEl);
    var step = uPlot.paths.stepped({ align: 1 });
    var pods = new uPlot({ width: width(podsEl), height: 200, title: "Pods",
      series: [{}, { label: "desired", stroke: palette[2], width: 2, paths: step },
        { label: "ready", stroke: palette[3], width: 2, paths: step },
        { label: "panic", stroke: "#c33", fill: "rgba(204,51,51,0.12)", paths: step, scale: "panic" },
        { label: "activations", stroke: palette[4], paths: step }],
      scales: { panic: { range: [0, 1] } },
      axes: [{}, { label: "pods" }, { scale: "panic", show: false }] }, podsData(), podsEl);
    return function (more) {
      var last = samples.length ? t(samples[samples.length - 1]) : 0;
      more.forEach(function (s) { if (t(s) > last) samples.push(s); });
      if (samples.length > 600) samples = samples.slice(samples.length - 600);
      load.setData(loadData());
      pods.setData(podsData());
    };
  }

  var listLive = document.querySelector("#live[data-live]");
  if (listLive) {
    listen(listLive.getAttribute("data-live"), { html: replaceLive });
  }
  var traffic = document.getElementById("traffic-chart");
  if (traffic) {
    var drawTraffic = trafficChart(traffic);
    listen(traffic.getAttribute("data-live"), {
      html: replaceLive,
      traffic: function (d) { drawTraffic(JSON.parse(d)); }
    });
  }
  var charts = document.querySelector(".charts[data-live]");
  if (charts) {
    var add = revisionCharts(document.getElementById("load-chart"), document.getElementById("pods-chart"));
    listen(charts.getAttribute("data-live"), {
      html: replaceLive,
      samples: function (d) { add(JSON.parse(d)); }
    });
  }
})();
