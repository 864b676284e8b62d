package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"
)

// Output formats (-o).
const (
	formatTable = "table"
	// formatWide is the table with every column, each cell whole, and
	// full ids, however wide the terminal; piped, it is the same
	// tab-separated values as table.
	formatWide = "wide"
	formatJSON = "json"
	// formatJSONL is JSON Lines: one value a line, as it comes.
	formatJSONL = "jsonl"
)

// formatHelp says what each format is, for the flag's usage.
var formatHelp = map[string]string{
	formatTable: "table",
	formatWide:  "wide (every column, whole)",
	formatJSON:  "json",
	formatJSONL: "jsonl (JSON Lines)",
}

// checkFormat accepts -o table or json, the formats of a command that
// offers no other (addOutputFlag checks them before the command runs).
func checkFormat(f string) error {
	if f != formatTable && f != formatJSON {
		return usageErrorf("invalid output format %q: use -o table or -o json", f)
	}
	return nil
}

// addOutputFlag adds -o FORMAT (table and json, and the formats in more:
// wide, jsonl) and --jq EXPRESSION to cmd. --jq filters the command's JSON
// output (see [IOStreams.PrintJSON]) and implies -o json; with any other -o
// it is a usage error, as are an unknown format and an expression that does
// not compile, before the command runs: it wraps cmd.RunE, which must be
// set.
func addOutputFlag(cmd *cobra.Command, target *string, ios *IOStreams, more ...string) {
	formats := append([]string{formatTable, formatJSON}, more...)
	help := make([]string, len(formats))
	for i, f := range formats {
		help[i] = formatHelp[f]
	}
	fs := cmd.Flags()
	fs.StringVarP(target, "output", "o", formatTable, "output format: "+orList(help))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	var expr string
	fs.StringVar(&expr, "jq", "", "filter the JSON output with a jq `EXPRESSION` (implies -o json); a string result is printed without quotes")
	_ = cmd.RegisterFlagCompletionFunc("jq", cobra.NoFileCompletions)
	run := cmd.RunE
	if run == nil {
		panic("addOutputFlag: " + cmd.Name() + " has no RunE yet")
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		ios.jq = nil
		if !slices.Contains(formats, *target) {
			quoted := make([]string, len(formats))
			for i, f := range formats {
				quoted[i] = "-o " + f
			}
			return usageErrorf("invalid output format %q: use %s", *target, orList(quoted))
		}
		if c.Flags().Changed("jq") {
			switch {
			case !c.Flags().Changed("output"):
				*target = formatJSON
			case *target != formatJSON && *target != formatJSONL:
				return usageErrorf("--jq filters JSON output: use it with -o json, or leave -o out")
			}
			code, err := compileJQ(expr)
			if err != nil {
				return err
			}
			ios.jq = code
			defer func() { ios.jq = nil }()
		}
		return run(c, args)
	}
}

// addQuietFlag adds -q/--quiet to a list command: it prints only what
// identifies each item (what), one a line, whether stdout is a terminal or
// not.
func addQuietFlag(cmd *cobra.Command, target *bool, what string) {
	cmd.Flags().BoolVarP(target, "quiet", "q", false, "print only the "+what+", one a line")
}

// checkQuiet refuses -q with an output format other than the table's:
// the two say different things about what to print.
func checkQuiet(quiet bool, output string) error {
	if quiet && output != formatTable {
		return usageErrorf("--quiet prints only ids, one a line: leave out -o %s (and --jq), or leave out --quiet", output)
	}
	return nil
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// compileJQ compiles a --jq expression; an expression that does not
// parse or compile is a usage error that says where.
func compileJQ(expr string) (*gojq.Code, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, usageErrorf("--jq needs an expression, such as '.id' or '.[].id' (see https://jqlang.org/manual/)")
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usageErrorf("invalid --jq expression %q: %v", expr, jqErrorText(expr, err))
	}
	// $ENV and env are the environment, as in jq.
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(os.Environ))
	if err != nil {
		return nil, usageErrorf("invalid --jq expression %q: %v", expr, err)
	}
	return code, nil
}

// jqErrorText is a parse error of expr, with where it happened.
func jqErrorText(expr string, err error) string {
	if pe, ok := errors.AsType[*gojq.ParseError](err); ok {
		at := min(max(pe.Offset, 0), len(expr))
		return fmt.Sprintf("%v after %q", err, expr[:at])
	}
	return err.Error()
}

// PrintJSON writes v as indented JSON, or, with a --jq filter, what the
// filter makes of it.
func (s *IOStreams) PrintJSON(v any) error {
	if s.jq != nil {
		return runJQ(s.jq, s.Out, v)
	}
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// PrintJSONLine writes v as one line of JSON (JSON Lines), or, with a
// --jq filter, what the filter makes of it.
func (s *IOStreams) PrintJSONLine(v any) error {
	if s.jq != nil {
		return runJQ(s.jq, s.Out, v)
	}
	enc := json.NewEncoder(s.Out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// NarrateJSON writes v as one line of JSON on stderr: what a command that
// leaves stdout to another program (`instance run`'s client) says with -o
// json; a --jq filter applies to it too.
func (s *IOStreams) NarrateJSON(v any) error {
	if s.jq != nil {
		return runJQ(s.jq, s.ErrOut, v)
	}
	enc := json.NewEncoder(s.ErrOut)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jqError is a --jq filter that failed on the data (the expression
// compiled): exit 1, saying so.
type jqError struct{ err error }

func (e *jqError) Error() string { return "--jq: " + e.err.Error() }
func (e *jqError) Unwrap() error { return e.err }

// runJQ runs code on v (as JSON would give it: v is encoded and decoded,
// numbers kept exact) and writes each result to w: a string as it is, any
// other value as indented JSON, as `jq -r` does.
func runJQ(code *gojq.Code, w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var in any
	if err := dec.Decode(&in); err != nil {
		return err
	}
	var out bytes.Buffer
	iter := code.Run(in)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := r.(error); ok {
			if he, ok := errors.AsType[*gojq.HaltError](err); ok && he.Value() == nil {
				break // halt: a clean stop
			}
			// What was made before the error is written, as jq does.
			_, _ = w.Write(out.Bytes())
			return &jqError{err}
		}
		if str, ok := r.(string); ok {
			out.WriteString(str)
			out.WriteByte('\n')
			continue
		}
		raw, err := gojq.Marshal(r)
		if err != nil {
			return &jqError{err}
		}
		if err := json.Indent(&out, raw, "", "  "); err != nil {
			return &jqError{err}
		}
		out.WriteByte('\n')
	}
	_, err = w.Write(out.Bytes())
	return err
}

// JSONArray returns a writer of a JSON array on Out, one element at a
// time: streamed (see [jsonArrayWriter]), or, with a --jq filter, held
// and filtered whole at Close.
func (s *IOStreams) JSONArray() jsonArray {
	if s.jq != nil {
		return &jqArray{code: s.jq, w: s.Out, items: []any{}}
	}
	return newJSONArrayWriter(s.Out)
}

// jsonArray is a JSON array written one element at a time.
type jsonArray interface {
	Write(v any) error
	Close() error
}

// jqArray holds an array's elements for a --jq filter, which needs the
// whole of it.
type jqArray struct {
	code  *gojq.Code
	w     io.Writer
	items []any
}

func (a *jqArray) Write(v any) error { a.items = append(a.items, v); return nil }
func (a *jqArray) Close() error      { return runJQ(a.code, a.w, a.items) }

// jsonArrayWriter writes a JSON array one element at a time, in the layout
// [IOStreams.PrintJSON] gives a whole slice, so that a long listing is
// never held in memory: the elements are gathered up to
// [jsonArrayFlushSize] bytes and written together, which bounds the memory
// and saves a listing of 50 records 49 of its 51 writes.
type jsonArrayWriter struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

// jsonArrayFlushSize is how much of an array [jsonArrayWriter] holds
// before writing it out.
const jsonArrayFlushSize = 32 << 10

func newJSONArrayWriter(w io.Writer) *jsonArrayWriter {
	a := &jsonArrayWriter{w: w}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetIndent("  ", "  ")
	a.enc.SetEscapeHTML(false)
	return a
}

// Write adds v to the array.
func (a *jsonArrayWriter) Write(v any) error {
	mark := a.buf.Len()
	if a.n == 0 {
		a.buf.WriteString("[\n  ")
	} else {
		a.buf.WriteString(",\n  ")
	}
	if err := a.enc.Encode(v); err != nil {
		a.buf.Truncate(mark) // nothing of a value that does not encode
		return err
	}
	a.buf.Truncate(a.buf.Len() - 1) // the encoder's newline
	a.n++
	if a.buf.Len() < jsonArrayFlushSize {
		return nil
	}
	return a.flush()
}

// Flush writes what is held: for an array that grows as things happen
// (`instance events --follow`), after each element.
func (a *jsonArrayWriter) flush() error {
	_, err := a.w.Write(a.buf.Bytes())
	a.buf.Reset()
	return err
}

// Close ends the array ("[]" when nothing was written) and writes what
// is held.
func (a *jsonArrayWriter) Close() error {
	if a.n == 0 {
		a.buf.WriteString("[]\n")
	} else {
		a.buf.WriteString("\n]\n")
	}
	return a.flush()
}
