// Command taugrid_driver prints TauGrid's verdict on conformance cases, using TauGrid's own run-config code.
//
// It is our driver, not TauGrid's code: it imports github.com/Azure/taugrid/core/runconfig (built in GOPATH
// mode outside this repository, see regenerate.py) and, for each case read as JSON from stdin, answers
// what `tau run --config` would: the file parsed strictly and validated (ValidateDirect), the engine
// normalized and the execution checked (ValidateExecution), and the experiment identity derived
// (ExperimentRunMetadata). Other kinds: "yaml" decodes YAML text as yaml.v3 does into `any` (to check
// the YAML we write), "title" derives an experiment id from a title (IDFromTitle), "id" runs ValidateID.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/Azure/taugrid/core/experiment"
	"github.com/Azure/taugrid/core/exptelemetry"
	"github.com/Azure/taugrid/core/runconfig"
	"gopkg.in/yaml.v3"
)

type Case struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Text  string `json:"text"`
	Label string `json:"label,omitempty"`
}

type Verdict struct {
	Accepted   bool              `json:"accepted"`
	Stage      string            `json:"stage,omitempty"`
	Error      string            `json:"error,omitempty"`
	Engine     *string           `json:"engine,omitempty"`
	Identity   map[string]string `json:"identity,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
	Decoded    any               `json:"decoded,omitempty"`
	Derived    *string           `json:"derived,omitempty"`
}

// tagged is a decoded YAML value with its Go type kept (JSON alone would merge 1 and 1.0).
func tagged(value any) any {
	switch v := value.(type) {
	case nil:
		return map[string]any{"null": true}
	case string:
		return map[string]any{"str": v}
	case bool:
		return map[string]any{"bool": v}
	case int:
		return map[string]any{"int": strconv.Itoa(v)}
	case int64:
		return map[string]any{"int": strconv.FormatInt(v, 10)}
	case uint64:
		return map[string]any{"int": strconv.FormatUint(v, 10)}
	case float64:
		return map[string]any{"float": strconv.FormatFloat(v, 'g', -1, 64)}
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = tagged(item)
		}
		return map[string]any{"seq": out}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][2]any, 0, len(v))
		for _, k := range keys {
			out = append(out, [2]any{k, tagged(v[k])})
		}
		return map[string]any{"map": out}
	default:
		return map[string]any{"other": fmt.Sprintf("%T %v", v, v)}
	}
}

func config(text string) Verdict {
	cfg, warnings, err := runconfig.ParseWithDiagnostics([]byte(text), "tau.yaml")
	if err != nil {
		return Verdict{Stage: "load", Error: err.Error()}
	}
	engine, err := runconfig.NormalizeEngine(runconfig.FirstNonEmpty(cfg.Run.Engine, cfg.Engine))
	if err != nil {
		return Verdict{Stage: "engine", Error: err.Error()}
	}
	if err := cfg.ValidateExecution(engine); err != nil {
		return Verdict{Stage: "execution", Error: err.Error()}
	}
	meta := runconfig.ExperimentRunMetadata(cfg.Experiment)
	return Verdict{Accepted: true, Engine: &engine, Warnings: warnings, Identity: map[string]string{
		"project": meta.Project, "experiment": meta.ExperimentID, "group": meta.RunGroupID,
		"stellar_experiment": meta.StellarMetadata().ExperimentID,
	}}
}

func decode(text string) Verdict {
	var value any
	if err := yaml.Unmarshal([]byte(text), &value); err != nil {
		return Verdict{Stage: "load", Error: err.Error()}
	}
	return Verdict{Accepted: true, Decoded: tagged(value)}
}

func main() {
	var cases []Case
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "taugrid_driver: stdin must be a JSON list of cases:", err)
		os.Exit(2)
	}
	out := make(map[string]Verdict, len(cases))
	for _, c := range cases {
		var v Verdict
		switch c.Kind {
		case "config":
			v = config(c.Text)
		case "yaml":
			v = decode(c.Text)
		case "title":
			derived := experiment.IDFromTitle(c.Text)
			v = Verdict{Accepted: true, Derived: &derived}
		case "id":
			if err := exptelemetry.ValidateID("id", c.Text); err != nil {
				v = Verdict{Stage: "validate", Error: err.Error()}
			} else {
				v = Verdict{Accepted: true}
			}
		default:
			fmt.Fprintf(os.Stderr, "taugrid_driver: case %s: unknown kind %q\n", c.ID, c.Kind)
			os.Exit(2)
		}
		out[c.ID] = v
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "taugrid_driver:", err)
		os.Exit(1)
	}
}
