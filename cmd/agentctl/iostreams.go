package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"
)

// IOStreams is the one place that decides TTY and colour: data goes to Out,
// narration to ErrOut. Off a TTY there is no colour, no prompt, and tables are
// tab-separated values.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	getenv                         func(string) string
	// termWidth is the width of the terminal that Out is, or 0.
	termWidth func() int
}

// newIOStreams returns the streams of a process: each is a TTY if it is a
// terminal; getenv gives the colour settings.
func newIOStreams(in io.Reader, out, errOut io.Writer, getenv func(string) string) *IOStreams {
	s := &IOStreams{
		In: in, Out: out, ErrOut: errOut,
		stdinTTY: isTerminal(in), stdoutTTY: isTerminal(out), stderrTTY: isTerminal(errOut),
		getenv: getenv,
	}
	if f, ok := out.(*os.File); ok && s.stdoutTTY {
		s.termWidth = func() int {
			w, _, err := term.GetSize(f.Fd())
			if err != nil {
				return 0
			}
			return w
		}
	}
	return s
}

// SetStdinTTY, SetStdoutTTY and SetStderrTTY say whether a stream is a
// terminal, for tests.
func (s *IOStreams) SetStdinTTY(tty bool)  { s.stdinTTY = tty }
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = tty }

// SetTerminalWidth sets the width of the terminal that Out is, for tests.
func (s *IOStreams) SetTerminalWidth(w int) { s.termWidth = func() int { return w } }

// defaultTerminalWidth is the width assumed of a terminal that does not say.
const defaultTerminalWidth = 80

// TerminalWidth is the width of the terminal that Out is.
func (s *IOStreams) TerminalWidth() int {
	if s.termWidth != nil {
		if w := s.termWidth(); w > 0 {
			return w
		}
	}
	return defaultTerminalWidth
}

// colorEnabled decides colour: on a terminal, unless NO_COLOR (any
// non-empty value), CLICOLOR=0 or TERM=dumb; CLICOLOR_FORCE (not 0) forces
// it anywhere, but never over NO_COLOR.
func colorEnabled(tty bool, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	if v := getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	return tty && getenv("CLICOLOR") != "0" && getenv("TERM") != "dumb"
}

// ColorEnabled reports whether data written to Out may be coloured.
func (s *IOStreams) ColorEnabled() bool {
	getenv := s.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return colorEnabled(s.stdoutTTY, getenv)
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// IsStdoutTTY reports whether data goes to a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// CanPrompt reports whether the user can be asked a question: stdin and
// stderr (where the question goes) are terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

func (s *IOStreams) renderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(s.Out)
	if s.ColorEnabled() {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}

// Narrate writes a line of narration to stderr.
func (s *IOStreams) Narrate(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, format+"\n", args...)
}

// Output formats.
const (
	formatTable = "table"
	formatJSON  = "json"
)

func checkFormat(f string) error {
	if f != formatTable && f != formatJSON {
		return usageErrorf("invalid output format %q: use -o table or -o json", f)
	}
	return nil
}

// PrintJSON writes v as indented JSON.
func (s *IOStreams) PrintJSON(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// TerminalText is s made harmless to print on a terminal, for text that
// comes from elsewhere (an external server's stderr): every control
// character (an ANSI escape sequence's ESC, a carriage return, a bell, C1)
// and every character that reorders text (Unicode's bidirectional
// controls) is written as its Go escape (\x1b, \u202e), so that it shows
// and does nothing; a tab becomes a space.
func TerminalText(s string) string {
	if !strings.ContainsFunc(s, terminalUnsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case !terminalUnsafe(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// terminalUnsafe reports whether a terminal would act on r rather than
// show it.
func terminalUnsafe(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true // bidirectional controls
	}
	return false
}

// cellCleaner keeps a cell on its line and in its column in tab-separated
// output.
var cellCleaner = strings.NewReplacer("\t", " ", "\n", " ")

// PrintTable writes rows: a lipgloss table on a TTY, tab-separated values
// without a header otherwise.
func (s *IOStreams) PrintTable(headers []string, rows [][]string) error {
	if !s.stdoutTTY {
		// One write for the whole table: a write per row cost a system
		// call each (2,000 rows for `tools list --agent all`).
		w := bufio.NewWriterSize(s.Out, 64<<10)
		for _, r := range rows {
			for i, c := range r {
				if i > 0 {
					w.WriteByte('\t')
				}
				cellCleaner.WriteString(w, c)
			}
			w.WriteByte('\n')
		}
		return w.Flush()
	}
	re := s.renderer()
	head := re.NewStyle().Bold(true).Padding(0, 1)
	cell := re.NewStyle().Padding(0, 1)
	headers, rows = fitTable(headers, rows, s.TerminalWidth())
	t := table.New().
		Border(lipgloss.NormalBorder()).
		BorderStyle(re.NewStyle().Foreground(lipgloss.Color("8"))).
		Headers(headers...).Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			if row == table.HeaderRow {
				return head
			}
			return cell
		})
	_, err := fmt.Fprintln(s.Out, t.Render())
	return err
}

// fitTable cuts the cells of a table (drawn with a border around and
// between the columns and a space of padding on each side of a cell) so
// that it is at most width columns wide: the widest column loses a column
// at a time, and a cut cell ends with an ellipsis. A table that fits is
// returned as it is.
func fitTable(headers []string, rows [][]string, width int) ([]string, [][]string) {
	natural := make([]int, len(headers))
	measure := func(row []string) {
		for i, c := range row {
			if i < len(natural) {
				natural[i] = max(natural[i], lipgloss.Width(c))
			}
		}
	}
	measure(headers)
	for _, r := range rows {
		measure(r)
	}
	overhead := 3*len(headers) + 1
	fit := fitWidths(natural, width-overhead)
	if fit == nil {
		return headers, rows
	}
	cut := func(row []string) []string {
		out := make([]string, len(row))
		for i, c := range row {
			if i >= len(fit) || lipgloss.Width(c) <= fit[i] {
				out[i] = c
				continue
			}
			lines := strings.Split(c, "\n")
			for j, l := range lines {
				lines[j] = ansi.Truncate(l, fit[i], "…")
			}
			out[i] = strings.Join(lines, "\n")
		}
		return out
	}
	cutRows := make([][]string, len(rows))
	for i, r := range rows {
		cutRows[i] = cut(r)
	}
	return cut(headers), cutRows
}

// fitWidths shrinks column widths to sum to at most budget, taking one from
// the widest column (the first of equals) at a time, down to one. It returns
// nil if they fit already.
func fitWidths(widths []int, budget int) []int {
	sum := 0
	for _, w := range widths {
		sum += w
	}
	if sum <= budget {
		return nil
	}
	out := slices.Clone(widths)
	for ; sum > budget; sum-- {
		i := 0
		for j, w := range out {
			if w > out[i] {
				i = j
			}
		}
		if out[i] <= 1 {
			break
		}
		out[i]--
	}
	return out
}

// PrintFields writes key/value pairs: aligned on a TTY, tab-separated
// otherwise; keys are bold when colour is on (CLICOLOR_FORCE turns it on
// off a TTY too).
func (s *IOStreams) PrintFields(fields [][2]string) error {
	width := 0
	for _, f := range fields {
		width = max(width, len(f[0]))
	}
	key := s.renderer().NewStyle().Bold(true)
	for _, f := range fields {
		var err error
		if s.stdoutTTY {
			_, err = fmt.Fprintf(s.Out, "%s%s  %s\n", key.Render(f[0]+":"), strings.Repeat(" ", width-len(f[0])), f[1])
		} else {
			_, err = fmt.Fprintf(s.Out, "%s\t%s\n", key.Render(f[0]), f[1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// NarrateJSON writes v as one line of JSON on stderr: what a command that
// leaves stdout to another program (`instance run`'s client) says with -o
// json.
func (s *IOStreams) NarrateJSON(v any) error {
	enc := json.NewEncoder(s.ErrOut)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// PrintJSONLine writes v as one line of JSON (JSON Lines).
func (s *IOStreams) PrintJSONLine(v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

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
