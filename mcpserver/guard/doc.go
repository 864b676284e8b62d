// Package guard is the input guard of agentctl's stdio endpoint: the only
// code of agentctl's own in front of the MCP SDK's server session, with or
// without the fast lane.
//
// A [Guard] frames the client's input into lines and bounds their size; it
// answers a line that is not JSON itself, with a JSON-RPC parse error
// (-32700, id null), and reads on (go-sdk, which reads its input as one
// stream of JSON values, would run the broken line into the next one and
// end the connection); it reads every other line once ([wire.Message]),
// offers the message read to a taker (the fast lane), and hands the rest to
// the SDK through [Guard.Transport].
// Everything the endpoint writes to the client goes through the Guard too,
// one message per Write ([Guard.Write]).
//
// So the Guard sees every request the client sends and every answer it
// gets, whoever answers, and keeps the requests still unanswered. A request
// the client cancels (notifications/cancelled) gets no answer, as the MCP
// specification says: the Guard drops the one go-sdk writes for it, and
// the lane writes none. A cancellation names requests by their ids'
// values, as go-sdk told them apart ([wire.AppendIDKey]: 1 and 1.0 are one id),
// and cancels every request in flight with that id. When the
// client's input ends it does not end the SDK's input at once (go-sdk
// stops writing answers the moment its input ends, and drops those still
// being worked on): it waits until every request it has read is answered,
// for at most [Options.Drain] ([DefaultDrain], 10 s, so that a hung
// external server cannot hold the endpoint forever), answers the rest with
// an error, and only then ends the SDK's input. [Guard.Close] answers
// whatever is still unanswered the same way, so that an endpoint answers
// every request it has read before it exits, also when it is stopped.
//
// No input line ends the endpoint. go-sdk v1.8.0 ends the connection on
// any message it cannot decode, so the Guard answers those itself, in both
// modes, and reads on:
//
//   - a line nested deeper than 1000 arrays and objects (go-sdk's bound),
//     found in one pass before anything parses the line: -32600, id null;
//   - a line that is not JSON: -32700 Parse error, id null;
//   - JSON that is no JSON-RPC 2.0 message (not an object, "jsonrpc" not
//     "2.0", an id neither a string nor a number, a method not a string,
//     params neither an object nor an array, an answer without an id or
//     without a result or an error): -32600 Invalid Request, with the id of
//     a request whose id is valid, else null (a notification's too: JSON-RPC
//     answers with id null when the id cannot be read). params null is
//     taken as absent, as go-sdk takes it;
//   - a batch (a JSON array). MCP 2025-06-18 and later have no batches:
//     one -32600 "batches are not supported", id null. go-sdk v1.8.0 does
//     answer batches in sessions whose negotiated version is older
//     (2025-03-26, 2024-11-05), so a batch goes to it once the endpoint's
//     answer to initialize gave such a version, and only if go-sdk would
//     not end the connection on it (empty, a message in it invalid, an id
//     used twice or still pending): those get one -32600, id null. Before
//     initialize is answered, batches are refused (the version is not yet
//     known; MCP forbids initialize in a batch).
//
// A UTF-8 byte-order mark at the start of a line (JSON forbids it, some
// Windows tools write it) is dropped and the rest read as usual. The
// Guard's own errors settle no pending request, even one with the same id.
//
// Request ids and progress tokens come back exactly as the client wrote
// them. go-sdk reads ids and tokens through a float64 or a decoded string
// and writes back what it read (12345678901234567890 became
// -9223372036854775808, 1.5 became 1, 1e2 became 100, "\u0061" became "a"),
// and drops a request whose id is one still in flight. So the Guard hands
// the SDK every request under an id of its own (the request's sequence
// number) and a progress token the SDK would not write back as written
// under a token of its own ("agentctl-guard-N"), and puts the client's
// bytes back on the answer, whether the SDK's or the Guard's own (-32004),
// and in notifications/progress. The SDK writes through [Guard.Transport];
// the taker, which answers with the client's ids, through [Guard.Write].
// The client's answers to the SDK's own requests pass unchanged.
//
// The shortest use:
//
//	g := guard.New(os.Stdout, guard.Options{})
//	go g.Serve(ctx, os.Stdin, nil)
//	err := server.Run(ctx, g.Transport())
//	g.Close()
package guard
