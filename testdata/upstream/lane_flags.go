package main

// Crafted answers, for the tests of what agentctl does with a server that
// writes odd lines (issue 9, items 3 and 4):
//
//	-craft            answer an echo whose text is "craft:KIND" with the line
//	                  KIND names instead of the SDK's answer:
//	    null          "result": null
//	    string        "result": "a string"
//	    badutf8       a text result holding bytes that are not UTF-8
//	    unknown       a result with members MCP does not define, at its top,
//	                  in a content item and in _meta
//	    escid         the SDK's answer, its id (a string) written with escapes
//	    truncated     the SDK's answer cut in the middle, then a newline; then
//	                  notifications/tools/list_changed
//	    huge          a text result of 17 MiB (over the 16 MiB line limit)
//	    garbage       a line that is not JSON and names no id; then the
//	                  SDK's answer
//	    file          the bytes of the file -craft-file names, read at each
//	                  call, with every $ID replaced by the request's id as
//	                  written and every $TOKEN by its progress token (JSON;
//	                  null without one), a newline added if they lack one;
//	                  then the SDK's answer, its text "craft:file answered
//	                  nothing" (a second answer, dropped, when the file's
//	                  answered the call): the answers of the differential
//	                  fuzzer FuzzLaneVersusSDKUpstream (cmd/agentctl)
//
// The SDK server writes its messages to os.Stdout, which -craft replaces
// with a pipe whose lines pass here on their way out. This file is apart
// from main.go so that its flags and main.go's change independently.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// craftFile is -craft-file: the file of the kind "file".
var craftFile = flag.String("craft-file", "", "with -craft, the file whose bytes answer an echo of craft:file")

func init() {
	flag.BoolFunc("craft", "answer echo calls whose text is craft:KIND with crafted lines", func(string) error {
		return startCrafting()
	})
}

// startCrafting puts a pipe in place of os.Stdout and rewrites what goes
// through it.
func startCrafting() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	out := os.Stdout
	os.Stdout = w
	go func() {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if _, werr := out.Write(craft(line)); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// craft is the line to write for line (the SDK's, with its newline).
func craft(line []byte) []byte {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Meta struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || len(m.Result.Content) == 0 {
		return line
	}
	kind, ok := strings.CutPrefix(m.Result.Content[0].Text, "craft:")
	if !ok {
		return line
	}
	answer := func(result string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + "}\n")
	}
	switch kind {
	case "null":
		return answer("null")
	case "string":
		return answer(`"a string"`)
	case "badutf8":
		return answer("{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf-8 \xc3\"}]}")
	case "unknown":
		return answer(`{"content":[{"type":"text","text":"unknown members","extra":{"a":1}}],"extra":[1,2],"_meta":{"x-trace":"t"}}`)
	case "escid":
		if len(m.ID) > 2 && m.ID[0] == '"' {
			esc := fmt.Sprintf(`"\u%04x%s`, m.ID[1], m.ID[2:])
			return bytes.Replace(line, m.ID, []byte(esc), 1)
		}
		return line
	case "truncated":
		return append(append(bytes.Clone(line[:len(line)/2]), '\n'),
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n"...)
	case "huge":
		return answer(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 17<<20) + `"}]}`)
	case "garbage":
		return append([]byte("this is not JSON\n"), line...)
	case "file":
		b, err := os.ReadFile(*craftFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream: -craft-file:", err)
			return line
		}
		tok := m.Result.Meta.Token
		if len(tok) == 0 {
			tok = []byte("null")
		}
		b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("$ID"), m.ID), []byte("$TOKEN"), tok)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		return append(b, answer(`{"content":[{"type":"text","text":"craft:file answered nothing"}]}`)...)
	}
	return line
}

// craftTokens answers an echo of "craft:file" itself, with the request's
// progress token in its _meta, for craft to put in place of $TOKEN.
func craftTokens(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params.Name == "echo" {
			var in struct{ Text string }
			if json.Unmarshal(r.Params.Arguments, &in) == nil && in.Text == "craft:file" {
				res := textResult("craft:file")
				res.Meta = mcp.Meta{"progressToken": r.Params.GetProgressToken()}
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}
