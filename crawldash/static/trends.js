"use strict";
// Over time: the nodes' shares by one key, stacked (each crawl's layers add up to its
// nodes; service bits are lines, as a node counts once per bit it sets), the share of the
// user agents that hold a text as a dashed line, and distinct nodes over three windows.
const TREND_TOP = 8;  // values shown, then unknown and other
// Layer colours, 3:1 or more against the page's background in each scheme; the last two
// (unknown, other) are greys.
const LAYERS = {
  light: ["#0b5cad", "#1a7f37", "#8250df", "#bf8700", "#cf222e", "#0a7c86", "#a0537a",
    "#953800", "#6e7781", "#57606a"],
  dark: ["#58a6ff", "#3fb950", "#a371f7", "#d29922", "#ff7b72", "#39c5cf", "#db61a2",
    "#f0883e", "#8b949e", "#6e7681"],
};
const UNIQUE = [[86400, "unique-day"], [604800, "unique-week"], [2592000, "unique-month"]];
let trendChart = null;

function percent(part, whole) { return whole ? (100 * part) / whole : null; }
function fmtPercent(value) { return value == null ? "—" : `${value.toFixed(1)}%`; }

async function refreshTrends() {
  const by = $("trend-by").value;
  const limit = $("trend-range").value;
  const text = $("trend-match").value.trim();
  // "User agents holding" draws over the user agents' shares only: it is no value of
  // another key, and a line left from it would read as one.
  const byAgent = by === "user_agent";
  $("trend-match-group").hidden = !byAgent;
  if (by === "asn" && Object.keys(providers).length === 0) await refreshProviders();
  const points = await getJSON(`api/history?by=${by}&top=${TREND_TOP}&limit=${limit}`);
  let matched = null;
  $("trend-note").className = "";
  $("trend-note").textContent = "";
  if (text && byAgent) {
    try {
      matched = await getJSON(
        `api/history?by=user_agent&match=${encodeURIComponent(text)}&limit=${limit}`);
    } catch (error) {
      $("trend-note").className = "error";
      $("trend-note").textContent = error.message;
    }
  }
  drawTrends(by, points, byAgent ? text : "", matched);
}

function drawTrends(by, points, text, matched) {
  const latest = [...points].reverse().find((p) => p.counts);
  const names = latest ? Object.keys(latest.counts) : [];
  const stacked = by !== "services";
  const palette = DARK.matches ? LAYERS.dark : LAYERS.light;
  const colorOf = (i) => (names[i] === "unknown" ? palette[8] : names[i] === "other" ? palette[9]
    : palette[i % 8]);
  const shares = names.map((name) => points.map((p) => (p.counts
    ? percent(p.counts[name], p.reachable) : null)));
  const data = [points.map((p) => p.timestamp)];
  const series = [{}];
  const bands = [];
  let below = null;
  names.forEach((name, i) => {
    const own = shares[i];
    const top = stacked && below ? own.map((v, j) => (v == null ? null : v + below[j])) : own;
    const shown = (u, v, si, idx) => (idx == null ? "—" : fmtPercent(own[idx]));
    // Each layer is filled between its top and the layer below (a band), so that the
    // legend's swatch is filled too.
    series.push({ label: valueName(by, name), stroke: colorOf(i), width: stacked ? 1 : 2, value: shown,
                  fill: stacked ? `${colorOf(i)}cc` : undefined });
    if (stacked && i > 0) bands.push({ series: [i + 1, i] });
    data.push(top);
    below = top;
  });
  const matchedShare = matched ? matched.map((p) => ("matched" in p
    ? percent(p.matched, p.reachable) : null)) : null;
  if (matchedShare) {
    series.push({ label: `holding “${text}”`, stroke: DARK.matches ? "#e6edf3" : "#1b1f24",
                  width: 2.5, dash: [8, 5], value: (u, v) => fmtPercent(v) });
    data.push(matchedShare);
  }
  const css = getComputedStyle(document.documentElement);
  const axis = { stroke: css.getPropertyValue("--fg").trim(),
                 grid: { stroke: css.getPropertyValue("--grid").trim() },
                 ticks: { stroke: css.getPropertyValue("--grid").trim() } };
  const width = $("trend-chart").clientWidth || 600;
  if (trendChart) trendChart.destroy();
  series[0] = { label: "time (UTC)" };
  trendChart = new uPlot({
    width, height: 320, series, bands, tzDate: UTC,
    axes: [axis, { ...axis, size: 60, values: (u, ticks) => ticks.map((t) => `${t}%`) }],
    scales: { x: { time: true }, y: { range: [0, 100] } },
  }, data, $("trend-chart"));
  const chart = $("trend-chart");
  chart.setAttribute("aria-label", describeTrends(by, points, latest, text, matched));
  chart.dataset.layers = names.join("|");
  chart.dataset.labels = names.map((name) => valueName(by, name)).join("|");
  chart.dataset.points = String(points.length);
  const last = matched ? [...matched].reverse().find((p) => "matched" in p) : null;
  chart.dataset.matched = last ? String(last.matched) : "";
  chart.dataset.scheme = DARK.matches ? "dark" : "light";
}

// The share chart's text alternative: what it plots, over when, and the latest crawl's
// shares (and the matched share).
function describeTrends(by, points, latest, text, matched) {
  const key = $("trend-by").selectedOptions[0].textContent.toLowerCase();
  if (!latest) return `Chart of the nodes' shares by ${key}: no crawl counted by ${key} yet`;
  const layers = Object.entries(latest.counts)
    .map(([name, n]) => `${valueName(by, name)} ${fmtPercent(percent(n, latest.reachable))}`).join(", ");
  let text_ = `Chart of the nodes' shares by ${key}, in UTC, over the last ` +
    `${plural(points.length, "crawl")}, ${fmtTime(points[0].timestamp)} to ` +
    `${fmtTime(points[points.length - 1].timestamp)}; latest: ${layers}`;
  const last = matched ? [...matched].reverse().find((p) => "matched" in p) : null;
  if (last) {
    text_ += `; user agents holding “${text}”: latest ` +
      `${fmtPercent(percent(last.matched, last.reachable))} ` +
      `(${fmtNumber(last.matched)} of ${fmtNumber(last.reachable)} nodes)`;
  }
  return text_;
}

async function refreshUnique() {
  for (const [window_, id] of UNIQUE) {
    const answer = await getJSON(`api/unique?window=${window_}`);
    const small = document.createElement("small");
    // A window longer than the crawls held counts only those: say how long that is.
    const held = answer.from == null ? 0 : answer.to - answer.from;
    const short = answer.crawls > 0 && held < window_ * 0.95 - 600;
    small.textContent = `in ${plural(answer.crawls, "crawl")}` +
      (short ? `: only ${fmtHeld(held + 600)} held` : "");
    $(id).replaceChildren(fmtNumber(answer.unique), small);
    $(id).dataset.unique = String(answer.unique);
    $(id).dataset.short = String(short);
  }
}

function fmtHeld(seconds) {
  const days = seconds / 86400;
  return days >= 1 ? `${days.toFixed(days < 10 ? 1 : 0)} days` : `${(seconds / 3600).toFixed(1)} h`;
}
