// Package mcpserver is agentctl's in-process MCP endpoint: for one
// instance, built-in tools, mounted knowledge bases and mounted external
// MCP servers in one flat tool namespace, with names right for the client
// that connects.
//
//   - The registry ([Registry]) is the single source of truth for what is
//     served: every tool is added through it, and it refuses a name that
//     is already taken, naming both sources.
//   - Presentation and routing apply the instance's naming capability:
//     [PresentToolName] (the name tools/list sends) and [RouteToolCall]
//     (the registered name a tools/call means, or why there is none) are
//     pure, and a receiving middleware applies them before the SDK looks
//     a tool up, validates, logs or dispatches. [NameTools] gives the same
//     names from the configuration alone, before anything runs.
//   - The built-in tools are ask_user_question, report_progress and
//     get_instance, each named <base>_<server> ([BuiltinName]).
//   - The knowledge-base tool adapter ([RegisterKBTools]) serves each
//     mounted knowledge base's concepts as tools.
//   - External servers are package proxy's: it keeps them connected and
//     forwards their tools' calls; the endpoint serves their tools in the
//     same namespace. An external tool that would take an in-process
//     tool's name, or reach the model under its name, is withheld
//     ([WithheldExternal], [Endpoint.Withheld]); a name that two external
//     servers want is served by neither ([Endpoint.Conflicts]).
//   - On stdio ([Endpoint.ServeStdio]) the input guard (package guard)
//     reads the client's lines and sees that every request read is
//     answered before the endpoint exits; the fast lane (package
//     proxy/lane) forwards external stdio servers' tool calls without the
//     SDK; everything else goes through the SDK's server session.
//
// The shortest use:
//
//	ep, err := mcpserver.New(mcpserver.Config{ServerName: "agentctl", Naming: naming, Store: st, Instance: info, Mounts: mounts})
//	if err != nil {
//		return err
//	}
//	return ep.ServeStdio(ctx, os.Stdin, os.Stdout)
package mcpserver
