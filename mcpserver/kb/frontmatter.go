package kb

import (
	"bytes"
	"strconv"
	"strings"
)

// conceptTitle is the title list and search show: the front-matter title,
// else the first "# " heading.
func conceptTitle(data []byte) string {
	title, body, _ := splitFrontMatter(data)
	if title != "" {
		return title
	}
	return headingTitle(body)
}

// splitFrontMatter returns the title of YAML front matter (between "---"
// lines at the very top), the body after it, and whether there was front
// matter. Only a top-level "title:" key is read: plain, single- or
// double-quoted, or a block scalar ("|" or ">").
func splitFrontMatter(data []byte) (title string, body []byte, ok bool) {
	rest := bytes.TrimPrefix(data, []byte("\ufeff"))
	line, rest, found := cutLine(rest)
	if !found || strings.TrimRight(string(line), " \t") != "---" {
		return "", data, false
	}
	var lines [][]byte
	for {
		var l []byte
		l, rest, found = cutLine(rest)
		if t := strings.TrimRight(string(l), " \t"); t == "---" || t == "..." {
			break
		}
		if !found {
			return "", data, false // no closing line: not front matter
		}
		lines = append(lines, l)
	}
	for i, l := range lines {
		v, ok := bytes.CutPrefix(l, []byte("title:"))
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(v))
		if s != "" && (s[0] == '|' || s[0] == '>') {
			var parts []string
			for _, c := range lines[i+1:] {
				if len(c) == 0 || (c[0] != ' ' && c[0] != '\t') {
					break
				}
				parts = append(parts, strings.TrimSpace(string(c)))
			}
			return strings.Join(parts, " "), rest, true
		}
		return yamlScalar(s), rest, true
	}
	return "", rest, true
}

// yamlScalar decodes a one-line YAML scalar well enough for a title.
func yamlScalar(s string) string {
	switch {
	case strings.HasPrefix(s, `"`):
		if end := closingDoubleQuote(s); end > 0 {
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				return u
			}
			return s[1:end]
		}
		return strings.Trim(s, `"`)
	case strings.HasPrefix(s, "'"):
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return b.String()
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func closingDoubleQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// headingTitle returns the text of the first "# " heading outside code
// fences.
func headingTitle(body []byte) string {
	fence := ""
	for len(body) > 0 {
		var line []byte
		line, body, _ = cutLine(body)
		t := strings.TrimLeft(string(line), " ")
		if len(string(line))-len(t) > 3 {
			continue
		}
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if h, ok := strings.CutPrefix(t, "# "); ok {
			h = strings.TrimSpace(h)
			if trimmed := strings.TrimRight(h, "#"); trimmed != h && (trimmed == "" || strings.HasSuffix(trimmed, " ")) {
				h = strings.TrimSpace(trimmed)
			}
			return h
		}
	}
	return ""
}

// cutLine splits off the first line (without its "\n" or "\r\n").
func cutLine(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}
