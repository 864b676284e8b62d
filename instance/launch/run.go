package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// Ended is what a recorded run ([Run]) ended with: the record's last_run,
// and the status and message its end recorded (the model's own final
// report, if it made one, stands in the events instead).
type Ended struct {
	Run     instance.Run
	Status  string
	Message string
}

// Run runs p as a run of instance rec kept in st, and makes the instance's
// record and status follow it: it holds the instance's run lock for the
// whole run (a second run is refused, as is one while a lost run's client
// still lives), appends a headless client's output to run.log, records the
// start (last_run and a "running" event, while the client starts) and the
// end (last_run's end and exit code, "done" or "failed" unless the model
// said so itself), and returns the outcome. started is told the run once
// its client runs (its id and pid). The bookkeeping outlives ctx's
// cancellation: a client's end is always recorded. A client program that
// is not installed is a [*ProgramNotFoundError]. When the client ran but
// its start or end could not be recorded, both the outcome and an error
// saying so are returned.
func Run(ctx context.Context, st *instance.Store, rec *instance.Record, p *Plan, s Streams, started func(instance.Run)) (*Ended, error) {
	release, err := st.RunLock(rec.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := st.CheckLostClient(ctx, rec.ID); err != nil {
		return nil, err
	}
	// Checked under the lock: a run that cannot start is recorded as a
	// run, which must not replace the last_run of one under way.
	if _, err := p.LookPath(); err != nil {
		return nil, notStarted(ctx, st, rec.ID, p, err)
	}
	if err := p.CheckDir(); err != nil {
		return nil, notStarted(ctx, st, rec.ID, p, err)
	}
	bg := context.WithoutCancel(ctx)
	run := instance.Run{ID: st.NewRunID(), Program: p.Program, Mode: string(p.Mode)}
	var log io.Writer
	var shared *instance.RunLogWriter
	if p.Mode == Headless {
		f, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open the run log: %w", err)
		}
		defer f.Close()
		log = f
		if st.SharesLogs() {
			// A shared store keeps the output too, for other hosts.
			shared = st.NewRunLogWriter(rec.ID, run.ID)
			defer shared.Close()
			log = io.MultiWriter(f, shared)
		}
		fmt.Fprintf(log, "=== %s agentctl instance run: %s\n", time.Now().UTC().Format(time.RFC3339), p.Redacted().CommandLine())
	}
	// The start is recorded while the client starts, not before.
	type startRecord struct {
		seq int64
		err error
	}
	recorded := make(chan startRecord, 1)
	began := false
	res, err := p.Exec(s, log, func(pid int, at time.Time) {
		began = true
		run.PID, run.StartedAt = pid, at.UTC()
		if started != nil {
			started(run)
		}
		go func(r instance.Run) {
			seq, err := st.StartRun(bg, rec.ID, r, instance.Event{Tool: instance.RunTool, Status: instance.StatusRunning,
				Message: fmt.Sprintf("started %s (%s, pid %d)", p.Program, p.Mode, pid)})
			recorded <- startRecord{seq, err}
		}(run)
	})
	if err != nil && !began {
		if log != nil {
			fmt.Fprintf(log, "=== agentctl: %v\n", err)
		}
		return nil, notStarted(ctx, st, rec.ID, p, err)
	}
	start := <-recorded
	out := &Ended{Run: run}
	if err != nil {
		// Started, and then not waited for to the end: a failure of
		// agentctl's, recorded as the run's, not left "running".
		res = &Result{Started: run.StartedAt, Ended: time.Now(), ExitCode: 1}
		out.Status, out.Message = instance.StatusFailed, fmt.Sprintf("agentctl lost %s: %v", p.Program, err)
	} else {
		out.Status, out.Message = outcome(p.Program, res)
	}
	ended := res.Ended.UTC()
	run.EndedAt, run.ExitCode, run.Signal = &ended, &res.ExitCode, res.Signal
	out.Run = run
	if start.err != nil {
		err = errors.Join(err, fmt.Errorf("record the start of the run: %w", start.err))
	}
	if shared != nil {
		// Stored before the end is: a follower on another host stops at
		// the end, and prints what the store has by then.
		shared.Close()
	}
	// A store that does not answer at this moment (a PostgreSQL restart)
	// is waited out: a run left "running" would later be taken for lost
	// and recorded failed, whatever the client's exit.
	outage := storeOutage{st: st, errOut: s.ErrOut, until: time.Now().Add(EndRecordPatience)}
	if cerr := outage.retry(ctx, func() error { return closeLeftQuestions(bg, st, rec.ID, run, p.Program) }); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if eerr := outage.retry(ctx, func() error {
		_, err := st.EndRun(bg, rec.ID, start.seq, run, instance.Event{Tool: instance.RunTool, Status: out.Status, Message: out.Message})
		return err
	}); eerr != nil {
		err = errors.Join(err, fmt.Errorf("record the end of the run: %w", eerr))
	}
	return out, err
}

// EndRecordPatience is how long the end of a run waits for a store that
// does not answer before it gives up.
const EndRecordPatience = 2 * time.Minute

// storeOutage retries what a store that does not answer refused, until
// it answers or until passes; it says once, on errOut, that it waits.
type storeOutage struct {
	st     *instance.Store
	errOut io.Writer
	until  time.Time
	said   bool
}

func (o *storeOutage) retry(ctx context.Context, f func() error) error {
	backoff := 250 * time.Millisecond
	for {
		err := f()
		if err == nil || !o.st.Transient(err) || time.Now().After(o.until) {
			return err
		}
		if !o.said && o.errOut != nil {
			o.said = true
			fmt.Fprintf(o.errOut, "agentctl: the store does not answer (%v); recording the end of the run when it does (for at most %s)\n",
				err, time.Until(o.until).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// notStarted records that a run could not start, as a run that ended as it
// started, failed ([instance.Store.NotStarted]), and returns why. A
// script's `instance run` and then `instance wait` (or `wait --next`
// started first) would otherwise wait for ever for a run that never began;
// now wait sees failed (exit 6) and says why. Recording is best effort: the
// reason the run did not start is the error that matters.
func notStarted(ctx context.Context, st *instance.Store, id string, p *Plan, why error) error {
	r := instance.Run{ID: st.NewRunID(), Program: p.Program, Mode: string(p.Mode), StartedAt: time.Now().UTC(), StartError: why.Error()}
	_ = st.NotStarted(context.WithoutCancel(ctx), id, r, instance.Event{Tool: instance.RunTool, Status: instance.StatusFailed,
		Message: fmt.Sprintf("%s could not start: %v", p.Program, why)})
	return why
}

// closeLeftQuestions closes the questions asked during the run that are
// still open once its client has ended: nobody can receive their answers
// now. An endpoint closes its own as it stops; one that was killed (the
// client killed with it, SIGKILL, an out-of-memory kill) cannot, and its
// questions stayed open for ever, taking answers given into the void and
// making the next question's answer ambiguous. Each is recorded
// unanswered, as the endpoint would, so `instance wait` exits 8.
func closeLeftQuestions(ctx context.Context, st *instance.Store, id string, run instance.Run, program string) error {
	open, err := st.Questions(ctx, id, false)
	if err != nil {
		return fmt.Errorf("close the run's open questions: %w", err)
	}
	var errs []error
	for _, q := range open {
		if q.AskedAt.Before(run.StartedAt) {
			continue // asked before this run, by another client
		}
		closed, err := st.CancelQuestion(ctx, id, q.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("close question %s: %w", q.ID, err))
			continue
		}
		if closed { // else its endpoint closed it meanwhile, and said so
			msg := fmt.Sprintf("question %s got no answer: %s ended before anyone answered (%q)", q.ID, program, q.Text)
			errs = append(errs, st.RecordUnanswered(ctx, id, instance.RunTool, msg))
		}
	}
	return errors.Join(errs...)
}

// outcome is the status and message a run's end records, unless the model
// reported a final status itself.
func outcome(program string, res *Result) (status, msg string) {
	took := res.Ended.Sub(res.Started).Round(time.Millisecond)
	switch {
	case res.Signal != "":
		return instance.StatusFailed, fmt.Sprintf("%s was interrupted (%s) and exited with code %d after %s", program, res.Signal, res.ExitCode, took)
	case res.ExitCode != 0:
		return instance.StatusFailed, fmt.Sprintf("%s exited with code %d after %s", program, res.ExitCode, took)
	}
	return instance.StatusDone, fmt.Sprintf("%s exited with code 0 after %s", program, took)
}
