package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// report is what FAKECLIENT_REPORT receives.
type report struct {
	Client    string            `json:"client"`
	Args      []string          `json:"args"`
	Headless  bool              `json:"headless"`
	Prompt    string            `json:"prompt"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"` // the variables below, when set
	CodexHome string            `json:"codex_home,omitempty"`
	Configs   []string          `json:"configs"`
	Servers   []*server         `json:"servers"`
	Error     string            `json:"error,omitempty"`
}

// reportedEnv are the environment variables the report records.
var reportedEnv = []string{"AGENTCTL_INSTANCE", "CODEX_HOME", "MCP_TOOL_TIMEOUT", "OPENCODE_CONFIG", "KILO_CONFIG",
	"GEMINI_CLI_SYSTEM_SETTINGS_PATH", "QWEN_CODE_SYSTEM_SETTINGS_PATH"}

func newReport(inv *invocation) *report {
	r := &report{Client: inv.client, Args: inv.args, Headless: inv.headless, Prompt: inv.prompt,
		Cwd: inv.cwd, Env: map[string]string{}, Configs: []string{}, Servers: []*server{}}
	for _, k := range reportedEnv {
		if v, ok := os.LookupEnv(k); ok {
			r.Env[k] = v
		}
	}
	return r
}

func writeReport(r *report) {
	path := os.Getenv("FAKECLIENT_REPORT")
	if path == "" {
		return
	}
	if r.Configs == nil {
		r.Configs = []string{}
	}
	data, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "fakeclient: write report: %v\n", err)
	}
}

// session runs every server in name order, printing a line for each; it
// says whether any failed.
func session(ctx context.Context, inv *invocation, c *client, servers []*server) (failed bool) {
	if len(servers) == 0 {
		fmt.Printf("fakeclient: %s servers=0\n", inv.client)
		return true
	}
	slices.SortFunc(servers, func(a, b *server) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range servers {
		if s.Args == nil {
			s.Args = []string{}
		}
		s.Tools = []string{}
		err := runServer(ctx, inv, c, s)
		line := fmt.Sprintf("fakeclient: %s server=%s tools=%d called=%s", inv.client, s.Name, len(s.Tools), cmp.Or(s.Called, "-"))
		if err != nil {
			failed = true
			s.Error = err.Error()
			fmt.Printf("%s error=%s\n", line, s.Error)
		} else {
			fmt.Printf("%s ok\n", line)
		}
	}
	return failed
}

// runServer starts s, lists its tools and calls one.
func runServer(ctx context.Context, inv *invocation, c *client, s *server) error {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "fakeclient-" + inv.client, Version: "1"}, elicitOptions(os.Getenv("FAKECLIENT_ELICIT")))
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start: %v", err)
	}
	defer cs.Close()
	var listed []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %v", err)
		}
		listed = append(listed, t.Name)
	}
	if s.ignored != "" {
		return errors.New(s.ignored)
	}
	for _, t := range listed {
		if s.filter == nil || slices.Contains(s.filter, "*") || slices.Contains(s.filter, t) {
			s.Tools = append(s.Tools, t)
		}
	}
	tool := os.Getenv("FAKECLIENT_CALL")
	if tool == "" {
		for _, t := range s.Tools {
			if strings.HasPrefix(t, "get_instance") {
				tool = t
				break
			}
		}
		if tool == "" {
			return errors.New("no tool named get_instance* to call (set FAKECLIENT_CALL)")
		}
	}
	s.Called = tool
	if !slices.Contains(s.Tools, tool) {
		return fmt.Errorf("tool %s not listed", tool)
	}
	if c.allow != nil && inv.headless {
		if err := c.allow(inv, s, tool); err != nil {
			return err
		}
	}
	args := map[string]any{}
	if a := os.Getenv("FAKECLIENT_ARGS"); a != "" {
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			return fmt.Errorf("FAKECLIENT_ARGS: %v", err)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("tools/call: %v", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	s.Result = text.String()
	if len(s.Result) > 200 {
		s.Result = s.Result[:200]
	}
	if res.IsError {
		return fmt.Errorf("tool error: %s", s.Result)
	}
	return nil
}

// elicitOptions are the client options for FAKECLIENT_ELICIT: empty
// announces no elicitation; "decline" or "cancel" announces it and answers
// every elicitation so at once, as Codex and Claude Code do in a headless
// run with nobody at the terminal; "accept:TEXT" accepts with answer TEXT.
func elicitOptions(how string) *mcp.ClientOptions {
	if how == "" {
		return nil
	}
	action, text, _ := strings.Cut(how, ":")
	return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		fmt.Fprintf(os.Stderr, "fakeclient: elicitation %s\n", action)
		if action == "accept" {
			return &mcp.ElicitResult{Action: action, Content: map[string]any{"answer": text}}, nil
		}
		return &mcp.ElicitResult{Action: action}, nil
	}}
}
