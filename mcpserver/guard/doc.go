// Package guard is the input guard of agentctl's stdio endpoint: the only
// code of agentctl's own in front of the MCP SDK's server session, with or
// without the fast lane.
//
// A [Guard] frames the client's input into lines and bounds their size; it
// answers a line that is not JSON itself, with a JSON-RPC parse error
// (-32700, id null), and reads on (go-sdk, which reads its input as one
// stream of JSON values, would run the broken line into the next one and
// end the connection); it offers every other line to a taker (the fast
// lane) and hands the rest to the SDK through [Guard.Transport].
// Everything the endpoint writes to the client goes through the Guard too,
// one message per Write ([Guard.Write]).
//
// So the Guard sees every request the client sends and every answer it
// gets, whoever answers, and keeps the requests still unanswered. A request
// the client cancels (notifications/cancelled) gets no answer, as the MCP
// specification says: the Guard drops the one go-sdk writes for it, and
// the lane writes none. Requests are known by their ids' values, as go-sdk
// tells them apart ([AppendIDKey]). When the
// client's input ends it does not end the SDK's input at once (go-sdk
// stops writing answers the moment its input ends, and drops those still
// being worked on): it waits until every request it has read is answered,
// for at most [Options.Drain] ([DefaultDrain], 10 s, so that a hung
// external server cannot hold the endpoint forever), answers the rest with
// an error, and only then ends the SDK's input. [Guard.Close] answers
// whatever is still unanswered the same way, so that an endpoint answers
// every request it has read before it exits, also when it is stopped.
//
// Being the one place that reads every message in both directions, the
// Guard is also where further answers to malformed input and a mapping of
// the client's request ids would go.
//
// The shortest use:
//
//	g := guard.New(os.Stdout, guard.Options{})
//	go g.Serve(ctx, os.Stdin, nil)
//	err := server.Run(ctx, g.Transport())
//	g.Close()
package guard
