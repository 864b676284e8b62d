package mount

import "fmt"

// Resolved is a mount with its effective prefix and where that came from,
// as an instance record keeps it (the JSON adds "effective_prefix" and
// "prefix_origin" to the mount's fields).
type Resolved struct {
	Mount
	EffectivePrefix string       `json:"effective_prefix"`
	PrefixOrigin    PrefixOrigin `json:"prefix_origin"`
}

// ToolName is the canonical name of a mount's tool: "<prefix>__<tool>", or
// the bare tool name when the mount has no prefix.
func (m Resolved) ToolName(base string) string {
	if m.EffectivePrefix == "" {
		return base
	}
	return m.EffectivePrefix + "__" + base
}

// Resolve applies the prefix contract to a whole mount set: each
// mount's prefix by [ResolveToolPrefix], except that a single mount without
// an explicit prefix gets none (the deployment shape overrides the mode);
// then it refuses mount names and prefixes equal to the server name S or to
// another mount's, naming both.
func Resolve(server string, mode PrefixMode, mounts []Mount) ([]Resolved, error) {
	out := make([]Resolved, len(mounts))
	for i, s := range mounts {
		if err := s.validateName(); err != nil {
			return nil, err
		}
		if len(mounts) == 1 && s.ToolPrefix == "" {
			out[i] = Resolved{Mount: s, PrefixOrigin: OriginSingleMount}
			continue
		}
		p, origin, err := ResolveToolPrefix(s, mode, s.Name)
		if err != nil {
			return nil, err
		}
		out[i] = Resolved{Mount: s, EffectivePrefix: p, PrefixOrigin: origin}
	}
	for i, m := range out {
		if m.Name == server || m.EffectivePrefix == server {
			return nil, &ReservedNameError{Name: server, Mount: m.Mount}
		}
		for _, o := range out[:i] {
			var clash string
			way := "give one of them a different name or an explicit tool_prefix"
			switch {
			case m.Name == o.Name:
				clash, way = fmt.Sprintf("have the same name %q", m.Name), "give one of them a different name"
			case m.EffectivePrefix != "" && m.EffectivePrefix == o.EffectivePrefix:
				clash = fmt.Sprintf("both get the tool prefix %q (%s, %s)", m.EffectivePrefix, o.PrefixOrigin, m.PrefixOrigin)
			case m.EffectivePrefix != "" && m.EffectivePrefix == o.Name:
				clash = fmt.Sprintf("clash: the tool prefix of the second is the name of the first (%q)", m.EffectivePrefix)
			case o.EffectivePrefix != "" && o.EffectivePrefix == m.Name:
				clash = fmt.Sprintf("clash: the tool prefix of the first is the name of the second (%q)", o.EffectivePrefix)
			default:
				continue
			}
			// An external server may never take a name of an in-process
			// service: it would capture that service's routes.
			if ext, inproc := externalAndInProcess(o, m); ext != nil {
				name := ext.Name
				if ext.EffectivePrefix == inproc.Name || ext.EffectivePrefix == inproc.EffectivePrefix {
					name = ext.EffectivePrefix
				}
				return nil, &ReservedNameError{Name: name, Mount: ext.Mount, Holder: inproc.label()}
			}
			return nil, fmt.Errorf("%s and %s %s; %s", o.label(), m.label(), clash, way)
		}
	}
	return out, nil
}

// ReservedNameError is a mount whose name or prefix is reserved for an
// in-process service: agentctl's built-ins (the server name S) or a
// knowledge base.
type ReservedNameError struct {
	Name  string
	Mount Mount
	// Holder names the in-process service holding the name; empty for S.
	Holder string
}

func (e *ReservedNameError) Error() string {
	holder := "a built-in service"
	if e.Holder != "" {
		holder = e.Holder + ", served in process"
	}
	return fmt.Sprintf("%s: server name %q is reserved for %s; choose a different name", e.Mount.label(), e.Name, holder)
}

// externalAndInProcess returns the external mount and the in-process one of
// a clashing pair, or nils when the pair is not one of each.
func externalAndInProcess(a, b Resolved) (ext, inproc *Resolved) {
	switch {
	case !a.Kind.InProcess() && b.Kind.InProcess():
		return &a, &b
	case a.Kind.InProcess() && !b.Kind.InProcess():
		return &b, &a
	}
	return nil, nil
}

// Announcement is the line printed at endpoint start for a derived prefix;
// configured prefixes are not announced.
func (m Resolved) Announcement() string {
	if m.PrefixOrigin != OriginDerived {
		return ""
	}
	return fmt.Sprintf("%s %s: tools prefixed %s__ (derived from the mount name; set tool_prefix or tool_prefix_mode=off to change)",
		m.Kind, m.Name, m.EffectivePrefix)
}
