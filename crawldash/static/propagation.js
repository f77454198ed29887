"use strict";
// Block propagation, as the bitnodes bridge keeps it (/api/v1/inv/): hidden without it.
// The last blocks' times until 50% and 90% of the nodes that announced each had done so, as
// a series over time; the last blocks as a table; and for the block chosen (the newest at
// first) its ECDF, the share of those nodes that had announced it against the delay after
// the first, with its first announcements (the fastest nodes). The bridge keeps of each
// block its first ten announcements and its delay at every 5% of the nodes: the ECDF is
// drawn through those points, straight between them. Uses app.js's $, getJSON, fmtTime, fmtNumber,
// plural, nodeLink, report and COLORS; uPlot draws the charts.

const SERIES_BLOCKS = 100;  // blocks in the series over time (the most a page of v1 holds)
const TABLE_BLOCKS = 10;
let timesChart = null;
let ecdfChart = null;
let chosenBlock = null;  // the hash whose ECDF is shown

function fmtDelay(ms) { return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`; }

function chartAxes() {
  const css = getComputedStyle(document.documentElement);
  const grid = css.getPropertyValue("--grid").trim();
  return { stroke: css.getPropertyValue("--fg").trim(), grid: { stroke: grid }, ticks: { stroke: grid } };
}

async function refreshPropagation() {
  const page = await getJSON(`api/v1/inv/?limit=${SERIES_BLOCKS}`);
  $("propagation").hidden = page.count === 0;
  document.body.dataset.blocks = String(Math.min(page.results.length, TABLE_BLOCKS));
  if (page.count === 0) return;
  showBlockTable(page.results.slice(0, TABLE_BLOCKS));
  drawTimes(page.results);
  const chosen = page.results.find((b) => b.inv_hash === chosenBlock) ?? page.results[0];
  await showBlock(chosen);
}

function showBlockTable(blocks) {
  $("blocks").querySelector("tbody").replaceChildren(...blocks.map((block) => {
    const row = document.createElement("tr");
    const cell = (text) => { const td = document.createElement("td"); td.className = "n"; td.textContent = text; return td; };
    const name = document.createElement("td");
    const button = document.createElement("button");
    const when = fmtTime(Math.floor(block.first_seen / 1000));
    button.type = "button";
    button.className = "link";
    button.dataset.hash = block.inv_hash;
    button.textContent = `…${block.inv_hash.slice(-12)}`;
    button.setAttribute("aria-label", `Block ${block.inv_hash}, first announced ${when}`);
    button.setAttribute("aria-pressed", String(block.inv_hash === chosenBlock));
    const time = document.createElement("small");
    time.className = "when";
    time.textContent = when;
    name.append(button, time);
    row.append(name, cell(fmtNumber(block.nodes)), cell(fmtDelay(block["50%"])), cell(fmtDelay(block["90%"])));
    // The whole row chooses the block (the button is its keyboard's way).
    row.className = "choosable";
    row.dataset.hash = block.inv_hash;
    row.addEventListener("click", () => showBlock(block).catch(report));
    return row;
  }));
}

// The series over time: oldest first, in seconds.
function drawTimes(blocks) {
  const ordered = [...blocks].reverse();
  const palette = DARK.matches ? COLORS.dark : COLORS.light;
  const axis = chartAxes();
  const seconds = (u, ticks) => ticks.map((t) => `${t} s`);
  const data = [ordered.map((b) => b.first_seen / 1000), ordered.map((b) => b["50%"] / 1000),
    ordered.map((b) => b["90%"] / 1000)];
  const value = (u, v) => (v == null ? "—" : fmtDelay(v * 1000));
  const box = $("times-chart");
  if (timesChart) timesChart.destroy();
  timesChart = new uPlot({
    width: box.clientWidth || 600, height: 240, tzDate: UTC,
    series: [{ label: "time (UTC)" }, { label: "50% of nodes", stroke: palette[0], width: 2, value },
      { label: "90% of nodes", stroke: palette[3], width: 2, dash: [6, 4], value }],
    axes: [axis, { ...axis, size: 60, values: seconds }],
    scales: { x: { time: true }, y: { range: (u, low, high) => [0, Math.max(1, high * 1.1)] } },
  }, data, box);
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  box.setAttribute("aria-label", `Chart of the last ${plural(blocks.length, "block")}' times until ` +
    `50% and 90% of their announcing nodes had announced them, ${fmtTime(data[0][0])} to ` +
    `${fmtTime(data[0][data[0].length - 1])}: typically ${fmtDelay(median(data[1]) * 1000)} ` +
    `and ${fmtDelay(median(data[2]) * 1000)}; the newest ${fmtDelay(blocks[0]["50%"])} and ` +
    `${fmtDelay(blocks[0]["90%"])}`);
  box.dataset.blocks = String(blocks.length);
  box.dataset.scheme = DARK.matches ? "dark" : "light";
}

// The ECDF's known points: each of the first announcements, then every 5% of the nodes
// (the bridge's curve; for a block kept before it, 50%, 90% and the last), as (delay in s,
// share in %), in order of delay and never falling.
function ecdfPoints(block, stats) {
  const n = block.nodes;
  const first = stats.head.length ? stats.head[0][1] : 0;
  const points = stats.head.map(([, ms], i) => [(ms - first) / 1000, (100 * (i + 1)) / n]);
  const kept = stats.ecdf && stats.ecdf.length
    ? stats.ecdf
    : [[stats["50%"], 50], [stats["90%"], 90], [stats.max, 100]];
  points.push(...kept.map(([ms, share]) => [ms / 1000, share]));
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let highest = 0;
  return points.map(([delay, share]) => [delay, (highest = Math.max(highest, share))]);
}

async function showBlock(block) {
  const answer = await getJSON(`api/v1/inv/${block.inv_hash}/`);
  chosenBlock = block.inv_hash;
  for (const button of $("blocks").querySelectorAll("button[data-hash]")) {
    button.setAttribute("aria-pressed", String(button.dataset.hash === chosenBlock));
  }
  for (const row of $("blocks").querySelectorAll("tr[data-hash]")) {
    row.classList.toggle("chosen", row.dataset.hash === chosenBlock);
  }
  drawEcdf(block, answer.stats);
  showHead(block, answer.stats);
}

function drawEcdf(block, stats) {
  const points = ecdfPoints(block, stats);
  const palette = DARK.matches ? COLORS.dark : COLORS.light;
  const axis = chartAxes();
  const box = $("ecdf-chart");
  if (ecdfChart) ecdfChart.destroy();
  ecdfChart = new uPlot({
    width: box.clientWidth || 600, height: 260,
    series: [{ label: "delay", value: (u, v) => (v == null ? "—" : fmtDelay(v * 1000)) },
      { label: "share of nodes", stroke: palette[1], width: 2, points: { show: true, size: 6 },
        value: (u, v) => (v == null ? "—" : `${v.toFixed(1)}%`) }],
    axes: [{ ...axis, values: (u, ticks) => ticks.map((t) => `${t} s`) },
      { ...axis, size: 55, values: (u, ticks) => ticks.map((t) => `${t}%`) }],
    scales: { x: { time: false }, y: { range: [0, 100] } },
  }, [points.map((p) => p[0]), points.map((p) => p[1])], box);
  $("ecdf-title").textContent = `Block …${block.inv_hash.slice(-12)}, first announced ` +
    `${fmtTime(Math.floor(block.first_seen / 1000))} by ${plural(block.nodes, "node")}: the share ` +
    "that had announced it, against the delay after the first";
  box.setAttribute("aria-label", `ECDF of block ${block.inv_hash}: of ${plural(block.nodes, "node")}, ` +
    `half had announced it after ${fmtDelay(stats["50%"])}, 90% after ${fmtDelay(stats["90%"])}, ` +
    `all after ${fmtDelay(stats.max)}`);
  box.dataset.block = block.inv_hash;
  box.dataset.points = String(points.length);
  box.dataset.scheme = DARK.matches ? "dark" : "light";
}

function showHead(block, stats) {
  const first = stats.head.length ? stats.head[0][1] : 0;
  $("block-head-title").textContent = `The fastest nodes: the first ${plural(stats.head.length, "announcement")} of this block`;
  $("block-head-list").replaceChildren(...stats.head.map(([address, ms]) => {
    const item = document.createElement("li");
    item.append(nodeLink(address, address), `, +${fmtDelay(ms - first)}`);
    return item;
  }));
  $("block-head").hidden = false;
}

DARK.addEventListener("change", () => refreshPropagation().catch(report));
window.addEventListener("resize", () => {
  if (timesChart) timesChart.setSize({ width: $("times-chart").clientWidth, height: 240 });
  if (ecdfChart) ecdfChart.setSize({ width: $("ecdf-chart").clientWidth, height: 260 });
});
refreshPropagation().catch(report);
