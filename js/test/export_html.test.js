// A view's static HTML export: reads keyed independently of how much they were reduced, and hostile text inert.
import assert from "node:assert/strict";
import { test } from "node:test";
import { exportHtml, readKey, scriptText } from "../shared/export_html.js";

test("a read's key ignores what only says how it was reduced or where it came from, and sorts the rest", () => {
  const a = readKey("api/v2/stellar/runs/r%2Fx/series", new URLSearchParams("target=r%2Fx&metric=m&max_points=3200&project=p"));
  const b = readKey("api/v2/stellar/runs/r%2Fx/series", new URLSearchParams("metric=m&target=r%2Fx&max_points=800&source=local"));
  assert.equal(a, b);
  assert.equal(a, '["api/v2/stellar/runs/r/x/series",[["metric","m"],["target","r/x"]]]');
  assert.notEqual(a, readKey("api/v2/stellar/runs/r%2Fx/series", new URLSearchParams("target=r%2Fx&metric=m&start_step=1")));
});

test("hostile run ids and a script that says </script> cannot break out of the file's elements", () => {
  const evil = "</script><img src=x onerror=alert(1)><!--";
  const html = exportHtml({
    config: { mode: "runs", targets: [evil], offline: { exportedAt: "2026-01-01T00:00:00.000Z", responses: { k: { run: evil } } } },
    script: `const s = "</script><b>"; // <!-- x`, css: "a{} </style><script>alert(1)</script>", heading: evil,
  });
  assert.equal(html.match(/<\/script>/gi).length, 2); // the config's and the script's own end tags, nothing else
  assert.equal(html.match(/<\/style>/gi).length, 1);
  assert.ok(!html.includes("<img"));
  const config = html.match(/<script type="application\/json" id="stellar-config">(.*?)<\/script>/s)[1];
  assert.deepEqual(JSON.parse(config).targets, [evil]);
  assert.equal(scriptText("a</SCRIPT>b<!--c"), "a\\x3C/SCRIPT>b\\x3C!--c");
});
