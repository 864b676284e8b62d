package mount

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// PrefixMode says how a mount without an explicit tool_prefix gets one.
type PrefixMode string

// Prefix modes.
const (
	// PrefixModeMountName derives the prefix from the mount's name (the default).
	PrefixModeMountName PrefixMode = "mount-name"
	// PrefixModeOff gives mounts without an explicit prefix none: a supported
	// opt-out for setups that keep tool names distinct themselves.
	PrefixModeOff PrefixMode = "off"
)

// prefixModeKBName is accepted for [PrefixModeMountName]: configurations
// written for tools that spell it so exist.
const prefixModeKBName = "kb-name"

// ParsePrefixMode checks a mode given by a user. "kb-name" is a synonym of
// "mount-name", and is returned as [PrefixModeMountName].
func ParsePrefixMode(s string) (PrefixMode, error) {
	switch m := PrefixMode(s); m {
	case PrefixModeMountName, PrefixModeOff:
		return m, nil
	case "", prefixModeKBName:
		return PrefixModeMountName, nil
	}
	return "", fmt.Errorf("invalid tool prefix mode %q: use mount-name (derive prefixes from mount names) or off (no prefixes)", s)
}

// PrefixOrigin says where a mount's effective prefix came from.
type PrefixOrigin string

// Prefix origins.
const (
	OriginExplicit    PrefixOrigin = "explicit"     // the mount's tool_prefix
	OriginDerived     PrefixOrigin = "derived"      // from the mount name (mode mount-name)
	OriginOff         PrefixOrigin = "off"          // mode off: no prefix
	OriginSingleMount PrefixOrigin = "single-mount" // the only mount, without an explicit prefix
)

var validPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]*$`) })

// SanitizePrefix derives a prefix from a mount name: lower-case, runs of
// characters outside [a-z0-9_] become '_', repeated '_' collapse, and leading
// and trailing '_' are trimmed. The result may be empty or start with a digit;
// [ResolveToolPrefix] refuses those.
func SanitizePrefix(name string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// PrefixError is a prefix that cannot be used, with the way out.
type PrefixError struct {
	Mount      Mount
	Derivation string // `"3D docs" -> "3d_docs"`; empty for an explicit prefix
	Prefix     string
	Problem    string
}

func (e *PrefixError) Error() string {
	if e.Derivation == "" {
		return fmt.Sprintf("%s: tool_prefix %q %s; use lower-case letters, digits and single '_', starting with a letter",
			e.Mount.label(), e.Prefix, e.Problem)
	}
	return fmt.Sprintf("%s: cannot derive a tool prefix from its name (%s: %s); set an explicit tool_prefix for it (--kb NAME=DIR,prefix=P), or set tool_prefix_mode = \"off\" (--tool-prefix-mode off, or under [mcp] in the config file)",
		e.Mount.label(), e.Derivation, e.Problem)
}

func prefixProblem(p string) string {
	switch {
	case p == "":
		return "empty"
	case p[0] >= '0' && p[0] <= '9':
		return "starts with a digit"
	case strings.Contains(p, "__"):
		return `contains "__", the separator between prefix and tool`
	case !validPrefix().MatchString(p):
		return "has characters other than a-z, 0-9 and _"
	}
	return ""
}

// ResolveToolPrefix is the prefix contract for one mount, a pure function:
// an explicit tool_prefix wins; else mode mount-name derives the prefix from
// name with [SanitizePrefix]; else (mode off) there is none. A prefix that is
// empty, starts with a digit or contains "__" is an error that shows the
// derivation and names both escapes.
func ResolveToolPrefix(spec Mount, mode PrefixMode, name string) (string, PrefixOrigin, error) {
	if spec.ToolPrefix != "" {
		if p := prefixProblem(spec.ToolPrefix); p != "" {
			return "", "", &PrefixError{Mount: spec, Prefix: spec.ToolPrefix, Problem: p}
		}
		return spec.ToolPrefix, OriginExplicit, nil
	}
	if mode == PrefixModeOff {
		return "", OriginOff, nil
	}
	derived := SanitizePrefix(name)
	if p := prefixProblem(derived); p != "" {
		return "", "", &PrefixError{Mount: spec, Prefix: derived, Problem: p,
			Derivation: fmt.Sprintf("%q -> %q", name, derived)}
	}
	return derived, OriginDerived, nil
}
