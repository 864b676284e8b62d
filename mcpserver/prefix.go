package mcpserver

import (
	"fmt"
	"regexp"
	"strings"
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

// ParsePrefixMode checks a mode given by a user.
func ParsePrefixMode(s string) (PrefixMode, error) {
	switch m := PrefixMode(s); m {
	case PrefixModeMountName, PrefixModeOff:
		return m, nil
	case "":
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

// MountSpec is what the prefix contract needs of a mount.
type MountSpec struct {
	Kind string // "kb" or "mcp"
	Name string
	// ToolPrefix is the explicit prefix; empty for none.
	ToolPrefix string
}

func (s MountSpec) label() string { return fmt.Sprintf("%s %q", kindLabel(s.Kind), s.Name) }

func kindLabel(kind string) string {
	switch kind {
	case "kb":
		return "knowledge base"
	case "mcp":
		return "MCP server"
	}
	return "mount"
}

var validPrefix = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

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
	Mount      MountSpec
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
	case !validPrefix.MatchString(p):
		return "has characters other than a-z, 0-9 and _"
	}
	return ""
}

// ResolveToolPrefix is the prefix contract for one mount, a pure function:
// an explicit tool_prefix wins; else mode mount-name derives the prefix from
// name with [SanitizePrefix]; else (mode off) there is none. A prefix that is
// empty, starts with a digit or contains "__" is an error that shows the
// derivation and names both escapes.
func ResolveToolPrefix(spec MountSpec, mode PrefixMode, name string) (string, PrefixOrigin, error) {
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

// ResolvedMount is a mount with its effective prefix.
type ResolvedMount struct {
	MountSpec
	Prefix string
	Origin PrefixOrigin
}

// ToolName is the canonical name of a mount's tool: "<prefix>__<tool>", or
// the bare tool name when the mount has no prefix.
func (m ResolvedMount) ToolName(base string) string {
	if m.Prefix == "" {
		return base
	}
	return m.Prefix + "__" + base
}

// ResolveMounts applies the prefix contract to a whole mount set: each
// mount's prefix by [ResolveToolPrefix], except that a single mount without
// an explicit prefix gets none (the deployment shape overrides the mode);
// then it refuses mount names and prefixes equal to the server name S or to
// another mount's, naming both.
func ResolveMounts(server string, mode PrefixMode, specs []MountSpec) ([]ResolvedMount, error) {
	out := make([]ResolvedMount, len(specs))
	for i, s := range specs {
		if err := validateMountName(s); err != nil {
			return nil, err
		}
		if len(specs) == 1 && s.ToolPrefix == "" {
			out[i] = ResolvedMount{MountSpec: s, Origin: OriginSingleMount}
			continue
		}
		p, origin, err := ResolveToolPrefix(s, mode, s.Name)
		if err != nil {
			return nil, err
		}
		out[i] = ResolvedMount{MountSpec: s, Prefix: p, Origin: origin}
	}
	for i, m := range out {
		if m.Name == server || m.Prefix == server {
			return nil, &ReservedNameError{Name: server, Mount: m.MountSpec}
		}
		for _, o := range out[:i] {
			var clash string
			switch {
			case m.Name == o.Name:
				clash = fmt.Sprintf("have the same name %q", m.Name)
			case m.Prefix != "" && m.Prefix == o.Prefix:
				clash = fmt.Sprintf("both get the tool prefix %q (%s, %s)", m.Prefix, o.Origin, m.Origin)
			case m.Prefix != "" && m.Prefix == o.Name:
				clash = fmt.Sprintf("clash: the tool prefix of the second is the name of the first (%q)", m.Prefix)
			case o.Prefix != "" && o.Prefix == m.Name:
				clash = fmt.Sprintf("clash: the tool prefix of the first is the name of the second (%q)", o.Prefix)
			default:
				continue
			}
			// An external server may never take a name of an in-process
			// service: it would capture that service's routes.
			if ext, inproc := externalAndInProcess(o, m); ext != nil {
				name := ext.Name
				if ext.Prefix == inproc.Name || ext.Prefix == inproc.Prefix {
					name = ext.Prefix
				}
				return nil, &ReservedNameError{Name: name, Mount: ext.MountSpec, Holder: inproc.label()}
			}
			return nil, fmt.Errorf("%s and %s %s; give one of them a different name or an explicit tool_prefix", o.label(), m.label(), clash)
		}
	}
	return out, nil
}

func validateMountName(s MountSpec) error {
	switch {
	case strings.TrimSpace(s.Name) == "":
		return fmt.Errorf("a %s has an empty name; every mount needs a name", kindLabel(s.Kind))
	case strings.ContainsAny(s.Name, "/,=\x00\n"):
		return fmt.Errorf("%s: a mount name may not contain '/', ',', '=' or control characters", s.label())
	case len(s.Name) > 64:
		return fmt.Errorf("%s: the name is longer than 64 characters", s.label())
	}
	return nil
}

// ReservedNameError is a mount whose name or prefix is reserved for an
// in-process service: agentctl's built-ins (the server name S) or a
// knowledge base.
type ReservedNameError struct {
	Name  string
	Mount MountSpec
	// Holder names the in-process service holding the name; empty for S.
	Holder string
}

func (e *ReservedNameError) Error() string {
	msg := fmt.Sprintf("%s: server name %q is reserved for a built-in service; choose a different name", e.Mount.label(), e.Name)
	if e.Holder != "" {
		msg += fmt.Sprintf(" (%s uses it)", e.Holder)
	}
	return msg
}

// IsInProcess reports whether kind names a service agentctl serves itself
// (a knowledge base); the built-ins hold the server name S. It is the one
// answer to "is this in-process?" for the reserved-name checks.
func IsInProcess(kind string) bool { return kind == "kb" }

// externalAndInProcess returns the external mount and the in-process one of
// a clashing pair, or nils when the pair is not one of each.
func externalAndInProcess(a, b ResolvedMount) (ext, inproc *ResolvedMount) {
	switch {
	case !IsInProcess(a.Kind) && IsInProcess(b.Kind):
		return &a, &b
	case IsInProcess(a.Kind) && !IsInProcess(b.Kind):
		return &b, &a
	}
	return nil, nil
}

// Announcement is the line printed at endpoint start for a derived prefix;
// configured prefixes are not announced.
func (m ResolvedMount) Announcement() string {
	if m.Origin != OriginDerived {
		return ""
	}
	return fmt.Sprintf("%s %s: tools prefixed %s__ (derived from the mount name; set tool_prefix or tool_prefix_mode=off to change)",
		m.Kind, m.Name, m.Prefix)
}
