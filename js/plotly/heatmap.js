// plotly.js's heat map, registered into the same plotly as plotly/index.js: the media cards' steps × values view of a
// histogram tag. Imported lazily by the Stellar page's media section when a run has histograms, so a page without
// them (and the pane's bundle) does not carry it.
import heatmap from "plotly.js/lib/heatmap";
import Plotly from "./index.js";

Plotly.register([heatmap]);

export default Plotly;
