package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// TestWaitForQuestionWaitsOutAnOutage: `instance questions --wait` goes on
// through a store that stops answering (a PostgreSQL restart), saying so
// once when it stops and once when it answers again, as `instance wait`
// does; other errors end it.
func TestWaitForQuestionWaitsOutAnOutage(t *testing.T) {
	calls := 0
	var said []error
	err := waitForQuestion(context.Background(), time.Millisecond, 0, "for instance x", func(err error) { said = append(said, err) },
		func(context.Context) (int, error) {
			calls++
			switch {
			case calls <= 3:
				return 0, fmt.Errorf("postgres store db: unexpected EOF (%w)", instance.ErrUnavailable)
			case calls == 4:
				return 0, nil
			}
			return 1, nil
		})
	if err != nil || calls != 5 {
		t.Fatalf("waitForQuestion: %v after %d counts; want it to wait out the outage and find the question", err, calls)
	}
	if len(said) != 2 || said[0] == nil || said[1] != nil {
		t.Errorf("outage narrated %v; want the outage once, then its end", said)
	}
	boom := fmt.Errorf("state database: disk I/O error")
	if err := waitForQuestion(context.Background(), time.Millisecond, 0, "x", func(error) {}, func(context.Context) (int, error) { return 0, boom }); err != boom {
		t.Errorf("another error: %v, want it returned", err)
	}
}
