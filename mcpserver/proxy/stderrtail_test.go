package proxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// noSecrets is the redaction of a server with no secrets.
func noSecrets() *stderrRedaction { return stderrRedactor(server("s", "s"), nil) }

func TestStderrTailKeepsTheLastLines(t *testing.T) {
	t.Parallel()
	tail := newStderrTail(noSecrets())
	if got := tail.Lines(); got != nil {
		t.Fatalf("an empty tail: %q", got)
	}
	for i := range 30 {
		fmt.Fprintf(tail, "line %d\r\n", i)
		if i == 3 {
			tail.Write([]byte("\n   \n")) // blank lines are not kept
		}
	}
	tail.Write([]byte("the last, unfinished"))
	got := tail.Lines()
	want := []string{}
	for i := 11; i < 30; i++ {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	want = append(want, "the last, unfinished")
	if !slices.Equal(got, want) {
		t.Fatalf("tail:\n%q\nwant\n%q", got, want)
	}
	// The unfinished line is shown, not ended: it goes on.
	tail.Write([]byte(" now ended\n"))
	if got := tail.Lines(); len(got) != StderrTailLines || got[len(got)-1] != "the last, unfinished now ended" {
		t.Fatalf("tail after the line ended: %q", got)
	}
}

func TestStderrTailBoundsItsBytes(t *testing.T) {
	t.Parallel()
	tail := newStderrTail(noSecrets())
	long := strings.Repeat("é", 3000) // 6000 bytes, 2-byte runes
	tail.Write([]byte("first\n" + long + "\n"))
	got := tail.Lines()
	if len(got) != 2 || got[0] != "first" {
		t.Fatalf("tail: %d lines, first %.20q", len(got), got[0])
	}
	cut := got[1]
	if !strings.HasSuffix(cut, " bytes cut]") || len(cut) > stderrTailLine+40 || !utf8.ValidString(cut) {
		t.Fatalf("a long line is cut at a rune's start, valid UTF-8 and said so: %d bytes, ends %q", len(cut), cut[len(cut)-30:])
	}
	for range 10 {
		tail.Write([]byte(strings.Repeat("x", 900) + "\n"))
	}
	got = tail.Lines()
	size := 0
	for _, l := range got {
		size += len(l)
	}
	if size > StderrTailBytes || len(got) != StderrTailBytes/900 {
		t.Fatalf("%d lines, %d bytes; want at most %d bytes, the latest lines", len(got), size, StderrTailBytes)
	}
	// A line that never ends costs a bounded amount.
	for range 1000 {
		tail.Write([]byte(strings.Repeat("y", 4096)))
	}
	if c := cap(tail.line); c > 4*stderrTailLine {
		t.Fatalf("the unfinished line holds %d bytes", c)
	}
	last := tail.Lines()[len(tail.Lines())-1]
	if !strings.HasPrefix(last, "yyy") || !strings.HasSuffix(last, " bytes cut]") {
		t.Fatalf("the endless line: %.20q...%q", last, last[len(last)-20:])
	}
}

// TestStderrTailIsValidJSONText: bytes that are not UTF-8 become U+FFFD;
// control characters stay (JSON escapes them; a terminal's output
// neutralises them).
func TestStderrTailIsValidJSONText(t *testing.T) {
	t.Parallel()
	tail := newStderrTail(noSecrets())
	tail.Write([]byte("bad \xff\xfe utf-8 \xc3\n\x1b[31mred\x1b[0m\x07\n"))
	got := tail.Lines()
	if want := []string{"bad \uFFFD utf-8 \uFFFD", "\x1b[31mred\x1b[0m\x07"}; !slices.Equal(got, want) {
		t.Fatalf("tail %q, want %q", got, want)
	}
	b, err := json.Marshal(got)
	if err != nil || !json.Valid(b) || !strings.Contains(string(b), `\u001b[31mred`) {
		t.Fatalf("JSON: %s, %v", b, err)
	}
}

// TestStderrRedactor: a stdio server's secrets are the values of its
// mount's env, of agentctl's variables with secret-looking names, and of
// its secret-looking flags; a value of several lines counts each.
func TestStderrRedactor(t *testing.T) {
	t.Parallel()
	m := server("s", "s")
	m.Env = map[string]string{"PLAIN": "envValue", "MULTI": "-----BEGIN KEY-----\r\nkeyMaterial\n-----END KEY-----", "TINY": "ab"}
	m.Args = []string{"--token", "argToken", "--api-key=argKey", "--port", "8080", "positional"}
	environ := []string{"PATH=/usr/bin", "GITHUB_TOKEN=inheritedToken", "HOME=/home/me", "BROKEN"}
	r := stderrRedactor(m, environ)
	tail := newStderrTail(r)
	fmt.Fprintln(tail, "env: PLAIN=envValue GITHUB_TOKEN=inheritedToken argv: --token argToken --api-key=argKey --port 8080 positional")
	fmt.Fprintln(tail, "keyMaterial -----END KEY----- ab /usr/bin /home/me")
	got := strings.Join(tail.Lines(), "\n")
	for _, secret := range []string{"envValue", "inheritedToken", "argToken", "argKey", "keyMaterial", "END KEY"} {
		if strings.Contains(got, secret) {
			t.Errorf("the tail shows %q:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"PLAIN=<redacted>", "--port 8080 positional", " ab ", "/usr/bin /home/me"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the tail lost %q:\n%s", kept, got)
		}
	}
}

// TestStderrRedactorPasswords: PostgreSQL's, MySQL's and the short
// spellings of a password variable are secrets, and so is the password of
// a URL in any variable or argument (user:password@, a query's
// password=), whatever the name; the working directory (PWD) is not.
func TestStderrRedactorPasswords(t *testing.T) {
	t.Parallel()
	m := server("s", "s")
	m.Args = []string{"--dsn", "mysql://app:argPw%40rd@db:3306/x", "redis://:redisPass@cache:6379"}
	environ := []string{
		"PGPASSWORD=pgStorePassword", "DB_PASS=dbPassValue", "MYSQL_PWD=mysqlPwdValue", "PWD=/work/dir",
		"DATABASE_URL=postgres://agent:urlPassword@pg.example:5432/app?sslmode=require&sslpassword=keyPass",
		"UPSTREAM=http://user@proxy.example:8080", "HOME=/home/me",
	}
	tail := newStderrTail(stderrRedactor(m, environ))
	fmt.Fprintln(tail, "pw pgStorePassword db dbPassValue my mysqlPwdValue in /work/dir")
	fmt.Fprintln(tail, "connecting to postgres://agent:urlPassword@pg.example:5432/app?sslmode=require&sslpassword=keyPass: urlPassword refused")
	fmt.Fprintln(tail, "dsn mysql://app:argPw%40rd@db:3306/x (argPw@rd) redis://:redisPass@cache:6379 via http://user@proxy.example:8080 /home/me")
	got := strings.Join(tail.Lines(), "\n")
	for _, secret := range []string{"pgStorePassword", "dbPassValue", "mysqlPwdValue", "urlPassword", "keyPass", "argPw", "redisPass"} {
		if strings.Contains(got, secret) {
			t.Errorf("the tail shows %q:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"in /work/dir", "postgres://<redacted>@pg.example:5432/app?sslmode=require&sslpassword=<redacted>:",
		"mysql://<redacted>@db:3306/x", "redis://<redacted>@cache", "http://user@proxy.example:8080 /home/me"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the tail lost %q:\n%s", kept, got)
		}
	}
}

// TestStderrTailRedactsAcrossTheCut: a secret that begins in the part of a
// long line the tail holds and goes on in the part it does not shows none
// of itself.
func TestStderrTailRedactsAcrossTheCut(t *testing.T) {
	t.Parallel()
	secret := "s3cr3t-" + strings.Repeat("k", 50)
	m := server("s", "s")
	m.Env = map[string]string{"K": secret}
	for at := stderrTailLine - 60; at < stderrTailLine+len(secret)+5; at++ {
		tail := newStderrTail(stderrRedactor(m, nil))
		tail.Write([]byte(strings.Repeat("a", at) + secret + strings.Repeat("b", 5000) + "\n"))
		for _, l := range tail.Lines() {
			if strings.Contains(l, "s3cr") || strings.Contains(l, "kkkk") {
				t.Fatalf("secret at %d: the tail shows part of it: ...%q", at, l[max(0, len(l)-120):])
			}
		}
	}
	// A line still being written may stop in the middle of a secret.
	tail := newStderrTail(stderrRedactor(m, nil))
	for _, part := range []string{"token: ", secret[:4], secret[4:20], secret[20:] + " ok", "\n"} {
		tail.Write([]byte(part))
		if got := strings.Join(tail.Lines(), "\n"); strings.Contains(got, "s3cr") || strings.Contains(got, "kkkk") {
			t.Fatalf("after %q the tail shows part of the secret: %q", part, got)
		}
	}
	if got := tail.Lines(); !slices.Equal(got, []string{"token: <redacted> ok"}) {
		t.Fatalf("the line once ended: %q", got)
	}
	// A process's last words without a newline are shown whole once it
	// is gone.
	tail.Write([]byte("fatal: " + secret + " refused"))
	tail.endLine()
	if got := tail.Lines(); !slices.Equal(got, []string{"token: <redacted> ok", "fatal: <redacted> refused"}) {
		t.Fatalf("the last words: %q", got)
	}
}

// TestServerStatusShowsTheTailWhileDown: the tail is a server's status
// while it is not up, never while it is.
func TestServerStatusShowsTheTailWhileDown(t *testing.T) {
	t.Parallel()
	s := NewPool([]mount.Resolved{server("s", "s")}, &reconciles{}, Options{}).Servers()[0]
	cmd := s.command()
	fmt.Fprintln(cmd.Stderr, "fatal: no API key")
	s.set(StateDown, nil, nil, fmt.Errorf("the server went away: EOF"))
	if st := s.Status(); !slices.Equal(st.StderrTail, []string{"fatal: no API key"}) {
		t.Fatalf("down: %+v", st)
	}
	s.set(StateUp, nil, nil, nil)
	if st := s.Status(); st.StderrTail != nil {
		t.Fatalf("up: %+v", st)
	}
	b, _ := json.Marshal(s.Status())
	if strings.Contains(string(b), "stderr_tail") {
		t.Fatalf("an up server's JSON: %s", b)
	}
	// The tail goes on over restarts; a line a process left unfinished
	// ends with it.
	fmt.Fprint(cmd.Stderr, "unfinished")
	cmd = s.command()
	fmt.Fprintln(cmd.Stderr, "starting again")
	s.set(StateDown, nil, nil, fmt.Errorf("cannot start"))
	if st := s.Status(); !slices.Equal(st.StderrTail, []string{"fatal: no API key", "unfinished", "starting again"}) {
		t.Fatalf("after a restart: %+v", st)
	}
}
