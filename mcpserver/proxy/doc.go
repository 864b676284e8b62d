// Package proxy connects agentctl's endpoint to the external MCP servers
// an instance mounts, over stdio or streamable HTTP, and forwards their
// tools' calls.
//
// A [Pool] holds an endpoint's servers. Each [Server] is kept connected
// from [Pool.Start] until the context ends: started (a stdio server in a
// process group of its own, killed with agentctl if need be) or dialled,
// initialized with the 2025-11-25 protocol, its tools listed, listed again
// on each tools/list_changed, restarted with a backoff when it goes away.
// Whenever a server's tools change, the pool asks the endpoint to
// reconcile its namespace ([Namespace]); the endpoint reads [Server.Tools]
// and registers [Server.Handler] for each tool it serves. The proxy never
// sees the endpoint's registry, and the endpoint never sees a connection.
//
// The SDK path forwards a call through [Server.Handler], a go-sdk client
// session's CallTool. On stdio the fast lane (package lane) forwards most
// calls instead, raw; what both do to a call is defined here once:
// [Arguments], [ForwardsMeta], [ProgressRoutes], [FailedDuringCall],
// [CallTimedOut], [AnswerUnreadable]. A stdio server runs under one
// command transport on both paths: its output is read a line at a time by
// agentctl rather than by go-sdk's stream decoder, so that a bad line costs
// at most the call it answers, and each line goes by the pool's [Tap] (the
// lane's, [Pool.SetTap]) before go-sdk's client session; its input is a
// [Link] the tap and the session share.
//
// The shortest use, with ns an endpoint's [Namespace]:
//
//	pool := proxy.NewPool(mounts, ns, proxy.Options{Version: version})
//	pool.Start(ctx) // ns.Reconcile runs as the servers come up
//
// and in ns.Reconcile, each tool under its canonical name:
//
//	for _, s := range pool.Servers() {
//		for _, t := range s.Tools() {
//			c := *t
//			c.Name = s.Mount().ToolName(t.Name)
//			server.AddTool(&c, s.Handler(t.Name))
//		}
//	}
package proxy
