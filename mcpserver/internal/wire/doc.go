// Package wire is stdio JSON-RPC as agentctl's endpoint reads and writes
// it, below the input guard, the fast lane and the proxy, which share it:
// line framing ([Lines]), a message read once per line ([Message.Parse],
// and [Message.Envelope] for what the endpoint writes), request ids
// ([AppendIDKey], and [IDReader] for a line too long or too broken to
// parse), and go-sdk's own error codes. It reads messages as go-sdk v1.8.0
// does (keys decoded, the last of duplicate keys), without decoding or
// allocating for the common message. It imports nothing of agentctl's.
package wire
