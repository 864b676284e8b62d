package agents_test

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/agents"
)

func ExampleRenderModelName() {
	auggie := agents.ToolNaming{Namespacing: agents.NamespacingSuffix, Template: "{tool}_{server}", MaxLength: 64, Charset: agents.DefaultCharset}
	claude := agents.ToolNaming{Namespacing: agents.NamespacingPrefix, Template: "mcp__{server}__{tool}", MaxLength: 64, Charset: agents.DefaultCharset}

	// Auggie appends _agentctl, so agentctl sends the built-in without it.
	fmt.Println(agents.RenderModelName(auggie, "agentctl", "ask_user_question").Name)
	// Claude Code puts mcp__agentctl__ before the name it was sent.
	fmt.Println(agents.RenderModelName(claude, "agentctl", "ask_user_question_agentctl").Name)
	// Output:
	// ask_user_question_agentctl
	// mcp__agentctl__ask_user_question_agentctl
}

func ExampleRenderModelName_sanitising() {
	vscode := agents.ToolNaming{Namespacing: agents.NamespacingPrefix, Template: "mcp_{server}_{tool}", ServerMaxLength: 13, MaxLength: 64, Charset: agents.DefaultCharset}
	r := agents.RenderModelName(vscode, "my.long-server-name", "read")
	fmt.Println(r.Name, r.Problems)
	// Output:
	// mcp_my_long-serve_read []
}

func ExampleRenderModelName_tooLong() {
	kiro := agents.ToolNaming{Namespacing: agents.NamespacingNone, Template: "{tool}", MaxLength: 20, Charset: "^[A-Za-z][A-Za-z0-9_]*$"}
	r := agents.RenderModelName(kiro, "agentctl", "report_progress_agentctl")
	fmt.Println(r.Name)
	fmt.Println(r.Problems)
	// Output:
	// report_progress_agentctl
	// [24 characters, over the client's limit of 20]
}

// Codex shows a namespace and a function: each part is checked alone.
func ExampleRenderModelName_parts() {
	codex := agents.ToolNaming{Namespacing: agents.NamespacingPrefix, Template: "mcp__{server}/{tool}", PartSeparator: "/", MaxLength: 64, Charset: agents.DefaultCharset}
	fmt.Println(agents.RenderModelName(codex, "agentctl", "ask_user_question_agentctl").Name)
	long := strings.Repeat("t", 60)
	r := agents.RenderModelName(codex, "agentctl", long) // 13 + 1 + 60 characters: each part fits
	fmt.Println(len(r.Name), r.Problems)
	r = agents.RenderModelName(codex, "agentctl", long+"_more")
	fmt.Println(r.Problems)
	// Output:
	// mcp__agentctl/ask_user_question_agentctl
	// 74 []
	// [part "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt_more": 65 characters, over the client's limit of 64]
}
