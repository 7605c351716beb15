// The Portal's reads the pages make, their writes (notes and tags), and their errors in words.
import { nearestCarried, readKey } from "../shared/export_html.js";
import { supersededError } from "../shared/media/card.js";
import { portalUrl } from "../shared/urls.js";
import { config, root, state, urlToken } from "./page.js";

export class StellarError extends Error {
  constructor(status, code, message, envelope = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.envelope = envelope;
  }
}

/**
 * TauGrid's v2 Stellar reads: `segments` after api/v2/stellar/ (ids wrapped with urls.id). `signal` (an
 * AbortSignal), when given, ends the read when it aborts (a read a newer cursor move superseded frees its
 * connection): it then rejects with shared/media/card.js's superseded error, never the Portal's words.
 */
export function api(segments, query = {}, { signal } = {}) {
  return request(["api", "v2", "stellar", ...segments], query, "GET", null, signal);
}

/** The local Portal's page data: what v2 does not carry (experiment ids, non-finite positions, wall times). */
export function pageData(segments, query = {}) {
  return request(["stellar", "data", ...segments], query);
}

/**
 * A write (notes and tags): `method` with a JSON `body`, the page's write key in X-Tau-Token (the Portal never
 * takes the page's cookie alone as leave to write; portal/writes.py).
 */
export function apiWrite(method, segments, body = null) {
  return request(["api", "v2", "stellar", ...segments], {}, method, body);
}

/** Whether this page may write notes and tags: the Portal served it a write key. */
export function canWrite() {
  return Boolean(config.writeKey);
}

/** The reads the page made and their answers, by readKey: what a static export carries (export_view.js). */
export const recorded = new Map();

/**
 * An offline export's answer to a read: the one it carries, else (a zoom the export was not made with) the
 * window cut from the whole series it carries (max_points=1: its last point); a read it cannot answer fails in
 * words.
 */
function offlineAnswer(path, url) {
  const answers = state.offline.responses;
  const key = readKey(path, url.searchParams);
  if (key in answers) return answers[key];
  const params = url.searchParams;
  const start = params.has("start_step") ? Number(params.get("start_step")) : -Infinity;
  const end = params.has("end_step") ? Number(params.get("end_step")) : Infinity;
  if (params.has("start_step") || params.has("end_step")) {
    const whole = new URLSearchParams(url.searchParams);
    whole.delete("start_step");
    whole.delete("end_step");
    const full = answers[readKey(path, whole)];
    const inside = (p) => Number(p.step) >= start && Number(p.step) <= end;
    if (full?.points) {
      let points = full.points.filter(inside);
      if (params.get("max_points") === "1") points = points.slice(-1); // the last point (an x value carried over)
      return { ...full, points, returned_points: points.length, source_points: Math.max(points.length, Math.round(full.source_points * points.length / Math.max(1, full.points.length))) };
    }
    if (full && "non_finite" in full) {
      const nonFinite = (full.non_finite || []).filter(inside);
      return { ...full, non_finite: nonFinite, non_finite_count: nonFinite.length };
    }
  }
  const near = nearestCarried(answers, path, params);
  if (near) return near;
  throw new StellarError(404, "NOT_IN_EXPORT", `this export does not carry ${path} (it holds what the page had drawn)`);
}


async function request(segments, query, method = "GET", payload = null, signal = undefined) {
  // The page's ?source= goes with every read, so a source=kusto page reads Kusto throughout.
  if (state.source && !("source" in query)) query = { ...query, source: state.source };
  const url = portalUrl(root, segments, query);
  const path = url.pathname.slice(root.pathname.length);
  if (state.offline) {
    if (method !== "GET") throw new StellarError(0, "STATIC_EXPORT", "a static export cannot write: open the live page");
    return offlineAnswer(path, url);
  }
  if (signal?.aborted) throw supersededError();
  const headers = { Accept: "application/json" };
  if (urlToken) headers.Authorization = `Bearer ${urlToken}`;
  if (method !== "GET") {
    headers["X-Tau-Token"] = config.writeKey || "";
    if (payload !== null) headers["Content-Type"] = "application/json";
  }
  // Logged when it is sent (status null until the answer comes), so the log never lags what the Portal served.
  const sent = { path, query, status: null, method };
  state.requests.push(sent);
  let response;
  try {
    response = await fetch(url, { method, headers, credentials: "same-origin", signal,
      body: payload !== null ? JSON.stringify(payload) : undefined });
  } catch (err) {
    sent.status = 0;
    if (signal?.aborted) throw supersededError();
    throw new StellarError(0, "NETWORK", `the Portal could not be reached (${err.message}); is it still running?`);
  }
  sent.status = response.status;
  let text;
  try {
    text = await response.text();
  } catch (err) {
    if (signal?.aborted) throw supersededError();
    throw new StellarError(0, "NETWORK", `the Portal's answer to ${path} broke off (${err.message})`);
  }
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    // TauGrid's v2 envelope {"error":{code,message,...}}, else its Portal-boundary shapes.
    const envelope = body && body.error && typeof body.error === "object" ? body.error : null;
    const code = envelope?.code || (typeof body?.code === "string" ? body.code : `HTTP_${response.status}`);
    const message =
      envelope?.message ||
      body?.detail ||
      body?.reason ||
      (typeof body?.error === "string" ? body.error : "") ||
      text.slice(0, 300) ||
      response.statusText;
    throw new StellarError(response.status, code, message, envelope);
  }
  if (body === null) {
    throw new StellarError(response.status, "BAD_RESPONSE", `the Portal answered ${path} with something that is not JSON`);
  }
  if (method === "GET") recorded.set(readKey(path, url.searchParams), body);
  return body;
}

/** An error as a sentence that says what failed, the Portal's words, and what to do next. */
export function explain(err, what) {
  if (!(err instanceof StellarError)) return `${what}: ${err.message || err}`;
  const head = `${what}: ${err.message}`;
  const tail = {
    0: "",
    401: "The Portal needs its token: open the link it printed at start-up (it carries ?token=…).",
    403: "This Portal serves another workspace, or refuses a write from another site.",
    409: "",
    404: "Check the run id and project in the address.",
    503: "The data source is unavailable right now; reload to try again.",
  }[err.status];
  const status = err.status ? ` (HTTP ${err.status} ${err.code})` : ` (${err.code})`;
  return `${head}${status}.${tail ? ` ${tail}` : ""}`;
}
