// Package agents holds agent definitions: the TOML schema, the catalog embedded
// in the binary, user overrides, and the capability that says how a client
// renames MCP tools before its model sees them.
//
// The shortest use:
//
//	cat, err := agents.Load(agents.LoadOptions{UserDir: dir})
//	def, err := cat.Lookup("auggie")
//	r := agents.RenderModelName(def.Capabilities.ToolNames, "agentctl", "ask_user_question")
//	fmt.Println(r.Name) // ask_user_question_agentctl
//
// This package imports nothing else of agentctl's.
package agents
