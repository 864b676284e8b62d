package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/notify"
	"github.com/agentctl/agentctl/instance"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"
)

// notifyHelp is `agentctl notify`'s help: the [[notify]] tables and what
// is sent.
const notifyHelp = `Notifications: agentctl POSTs to a URL (a chat webhook, an on-call tool,
your own service) when an agent asks a question or a run starts, ends or fails,
so that nobody has to watch 'instance questions' or 'instance wait'.

Each receiver is a [[notify]] table in the config file
($XDG_CONFIG_HOME/agentctl/config.toml, or --config):

  [[notify]]
  url    = "https://hooks.example.com/agentctl"   # required: http:// or https://
  events = ["question", "failed"]                 # default: every event
  format = "json"                                 # json (default) or slack
  secret = "env:AGENTCTL_NOTIFY_SECRET"           # optional HMAC key, or env:NAME

  [[notify]]
  url    = "https://hooks.slack.com/services/T000/B000/XXXX"
  format = "slack"
  events = ["question"]

Events:
  question     ask_user_question stored a question for 'instance answer'
  answered     such a question was answered
  run_started  'instance run' started the client
  run_ended    a run ended (done, or failed to a target that does not take failed)
  failed       a run ended failed, or the model reported status failed
               (report_progress); a failed run is one notification: failed to a
               target that takes it, else run_ended

Leaving events out takes every event; an empty list is an error. A value the
table does not know, or a key it does not have, is an error naming the file and
the table's number.

format json POSTs the notification as JSON:

  {"id": "01jq...", "event": "question", "at": "2026-01-02T15:04:05.123Z",
   "instance": {"id": "01jq3...", "name": "fix-login", "agent": "claude-code",
                "host": "build-7", "workspace": "/home/me/src/app"},
   "question": {"id": "01jq5...", "text": "Ship it?", "choices": ["yes", "no"],
                "asked_at": "..."},
   "link": "https://agents.example.com/ui/instances/01jq3..."}

with "run" ({"id", "mode", "status", "exit_code", "signal", "message",
"started_at", "ended_at"}) for run events and "progress" ({"seq", "tool",
"status", "message"}) for a failure the model reported. "answer" is in an
answered question only when it is one of the question's choices: free text a
person typed is not sent. "link", the instance's page, is there when base_url
(AGENTCTL_BASE_URL, or serve's --base-url) is set. Nothing else of the instance is sent: never its
token, its record, or its mounts' environment and headers. format slack POSTs
a Slack incoming-webhook message, {"text": "..."}, saying the same.

Every POST has the headers
  X-Agentctl-Delivery: ID                 the same on every attempt of it: a
                                          receiver that sees an ID twice has it already
  X-Agentctl-Event: EVENT
  X-Agentctl-Signature: sha256=HEX        with a secret: the hex HMAC-SHA256 of
                                          the body, keyed with the secret
A receiver checks the signature over the body's bytes as received, with a
constant-time comparison. secret = "env:NAME" reads the key from the variable
NAME of the process that delivers; one that lacks it leaves that target's
notifications to a process that has it (agentctl serve, say).

Delivery: a notification is stored (the store's outbox) in the same transaction
as the question, answer or run it tells of, so none is lost to a crash. The
process that made it sends it at once; a command such as 'instance answer'
waits for that at most 2s and leaves the rest to the long-running processes:
every 'agentctl mcp serve' and 'agentctl serve' delivers the due notifications
of every instance, each claimed by one of them at a time. A 2xx answer delivers;
anything else (or nothing within 10s) is tried again after 5s, 10s, 20s, ... (at
most 10m apart) until an hour has passed, then marked failed. Redirects are not
followed. Delivered and failed notifications are kept for 7 days:
'agentctl notify log' lists them.`

// NewCmdNotify is `agentctl notify`, the group of the commands on
// notifications.
func NewCmdNotify(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Notifications of questions and runs to webhooks: send a test, list deliveries",
		Long:  notifyHelp,
	}
	line.add(cmd,
		sub{[]string{"test"}, func(cmdLine) *cobra.Command { return NewCmdNotifyTest(f, nil) }},
		sub{[]string{"log"}, func(cmdLine) *cobra.Command { return NewCmdNotifyLog(f, nil) }},
	)
	return cmd
}

// NotifyTestOptions are the inputs of `notify test`.
type NotifyTestOptions struct {
	IO      *IOStreams
	Targets func() []notify.Target
	BaseURL func() string
	Now     func() time.Time

	Event  string
	URL    string
	Output string
	// Timeout bounds each POST.
	Timeout time.Duration
}

// NewCmdNotifyTest is `agentctl notify test`; runF replaces
// [notifyTestRun] in tests.
func NewCmdNotifyTest(f *Factory, runF func(context.Context, *NotifyTestOptions) error) *cobra.Command {
	opts := &NotifyTestOptions{IO: f.IOStreams, Targets: f.Config.NotifyTargets, BaseURL: func() string { return f.Config.String(keyBaseURL) },
		Now: f.Now, Timeout: notify.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Send a sample notification to every [[notify]] target now, and show each answer",
		Long: `Send a sample notification of --event (default question) to every [[notify]]
target of the config file that takes that event, right away, with the body,
headers and signature a real one has ("test": true in the JSON, "[test]" in a
Slack message), and print each target's HTTP status. Nothing is stored and
nothing is tried again.

--url sends to one target: the [[notify]] table with that URL, or, for a URL no
table has, an unsigned notification in format json. It exits 0 when every target
answered 2xx, 1 otherwise.`,
		Example: `  agentctl notify test
  agentctl notify test --event failed
  agentctl notify test --url https://hooks.example.com/agentctl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if !slices.Contains(instance.NotifyEvents(), opts.Event) {
				return usageErrorf("invalid --event %q: use one of %s", opts.Event, strings.Join(instance.NotifyEvents(), ", "))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return notifyTestRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Event, "event", instance.NotifyQuestion, "the event of the sample: "+strings.Join(instance.NotifyEvents(), ", "))
	cmd.Flags().StringVar(&opts.URL, "url", "", "send to this URL only (a [[notify]] table's, or any other, unsigned, as json)")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	_ = cmd.RegisterFlagCompletionFunc("event", cobra.FixedCompletions(instance.NotifyEvents(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// notifyTestResult is one target's answer to `notify test`.
type notifyTestResult struct {
	Target   string `json:"target"`
	Format   string `json:"format"`
	Event    string `json:"event"`
	Delivery string `json:"delivery,omitempty"`
	// Status is the HTTP status; 0 when none came (or nothing was sent).
	Status int    `json:"status"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	// Skipped says why nothing was sent.
	Skipped string `json:"skipped,omitempty"`
}

func notifyTestRun(ctx context.Context, opts *NotifyTestOptions) error {
	targets := opts.Targets()
	if opts.URL != "" {
		i := slices.IndexFunc(targets, func(t notify.Target) bool { return t.URL == opts.URL })
		if i >= 0 {
			targets = targets[i : i+1]
		} else {
			t := notify.Target{URL: opts.URL}
			if err := t.Validate(); err != nil {
				return usageErrorf("invalid --url: %v", err)
			}
			targets = []notify.Target{t}
		}
	}
	if len(targets) == 0 {
		return &configError{errors.New("no [[notify]] table in the config file, so nothing to test; add one (see agentctl notify --help) or pass --url")}
	}
	host, _ := os.Hostname()
	sender := notify.Sender{Client: notify.NewClient(opts.Timeout), UserAgent: "agentctl/" + version}
	results := make([]notifyTestResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		res := &results[i]
		*res = notifyTestResult{Target: notify.Redact(t.URL), Format: t.Format, Event: opts.Event}
		switch {
		case !t.Takes(opts.Event):
			res.Skipped = "it does not take " + opts.Event + " (events = " + strings.Join(t.Events, ", ") + "); try --event " + t.Events[0]
			continue
		case t.SecretErr != nil:
			res.Skipped, res.Error = "its secret is not set here", t.SecretErr.Error()
			continue
		}
		res.Delivery = strings.ToLower(ulid.Make().String())
		wg.Go(func() {
			n := sampleNotification(res.Delivery, opts.Event, opts.Now().UTC(), host, opts.BaseURL())
			payload, err := json.Marshal(n)
			var body []byte
			if err == nil {
				body, err = notify.Body(t, payload)
			}
			if err == nil {
				res.Status, err = sender.Send(ctx, t, res.Delivery, opts.Event, body)
			}
			if err != nil {
				res.Error = err.Error()
			}
			res.OK = err == nil
		})
	}
	wg.Wait()
	failed := 0
	for _, r := range results {
		if !r.OK && r.Error != "" { // not one skipped for the event
			failed++
		}
	}
	if opts.Output == formatJSON {
		if err := opts.IO.PrintJSON(results); err != nil {
			return err
		}
	} else {
		rows := make([][]string, len(results))
		for i, r := range results {
			status, result := "-", "ok"
			if r.Status > 0 {
				status = strconv.Itoa(r.Status)
			}
			switch {
			case r.Skipped != "" && r.Error != "":
				result = "not sent: " + r.Skipped + ": " + r.Error
			case r.Skipped != "":
				result = "not sent: " + r.Skipped
			case r.Error != "":
				result = r.Error
			}
			rows[i] = []string{r.Target, r.Format, r.Event, status, result, orDash(r.Delivery)}
		}
		if err := opts.IO.PrintTable([]string{"TARGET", "FORMAT", "EVENT", "HTTP", "RESULT", "DELIVERY"}, rows); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("%d of %d notify targets did not take the test notification", failed, len(results))}
	}
	return nil
}

// sampleInstance is the id of the instance of `notify test`'s samples.
const sampleInstance = "00000000000000000000000000"

// sampleNotification is `notify test`'s notification of event.
func sampleNotification(id, event string, at time.Time, host, base string) *instance.Notification {
	n := &instance.Notification{ID: id, Event: event, At: at, Test: true,
		Instance: instance.NotificationInstance{ID: sampleInstance, Name: "notify-test", Agent: "claude-code", Host: host, Workspace: "/tmp/notify-test"},
		Link:     instance.InstanceLink(base, sampleInstance)}
	q := &instance.NotificationQuestion{ID: "00000000000000000000000001", Text: "This is a test of agentctl's notifications. Did it arrive?",
		Choices: []string{"yes", "no"}, AskedAt: at}
	started, code := at.Add(-time.Minute), 1
	run := &instance.NotificationRun{ID: "00000000000000000000000002", Mode: instance.RunHeadless, StartedAt: &started}
	switch event {
	case instance.NotifyQuestion:
		n.Question = q
	case instance.NotifyAnswered:
		q.Answer, q.AnsweredAt = "yes", &at
		n.Question = q
	case instance.NotifyRunStarted:
		run.Status, run.Message = instance.StatusRunning, "started claude (headless, pid 4242)"
		n.Run = run
	case instance.NotifyRunEnded:
		code = 0
		run.Status, run.ExitCode, run.EndedAt, run.Message = instance.StatusDone, &code, &at, "claude exited with code 0 after 1m0s"
		n.Run = run
	case instance.NotifyFailed:
		run.Status, run.ExitCode, run.EndedAt, run.Message = instance.StatusFailed, &code, &at, "claude exited with code 1 after 1m0s"
		n.Run = run
	}
	return n
}

// NotifyLogOptions are the inputs of `notify log`.
type NotifyLogOptions struct {
	IO    *IOStreams
	Store storeOpener

	Limit  int
	Output string
}

// NewCmdNotifyLog is `agentctl notify log`; runF replaces [notifyLogRun]
// in tests.
func NewCmdNotifyLog(f *Factory, runF func(context.Context, *NotifyLogOptions) error) *cobra.Command {
	opts := &NotifyLogOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List notifications, newest first: pending, delivered, failed and superseded",
		Long: `List the notifications of the store's outbox, newest first: each one's delivery id
(its X-Agentctl-Delivery), event, instance, target (the URL without credentials,
query or path, which for a Slack webhook is its secret: "/…" and a short hash of
the path stand for it), status, attempts, when it was made, when it is next
tried (pending) or was delivered, and the last error.

A pending notification is due at NEXT: a retry after a failed attempt, or one
under way (its lease). A question's notification still pending when the
question is answered, expires or is cancelled is superseded: not sent, since
it would ask for what is settled (its last error says why). Delivered, failed
and superseded ones are kept for 7 days.`,
		Example: `  agentctl notify log
  agentctl notify log --limit 100
  agentctl notify log -o json | jq -r '.[] | select(.status == "failed") | .last_error'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if opts.Limit < 0 {
				return usageErrorf("invalid --limit %d: use a positive number, or 0 for no limit", opts.Limit)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return notifyLogRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "list the newest N (0: all)")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func notifyLogRun(ctx context.Context, opts *NotifyLogOptions) error {
	rows := []*instance.OutboxRow{}
	err := withStore(ctx, opts.Store, func(st *instance.Store) error {
		var err error
		rows, err = st.Outbox(ctx, opts.Limit)
		return err
	})
	if _, none := errors.AsType[*noStateError](err); err != nil && !none {
		return err
	}
	for _, r := range rows {
		r.Target = notify.Redact(r.Target)
	}
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(rows)
	}
	table := make([][]string, len(rows))
	for i, r := range rows {
		when := r.NextAt
		if r.DeliveredAt != nil {
			when = *r.DeliveredAt
		}
		next := when.Format(time.RFC3339)
		if r.Status == instance.OutboxFailed || r.Status == instance.OutboxSuperseded {
			next = "-"
		}
		table[i] = []string{r.ID, r.Event, r.InstanceID, r.Target, r.Status, strconv.Itoa(r.Attempts),
			r.CreatedAt.Format(time.RFC3339), next, orDash(r.LastError)}
	}
	return opts.IO.PrintTable([]string{"ID", "EVENT", "INSTANCE", "TARGET", "STATUS", "ATTEMPTS", "CREATED", "NEXT/DELIVERED", "LAST ERROR"}, table)
}

// NotifyTargets are the config file's [[notify]] tables as delivery
// targets, each secret read: a secret = "env:NAME" whose variable is not
// set in this process has [notify.Target.SecretErr] set instead.
func (c *Config) NotifyTargets() []notify.Target {
	var out []notify.Target
	for i, t := range c.notify {
		nt, err := t.target()
		if err != nil {
			continue // checked when the file was read
		}
		if t.Secret != nil {
			if name, fromEnv := strings.CutPrefix(*t.Secret, secretEnvPrefix); fromEnv {
				if nt.Secret = c.getenv(name); nt.Secret == "" {
					nt.SecretErr = fmt.Errorf("%s: [[notify]] #%d: secret: %s is not set in this process's environment", c.file, i+1, name)
				}
			} else {
				nt.Secret = *t.Secret
			}
		}
		out = append(out, nt)
	}
	return out
}

// testNotifyEnv tunes deliveries for agentctl's own tests: a comma list of
// pause=D (wait after each POST before recording it, so that a test can
// kill the process in between), lease=D, backoff=D, poll=D, wait=D, giveup=D.
const testNotifyEnv = "AGENTCTL_TEST_NOTIFY"

// notifyOptions are the deliveries' options in this process.
func notifyOptions(f *Factory, log *slog.Logger) notify.Options {
	o := notify.Options{Log: log, Sender: notify.Sender{Client: notify.NewClient(notify.DefaultTimeout), UserAgent: "agentctl/" + version}}
	for kv := range strings.SplitSeq(f.Config.getenv(testNotifyEnv), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		d, err := time.ParseDuration(v)
		if err != nil {
			continue
		}
		switch k {
		case "pause":
			o.PauseAfterSend = d
		case "lease":
			o.Lease = d
		case "backoff":
			o.Backoff = d
		case "poll":
			o.Poll = d
		case "wait":
			o.Wait = d
		case "giveup":
			o.GiveUp = d
		}
	}
	return o
}

// notifyingStore wraps open so that the stores it opens enqueue
// notifications for the config file's [[notify]] targets, and deliver them
// (see [instance.WithNotify]): a store opened without targets is left as
// it is. A store that notifies already is left as it is too, so wrapping
// twice does no harm.
func notifyingStore(f *Factory, open storeOpener) storeOpener {
	return func(ctx context.Context, create bool) (*instance.Store, error) {
		st, err := open(ctx, create)
		if err != nil || st.Notifying() != nil {
			return st, err
		}
		targets := f.Config.NotifyTargets()
		if len(targets) == 0 {
			return st, nil
		}
		level, err := f.Config.LogLevel()
		if err != nil {
			level = slog.LevelWarn
		}
		log := slog.New(slog.NewTextHandler(f.IOStreams.ErrOut, &slog.HandlerOptions{Level: level})).With("component", "notify")
		d := notify.New(targets, notifyOptions(f, log))
		// base_url: a command's --base-url (serve's), else
		// AGENTCTL_BASE_URL, else the config file's.
		instance.WithNotify(d.Notify(f.Config.String(keyBaseURL)))(st)
		return st, nil
	}
}

// startNotifyDelivery starts, for a long-running process (mcp serve,
// serve), the delivery of the due notifications of every instance of st
// (see [notify.Deliverer.Run]), if st notifies (opened through
// [notifyingStore]); stop ends it, waiting for the deliveries under way
// and the notifications this process made at most [notify.Options.Wait],
// as a command waits for its own.
func startNotifyDelivery(ctx context.Context, st *instance.Store) (stop func()) {
	n := st.Notifying()
	if n == nil {
		return func() {}
	}
	d, ok := n.Notifier.(*notify.Deliverer)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, st)
	}()
	return func() {
		cancel()
		<-done
	}
}
