package mcpserver

// Outcomes of ask_user_question_<S>: the "status" of its result.
const (
	AskAnswered  = "answered"
	AskDeclined  = "declined"  // the person declined (elicitation)
	AskCancelled = "cancelled" // dismissed, or the call was cancelled
	AskExpired   = "expired"   // no answer within the question timeout
)

// ProgressStatuses are the values report_progress_<S> accepts (its input
// schema's enum, the first its default), in the schema's order: the
// statuses of the instance record (instance.ProgressStatuses, to which
// serving's tests hold these), which the store keeps as the tool gave them.
func ProgressStatuses() []string { return []string{statusRunning, statusBlocked, "done", "failed"} }

// The statuses ask_user_question records while a question waits in the
// store: blocked when asked (`instance wait --status blocked` returns,
// `instance list` shows who waits for a person), running again once the
// answer came or the wait ended without one (the agent goes on).
const (
	statusRunning = "running"
	statusBlocked = "blocked"
)
