package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/text/unicode/norm"
)

// Base names of the built-in tools; the canonical name is base + "_" + S.
const (
	BaseAskUserQuestion = "ask_user_question"
	BaseReportProgress  = "report_progress"
	BaseGetInstance     = "get_instance"
)

// BuiltinName returns the canonical name of a built-in tool for server S.
func BuiltinName(base, server string) string { return base + "_" + server }

const sourceBuiltin = "built-in"

// BuiltinBases lists the base names of the built-in tools.
var BuiltinBases = []string{BaseAskUserQuestion, BaseReportProgress, BaseGetInstance}

// builtinEntry is the registry entry of the built-in tool base for server S.
func builtinEntry(base, server string) Entry {
	return Entry{Name: BuiltinName(base, server), Source: sourceBuiltin, Kind: KindBuiltin, Base: base}
}

// BuiltinRegistry returns a registry, with no server behind it, that holds
// the built-in tools of server S as [New] registers them: what presents and
// routes a built-in's name without starting an endpoint (`agents show`,
// `instance show`). It fails only for a server name that makes an invalid
// tool name.
func BuiltinRegistry(server string) (*Registry, error) {
	reg := NewRegistry(nil)
	for _, b := range BuiltinBases {
		e := builtinEntry(b, server)
		if err := reg.reserve(&e); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// AskInput is the input of ask_user_question.
type AskInput struct {
	Question string   `json:"question" jsonschema:"The question for the person, complete enough to answer without other context."`
	Choices  []string `json:"choices,omitempty" jsonschema:"Optional answers to choose from; leave out for a free-text answer."`
}

// AskOutput is the result of ask_user_question.
type AskOutput struct {
	Answered   bool   `json:"answered" jsonschema:"True when the person answered."`
	Answer     string `json:"answer" jsonschema:"The person's answer; empty when none came."`
	Status     string `json:"status" jsonschema:"answered, declined, cancelled or expired."`
	QuestionID string `json:"question_id,omitempty" jsonschema:"The stored question's id, when it was asked through agentctl rather than the client."`
}

// ProgressInput is the input of report_progress.
type ProgressInput struct {
	Message string   `json:"message" jsonschema:"What is happening, in one sentence."`
	Status  string   `json:"status,omitempty" jsonschema:"running (default), blocked, done or failed."`
	Percent *float64 `json:"percent,omitempty" jsonschema:"Optional completion from 0 to 100."`
}

// ProgressOutput is the result of report_progress.
type ProgressOutput struct {
	Recorded bool   `json:"recorded"`
	Seq      int64  `json:"seq" jsonschema:"The event's sequence number."`
	Status   string `json:"status"`
}

// InstanceOutput is the result of get_instance.
type InstanceOutput struct {
	Instance
	Mounts      []MountInfo `json:"mounts"`
	ServerName  string      `json:"server_name"`
	Namespacing string      `json:"namespacing"`
	// NamingNote says how the client shows the model the tools' names (as
	// they are, with a prefix in front, as functions of a namespace).
	NamingNote string         `json:"naming_note"`
	Tools      []InstanceTool `json:"tools"`
	// MCPServers are the external servers' states (why one's tools are absent).
	MCPServers []proxy.ServerStatus `json:"mcp_servers"`
	// Conflicts are tool names that several external servers want: none is
	// served.
	Conflicts []Conflict `json:"conflicts"`
	// Withheld are external tools not served because a built-in or a
	// knowledge base keeps the name ([WithheldExternal]).
	Withheld []Withheld `json:"withheld"`
	// ToolsChanged is the last change of the instance's mounts while the
	// endpoint ran (`agentctl instance mount add/remove`), and what it
	// means for the model; absent when there was none.
	ToolsChanged *ToolsChange `json:"tools_changed,omitempty"`
}

// InstanceTool is one tool as get_instance shows it: the name the model
// calls it by ([NamedTool.Prompt]: what instructions.md gives it), then all
// its names.
type InstanceTool struct {
	Name string `json:"name"`
	NamedTool
}

// IsInstanceDeleted reports whether err, from a [Store], says that the
// endpoint's instance was deleted while the endpoint runs: a store says so
// with an error (anywhere in the chain) that has a method InstanceDeleted()
// bool returning true, as the instance package's NotFoundError does.
func IsInstanceDeleted(err error) bool {
	var d interface{ InstanceDeleted() bool }
	return errors.As(err, &d) && d.InstanceDeleted()
}

// IsStoreUnavailable reports whether err is a store's that could not be
// reached (instance.ErrUnavailable): trying again later may work.
func IsStoreUnavailable(err error) bool {
	var u interface{ StoreUnavailable() bool }
	return errors.As(err, &u) && u.StoreUnavailable()
}

// deleted is the answer of a built-in tool whose instance was deleted: a
// tool error (not a protocol error) that tells the model what happened,
// what it meant for this call, and to stop.
func (e *Endpoint) deleted(tool, consequence string) *mcp.CallToolResult {
	e.log.Warn("the instance was deleted; the endpoint records nothing more", "tool", BuiltinName(tool, e.cfg.ServerName), "instance", e.cfg.Instance.ID)
	return toolError(fmt.Sprintf("instance %s was deleted (agentctl instance delete); %s. Stop and tell the person.", e.cfg.Instance.ID, consequence))
}

// builtinMeta returns the built-in tools of server S without their schemas.
func builtinMeta(s string) (ask, prog, get *mcp.Tool) {
	ask = &mcp.Tool{
		Name:  BuiltinName(BaseAskUserQuestion, s),
		Title: "Ask the user a question",
		Description: "Ask the person you work for a question and wait for the answer. Use it when you need a decision " +
			"or a fact only they have; do not use it for things you can find out yourself. The call may wait minutes. " +
			"If no answer comes in time the result says so (answered=false): then continue with your best judgement.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
	prog = &mcp.Tool{
		Name:  BuiltinName(BaseReportProgress, s),
		Title: "Report progress",
		Description: "Record what you are doing so the people and CI jobs watching this instance can follow. Call it when " +
			"you start a step, when you are blocked, and once at the end with status done or failed.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: false, DestructiveHint: ptr(false)},
	}
	get = &mcp.Tool{
		Name:        BuiltinName(BaseGetInstance, s),
		Title:       "Describe this instance",
		Description: "Describe this agent instance: its id, workspace, mounted sources and the names of its tools.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}
	return ask, prog, get
}

// The built-in tools' schemas, encoded: what [rawSchemas] makes of the
// handlers' input and output types, with report_progress's input schema
// refined (builtinTools, in builtins_test.go). Constants, so that an
// endpoint's start spends nothing on reflecting on the types and encoding
// the schemas (most of its time, before). TestServedBuiltinSchemas fails,
// printing the new text, when a type they come from changes.
const (
	askInputSchema       = `{"type":"object","properties":{"question":{"type":"string","description":"The question for the person, complete enough to answer without other context."},"choices":{"type":["null","array"],"items":{"type":"string"},"description":"Optional answers to choose from; leave out for a free-text answer."}},"required":["question"],"additionalProperties":false}`
	askOutputSchema      = `{"type":"object","properties":{"answered":{"type":"boolean","description":"True when the person answered."},"answer":{"type":"string","description":"The person's answer; empty when none came."},"status":{"type":"string","description":"answered, declined, cancelled or expired."},"question_id":{"type":"string","description":"The stored question's id, when it was asked through agentctl rather than the client."}},"required":["answered","answer","status"],"additionalProperties":false}`
	progressInputSchema  = `{"type":"object","properties":{"message":{"type":"string","description":"What is happening, in one sentence."},"status":{"type":"string","description":"running (default), blocked, done or failed.","default":"running","enum":["running","blocked","done","failed"]},"percent":{"type":["null","number"],"description":"Optional completion from 0 to 100.","minimum":0,"maximum":100}},"required":["message"],"additionalProperties":false}`
	progressOutputSchema = `{"type":"object","properties":{"recorded":{"type":"boolean"},"seq":{"type":"integer","description":"The event's sequence number."},"status":{"type":"string"}},"required":["recorded","seq","status"],"additionalProperties":false}`
	getInputSchema       = `{"type":"object","additionalProperties":false}`
	getOutputSchema      = `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"agent":{"type":"string"},"workspace":{"type":"string"},"mounts":{"type":["null","array"],"items":{"type":"object","properties":{"kind":{"type":"string"},"name":{"type":"string"},"effective_prefix":{"type":"string"},"prefix_origin":{"type":"string"},"tool_names":{"type":"string"}},"required":["kind","name","effective_prefix","prefix_origin","tool_names"],"additionalProperties":false}},"server_name":{"type":"string"},"namespacing":{"type":"string"},"naming_note":{"type":"string"},"tools":{"type":["null","array"],"items":{"type":"object","properties":{"name":{"type":"string"},"canonical":{"type":"string"},"transport":{"type":"string"},"model_visible":{"type":"string"},"source":{"type":"string"},"mount":{"type":"string"},"base":{"type":"string"},"prefix_origin":{"type":"string"},"problems":{"type":["null","array"],"items":{"type":"string"}}},"required":["name","canonical","transport","model_visible","source","base"],"additionalProperties":false}},"mcp_servers":{"type":["null","array"],"items":{"type":"object","properties":{"name":{"type":"string"},"state":{"type":"string"},"error":{"type":"string"},"tools":{"type":"integer"},"stderr_tail":{"type":["null","array"],"items":{"type":"string"}}},"required":["name","state","tools"],"additionalProperties":false}},"conflicts":{"type":["null","array"],"items":{"type":"object","properties":{"name":{"type":"string"},"sources":{"type":["null","array"],"items":{"type":"string"}}},"required":["name","sources"],"additionalProperties":false}},"withheld":{"type":["null","array"],"items":{"type":"object","properties":{"name":{"type":"string"},"source":{"type":"string"},"holder":{"type":"string"},"holder_source":{"type":"string"},"model_visible":{"type":"string"},"reason":{"type":"string"},"fix":{"type":"string"}},"required":["name","source","holder","holder_source","model_visible","reason","fix"],"additionalProperties":false}},"tools_changed":{"type":["null","object"],"properties":{"at":{"type":"string"},"mounts_added":{"type":["null","array"],"items":{"type":"string"}},"mounts_removed":{"type":["null","array"],"items":{"type":"string"}},"mounts_changed":{"type":["null","array"],"items":{"type":"string"}},"errors":{"type":["null","array"],"items":{"type":"string"}},"note":{"type":"string"}},"required":["at","mounts_added","mounts_removed","mounts_changed","note"],"additionalProperties":false}},"required":["id","name","agent","workspace","mounts","server_name","namespacing","naming_note","tools","mcp_servers","conflicts","withheld"],"additionalProperties":false}`
)

// servedBuiltins returns the built-in tools of server S as the endpoint
// serves them: [builtinTools] with their schemas encoded.
func servedBuiltins(s string) (ask, prog, get *mcp.Tool) {
	ask, prog, get = builtinMeta(s)
	ask.InputSchema, ask.OutputSchema = json.RawMessage(askInputSchema), json.RawMessage(askOutputSchema)
	prog.InputSchema, prog.OutputSchema = json.RawMessage(progressInputSchema), json.RawMessage(progressOutputSchema)
	get.InputSchema, get.OutputSchema = json.RawMessage(getInputSchema), json.RawMessage(getOutputSchema)
	return ask, prog, get
}

func (e *Endpoint) addBuiltins() error {
	ask, prog, get := servedBuiltins(e.cfg.ServerName)
	s := e.cfg.ServerName
	if err := AddTool(e.registry, builtinEntry(BaseAskUserQuestion, s), ask, e.askUserQuestion); err != nil {
		return err
	}
	if err := AddTool(e.registry, builtinEntry(BaseReportProgress, s), prog, e.reportProgress); err != nil {
		return err
	}
	return AddTool(e.registry, builtinEntry(BaseGetInstance, s), get, e.getInstance)
}

func (e *Endpoint) askUserQuestion(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, AskOutput, error) {
	in.Question = strings.TrimSpace(in.Question)
	if in.Question == "" {
		return toolError("question is empty; pass the question to ask in \"question\""), AskOutput{}, nil
	}
	if msg := checkChoices(in.Choices); msg != "" {
		return toolError(msg), AskOutput{}, nil
	}
	if resp, ok := req.Params.InputResponses[askInputKey]; ok {
		return e.elicited(ctx, req, in, resp)
	}
	place, headless := e.askPlace(ctx)
	if place == agents.AskViaClient && supportsElicitation(req) {
		return e.elicit(in), AskOutput{}, nil
	}
	return e.askThroughStore(ctx, req, in, headless)
}

// checkChoices says what is wrong with a question's choices for a person
// who types one ("" when nothing): an empty one cannot be picked, and two
// that differ only in letter case, spaces at the ends or Unicode form look
// alike, and an answer typed as either is ambiguous.
func checkChoices(choices []string) string {
	seen := map[string]string{}
	for i, c := range choices {
		folded := strings.ToLower(norm.NFC.String(strings.TrimSpace(c)))
		if folded == "" {
			return fmt.Sprintf("choice %d is empty; give each choice as the words a person picks, or leave \"choices\" out for a free-text answer", i+1)
		}
		if prev, ok := seen[folded]; ok {
			return fmt.Sprintf("choices %q and %q look the same to a person (they differ only in letter case, spaces or Unicode form); give distinct choices", prev, c)
		}
		seen[folded] = c
	}
	return ""
}

// askPlace is where the question policy puts a question now: the
// headless place while a headless `instance run` of the instance is under
// way (headless), the interactive place otherwise. A store that cannot say
// counts as headless for the place: a question kept in the store is never
// lost.
func (e *Endpoint) askPlace(ctx context.Context) (place agents.AskVia, headless bool) {
	headless, err := e.cfg.Store.HeadlessRun(ctx, e.cfg.Instance.ID)
	if err != nil {
		e.log.Warn("cannot tell whether a headless run is under way; the question goes to the store", "err", err)
		return agents.AskViaStore, false
	}
	if headless {
		return e.cfg.Questions.Headless, true
	}
	return e.cfg.Questions.Interactive, false
}

func supportsElicitation(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// askInputKey labels ask_user_question's elicitation in a multi round-trip.
const askInputKey = "answer"

// askedAtPrefix starts the request state of an elicited question: when it
// was asked, in Unix nanoseconds, so that the answer's round can tell a
// decline nobody could have made.
const askedAtPrefix = "asked-at:"

// elicit asks through the client. It uses the SDK's multi round-trip
// pattern: this first invocation returns an input request; the client
// (protocol 2026-07-28) or the SDK's server middleware (older protocols,
// through elicitation/create) fulfils it and the call comes back with the
// response ([Endpoint.elicited]).
func (e *Endpoint) elicit(in AskInput) *mcp.CallToolResult {
	answer := map[string]any{"type": "string", "title": "Answer"}
	if len(in.Choices) > 0 {
		answer["enum"] = in.Choices
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{askInputKey: &mcp.ElicitParams{
			Message: in.Question,
			RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"answer": answer}, "required": []string{"answer"},
			},
		}},
		RequestState: askedAtPrefix + strconv.FormatInt(time.Now().UnixNano(), 10),
	}
}

// elicited is the second round of an elicited question: the client's
// answer. A decline or cancel that nobody can have made (a headless run
// is under way, or it came within [Config.ReadingTime] of the question)
// sends the question to the store instead: the model is never told that a
// person declined when nobody was asked.
func (e *Endpoint) elicited(ctx context.Context, req *mcp.CallToolRequest, in AskInput, resp mcp.InputResponse) (*mcp.CallToolResult, AskOutput, error) {
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return toolError(fmt.Sprintf("the client answered the question with %T, not an elicitation result", resp)), AskOutput{}, nil
	}
	if res.Action == "accept" {
		out := AskOutput{Answered: true, Status: AskAnswered}
		if a, ok := res.Content["answer"].(string); ok {
			out.Answer = a
		} else {
			out.Answer = fmt.Sprint(res.Content["answer"])
		}
		return textResult("The person answered: " + out.Answer), out, nil
	}
	if why := e.nobodyAt(ctx, req.Params.RequestState); why != "" {
		e.log.Warn("the client "+res.Action+"d the question without a person: it goes to the store",
			"tool", BuiltinName(BaseAskUserQuestion, e.cfg.ServerName), "why", why)
		inRun, _ := e.cfg.Store.HeadlessRun(ctx, e.cfg.Instance.ID)
		return e.askThroughStore(ctx, req, in, inRun)
	}
	if res.Action == "decline" {
		return textResult("The person declined to answer. Continue with your best judgement."), AskOutput{Status: AskDeclined}, nil
	}
	return textResult("The person dismissed the question without answering. Continue with your best judgement."), AskOutput{Status: AskCancelled}, nil
}

// nobodyAt says why nobody at the client can have declined a question
// asked with request state state, or "" if a person may have.
func (e *Endpoint) nobodyAt(ctx context.Context, state string) string {
	if headless, err := e.cfg.Store.HeadlessRun(ctx, e.cfg.Instance.ID); err != nil || headless {
		return "a headless run is under way"
	}
	if ns, err := strconv.ParseInt(strings.TrimPrefix(state, askedAtPrefix), 10, 64); err == nil && strings.HasPrefix(state, askedAtPrefix) {
		if took := time.Since(time.Unix(0, ns)); took >= 0 && took < e.cfg.ReadingTime {
			return fmt.Sprintf("it answered within %s, faster than anyone reads a question", took.Round(time.Millisecond))
		}
	}
	return ""
}

// askThroughStore asks in the store and waits for the answer; inRun says
// that a headless run was under way as it was asked.
func (e *Endpoint) askThroughStore(ctx context.Context, req *mcp.CallToolRequest, in AskInput, inRun bool) (*mcp.CallToolResult, AskOutput, error) {
	id := e.cfg.Instance.ID
	qid, err := e.cfg.Store.AskQuestion(ctx, id, in.Question, in.Choices)
	if IsInstanceDeleted(err) {
		return e.deleted(BaseAskUserQuestion, "the question was not asked"), AskOutput{}, nil
	}
	if err != nil {
		return nil, AskOutput{}, fmt.Errorf("store the question: %w", err)
	}
	const withdrawn = "the question was withdrawn and nobody can answer it"
	how := fmt.Sprintf("agentctl instance answer %s %s TEXT", id, qid)
	// Blocked while a question waits; running again once the last one
	// waiting here has ended, however it ended (answered, expired, the
	// client gone, the store failing).
	e.recordStatus(ctx, statusBlocked, fmt.Sprintf("waiting for the answer to question %s: %q", qid, in.Question))
	ended := fmt.Sprintf("the wait for question %s ended", qid)
	e.waiting.Add(1)
	defer func() {
		// Running again once no question of the instance waits, here or
		// at another endpoint serving it (a second client, a daemon):
		// each closes its question before it looks, so the last to end
		// sees none open.
		if e.waiting.Add(-1) == 0 {
			bg := context.WithoutCancel(ctx)
			if n, err := e.cfg.Store.OpenQuestions(bg, id); err == nil && n > 0 {
				return
			}
			if inRun {
				if still, err := e.cfg.Store.HeadlessRun(bg, id); err == nil && !still {
					// The run it was asked in has ended, and recorded
					// how: an endpoint its client left behind must not
					// make the instance look running again.
					return
				}
			}
			e.recordStatus(ctx, statusRunning, ended)
		}
	}()
	e.log.Info("waiting for an answer", "tool", BuiltinName(BaseAskUserQuestion, e.cfg.ServerName), "question", qid, "answer_with", how)

	deadline := time.NewTimer(e.cfg.QuestionTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(e.cfg.PollInterval)
	defer poll.Stop()
	var answered <-chan struct{} // nil: the store cannot say; poll
	if w, ok := e.cfg.Store.(AnswerWatcher); ok {
		var stop func()
		answered, stop = w.WatchAnswer(ctx, qid)
		defer stop()
	}
	// Read once at once: an answer given before the watch began is not
	// announced.
	first := make(chan struct{}, 1)
	first <- struct{}{}
	heartbeat := time.NewTicker(e.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	token := req.Params.GetProgressToken()
	beats := 0.0
	outage := false // the store did not answer the last poll
	for {
		select {
		case <-ctx.Done():
			// Leave the question closed so nobody answers into the void.
			bg := context.WithoutCancel(ctx)
			closed, _ := e.cfg.Store.CancelQuestion(bg, id, qid)
			if closed {
				why := "the client stopped waiting before anyone answered"
				if cause := e.stopCause.Load(); cause != nil {
					why = fmt.Sprintf("the endpoint stopped (%v) before anyone answered", *cause)
				}
				e.unanswered(ctx, qid, in.Question, why)
			} else if answer, status, err := e.cfg.Store.PollAnswer(bg, id, qid); err == nil && status == AskAnswered {
				// Answered at the last moment, and recorded answered: the
				// answer goes to the agent, as far as the stop lets it.
				ended = fmt.Sprintf("question %s answered", qid)
				return textResult("The person answered: " + answer), AskOutput{Answered: true, Answer: answer, Status: AskAnswered, QuestionID: qid}, nil
			}
			return nil, AskOutput{}, ctx.Err()
		case <-deadline.C:
			closed, err := e.cfg.Store.ExpireQuestion(ctx, id, qid)
			if IsInstanceDeleted(err) {
				return e.deleted(BaseAskUserQuestion, withdrawn), AskOutput{}, nil
			}
			if err != nil {
				return nil, AskOutput{}, err
			}
			if closed {
				e.unanswered(ctx, qid, in.Question, fmt.Sprintf("no answer came within %s", e.cfg.QuestionTimeout))
				ended = fmt.Sprintf("going on without an answer to question %s", qid)
				out := AskOutput{Status: AskExpired, QuestionID: qid}
				return textResult(fmt.Sprintf("No answer came within %s. Continue with your best judgement, or ask again later.", e.cfg.QuestionTimeout)), out, nil
			}
			// No longer open: answered just before the deadline, or closed
			// elsewhere. Fall through to read which.
		case <-heartbeat.C:
			if token != nil && req.Session != nil {
				beats++
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: beats, Message: "waiting for an answer: " + how,
				})
			}
			continue
		case <-first:
		case <-poll.C:
		case <-answered:
		}
		answer, status, err := e.cfg.Store.PollAnswer(ctx, id, qid)
		if IsInstanceDeleted(err) {
			return e.deleted(BaseAskUserQuestion, withdrawn), AskOutput{}, nil
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				continue
			}
			if IsStoreUnavailable(err) {
				// The question is in the store, open: its answer comes
				// when the store is back (the deadline still holds).
				if !outage {
					e.log.Warn("the store does not answer; waiting for it, the question stays open", "question", qid, "err", err)
				}
				outage = true
				continue
			}
			return nil, AskOutput{}, err
		}
		if outage {
			e.log.Info("the store answers again", "question", qid)
			outage = false
		}
		switch status {
		case AskAnswered:
			ended = fmt.Sprintf("question %s answered", qid)
			out := AskOutput{Answered: true, Answer: answer, Status: AskAnswered, QuestionID: qid}
			return textResult("The person answered: " + answer), out, nil
		case AskExpired, AskCancelled:
			// Closed by another (the end of the run it was asked in, a
			// person withdrawing it): nobody can answer it now. Whoever
			// closed it recorded it unanswered.
			ended = fmt.Sprintf("question %s was closed (%s) without an answer", qid, status)
			out := AskOutput{Status: status, QuestionID: qid}
			return textResult(fmt.Sprintf("The question was closed (%s) without an answer. Continue with your best judgement.", status)), out, nil
		}
	}
}

// recordStatus records a progress event of ask_user_question's with
// status: the instance's status while its question waits in the store. A
// store that cannot take it is logged, and the question goes on.
//
// The status "running" at the end of a wait is tried again, in the
// background, while the store does not answer (a PostgreSQL restart),
// so that the instance is not left blocked; until a new question waits,
// or the endpoint closes.
func (e *Endpoint) recordStatus(ctx context.Context, status, msg string) {
	tool := BuiltinName(BaseAskUserQuestion, e.cfg.ServerName)
	_, err := e.cfg.Store.RecordProgress(context.WithoutCancel(ctx), e.cfg.Instance.ID, tool, status, msg, nil)
	if err == nil || IsInstanceDeleted(err) {
		return
	}
	e.log.Warn("could not record the instance's status", "status", status, "err", err)
	if status != statusRunning || !IsStoreUnavailable(err) || !e.unblocking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.unblocking.Store(false)
		for wait := e.cfg.PollInterval; ; wait = min(2*wait, 30*time.Second) {
			select {
			case <-e.stop:
				return
			case <-time.After(wait):
			}
			if e.waiting.Load() > 0 {
				return // blocked again, by a newer question
			}
			_, err := e.cfg.Store.RecordProgress(context.Background(), e.cfg.Instance.ID, tool, status, msg, nil)
			if err == nil {
				e.log.Info("recorded the instance's status once the store answered", "status", status)
				return
			}
			if !IsStoreUnavailable(err) {
				return
			}
		}
	}()
}

// unanswered records that question qid ended without an answer
// ([Store.RecordUnanswered]): `instance wait` then does not report a clean
// end of a run in which the agent went on without its answer.
func (e *Endpoint) unanswered(ctx context.Context, qid, question, why string) {
	tool := BuiltinName(BaseAskUserQuestion, e.cfg.ServerName)
	msg := fmt.Sprintf("question %s got no answer: %s (%q)", qid, why, question)
	if err := e.cfg.Store.RecordUnanswered(context.WithoutCancel(ctx), e.cfg.Instance.ID, tool, msg); err != nil && !IsInstanceDeleted(err) {
		e.log.Warn("could not record the unanswered question", "question", qid, "err", err)
	}
}

func (e *Endpoint) reportProgress(ctx context.Context, req *mcp.CallToolRequest, in ProgressInput) (*mcp.CallToolResult, ProgressOutput, error) {
	if in.Status == "" {
		in.Status = ProgressStatuses()[0]
	}
	if strings.TrimSpace(in.Message) == "" {
		return toolError("message is empty; say in one sentence what is happening"), ProgressOutput{}, nil
	}
	// req.Params.Name is the canonical name: the middleware routed it.
	seq, err := e.cfg.Store.RecordProgress(ctx, e.cfg.Instance.ID, req.Params.Name, in.Status, in.Message, in.Percent)
	if IsInstanceDeleted(err) {
		return e.deleted(BaseReportProgress, "nothing was recorded"), ProgressOutput{}, nil
	}
	if err != nil {
		return nil, ProgressOutput{}, fmt.Errorf("record progress: %w", err)
	}
	out := ProgressOutput{Recorded: true, Seq: seq, Status: in.Status}
	return textResult(fmt.Sprintf("Recorded progress event %d (%s).", seq, in.Status)), out, nil
}

func (e *Endpoint) getInstance(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, InstanceOutput, error) {
	// A store that cannot answer now does not stop the description.
	if exists, err := e.cfg.Store.Exists(ctx, e.cfg.Instance.ID); err == nil && !exists {
		return e.deleted(BaseGetInstance, "nothing this endpoint does is recorded any more"), InstanceOutput{}, nil
	}
	named := e.ToolNames()
	tools := make([]InstanceTool, len(named))
	for i, t := range named {
		tools[i] = InstanceTool{Name: t.promptName(), NamedTool: t}
	}
	out := InstanceOutput{
		Instance:    e.cfg.Instance,
		Mounts:      e.mountInfo(),
		ServerName:  e.cfg.ServerName,
		Namespacing: string(e.cfg.Naming.Namespacing),
		NamingNote:  namingNote(e.cfg.Instance.Agent, e.cfg.ServerName, e.cfg.Naming, named, "the tools' names", plainText),
		Tools:       tools,
		MCPServers:  e.ServerStatuses(),
		Conflicts:   e.Conflicts(),
		Withheld:    e.Withheld(),
		// Its note says whether the client lists its tools again.
		ToolsChanged: e.lastChange(),
	}
	if out.Conflicts == nil {
		out.Conflicts = []Conflict{}
	}
	if out.Withheld == nil {
		out.Withheld = []Withheld{}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return textResult(string(b)), out, nil
}

// MountInfo is one mount as get_instance shows it to the model: how its
// tools are named, nothing of where it lives (paths, commands, URLs and
// headers may hold secrets).
type MountInfo struct {
	Kind            mount.Kind         `json:"kind"`
	Name            string             `json:"name"`
	EffectivePrefix string             `json:"effective_prefix"`
	PrefixOrigin    mount.PrefixOrigin `json:"prefix_origin"`
	// ToolNames is how the model calls the mount's tools, {tool} standing
	// for a tool's own name ([MountToolPattern]): docs__{tool}_agentctl on
	// Auggie.
	ToolNames string `json:"tool_names"`
}

func (e *Endpoint) mountInfo() []MountInfo {
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	out := make([]MountInfo, len(e.mounts))
	for i, m := range e.mounts {
		out[i] = MountInfo{Kind: m.Kind, Name: m.Name, EffectivePrefix: m.EffectivePrefix, PrefixOrigin: m.PrefixOrigin,
			ToolNames: MountToolPattern(e.cfg.ServerName, e.cfg.Naming, m)}
	}
	return out
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func toolError(s string) *mcp.CallToolResult {
	r := textResult(s)
	r.IsError = true
	return r
}

func ptr[T any](v T) *T { return &v }
