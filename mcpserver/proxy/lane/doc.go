// Package lane is the fast lane of agentctl's stdio endpoint: it forwards
// calls of external stdio servers' tools, and answers tools/list, without
// the MCP SDK.
//
// A tools/call of an external stdio server's tool does not need the SDK at
// all: the request's bytes can go upstream with only the tool's name, id and
// progress token rewritten, and the answer's bytes can come back with only
// the id put back. go-sdk decodes every message with a fresh streaming
// decoder and validates it (about 0.4 ms of CPU per message on one core),
// which is what a hop through agentctl used to cost.
//
// So on stdio the input guard (package guard) offers each of the client's
// messages, read once ([wire.Message]), to [Lane.FromClient] first. A
// message the lane fully understands (a tools/call of an external tool
// whose server is up, or a tools/list without a cursor, from a client that
// initialized or speaks 2026-07-28) is answered or forwarded raw; every
// other line goes to the SDK unchanged, which keeps its own behaviour for
// them (errors, waiting for the first round, batches, unknown fields). The
// lane echoes the client's id and progress token as written, so it takes
// only those the SDK path sends back the same ([wire.Exact]). A
// cancellation names a lane call by its id's value, as go-sdk matches them;
// the cancelled call gets no answer. Each call forwarded and each list
// answered is logged at debug level with lane=fast.
//
// The lane is the pool's tap ([proxy.Tap]): each external stdio server's
// connection, which package proxy runs for both paths, tells the lane when
// it is up (the lane sends its calls through its [proxy.Link]) and down
// (the lane's calls on it fail), and offers it each of the server's lines
// first. Only the lane's answers in the common shape are read by the lane
// itself ([Lane.Line]); every other line is read with go-sdk's decoder,
// and the answers to the lane's calls among them go to [Lane.Answer], so
// that what the lane takes, fails or hands on is what the SDK path would.
// A line the connection cannot read fails the call whose id it names, the
// lane's or the SDK's, in the SDK path's words; a lane call not answered
// within its mount's call timeout ([proxy.Link.CallTimeout]) fails and is
// cancelled upstream.

// What both paths do to a call (null arguments, which _meta goes upstream,
// progress tokens, the crash message) is package proxy's, called by both.
// Where the lane answers as go-sdk would (2026-07-28 requests and results)
// it mirrors go-sdk v1.8.0, as the comments
// there say; the endpoint's tests compare the two paths' answers by value
// (TestLaneAnswersAsTheSDKDoes in package mcpserver).
//
// A server's result in the plain shape (text content, structured content,
// isError true) reaches the client byte for byte (but for bytes that are
// not UTF-8, which the connection makes U+FFFD as go-sdk reads them), with
// only the id put back; any other result (null, members MCP does not
// define) goes through go-sdk's own decoding and encoding first, as on the
// SDK path, structuredContent and every _meta aside, kept as the server
// wrote them on both paths ([proxy.SetAside]). Then what go-sdk adds to it: in a
// 2026-07-28 session "resultType":"complete" goes in front of it;
// and for a 2026-07-28 request agentctl's serverInfo goes into its _meta,
// in front of it when it has no "_meta" member, else by decoding it and
// encoding it again with encoding/json (members in key order, no
// whitespace, <, > and & escaped), unless its _meta already names a server.
//
// The shortest use (the endpoint's, in mcpserver's Endpoint.ServeStdio):
//
//	l := lane.New(lane.Options{Endpoint: routes, Client: g, Implementation: impl})
//	pool.SetTap(l) // before pool.Start
//	go g.Serve(ctx, stdin, l.FromClient)
//	ss, err := server.Connect(ctx, g.Transport(), nil)
//	l.SetSession(ss)
package lane
