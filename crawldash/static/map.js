"use strict";
// The map of the latest crawl: world outlines from Natural Earth (vendor/countries-110m.json,
// TopoJSON, decoded here), countries shaded by their share of the nodes, and a dot per
// place of /api/map, sized by its nodes and coloured by network type or by a client matched
// by name. A hover or tap names the place; a click (or Enter, on a country reached with the
// arrow keys) lists its nodes below. Drawn as SVG: no tile server, nothing from elsewhere.
// Uses app.js's $, getJSON, fmtNumber, plural, report and listNodes.

const MAP_WIDTH = 1000;  // the SVG's own units; it scales to its box
const LATITUDES = [-57, 84];  // the map's reach: Antarctica has no nodes
const DOTS = {  // fill colours, 3:1 or more against the page's background in each scheme
  light: { ipv4: "#bf5700", ipv6: "#8250df", matched: "#cf222e", other: "#6e7781" },
  dark: { ipv4: "#f0883e", ipv6: "#c297ff", matched: "#ff7b72", other: "#8b949e" },
};
const SVG = "http://www.w3.org/2000/svg";
let atlas = null;  // {countries: [{code, name, d}], height}, decoded once
let mapBody = null;  // the /api/map answer drawn
let countryFocus = 0;  // the country the arrow keys are on, in the order of most nodes
let dotsDrawn = [];  // each dot's centre, radius and words, in the map's units
let matchedAll = null;  // with a client match: the crawl's nodes holding it, mapped or not

// Natural Earth I (Šavrič, Jenny, Patterson and Jenny, 2011): a polynomial in latitude that
// keeps the world's shapes familiar without a tile's distortion near the poles.
function project(longitude, latitude) {
  const lambda = (longitude * Math.PI) / 180;
  const phi = (latitude * Math.PI) / 180;
  const p2 = phi * phi;
  const p4 = p2 * p2;
  const x = lambda * (0.8707 - 0.131979 * p2 + p4 * (-0.013791 + p4 * (0.003971 * p2 - 0.001529 * p4)));
  const y = phi * (1.007226 + p2 * (0.015085 + p4 * (-0.044475 + 0.028874 * p2 - 0.005916 * p4)));
  return [x, y];
}
const X_MAX = project(180, 0)[0];
const Y_TOP = project(0, LATITUDES[1])[1];
const Y_BOTTOM = project(0, LATITUDES[0])[1];
const SCALE = MAP_WIDTH / (2 * X_MAX);
const MAP_HEIGHT = Math.round((Y_TOP - Y_BOTTOM) * SCALE);

function toMap(longitude, latitude) {
  const [x, y] = project(longitude, Math.max(LATITUDES[0], Math.min(LATITUDES[1], latitude)));
  return [(x + X_MAX) * SCALE, (Y_TOP - y) * SCALE];
}
// The world's edge: down the antimeridian's west side, up its east side.
const OUTLINE = (() => {
  const side = [];
  for (let lat = LATITUDES[1]; lat >= LATITUDES[0]; lat -= 1) side.push(lat);
  const west = side.map((lat) => toMap(-180, lat));
  const east = side.reverse().map((lat) => toMap(180, lat));
  return "M" + [...west, ...east].map((p) => p.map((v) => v.toFixed(1)).join(",")).join("L") + "Z";
})();

// TopoJSON: arcs are delta-encoded quantized points; a ring is a list of arc indexes (~i:
// arc i reversed); each arc after the first repeats the last point of the one before.
function decodeAtlas(topology, codes) {
  const [sx, sy] = topology.transform.scale;
  const [tx, ty] = topology.transform.translate;
  const arcs = topology.arcs.map((arc) => {
    let x = 0;
    let y = 0;
    return arc.map(([dx, dy]) => { x += dx; y += dy; return [x * sx + tx, y * sy + ty]; });
  });
  // A ring that crosses the antimeridian (Russia, Fiji, the Aleutians) is unwrapped, so that
  // it stays one shape past ±180, and drawn again a world's width over: the map's outline
  // clips both to what lies inside it.
  const ring = (indexes) => {
    const points = [];
    for (const i of indexes) {
      const arc = i < 0 ? arcs[~i].slice().reverse() : arcs[i];
      points.push(...(points.length ? arc.slice(1) : arc).map((p) => [...p]));
    }
    for (let i = 1; i < points.length; i++) {
      points[i][0] += 360 * Math.round((points[i - 1][0] - points[i][0]) / 360);
    }
    const lons = points.map((p) => p[0]);
    const shifts = [0];
    if (Math.max(...lons) > 180) shifts.push(-360);
    if (Math.min(...lons) < -180) shifts.push(360);
    return shifts.map((shift) => "M" + points.map(([lon, lat]) => toMap(lon + shift, lat)
      .map((v) => v.toFixed(1)).join(",")).join("L") + "Z").join("");
  };
  const alpha2 = new Map(codes.map(([two, , numeric]) => [numeric, two]));
  const countries = [];
  for (const geometry of topology.objects.countries.geometries) {
    if (geometry.id === "010" || !geometry.arcs) continue;  // Antarctica; no shape
    const polygons = geometry.type === "Polygon" ? [geometry.arcs] : geometry.arcs;
    countries.push({
      code: alpha2.get(geometry.id) ?? null,  // a few disputed areas have no ISO code
      name: geometry.properties.name,
      d: polygons.map((rings) => rings.map(ring).join("")).join(""),
    });
  }
  return { countries };
}

async function loadAtlas() {
  if (!atlas) {
    const [topology, codes] = await Promise.all([
      getJSON("static/vendor/countries-110m.json"), getJSON("static/vendor/iso-3166-codes.json")]);
    atlas = decodeAtlas(topology, codes);
  }
  return atlas;
}

function svg(name, attributes) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

function mapColouring() {
  const client = $("map-colour").value === "client";
  return { client, text: client ? ($("map-match").value.trim() || "Knots") : null };
}

async function refreshMap() {
  const { client, text } = mapColouring();
  const [world, body, all] = await Promise.all([
    loadAtlas(), getJSON(client ? `api/map?match=${encodeURIComponent(text)}` : "api/map"),
    client ? getJSON(`api/history?by=user_agent&match=${encodeURIComponent(text)}&limit=1`) : null]);
  mapBody = body;
  const point = all && all.length ? all[all.length - 1] : null;
  matchedAll = point && point.timestamp === body.timestamp && "matched" in point ? point.matched : null;
  drawMap(world, body, client);
}

function countryName(code) {
  const country = atlas && atlas.countries.find((c) => c.code === code);
  return country ? country.name : code;
}

function placeOf(group) {
  return [group.place, group.country].filter(Boolean).join(", ") || "an unnamed place";
}

function describeGroup(group, client) {
  let text = `${placeOf(group)}: ${plural(group.nodes, "node")}`;
  if (client) return `${text}, ${fmtNumber(group.matched)} holding “${mapBody.match}”`;
  if (group.ipv4 && group.ipv6) text += ` (${fmtNumber(group.ipv4)} IPv4, ${fmtNumber(group.ipv6)} IPv6)`;
  return text;
}

function describeCountry(code, nodes, total) {
  return `${countryName(code)}: ${plural(nodes, "node")}, ${(100 * nodes / total).toFixed(1)}% ` +
    "of the crawl; Enter lists them";
}

function drawMap(world, body, client) {
  const palette = DARK.matches ? DOTS.dark : DOTS.light;
  const map = svg("svg", { viewBox: `0 0 ${MAP_WIDTH} ${MAP_HEIGHT}` });
  const outline = svg("clipPath", { id: "map-outline" });
  outline.append(svg("path", { d: OUTLINE }));
  const sphere = svg("path", { d: OUTLINE, class: "sphere" });
  const shades = svg("g", { class: "countries", role: "group", "clip-path": "url(#map-outline)",
    "aria-label": "Countries with nodes: the arrow keys move between them, Enter lists one's nodes" });
  const counts = body.countries;
  const top = Math.max(1, ...Object.values(counts));
  const withNodes = [];
  for (const country of world.countries) {
    const nodes = (country.code && counts[country.code]) || 0;
    const path = svg("path", { d: country.d, class: nodes ? "country has-nodes" : "country" });
    if (nodes) {
      path.style.fillOpacity = String(0.12 + 0.6 * Math.sqrt(nodes / top));
      path.dataset.country = country.code;
      path.dataset.nodes = String(nodes);
      path.setAttribute("role", "button");
      path.setAttribute("tabindex", "-1");
      path.setAttribute("aria-label", describeCountry(country.code, nodes, body.total_nodes));
      withNodes.push(path);
    }
    shades.append(path);
  }
  withNodes.sort((a, b) => Number(b.dataset.nodes) - Number(a.dataset.nodes));
  countryFocus = Math.min(countryFocus, Math.max(0, withNodes.length - 1));
  if (withNodes.length) withNodes[countryFocus].setAttribute("tabindex", "0");
  const dots = svg("g", { class: "dots" });
  const biggest = Math.max(1, ...body.groups.map((g) => g.nodes));
  dotsDrawn = [];
  // drawn smallest last, so that a small place over a big one can still be pointed at
  for (const group of body.groups) {
    const [x, y] = toMap(group.longitude, group.latitude);
    const fill = client ? (group.matched ? palette.matched : palette.other)
      : (group.ipv6 > group.ipv4 ? palette.ipv6 : palette.ipv4);
    const r = 1.6 + 14 * Math.sqrt(group.nodes / biggest);
    const dot = svg("circle", {
      cx: x.toFixed(1), cy: y.toFixed(1), r: r.toFixed(2),
      fill, class: client && !group.matched ? "dot faint" : "dot",
    });
    dotsDrawn.push({ x, y, r, tip: describeGroup(group, client), nodes: group.nodes });
    dot.dataset.nodes = String(group.nodes);
    if (group.country) dot.dataset.country = group.country;
    dot.dataset.tip = describeGroup(group, client);
    dots.append(dot);
  }
  map.append(outline, sphere, shades, dots);
  const box = $("map");
  box.replaceChildren(map);
  box.dataset.groups = String(body.groups.length);
  box.dataset.timestamp = String(body.timestamp);
  box.dataset.colour = client ? "client" : "network";
  box.dataset.matched = client ? String(body.matched) : "";
  box.dataset.scheme = DARK.matches ? "dark" : "light";
  box.setAttribute("aria-label", describeMap(body, client));
  wireMap(map, withNodes);
  showLegend(body, client, palette);
  showNotMapped(body);
}

function describeMap(body, client) {
  const places = body.groups.slice(0, 3).map((g) => `${placeOf(g)} ${fmtNumber(g.nodes)}`);
  let text = `Map of ${plural(body.mapped, "located node")} in ${plural(body.groups.length, "place")}` +
    (places.length ? `; the most at ${places.join(", ")}` : "");
  const countries = Object.entries(body.countries).slice(0, 3)
    .map(([code, n]) => `${countryName(code)} ${(100 * n / body.total_nodes).toFixed(1)}%`);
  if (countries.length) text += `; by country: ${countries.join(", ")}`;
  if (client) text += `; ${fmtNumber(body.matched)} of them hold “${body.match}”`;
  return `${text}. ${fmtNumber(body.not_mapped)} not mapped.`;
}

function swatch(colour, label) {
  const item = document.createElement("span");
  const mark = document.createElement("span");
  mark.className = "dot-swatch";
  mark.style.background = colour;
  mark.setAttribute("aria-hidden", "true");
  item.append(mark, ` ${label}`);
  return item;
}

function showLegend(body, client, palette) {
  // The map holds only the nodes with a place: say how many of those holding the text
  // that is, against the crawl's whole count (the user agents' table's).
  const unmapped = matchedAll == null ? null : matchedAll - body.matched;
  const parts = client
    ? [swatch(palette.matched, `places with nodes holding “${body.match}” (${fmtNumber(body.matched)} nodes` +
        (unmapped == null ? ")" : ` of the crawl's ${fmtNumber(matchedAll)}; ${fmtNumber(unmapped)} have no place on the map)`)),
      swatch(palette.other, "places without")]
    : [swatch(palette.ipv4, "mostly IPv4"), swatch(palette.ipv6, "mostly IPv6")];
  $("map-legend").replaceChildren(...parts,
    " · a dot's area is its nodes; a country's shade is its share of the crawl");
}

const REASONS = [["onion", "onion"], ["i2p", "I2P"], ["cjdns", "CJDNS"],
  ["no_coordinates", "no coordinates"], ["unknown_location", "unknown location (0, 0)"]];

function showNotMapped(body) {
  const parts = REASONS.filter(([key]) => body.not_mapped_by[key])
    .map(([key, label]) => `${label} ${fmtNumber(body.not_mapped_by[key])}`);
  const line = $("not-mapped");
  line.replaceChildren(document.createElement("strong"));
  line.firstChild.textContent = `Not mapped: ${fmtNumber(body.not_mapped)}`;
  line.append(` of ${plural(body.total_nodes, "node")}` + (parts.length ? ` (${parts.join(", ")})` : ""));
  line.dataset.count = String(body.not_mapped);
}

function showTip(text, x, y) {
  const tip = $("map-tip");
  const wrap = $("map").parentElement;
  tip.textContent = text;
  tip.hidden = false;
  const room = wrap.clientWidth - tip.offsetWidth;
  tip.style.left = `${Math.max(0, Math.min(room, x - tip.offsetWidth / 2))}px`;
  tip.style.top = `${Math.max(0, y - tip.offsetHeight - 12)}px`;
}

function pointAt(event) {
  const box = $("map").parentElement.getBoundingClientRect();
  return [event.clientX - box.left, event.clientY - box.top];
}

function centreOf(element) {
  const box = $("map").parentElement.getBoundingClientRect();
  const rect = element.getBoundingClientRect();
  return [rect.left + rect.width / 2 - box.left, rect.top + rect.height / 2 - box.top];
}

function countryTip(path) {
  return describeCountry(path.dataset.country, Number(path.dataset.nodes), mapBody.total_nodes)
    .replace("Enter lists them", "click to list them");
}

function openCountry(code) {
  listNodes(`country=${encodeURIComponent(code)}`, `in ${countryName(code)} (${code})`)
    .then(() => { document.body.dataset.listed = code; })
    .catch(report);
  $("search-heading").scrollIntoView({ block: "start" });
}

// What is under a point of the map: of the dots it falls in, the biggest group, named with
// its whole count, and how many smaller places share the point. Small dots are drawn over
// big ones (so that they can be seen), and in a city's sprawl hundreds of one-node places
// cover its biggest group: the one drawn on top named a single node where the pointer was
// on the city's own.
function dotAt(map, event) {
  const matrix = map.getScreenCTM();
  if (!matrix) return null;
  const at = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
  const under = dotsDrawn.filter((dot) => Math.hypot(dot.x - at.x, dot.y - at.y) <= dot.r);
  if (under.length === 0) return null;
  const best = under.reduce((a, b) => (b.nodes > a.nodes ? b : a));
  const others = under.length - 1;
  if (others === 0) return best;
  const more = under.reduce((n, dot) => n + dot.nodes, 0) - best.nodes;
  return { ...best, tip: `${best.tip}; ${plural(others, "smaller place")} here too ` +
    `(${plural(more, "node")})` };
}

function wireMap(map, countries) {
  const point = (event) => {
    const dot = dotAt(map, event);
    const target = event.target;
    if (dot) showTip(dot.tip, ...pointAt(event));
    else if (target.dataset.country) showTip(countryTip(target), ...pointAt(event));
    else $("map-tip").hidden = true;
    return dot;
  };
  map.addEventListener("pointermove", point);
  map.addEventListener("pointerleave", () => { $("map-tip").hidden = true; });
  map.addEventListener("click", (event) => {
    const dot = point(event);
    if (!dot && event.target.dataset.country) openCountry(event.target.dataset.country);
  });
  countries.forEach((path, index) => {
    path.addEventListener("focus", () => {
      countryFocus = index;
      showTip(countryTip(path), ...centreOf(path));
    });
    path.addEventListener("blur", () => { $("map-tip").hidden = true; });
  });
  map.addEventListener("keydown", (event) => {
    const at = countries.indexOf(document.activeElement);
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
    if (step) {
      event.preventDefault();
      const next = countries[(at + step + countries.length) % countries.length];
      countries[at].setAttribute("tabindex", "-1");
      next.setAttribute("tabindex", "0");
      next.focus();
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      openCountry(countries[at].dataset.country);
    }
  });
}

$("map-controls").addEventListener("submit", (event) => {
  event.preventDefault();
  refreshMap().catch(report);
});
$("map-colour").addEventListener("change", () => refreshMap().catch(report));
DARK.addEventListener("change", () => {
  if (atlas && mapBody) drawMap(atlas, mapBody, $("map").dataset.colour === "client");
});
// Drawn by main.js on each crawl served (the event stream's "snapshot").
