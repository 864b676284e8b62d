package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentctl/agentctl/instance"
)

// answerResult is what the answer form's script gets back.
type answerResult struct {
	OK       bool          `json:"ok"`
	Message  string        `json:"message,omitempty"`
	Error    string        `json:"error,omitempty"`
	Question *liveQuestion `json:"question,omitempty"`
}

// answer is POST /ui/instances/{id}/questions/{qid}/answer (the session's
// CSRF token checked first): it answers the question with
// [instance.Store.Answer], which wakes the waiting ask_user_question
// call, wherever it waits, as `agentctl instance answer` does. The form
// sends a choice (answer), or free text (text), which for a question
// asked with choices is sent as such only when the form says so (other).
// The script gets JSON; a form without it, the instance's page again.
func (u *UI) answer(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	st := u.o.Store
	id, qid := r.PathValue("id"), r.PathValue("qid")
	fail := func(status int, msg string) {
		if wantsJSON(r) {
			writeJSON(w, status, answerResult{Error: msg})
			return
		}
		rec, err := st.Get(ctx, id)
		if err != nil || rec.ID != id {
			u.errorPage(w, r, s, status, msg, "")
			return
		}
		v, err := u.instanceView(r, rec, s)
		if err != nil {
			u.errorPage(w, r, s, status, msg, "")
			return
		}
		u.render(w, status, "instance", &page{Title: rec.Name, CSRF: s.CSRF, Inst: v, Flash: &flash{Error: true, Text: msg}})
	}
	rec, err := st.Get(ctx, id)
	var nf *instance.NotFoundError
	switch {
	case errors.As(err, &nf) || err == nil && rec.ID != id:
		fail(http.StatusNotFound, "There is no instance "+quote(id)+": it may have been deleted, and its questions with it.")
		return
	case err != nil:
		u.log.Error("web page: the store failed", "path", r.URL.Path, "error", err)
		fail(http.StatusServiceUnavailable, "The store did not answer, so the answer was not sent: "+err.Error())
		return
	}
	q, err := st.Question(ctx, rec.ID, qid)
	switch {
	case errors.As(err, &nf):
		fail(http.StatusNotFound, "This instance has no question "+quote(qid)+".")
		return
	case err != nil:
		fail(http.StatusServiceUnavailable, "The store did not answer, so the answer was not sent: "+err.Error())
		return
	case q.Status != instance.QuestionOpen:
		msg := fmt.Sprintf("The question %s is %s already, so this answer was not sent.", quote(q.Text), q.Status)
		if q.Status == instance.QuestionAnswered {
			msg = fmt.Sprintf("The question %s was answered already (with %s), so this answer was not sent.", quote(q.Text), quote(q.Answer))
		}
		fail(http.StatusConflict, msg)
		return
	}
	form := r.PostForm
	var text string
	other := false
	switch {
	case form.Has("answer"):
		text = form.Get("answer")
	case form.Get("other") != "":
		text, other = form.Get("text"), len(q.Choices) > 0
	default:
		text = form.Get("text")
	}
	if strings.TrimSpace(text) == "" {
		fail(http.StatusBadRequest, "Write an answer first: an empty one tells the agent nothing.")
		return
	}
	q, err = st.Answer(ctx, rec.ID, q.ID, text, other)
	var inv *instance.InvalidError
	switch {
	case errors.As(err, &inv):
		fail(http.StatusConflict, inv.Error())
		return
	case errors.As(err, &nf):
		fail(http.StatusNotFound, err.Error())
		return
	case err != nil:
		u.log.Error("web page: answering failed", "instance", rec.ID, "question", qid, "error", err)
		fail(http.StatusServiceUnavailable, "The answer could not be stored: "+err.Error())
		return
	}
	u.log.Info("answered from the web page", "instance", rec.ID, "question", q.ID)
	if !wantsJSON(r) {
		http.Redirect(w, r, "/ui/instances/"+rec.ID+"?"+url.Values{"answered": {q.ID}}.Encode()+"#questions", http.StatusSeeOther)
		return
	}
	html, err := fragment("question", questionView{Question: q, InstanceID: rec.ID, CSRF: s.CSRF})
	if err != nil {
		u.log.Error("web page: rendering failed", "error", err)
	}
	writeJSON(w, http.StatusOK, answerResult{OK: true,
		Message:  fmt.Sprintf("Answered %s with %s: the agent's waiting call has it.", quote(q.Text), quote(q.Answer)),
		Question: &liveQuestion{ID: q.ID, Status: q.Status, HTML: html}})
}
