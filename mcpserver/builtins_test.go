package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServedBuiltinSchemas holds the built-in tools' encoded schemas (the
// constants the endpoint serves) to what their Go types make of them
// ([builtinTools] through [rawSchemas]): a field added to AskInput, or to
// anything InstanceOutput holds (proxy.ServerStatus, Withheld, ...), fails
// here with the constant's new text.
func TestServedBuiltinSchemas(t *testing.T) {
	ask, prog, get, err := builtinTools("agentctl")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{rawSchemas[AskInput, AskOutput](ask), rawSchemas[ProgressInput, ProgressOutput](prog), rawSchemas[struct{}, InstanceOutput](get)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	sAsk, sProg, sGet := servedBuiltins("agentctl")
	for _, c := range []struct {
		inferred, served *mcp.Tool
		in, out          string // the constants' names
	}{
		{ask, sAsk, "askInputSchema", "askOutputSchema"},
		{prog, sProg, "progressInputSchema", "progressOutputSchema"},
		{get, sGet, "getInputSchema", "getOutputSchema"},
	} {
		for _, s := range []struct {
			name             string
			inferred, served any
		}{{c.in, c.inferred.InputSchema, c.served.InputSchema}, {c.out, c.inferred.OutputSchema, c.served.OutputSchema}} {
			want, got := string(s.inferred.(json.RawMessage)), string(s.served.(json.RawMessage))
			if got != want {
				t.Errorf("%s: the served schema is not what the types make of it; replace the constant in builtins.go with\n\t%s = `%s`", c.served.Name, s.name, want)
			}
		}
		// Everything else is the same definition.
		a, b := *c.inferred, *c.served
		a.InputSchema, a.OutputSchema, b.InputSchema, b.OutputSchema = nil, nil, nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: served %+v, want %+v", c.served.Name, b, a)
		}
	}
}

// TestServedBuiltinsResolve: the served schemas are valid for the SDK,
// which resolves them at a tool's first call ([typedHandler]), not at
// registration, where it would have refused a bad one at once.
func TestServedBuiltinsResolve(t *testing.T) {
	ask, prog, get := servedBuiltins("agentctl")
	for _, err := range []error{
		resolveBoth[AskInput, AskOutput](ask),
		resolveBoth[ProgressInput, ProgressOutput](prog),
		resolveBoth[struct{}, InstanceOutput](get),
	} {
		if err != nil {
			t.Error(err)
		}
	}
}

func resolveBoth[In, Out any](t *mcp.Tool) error {
	var r *jsonschema.Resolved
	if _, err := resolveSchema[In](t.InputSchema, &r); err != nil {
		return fmt.Errorf("%s: input schema: %w", t.Name, err)
	}
	if _, err := resolveSchema[Out](t.OutputSchema, &r); err != nil {
		return fmt.Errorf("%s: output schema: %w", t.Name, err)
	}
	return nil
}

// builtinTools returns the definitions of the built-in tools for server S
// as their Go types define them: the schemas left out are inferred from
// the handlers' input and output types ([rawSchemas]); report_progress's
// input schema is refined here. The endpoint serves [servedBuiltins], the
// same definitions with those schemas already encoded.
func builtinTools(s string) (ask, prog, get *mcp.Tool, err error) {
	ask, prog, get = builtinMeta(s)
	progSchema, err := jsonschema.For[ProgressInput](nil)
	if err != nil {
		return nil, nil, nil, err
	}
	progSchema.Required = []string{"message"}
	progSchema.Properties["status"].Enum = toAny(ProgressStatuses())
	progSchema.Properties["status"].Default = json.RawMessage(strconv.Quote(ProgressStatuses()[0]))
	pct := progSchema.Properties["percent"]
	pct.Minimum, pct.Maximum = ptr(0.0), ptr(100.0)
	prog.InputSchema = progSchema
	return ask, prog, get, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
