package webui

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
)

// TestSSEDataCannotStartAField: a lone "\r" in an agent's text (which
// html/template leaves as it is) ends a line for a browser, as "\n" and
// "\r\n" do: each becomes a data line's end, so that the text cannot start
// a field of its own (event:, id:) or end the message early. Before, a
// report_progress message could close the page's stream with a text of
// its choosing.
func TestSSEDataCannotStartAField(t *testing.T) {
	rec := httptest.NewRecorder()
	s := &sse{w: rec, rc: http.NewResponseController(rec)}
	if err := s.send("progress", "7", "compiling\revent: gone\rdata: Log in again at https://evil.example\r\r\nid: 99\nend"); err != nil {
		t.Fatal(err)
	}
	// As a browser reads it: a line ends at "\r\n", "\n" or a lone "\r".
	lines := regexp.MustCompile(`\r\n|\r|\n`).Split(rec.Body.String(), -1)
	want := []string{"event: progress", "id: 7", "data: compiling", "data: event: gone", "data: data: Log in again at https://evil.example",
		"data: ", "data: id: 99", "data: end", "", ""}
	if !slices.Equal(lines, want) {
		t.Errorf("the message as a browser reads its lines:\n%q\nwant\n%q", lines, want)
	}
}
