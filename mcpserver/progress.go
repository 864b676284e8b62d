package mcpserver

// Outcomes of ask_user_question_<S>: the "status" of its result.
const (
	AskAnswered  = "answered"
	AskDeclined  = "declined"  // the person declined (elicitation)
	AskCancelled = "cancelled" // dismissed, or the call was cancelled
	AskExpired   = "expired"   // no answer within the question timeout
)

// Progress statuses: the values report_progress_<S> accepts (its input
// schema's enum) and that `agentctl instance wait --status` waits for. The
// endpoint owns them, because the tool defines them; the store keeps an
// event's status as the tool gave it.
const (
	StatusRunning = "running"
	StatusBlocked = "blocked"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// StatusUnanswered is the status of the event ask_user_question records
// when a question ends without an answer: it expired, or the client stopped
// waiting for it. It is not a progress status (report_progress does not
// take it); `agentctl instance wait` reports a run that had one.
const StatusUnanswered = "unanswered"

// ProgressStatuses returns the valid progress statuses, in the order the
// tool's schema lists them.
func ProgressStatuses() []string {
	return []string{StatusRunning, StatusBlocked, StatusDone, StatusFailed}
}
