// The pane's plotly.js with the heat map trace the histogram cards draw (shared/media/histogram_card.js) registered
// beside the scatter traces of the metric plots.
import heatmap from "plotly.js/lib/heatmap";
import Plotly from "../plotly/index.js";

Plotly.register([heatmap]);

export const MediaPlotly = Plotly;
