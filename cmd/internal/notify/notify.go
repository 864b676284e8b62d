// Package notify delivers agentctl's notifications: the rows a store given
// targets ([instance.WithNotify]) adds to its outbox when a question is
// asked or answered and when a run starts, ends or fails.
//
// Each row is POSTed to its target's URL, as the JSON the outbox keeps
// (format json) or as a Slack incoming-webhook message (format slack),
// with the headers
//
//	Content-Type: application/json
//	X-Agentctl-Delivery: ID        the row's id: the same on every attempt
//	X-Agentctl-Event: EVENT        question, answered, run_started, run_ended, failed
//	X-Agentctl-Signature: sha256=HEX   HMAC-SHA256 of the body with the target's secret (when it has one)
//
// A 2xx answer marks the row delivered; anything else, or no answer within
// 10 s, is tried again with exponential backoff (5 s, 10 s, 20 s, ... at
// most 10 min apart) until an hour after the row was made, when it is
// marked failed. Redirects are not followed.
//
// Who delivers: the process whose write made the rows tries them at once
// ([Deliverer.Enqueued]); a CLI command waits for that at most 2 s and
// leaves the rest in the outbox. Long-running processes (`agentctl mcp
// serve`, `agentctl serve`) run [Deliverer.Run], which claims the due rows
// of every instance with a lease, so that any number of them, on any host
// sharing the store, deliver each row once; a process killed between the
// POST and recording it leaves the row due again when the lease runs out,
// and the retry carries the same delivery id for the receiver to
// recognise.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/instance"
)

// The formats of a target's bodies.
const (
	FormatJSON  = "json"  // the notification as JSON ([instance.Notification])
	FormatSlack = "slack" // a Slack incoming-webhook message: {"text": ...}
)

// The headers of a delivery.
const (
	HeaderDelivery  = "X-Agentctl-Delivery"
	HeaderEvent     = "X-Agentctl-Event"
	HeaderSignature = "X-Agentctl-Signature"
)

// Target is a receiver of notifications: a [[notify]] table of the config
// file.
type Target struct {
	URL string
	// Events are the events it takes ([instance.NotifyEvents]); empty:
	// every one.
	Events []string
	// Format is FormatJSON (the default) or FormatSlack.
	Format string
	// Secret is the key of the bodies' HMAC-SHA256 signature; "" sends
	// none.
	Secret string
	// SecretErr says why this process has not got the secret (the
	// variable secret = "env:NAME" names is not set here): it delivers
	// nothing to the target, leaving its rows to a process that has it.
	SecretErr error
}

// Validate checks t's URL, events and format, naming the key at fault.
func (t *Target) Validate() error {
	if t.URL == "" {
		return errors.New("url is missing: write the receiver's URL, url = \"https://...\"")
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: write an absolute http:// or https:// URL", Redact(t.URL))
	}
	for _, e := range t.Events {
		if !slices.Contains(instance.NotifyEvents(), e) {
			return fmt.Errorf("events: unknown event %q; use %s", e, strings.Join(instance.NotifyEvents(), ", "))
		}
	}
	switch t.Format {
	case "":
		t.Format = FormatJSON
	case FormatJSON, FormatSlack:
	default:
		return fmt.Errorf("format %q: use %q (the default) or %q", t.Format, FormatJSON, FormatSlack)
	}
	return nil
}

// Takes reports whether t takes event.
func (t Target) Takes(event string) bool {
	return len(t.Events) == 0 || slices.Contains(t.Events, event)
}

// Redact is a target URL as messages, logs and `notify log` show it:
// without credentials, query or fragment, and without its path, which for
// many webhooks is the secret itself (Slack's /services/T/B/SECRET, a
// webhook.site id): "/…" and six hex digits of the path's SHA-256 stand
// for it, so that two targets on one host stay apart. A URL without a
// host (a mistyped one: no scheme, "https:/...", "https//...") keeps its
// scheme-like start and the part where the host would be, and no more.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		if i, j := strings.Index(raw, "://"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
			raw = raw[:i+3] + raw[j+1:]
		}
		parts := strings.Split(raw, "/")
		n := 0 // the host-like part: the first after a scheme and slashes
		for n < len(parts)-1 && (parts[n] == "" || strings.HasSuffix(parts[n], ":") ||
			strings.EqualFold(parts[n], "http") || strings.EqualFold(parts[n], "https")) {
			n++
		}
		if i := strings.LastIndexByte(parts[n], '@'); i >= 0 {
			parts[n] = parts[n][i+1:]
		}
		head := strings.Join(parts[:n+1], "/")
		if n == len(parts)-1 {
			return head
		}
		return head + redactedPath("/"+strings.Join(parts[n+1:], "/"))
	}
	path := u.EscapedPath()
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	u.Path, u.RawPath = "", ""
	return u.String() + redactedPath(path)
}

// redactedPath is what Redact shows of a URL's path.
func redactedPath(path string) string {
	if path == "" || path == "/" {
		return path
	}
	sum := sha256.Sum256([]byte(path))
	return "/…" + hex.EncodeToString(sum[:3])
}

// Sign is the X-Agentctl-Signature of body with secret: "sha256=" and the
// hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Body is the body t is sent for payload, the outbox's JSON: the same
// bytes on every attempt.
func Body(t Target, payload []byte) ([]byte, error) {
	if t.Format != FormatSlack {
		return payload, nil
	}
	return slackBody(payload)
}

// Sender POSTs bodies to targets.
type Sender struct {
	Client    *http.Client
	UserAgent string
}

// DefaultTimeout bounds one delivery attempt.
const DefaultTimeout = 10 * time.Second

// NewClient is the HTTP client of deliveries: a timeout, and no redirects
// (a POST redirected would arrive as a GET, or not at all).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Send POSTs body to t as delivery id of event and returns the HTTP
// status; the error is nil only for a 2xx. Its message never holds the
// URL's credentials or query.
func (s Sender) Send(ctx context.Context, t Target, id, event string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("POST %s: %v", Redact(t.URL), errors.Unwrap(err))
	}
	req.Header.Set("Content-Type", "application/json")
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderEvent, event)
	if t.Secret != "" {
		req.Header.Set(HeaderSignature, Sign(t.Secret, body))
	}
	client := s.Client
	if client == nil {
		client = NewClient(DefaultTimeout)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, fmt.Errorf("POST %s: %v", Redact(t.URL), err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	msg := "HTTP " + resp.Status
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirects are not followed: configure the URL it points to)"
	}
	if text := oneLine(string(head), 200); text != "" {
		msg += ": " + text
	}
	return resp.StatusCode, errors.New(msg)
}

// oneLine is s on one line, cut to at most n bytes (whole runes).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
