package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/itchyny/gojq"
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
	// jq is the --jq filter of the running command's JSON output, or nil
	// (see addOutputFlag).
	jq *gojq.Code
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

// TerminalWidth is the width of the terminal that Out is: $COLUMNS when it
// is set to a number (as ls and other tools take it: a width chosen on
// purpose, since shells do not export it), else what the terminal says,
// else 80.
func (s *IOStreams) TerminalWidth() int {
	if s.getenv != nil {
		if w, err := strconv.Atoi(strings.TrimSpace(s.getenv("COLUMNS"))); err == nil && w > 0 {
			return w
		}
	}
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

// TerminalLines is [TerminalText] for text of several lines (a question an
// agent asked): each line made harmless, the line breaks kept, since a
// table's cell may hold several lines and tab-separated output puts them
// on one (cellCleaner). A CRLF is a line break; a lone CR is escaped.
func TerminalLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && terminalUnsafe(r) }) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = TerminalText(l)
	}
	return strings.Join(lines, "\n")
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
