"use strict";
// "Check now": a live handshake with a node (POST api/v1/checknode/), on the dashboard's
// check form and on a node's page. Each button[data-checknow] names the network's root
// (data-root, relative to the page), where to say the answer (data-result) and, on the
// dashboard, the input holding host:port (data-input); on a node's page the node comes
// from the page's own path (nodes/<address>-<port>/). A button stays hidden unless
// /api/networks says the network's live check is on. `crawldash demo` lists its own peer
// (on this machine, the one node of its made-up crawls that answers) under DEMO_HOST: the
// dashboard offers it, and an answer from it says whose it is.
(function () {
  const DEMO_HOST = "peer.demo.crawldash.invalid";
  const DEMO_AGENT = "/crawldash-demo-peer:";
  const REASONS = {
    refused: "the connection was refused: nothing listens on that port",
    timeout: "no answer in time",
    closed: "it accepted the connection, then closed it",
    not_bitcoin: "something answered, but not a Bitcoin node",
    wrong_network: "a Bitcoin node of another network (its messages carry another magic)",
    unreachable: "no route to it from here",
    not_checkable: "this server cannot reach that network (onion without a proxy, i2p, cjdns)",
  };

  function unbracket(host) { return host.replace(/^\[(.*)\]$/, "$1"); }

  function fromInput(text) {  // host:port, IPv6 in brackets
    const found = /^\s*(\[[^\]]+\]|[^:\s]+):(\d{1,5})\s*$/.exec(text);
    return found ? [unbracket(found[1]), found[2]] : null;
  }

  function fromPage() {  // .../nodes/<address>-<port>/
    const found = /\/nodes\/([^/]+)-(\d{1,5})\/?$/.exec(decodeURIComponent(location.pathname));
    return found ? [unbracket(found[1]), found[2]] : null;
  }

  async function liveCheckOn(root) {
    const named = /\/n\/([^/]+)\//.exec(location.pathname);
    try {
      const response = await fetch(root + "api/networks", { headers: { Accept: "application/json" } });
      if (!response.ok) return false;
      const rows = (await response.json()).networks;
      const row = named ? rows.find((each) => each.name === named[1]) : rows[0];
      return Boolean(row && row.live_check === true);
    } catch {
      return false;
    }
  }

  function said(body) {
    const when = new Date(body.checked_at * 1000).toISOString().slice(11, 19);
    const again = body.cached ? ` (the check made at ${when} UTC: one per node a minute)` : "";
    if (!body.success) return `No handshake: ${REASONS[body.reason] || body.reason}${again}.`;
    const whose = String(body.user_agent).startsWith(DEMO_AGENT)
      ? " This is the demo's own peer, on this machine." : "";
    return `Up: ${body.user_agent}, protocol ${body.version}, height ` +
      `${body.height.toLocaleString()}, handshake in ${body.handshake_ms} ms${again}.${whose}`;
  }

  async function run(button) {
    const out = document.getElementById(button.dataset.result);
    const input = button.dataset.input && document.getElementById(button.dataset.input);
    const node = input ? fromInput(input.value) : fromPage();
    if (!node) {
      out.textContent = "Give host:port, for example 203.0.113.5:8333.";
      return;
    }
    button.disabled = true;
    out.textContent = "Checking…";
    try {
      const response = await fetch(button.dataset.root + "api/v1/checknode/", {
        method: "POST",
        body: new URLSearchParams({ address: node[0], port: node[1] }),
      });
      const body = await response.json();
      out.textContent = response.ok ? said(body) : `Not checked: ${body.error.message}`;
    } catch {
      out.textContent = "The check failed: the server did not answer.";
    } finally {
      button.disabled = false;
    }
  }

  // The demo's peer, where the crawl lists it: offered beside the form.
  async function offerDemoPeer(button) {
    const hint = document.getElementById(button.dataset.hint || "");
    const input = document.getElementById(button.dataset.input || "");
    if (!hint || !input) return;
    try {
      const response = await fetch(`${button.dataset.root}api/nodes?q=${DEMO_HOST}&limit=1`,
        { headers: { Accept: "application/json" } });
      const found = response.ok ? (await response.json()).results[0] : null;
      if (!found) return;
      const use = document.createElement("button");
      use.type = "button";
      use.className = "link";
      use.textContent = found.address;
      use.addEventListener("click", () => { input.value = found.address; input.focus(); });
      hint.replaceChildren("This is crawldash's demo: its own peer, ", use,
        ", runs on this machine and answers Check now (every other node of the demo is made up).");
      hint.hidden = false;
      hint.dataset.peer = found.address;
    } catch {
      // no hint
    }
  }

  document.querySelectorAll("button[data-checknow]").forEach(async (button) => {
    if (!(await liveCheckOn(button.dataset.root))) return;
    button.addEventListener("click", () => run(button));
    button.hidden = false;
    const out = document.getElementById(button.dataset.result);
    if (out) out.hidden = false;
    offerDemoPeer(button);
  });
})();
