// Numbers and times in words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { epochMs, formatNumber, formatTime, plural } from "../shared/format.js";

test("integers are grouped, other values shown to 6 significant digits", () => {
  assert.equal(formatNumber(12000), "12,000");
  assert.equal(formatNumber(0), "0");
  assert.equal(formatNumber(-7), "-7");
  assert.equal(formatNumber(0.123456789), "0.123457");
  assert.equal(formatNumber(2.5), "2.5");
});

test("tiny and huge values are shown with an exponent", () => {
  assert.equal(formatNumber(0.00012345), "1.2345e-4");
  assert.equal(formatNumber(1234567.5), "1.2346e+6");
  assert.equal(formatNumber(1e20), "1.0000e+20");
});

test("non-finite values use TauGrid's words, and missing ones a dash", () => {
  assert.deepEqual([NaN, Infinity, -Infinity].map(formatNumber), ["NaN", "+Inf", "-Inf"]);
  assert.deepEqual([null, undefined, ""].map(formatNumber), ["–", "–", "–"]);
  assert.equal(formatNumber("not a number"), "not a number");
  assert.equal(formatNumber("42"), "42");
});

test("plural counts with grouping", () => {
  assert.equal(plural(1, "point"), "1 point");
  assert.equal(plural(0, "point"), "0 points");
  assert.equal(plural(1500, "point"), "1,500 points");
});

test("epochMs reads µs, ms, s and RFC 3339", () => {
  const ms = Date.UTC(2025, 9, 9, 8, 53, 20);
  assert.equal(epochMs(ms * 1000), ms);
  assert.equal(epochMs(ms), ms);
  assert.equal(epochMs(ms / 1000), ms);
  assert.equal(epochMs("2025-10-09T08:53:20Z"), ms);
  assert.deepEqual([null, undefined, "", "yesterday", NaN, {}].map(epochMs), [null, null, null, null, null, null]);
});

test("times are shown in UTC to the second, and what is not a time as it came", () => {
  assert.equal(formatTime("2025-10-09T08:53:20.125Z"), "2025-10-09 08:53:20 UTC");
  assert.equal(formatTime(1760000000000000), "2025-10-09 08:53:20 UTC");
  assert.equal(formatTime("soon"), "soon");
  assert.equal(formatTime(null), "–");
});
