package mcpserver

// A minimal reader of JSON objects' top-level members, for the fast lane:
// it finds where each member's key and value are without decoding or
// allocating. It assumes valid JSON (the lane checks each message with
// json.Valid first) and reports false on anything it does not expect.

// eachMember calls f with each member of the object b: the key as written
// (quotes included, escapes left alone) and the value's bytes. It stops
// early when f returns false. It reports whether b is an object it read to
// the end, every member accepted by f.
func eachMember(b []byte, f func(key, value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end := skipString(b, i)
		if end < 0 {
			return false
		}
		key := b[i:end]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		vs := skipSpace(b, i+1)
		ve := skipValue(b, vs)
		if ve < 0 {
			return false
		}
		if !f(key, b[vs:ve]) {
			return false
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e := skipString(b, i)
				if e < 0 {
					return -1
				}
				i = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // a number, true, false or null
		s := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == s {
					return -1
				}
				return i
			}
			i++
		}
		if i == s {
			return -1
		}
		return i
	}
}

// plainString returns the contents of a JSON string value without escapes
// (the common case for names, ids and versions); ok is false for anything
// else.
func plainString(v []byte) (s []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	s = v[1 : len(v)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	return s, true
}

// keyIs reports whether a member's key, as eachMember gives it, is name
// (written without escapes).
func keyIs(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}
