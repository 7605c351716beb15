// The loss pane's browser side (anywidget): draws what the kernel sends, one small plot per metric.
// The contract with the kernel (traitlets and the binary points message) is written down in taunotebook/pane.py.
import { Pane } from "./pane.js";
import { watchModel } from "./notify.js";
import { storeFor } from "./store.js";

window.__tauPaneLoaded ??= performance.timeOrigin + performance.now(); // for bench/bench_pane.py's timeline

export default {
  initialize({ model }) {
    // Listen before any view exists: chunks sent while the page builds the first view are kept.
    storeFor(model);
    watchModel(model); // the runs' states as first seen: a run that already ended raises no notice
    model.send({ type: "hello", width: model.get("width") });
  },
  render({ model, el }) {
    return new Pane(model, el).start();
  },
};
