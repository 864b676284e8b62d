package mount

import (
	"regexp"
	"sync"
)

// secretName matches the names of flags and environment variables whose
// values are credentials: API keys, tokens, passwords. Compiled on first
// use.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[-_])(api[-_]?key|key|token|secret|password|passwd|credentials?|auth(orization)?|bearer)$`)
})

// SecretName reports whether a flag or an environment variable named name
// (without its dashes) holds a credential, by its name: GITHUB_TOKEN,
// OPENAI_API_KEY, --password, --auth. What a server prints of such a value
// is taken out before a person or a model sees it.
func SecretName(name string) bool { return secretName().MatchString(name) }
