package notify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/instance"
)

// slackBody is a Slack incoming-webhook message, {"text": ...}, saying
// what the notification payload (JSON) says.
func slackBody(payload []byte) ([]byte, error) {
	var n instance.Notification
	if err := json.Unmarshal(payload, &n); err != nil {
		return nil, fmt.Errorf("notification payload: %w", err)
	}
	return json.Marshal(struct {
		Text string `json:"text"`
	}{SlackText(&n)})
}

// slackEscape escapes the characters Slack's mrkdwn gives a meaning to.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// SlackText is the text of n's Slack message.
func SlackText(n *instance.Notification) string {
	e := slackEscape.Replace
	name := n.Instance.Name
	if name == "" {
		name = n.Instance.ID
	}
	who := "*" + e(name) + "*"
	var about []string
	if n.Instance.Agent != "" {
		about = append(about, e(n.Instance.Agent))
	}
	if n.Instance.Host != "" {
		about = append(about, "on "+e(n.Instance.Host))
	}
	if len(about) > 0 {
		who += " (" + strings.Join(about, " ") + ")"
	}
	var b strings.Builder
	if n.Test {
		b.WriteString("[test] ")
	}
	run := func() string {
		if n.Run == nil || n.Run.ID == "" {
			return ""
		}
		return " `" + n.Run.ID + "`"
	}
	switch n.Event {
	case instance.NotifyQuestion:
		b.WriteString(":question: " + who + " asks:")
		if q := n.Question; q != nil {
			b.WriteString("\n> " + strings.ReplaceAll(e(q.Text), "\n", "\n> "))
			if len(q.Choices) > 0 {
				b.WriteString("\nChoices: " + e(strings.Join(q.Choices, " · ")))
			}
			b.WriteString("\nAnswer with `agentctl instance answer " + n.Instance.ID + " " + q.ID + " TEXT`")
		}
	case instance.NotifyAnswered:
		b.WriteString(":white_check_mark: A question of " + who + " was answered")
		if q := n.Question; q != nil {
			b.WriteString(":\n> " + strings.ReplaceAll(e(q.Text), "\n", "\n> "))
			if q.Answer != "" {
				b.WriteString("\nAnswer: " + e(q.Answer))
			}
		}
	case instance.NotifyRunStarted:
		b.WriteString(":arrow_forward: " + who + " started a")
		if n.Run != nil && n.Run.Mode != "" {
			b.WriteString(" " + e(n.Run.Mode))
		}
		b.WriteString(" run" + run())
	case instance.NotifyRunEnded, instance.NotifyFailed:
		icon, verb := ":checkered_flag:", "'s run"+run()+" ended"
		if n.Event == instance.NotifyFailed {
			icon, verb = ":x:", " failed"
			if n.Run != nil && n.Run.ID != "" {
				verb = "'s run" + run() + " failed"
			}
		}
		b.WriteString(icon + " " + who + verb)
		if n.Run != nil && n.Event == instance.NotifyRunEnded && n.Run.Status != "" {
			b.WriteString(": " + e(n.Run.Status))
		}
		if n.Run != nil && n.Run.ExitCode != nil {
			b.WriteString(" (exit code " + strconv.Itoa(*n.Run.ExitCode) + ")")
		}
		msg := ""
		if n.Progress != nil {
			msg = n.Progress.Message
		} else if n.Run != nil {
			msg = n.Run.Message
		}
		if msg != "" {
			b.WriteString("\n> " + strings.ReplaceAll(e(msg), "\n", "\n> "))
		}
	default:
		b.WriteString(e(n.Event) + ": " + who)
	}
	if n.Link != "" {
		b.WriteString("\n<" + n.Link + "|Open " + e(name) + ">")
	}
	return b.String()
}
