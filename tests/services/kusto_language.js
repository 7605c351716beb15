// Microsoft's Kusto.Language parser and binder (npm @kusto/language-service-next, the Bridge.NET build of
// the same code ADX's tools use) as a JSON-lines service for the tests: one request per stdin line, one
// answer per stdout line. Start-up costs a few seconds, so the tests keep one process per session.
//
//   {"op": "schema", "database": "Metrics",
//    "tables": [{"name": "T", "schema": "(a:string, b:long)"}],
//    "views": [{"name": "V", "query": "T | summarize ..."}],          // columns are inferred, in order
//    "functions": [{"name": "F", "parameters": "()", "body": "{ V | project a }"}]}
//      -> {"ok": true, "views": {"V": "(a:string, ...)"}}
//   {"op": "check", "text": "F() | where a == 'x'"}
//      -> {"ok": true, "kind": "Query", "diagnostics": [{"severity", "code", "message", "start", "length"}],
//          "columns": [["a", "string"], ...]}
// Any failure of the service itself answers {"ok": false, "error": "..."}.
"use strict";

require("@kusto/language-service-next/bridge.js");
require("@kusto/language-service-next/Kusto.Language.Bridge.js");
const readline = require("readline");

const Symbols = Kusto.Language.Symbols;
let globals = Kusto.Language.GlobalState.Default;

function list(items) {
  const out = [];
  for (let i = 0; i < items.Count; i++) out.push(items.getItem(i));
  return out;
}

function columnsOf(code) {
  const type = code.ResultType;
  if (!type || !type.Columns) return [];
  return list(type.Columns).map((c) => [c.Name, c.Type.Name]);
}

function schemaText(columns) {
  // ['project'] keeps a keyword usable as a column name.
  return "(" + columns.map(([name, type]) => `['${name.replace(/'/g, "\\'")}']:${type}`).join(", ") + ")";
}

function defineSchema(request) {
  const symbols = [];
  for (const t of request.tables || []) symbols.push(new Symbols.TableSymbol.$ctor7(t.name, t.schema, null));
  const views = {};
  // A view's columns are what its query returns over what is defined before it.
  for (const v of request.views || []) {
    const scope = Kusto.Language.GlobalState.Default.WithDatabase(
      new Symbols.DatabaseSymbol.ctor(request.database, symbols.slice()));
    const code = Kusto.Language.KustoCode.ParseAndAnalyze(v.query, scope);
    const errors = list(code.GetDiagnostics()).filter((d) => d.Severity === "Error");
    if (errors.length) throw new Error(`view ${v.name}: ${errors[0].Code} ${errors[0].Message}`);
    views[v.name] = schemaText(columnsOf(code));
    symbols.push(new Symbols.MaterializedViewSymbol.$ctor3(v.name, views[v.name], v.query, null));
  }
  for (const f of request.functions || []) {
    symbols.push(new Symbols.FunctionSymbol.$ctor16(f.name, f.parameters || "()", f.body, null));
  }
  globals = Kusto.Language.GlobalState.Default.WithDatabase(
    new Symbols.DatabaseSymbol.ctor(request.database, symbols));
  return { ok: true, views };
}

function check(request) {
  const code = Kusto.Language.KustoCode.ParseAndAnalyze(request.text, globals);
  const diagnostics = list(code.GetDiagnostics()).map((d) => ({
    severity: d.Severity, code: d.Code, message: d.Message, start: d.Start, length: d.Length,
  }));
  return { ok: true, kind: code.Kind, diagnostics, columns: columnsOf(code) };
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  let answer;
  try {
    const request = JSON.parse(line);
    if (request.op === "schema") answer = defineSchema(request);
    else if (request.op === "check") answer = check(request);
    else answer = { ok: false, error: `unknown op ${JSON.stringify(request.op)}` };
  } catch (error) {
    answer = { ok: false, error: String((error && error.message) || error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
process.stdout.write(JSON.stringify({ ok: true, ready: true }) + "\n");
