"use strict";
// The node and leaderboard pages' one way to ask crawldash: the JSON of a 200 answer, or an
// Error with the message of crawldash's error body (or of what else answered).

async function getJSON(url) {
  let response;
  try {
    // no-cache: revalidate (a cheap 304) rather than trust max-age, as crawls can come early
    response = await fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } });
  } catch (error) {
    throw new Error(`crawldash cannot be reached (${error.message})`);
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON (from a proxy, say): described by the status below
  }
  if (response.ok && body !== null) return body;
  if (body && body.error && typeof body.error.message === "string") throw new Error(body.error.message);
  throw new Error(`crawldash answered ${response.status} for ${url}`);
}
