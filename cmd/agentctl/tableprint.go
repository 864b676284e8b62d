package main

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/charmbracelet/x/ansi"
)

// tableColumn is a column of a table drawn on a terminal.
type tableColumn struct {
	header string
	// hide is 0 for a column the command exists to show: it is always
	// drawn. A column with a higher hide is left out when the table would
	// not fit the terminal, the highest first (the last of equals), and
	// drawn by -o wide.
	hide int
	// wrap: the column's cells (text: a question, a path) may wrap onto
	// more lines when the columns left still do not fit. The others (ids,
	// labels, names one copies) are never broken, nor cut.
	wrap bool
}

// minWrapWidth is the narrowest a wrapped column gets.
const minWrapWidth = 12

// cellCleaner keeps a cell on its line and in its column in tab-separated
// output.
var cellCleaner = strings.NewReplacer("\t", " ", "\n", " ")

// PrintTable writes rows: tab-separated values without a header off a
// terminal; on one, a table of every column, whose long cells wrap (never
// cut) to fit its width.
func (s *IOStreams) PrintTable(headers []string, rows [][]string) error {
	if !s.stdoutTTY {
		return s.PrintTSV(rows)
	}
	cols := make([]tableColumn, len(headers))
	for i, h := range headers {
		cols[i] = tableColumn{header: h, wrap: true}
	}
	return s.DrawTable(cols, rows, false)
}

// PrintTSV writes rows as tab-separated values, without a header: what a
// list prints off a terminal, for scripts.
func (s *IOStreams) PrintTSV(rows [][]string) error {
	// One write for the whole table: a write per row cost a system call
	// each (2,000 rows for `tools list --agent all`).
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

// DrawTable draws a table for a terminal: fitted to its width (the
// optional columns that do not fit left out, then text columns wrapped;
// see [layoutColumns]), or, wide, every column as it is.
func (s *IOStreams) DrawTable(cols []tableColumn, rows [][]string, wide bool) error {
	natural := make([]int, len(cols))
	for i, c := range cols {
		natural[i] = cellWidth(c.header)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(natural) {
				natural[i] = max(natural[i], cellWidth(c))
			}
		}
	}
	shown, widths := layoutColumns(cols, natural, s.TerminalWidth(), wide)
	pick := func(row []string) []string {
		out := make([]string, len(shown))
		for k, i := range shown {
			if i >= len(row) {
				continue
			}
			c := row[i]
			if widths[k] < natural[i] {
				c = wrapCell(c, widths[k])
			}
			out[k] = c
		}
		return out
	}
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	picked := make([][]string, len(rows))
	for i, r := range rows {
		picked[i] = pick(r)
	}
	re := s.renderer()
	head := re.NewStyle().Bold(true).Padding(0, 1)
	cell := re.NewStyle().Padding(0, 1)
	t := table.New().
		Border(lipgloss.NormalBorder()).
		BorderStyle(re.NewStyle().Foreground(lipgloss.Color("8"))).
		Headers(pick(headers)...).Rows(picked...).
		StyleFunc(func(row, col int) lipgloss.Style {
			if row == table.HeaderRow {
				return head
			}
			return cell
		})
	_, err := fmt.Fprintln(s.Out, t.Render())
	return err
}

// cellWidth is the width of a cell's widest line.
func cellWidth(c string) int {
	w := 0
	for l := range strings.SplitSeq(c, "\n") {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// wrapCell wraps each line of c to width columns: at spaces, hyphens and
// slashes where it can, inside a word where it must.
func wrapCell(c string, width int) string {
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		lines[i] = ansi.Wrap(l, width, "/")
	}
	return strings.Join(lines, "\n")
}

// layoutColumns fits a table, drawn with a border around and between its
// columns and a space of padding on each side of a cell, into width
// columns: it leaves out optional columns, the highest hide first, while
// the table is too wide; then it narrows the widest wrapping column a
// column at a time, down to [minWrapWidth]. It returns the columns kept, in
// their order, and their widths. A table that still does not fit is drawn
// as wide as it is (the terminal wraps its lines): whole names are worth
// more than a straight border. wide keeps every column at its natural
// width.
func layoutColumns(cols []tableColumn, natural []int, width int, wide bool) (shown, widths []int) {
	for i := range cols {
		shown = append(shown, i)
	}
	total := func() int {
		sum := 3*len(shown) + 1
		for _, i := range shown {
			sum += natural[i]
		}
		return sum
	}
	if wide {
		return shown, slices.Clone(natural)
	}
	for total() > width {
		drop := -1
		for k, i := range shown {
			if cols[i].hide > 0 && (drop < 0 || cols[i].hide >= cols[shown[drop]].hide) {
				drop = k
			}
		}
		if drop < 0 {
			break
		}
		shown = slices.Delete(shown, drop, drop+1)
	}
	excess := total() - width
	widths = make([]int, len(shown))
	for k, i := range shown {
		widths[k] = natural[i]
	}
	for ; excess > 0; excess-- {
		k := -1
		for k2, i := range shown {
			if cols[i].wrap && widths[k2] > minWrapWidth && (k < 0 || widths[k2] > widths[k]) {
				k = k2
			}
		}
		if k < 0 {
			break
		}
		widths[k]--
	}
	return shown, widths
}

// tableFits reports whether a table of these columns, each at its natural
// width, fits width columns (see [layoutColumns]).
func tableFits(headers []string, rows [][]string, width int) bool {
	natural := make([]int, len(headers))
	for i, h := range headers {
		natural[i] = cellWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(natural) {
				natural[i] = max(natural[i], cellWidth(c))
			}
		}
	}
	sum := 3*len(headers) + 1
	for _, w := range natural {
		sum += w
	}
	return sum <= width
}

// fieldBlock is one item printed as a block of fields: a title line, then
// a line per field, the values aligned.
type fieldBlock struct {
	title  string
	fields []blockField
}

// blockField is a field of a [fieldBlock]; a value that is text (not a
// name) may wrap.
type blockField struct {
	name, value string
	wrap        bool
}

// DrawBlocks writes blocks for a terminal of the given width, one after
// the other with an empty line between them: the title in bold, then each
// field indented, its name and value aligned; a text value wraps under
// itself, and a title or a name is never cut (the terminal wraps a name
// longer than a line).
func (s *IOStreams) DrawBlocks(blocks []fieldBlock) error {
	width := s.TerminalWidth()
	re := s.renderer()
	bold := re.NewStyle().Bold(true)
	w := bufio.NewWriter(s.Out)
	for n, b := range blocks {
		if n > 0 {
			w.WriteByte('\n')
		}
		fmt.Fprintln(w, bold.Render(b.title))
		kw := 0
		for _, f := range b.fields {
			kw = max(kw, ansi.StringWidth(f.name)+1)
		}
		indent := 2 + kw + 1
		for _, f := range b.fields {
			val := f.value
			if avail := width - indent; f.wrap && avail >= minWrapWidth {
				val = wrapCell(val, avail)
			}
			val = strings.ReplaceAll(val, "\n", "\n"+strings.Repeat(" ", indent))
			pad := strings.Repeat(" ", kw-ansi.StringWidth(f.name)-1)
			fmt.Fprintf(w, "  %s:%s %s\n", f.name, pad, val)
		}
	}
	return w.Flush()
}
