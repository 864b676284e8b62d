// Command agentctl provisions coding-agent instances and serves each one an
// MCP endpoint whose tool names are right for the client that connects.
package main

import "os"

func main() { os.Exit(Main()) }
