// A view's static HTML export: reads keyed independently of how much they were reduced, and hostile text inert.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { MAX_EXPORT_IMAGE_BYTES, MAX_EXPORT_IMAGES_PER_TAG, exportHtml, nearestCarried, readKey, scriptText } from "../shared/export_html.js";

test("the export's image budget is taunotebook/export_budget.json's, the file export-view reads", () => {
  const budget = JSON.parse(readFileSync(new URL("../../taunotebook/export_budget.json", import.meta.url), "utf8"));
  assert.equal(MAX_EXPORT_IMAGES_PER_TAG, budget.max_images_per_tag);
  assert.equal(MAX_EXPORT_IMAGE_BYTES, budget.max_image_bytes);
  assert.ok(Number.isInteger(MAX_EXPORT_IMAGES_PER_TAG) && MAX_EXPORT_IMAGE_BYTES > 0);
});

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

test("a media read at a step the export does not carry is answered with the carried one nearest it", () => {
  const path = "api/v2/stellar/runs/r/images";
  const at = (step) => ({ tag: "sample", requested_step: step, step, images: [{ index: 0 }] });
  const answers = {
    [readKey(path, new URLSearchParams("tag=sample&step=20"))]: at(20),
    [readKey(path, new URLSearchParams("tag=sample&step=5"))]: at(5),
    [readKey(path, new URLSearchParams("tag=other&step=11"))]: { ...at(11), tag: "other" },
    [readKey("api/v2/stellar/runs/r/histograms", new URLSearchParams("tag=w&buckets=false"))]: { steps: [0, 10, 20] },
    [readKey("api/v2/stellar/runs/r/histograms", new URLSearchParams("tag=w&step_min=20&max_steps=1"))]: { steps: [20], buckets: [[]] },
  };
  const near = nearestCarried(answers, path, new URLSearchParams("tag=sample&step=11&project=p"));
  assert.deepEqual([near.step, near.requested_step, near.tag], [5, 11, "sample"]); // 5 is nearer than 20
  assert.equal(nearestCarried(answers, path, new URLSearchParams("tag=sample&step=13")).step, 20);
  assert.equal(nearestCarried(answers, path, new URLSearchParams("tag=missing&step=13")), null);
  // A histogram's range read: the carried range read, never the bands' read (which has no step).
  const range = nearestCarried(answers, "api/v2/stellar/runs/r/histograms", new URLSearchParams("tag=w&step_max=3&max_steps=2"));
  assert.deepEqual(range.steps, [20]);
  // The card's read of the view's gap around the cursor (keep=the cursor's step) finds the carried one too.
  const gap = nearestCarried(answers, "api/v2/stellar/runs/r/histograms", new URLSearchParams("tag=w&step_min=0&step_max=30&max_steps=8&keep=18"));
  assert.deepEqual(gap.steps, [20]);
  // The images read with inline_thumbnails is keyed as the one without.
  assert.equal(readKey(path, new URLSearchParams("tag=sample&step=5&inline_thumbnails=true")), readKey(path, new URLSearchParams("tag=sample&step=5")));
  assert.equal(nearestCarried(answers, "api/v2/stellar/runs/r/series", new URLSearchParams("tag=sample&step=1")), null);
});
