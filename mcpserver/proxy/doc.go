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
// [Arguments], [ForwardsMeta], [ProgressRoutes], [FailedDuringCall].
//
// The shortest use:
//
//	pool := proxy.NewPool(mounts, endpointNamespace, proxy.Options{Version: "1.0"})
//	pool.Start(ctx)
//	<-pool.FirstRound()
//	for _, s := range pool.Servers() {
//		for _, t := range s.Tools() {
//			server.AddTool(t, s.Handler(t.Name)) // under the tool's canonical name
//		}
//	}
package proxy
