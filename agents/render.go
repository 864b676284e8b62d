package agents

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Rendered is the name a client's model sees for one transport name.
type Rendered struct {
	// Name is the model-visible name.
	Name string `json:"name"`
	// Problems lists what is wrong with Name for this client: over its length
	// limit, outside its charset. Empty when the name is fine.
	Problems []string `json:"problems,omitempty"`
}

// RenderModelName applies a client's naming to a transport name: the
// template, the client's cut of the server part, then its sanitising (every
// character the charset does not allow becomes '_'). A name that is still
// outside the charset or longer than the client's limit is returned with a
// problem rather than cut, since clients differ in what they do with it.
//
// With a [ToolNaming.PartSeparator], each part of the template is rendered
// and checked on its own, and the parts are joined by the separator.
func RenderModelName(n ToolNaming, server, transport string) Rendered {
	if sep := n.PartSeparator; sep != "" {
		if head, tail, ok := strings.Cut(n.Template, sep); ok {
			var r Rendered
			var names []string
			for _, part := range []string{head, tail} {
				pn := n
				pn.Template, pn.PartSeparator = part, ""
				pr := RenderModelName(pn, server, transport)
				names = append(names, pr.Name)
				for _, p := range pr.Problems {
					r.Problems = append(r.Problems, fmt.Sprintf("part %q: %s", pr.Name, p))
				}
			}
			r.Name = strings.Join(names, sep)
			return r
		}
	}
	name := ApplyTemplate(n, server, transport)
	var r Rendered
	re := charsetRegexp(n.Charset)
	if re != nil && !re.MatchString(name) {
		name = sanitize(re, name)
		if !re.MatchString(name) {
			r.Problems = append(r.Problems, fmt.Sprintf("outside the client's charset %s", n.Charset))
		}
	}
	maxLen := n.MaxLength
	if maxLen == 0 {
		maxLen = DefaultMaxLength
	}
	if l := utf8.RuneCountInString(name); l > maxLen {
		r.Problems = append(r.Problems, fmt.Sprintf("%d characters, over the client's limit of %d", l, maxLen))
	}
	r.Name = name
	return r
}

// ApplyTemplate is the first step of [RenderModelName]: the client's
// template applied to a transport name, with the server part cut where the
// client cuts it ([ToolNaming.ServerMaxLength]), before any sanitising.
func ApplyTemplate(n ToolNaming, server, transport string) string {
	if n.ServerMaxLength > 0 && utf8.RuneCountInString(server) > n.ServerMaxLength {
		server = string([]rune(server)[:n.ServerMaxLength])
	}
	tmpl := n.Template
	if tmpl == "" {
		tmpl = "{tool}"
	}
	// One pass, left to right, as a strings.Replacer would (without
	// building one per name).
	var b strings.Builder
	b.Grow(len(tmpl) + len(transport) + len(server))
	for t := tmpl; t != ""; {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			break
		}
		b.WriteString(t[:i])
		switch t = t[i:]; {
		case strings.HasPrefix(t, "{tool}"):
			b.WriteString(transport)
			t = t[len("{tool}"):]
		case strings.HasPrefix(t, "{server}"):
			b.WriteString(server)
			t = t[len("{server}"):]
		default:
			b.WriteByte('{')
			t = t[1:]
		}
	}
	return b.String()
}

// MatchesCharset reports whether name matches the charset (a
// [ToolNaming.Charset]); an invalid charset matches everything.
func MatchesCharset(charset, name string) bool {
	re := charsetRegexp(charset)
	return re == nil || re.MatchString(name)
}

// OutsideCharset returns the characters of name, each once and in order,
// that the charset (a [ToolNaming.Charset]) does not allow, which
// [RenderModelName] turns into '_'. An invalid charset allows everything.
func OutsideCharset(charset, name string) []rune {
	re := charsetRegexp(charset)
	if re == nil || re.MatchString(name) {
		return nil
	}
	var out []rune
	for _, c := range name {
		if !re.MatchString("a"+string(c)) && !re.MatchString(string(c)) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// sanitize replaces each character that the charset does not allow with '_'.
// A character is allowed when the charset accepts it after a letter, which
// suits both "^[class]+$" and "^[first][rest]*$" shapes.
func sanitize(re *regexp.Regexp, name string) string {
	var b strings.Builder
	for _, c := range name {
		if re.MatchString("a"+string(c)) || re.MatchString(string(c)) {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

var charsetCache sync.Map // string -> *regexp.Regexp (nil for invalid)

func charsetRegexp(expr string) *regexp.Regexp {
	if expr == "" {
		expr = DefaultCharset
	}
	if v, ok := charsetCache.Load(expr); ok {
		return v.(*regexp.Regexp)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		re = nil
	}
	charsetCache.Store(expr, re)
	return re
}
