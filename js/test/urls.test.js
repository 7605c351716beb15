// URLs of the Portal's routes: one encoded path segment per id.
import assert from "node:assert/strict";
import { test } from "node:test";
import { id, pathSegment, portalUrl, stellarUrl } from "../shared/urls.js";

const ROOT = "http://127.0.0.1:8888/user/ada/tau-portal/";

test("an id is one path segment whatever characters it has", () => {
  const url = portalUrl(ROOT, ["api", "v2", "stellar", "runs", id("a/b?c#d %e"), "series"]);
  assert.equal(url.pathname, "/user/ada/tau-portal/api/v2/stellar/runs/a%2Fb%3Fc%23d%20%25e/series");
  assert.equal(decodeURIComponent(url.pathname.split("/")[8]), "a/b?c#d %e");
});

test("unicode ids are sent as UTF-8 percent-escapes", () => {
  assert.equal(pathSegment("ünï"), "%C3%BCn%C3%AF");
});

test("'.', '..' and empty ids are refused with the id named", () => {
  for (const bad of [".", "..", ""]) assert.throws(() => pathSegment(bad), new RegExp(`${JSON.stringify(bad).replace(/\./g, "\\.")} cannot be used as an id`));
});

test("a root relative to the page resolves against it", () => {
  const url = portalUrl("../../", ["stellar", "data", "experiments"], {}, "http://h/base/stellar/runs/x");
  assert.equal(url.href, "http://h/base/stellar/data/experiments");
});

test("query values: empty ones left out, arrays repeat their key, the rest as text", () => {
  const url = portalUrl(ROOT, ["x"], { a: 1, b: null, c: undefined, d: "", e: ["p", "q"], f: 0 });
  assert.equal(url.search, "?a=1&e=p&e=q&f=0");
});

test("the Stellar link lists targets in order, with the project", () => {
  const url = stellarUrl(ROOT, ["run a", "run/b"], "proj");
  assert.equal(url.pathname, "/user/ada/tau-portal/stellar");
  assert.deepEqual(url.searchParams.getAll("target"), ["run a", "run/b"]);
  assert.equal(url.searchParams.get("project"), "proj");
  assert.equal(stellarUrl(ROOT, ["r"]).search, "?target=r");
});

test("the Stellar link carries a source when given", () => {
  assert.equal(stellarUrl(ROOT, ["r"], "p", undefined, "kusto").search, "?target=r&project=p&source=kusto");
  assert.equal(stellarUrl(ROOT, ["r"], null, undefined, null).search, "?target=r");
});
