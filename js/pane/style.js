// The pane's CSS, scoped under .tau-pane; JupyterLab's theme variables where they exist.
export const PANE_CSS = `
.tau-pane { font: 12px var(--jp-ui-font-family, sans-serif); color: var(--jp-ui-font-color1, #222); }
.tau-pane-header { display: flex; gap: 10px; align-items: baseline; }
.tau-pane-run { font-weight: 600; }
.tau-pane-state { padding: 1px 6px; border-radius: 8px; background: #e0e0e0; }
.tau-pane-state-running { background: #d6ecff; }
.tau-pane-state-succeeded, .tau-pane-state-completed { background: #d9f2d9; }
.tau-pane-state-failed { background: #ffd6d6; color: #900; }
.tau-pane-state-cancelled { background: #eee; color: #555; }
.tau-pane-stellar { margin-left: auto; }
.tau-pane-note-toggle, .tau-pane-note-send { font: inherit; padding: 0 6px; }
.tau-pane-note-input { font: inherit; width: 16em; }
.tau-pane-note-status { color: var(--jp-ui-font-color2, #555); }
.tau-pane-note-status[data-ok="false"] { color: #b00; }
.tau-pane-status { min-height: 1.3em; color: var(--jp-ui-font-color2, #555); }
.tau-pane-status-unreachable, .tau-pane-status-unauthorized, .tau-pane-status-not_found,
.tau-pane-status-error { color: #b00; font-weight: 600; }
.tau-pane-controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 2px 0 4px; }
.tau-pane-count { color: var(--jp-ui-font-color2, #555); }
.tau-pane-find { display: inline-flex; gap: 6px; align-items: center; }
.tau-pane-search { width: 16em; }
.tau-pane-filter-note { color: var(--jp-ui-font-color2, #555); }
.tau-pane-list { max-height: 240px; overflow: auto; border: 1px solid var(--jp-border-color2, #ddd); margin: 2px 0 6px;
  padding: 2px 6px; }
.tau-pane-list ul { list-style: none; margin: 0; padding: 0; }
.tau-pane-list li { display: flex; gap: 4px; align-items: center; }
.tau-pane-goto { border: none; background: none; cursor: pointer; padding: 1px 2px; font: inherit; text-align: left;
  color: var(--jp-content-link-color, #1a5fb4); }
.tau-pane-section { margin: 2px 0 6px; }
.tau-pane-section-head { display: flex; gap: 8px; align-items: baseline; width: 100%; border: none; cursor: pointer;
  padding: 3px 4px; font: inherit; text-align: left; background: var(--jp-layout-color2, #f0f0f0);
  color: inherit; }
.tau-pane-section-title { font-weight: 600; }
.tau-pane-section-count { color: var(--jp-ui-font-color2, #555); }
.tau-pane-section-caret::before { content: "▸"; }
.tau-pane-section[data-open=true] .tau-pane-section-caret::before { content: "▾"; }
.tau-pane-more { margin: 4px 0; }
.tau-pane-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 6px; }
.tau-pane-grid[hidden] { display: none; }
.tau-pane-metric { min-height: 244px; } /* a slot keeps its plot's height before and after: scrolling stays put */
.tau-pane-metric-head { display: flex; gap: 10px; align-items: baseline; }
.tau-pane-pin { border: none; background: none; cursor: pointer; padding: 0 2px; opacity: 0.3; font-size: 11px; }
.tau-pane-pin[aria-pressed=true] { opacity: 1; }
.tau-pane-metric-head .tau-pane-pin { margin-left: auto; order: 9; }
.tau-pane-plot { min-height: 220px; contain: inline-size layout style; } /* its drawn width never widens the pane; plotly measuring its text lays out this box, not the notebook */
.tau-pane-metric-name { font-weight: 600; }
.tau-pane-nonfinite { color: #b00; }
.tau-pane-xnote { color: #666; font-size: 11px; margin-left: 6px; }
.tau-pane-error { color: #b00; }
.tau-pane-bell { border: none; background: none; cursor: pointer; padding: 0 2px; font-size: 13px; opacity: 0.5; }
.tau-pane-bell[aria-pressed=true] { opacity: 1; }
.tau-pane-alert { display: flex; gap: 8px; align-items: baseline; margin: 2px 0; padding: 3px 6px; border-radius: 3px;
  background: #d9f2d9; }
.tau-pane-alert[hidden] { display: none; }
.tau-pane-alert[data-kind=failed], .tau-pane-alert[data-kind=stop-rule] { background: #ffe0cc; }
.tau-pane-alert-close { margin-left: auto; border: none; background: none; cursor: pointer; }
/* The Media section (media_section.js; the cards are shared/media/'s) */
.tau-pane-media { margin-top: 10px; border-top: 1px solid var(--jp-border-color2, #ddd); padding-top: 4px; }
.tau-pane-media[hidden], .tau-pane-media-kind[hidden], .tau-pane-media-note[hidden] { display: none; }
.tau-pane-step-box { display: flex; gap: 8px; align-items: baseline; }
.tau-pane-step-input { font: inherit; width: 8em; }
.tau-pane-step-note[data-error=true], .tau-pane .media-error { color: #b00; }
.tau-pane-media-title { margin: 6px 0 2px; font-size: 13px; }
.tau-pane-media-count { color: var(--jp-ui-font-color2, #555); font-weight: normal; }
.tau-pane-media-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 8px; }
.tau-pane-media-slot { min-height: 120px; min-width: 0; }
/* Compared runs: the card spans the row, its runs' panels side by side at the one step */
.tau-pane-media-slot[data-runs]:not([data-runs="1"]) { grid-column: 1 / -1; }
.tau-pane .media-panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 8px; }
.tau-pane .media-panel { min-width: 0; }
.tau-pane .media-run { font-size: 11px; display: flex; gap: 4px; align-items: center; }
.tau-pane .media-swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; }
.tau-pane .media-card { border: 1px solid var(--jp-border-color2, #ddd); border-radius: 4px; padding: 4px 6px; }
.tau-pane .media-card-head { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.tau-pane .media-tag { font-size: 12px; margin: 2px 0; overflow-wrap: anywhere; flex: 1 1 auto; }
.tau-pane .media-step, .tau-pane .media-note { color: var(--jp-ui-font-color2, #555); font-size: 11px; }
.tau-pane .media-step { display: block; }
.tau-pane .media-error[hidden] { display: none; }
.tau-pane .media-images { display: flex; flex-wrap: wrap; gap: 6px; }
.tau-pane .media-image { margin: 0; max-width: 168px; }
.tau-pane .media-thumb { display: block; min-width: 96px; max-width: 160px; max-height: 160px; height: auto;
  object-fit: contain; image-rendering: pixelated; } /* a tiny image is scaled up to be seen */
.tau-pane .media-caption { font-size: 11px; overflow-wrap: anywhere; }
.tau-pane .media-plot { width: 100%; height: 240px; }
.tau-pane .media-overlay { width: 100%; height: 220px; }
.tau-pane .media-text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font: 11px monospace; }
`;
