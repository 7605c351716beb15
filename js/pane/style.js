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
.tau-pane-status { min-height: 1.3em; color: var(--jp-ui-font-color2, #555); }
.tau-pane-status-unreachable, .tau-pane-status-unauthorized, .tau-pane-status-not_found,
.tau-pane-status-error { color: #b00; font-weight: 600; }
.tau-pane-controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 2px 0 4px; }
.tau-pane-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 6px; }
.tau-pane-metric-head { display: flex; gap: 10px; }
.tau-pane-plot { min-height: 220px; contain: inline-size; } /* its drawn width never widens the pane */
.tau-pane-metric-name { font-weight: 600; }
.tau-pane-nonfinite { color: #b00; }
.tau-pane-error { color: #b00; }
`;
